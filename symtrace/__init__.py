"""symtrace: record an LLM multi-agent run, replay it fail-closed, repair it at an anchor.

Importing symtrace imports no agent framework; adapters arm themselves lazily.
"""

from symtrace._version import __version__
from symtrace.api import (
    Handle,
    ResolvedAnchor,
    SymtraceWarning,
    final_result,
    record,
    replay,
    resolve_anchor,
)
from symtrace.boundaries.tools import acall_tool, call_tool, tool
from symtrace.bundle import Bundle, load_bundle
from symtrace.errors import (
    AdapterError,
    AdapterNotFound,
    AdapterUnavailable,
    AnchorError,
    BundleError,
    BundleFormatError,
    BundleIntegrityError,
    BundleNotFound,
    GuidedAnchorFailed,
    MissingCall,
    NoDependentLLMRequest,
    OrderUnreachable,
    RedactionError,
    ReplayDivergence,
    RequestMismatch,
    SymtraceError,
    UnexpectedCall,
    UnknownEvent,
    UnsupportedBundleVersion,
    UnsupportedConstruct,
)
from symtrace.model.divergence import DivergenceKind, DivergenceReport
from symtrace.model.events import Edge, EdgeKind, Event, EventType
from symtrace.session.context import agent, lane, reason

__all__ = [
    "AdapterError",
    "AdapterNotFound",
    "AdapterUnavailable",
    "AnchorError",
    "Bundle",
    "BundleError",
    "BundleFormatError",
    "BundleIntegrityError",
    "BundleNotFound",
    "DivergenceKind",
    "DivergenceReport",
    "Edge",
    "EdgeKind",
    "Event",
    "EventType",
    "GuidedAnchorFailed",
    "Handle",
    "MissingCall",
    "NoDependentLLMRequest",
    "OrderUnreachable",
    "RedactionError",
    "ReplayDivergence",
    "RequestMismatch",
    "ResolvedAnchor",
    "SymtraceError",
    "SymtraceWarning",
    "UnexpectedCall",
    "UnknownEvent",
    "UnsupportedBundleVersion",
    "UnsupportedConstruct",
    "__version__",
    "acall_tool",
    "agent",
    "call_tool",
    "final_result",
    "lane",
    "load_bundle",
    "reason",
    "record",
    "replay",
    "resolve_anchor",
    "tool",
]
