"""symtrace: record an LLM multi-agent run, replay it fail-closed, repair it at an anchor.

Importing symtrace imports no agent framework; adapters arm themselves lazily.
"""

from __future__ import annotations

import sys
import types
from typing import TYPE_CHECKING, Any

from symtrace._version import __version__
from symtrace.lazy_exports import lazy_exports

if TYPE_CHECKING:
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

# Resolved on first use (PEP 562): `symtrace record` and a program's bootstrap import
# symtrace.* submodules without paying for the API, the replayer and asyncio.
_EXPORTS: dict[str, str] = {  # public name -> the module that defines it
    "AdapterError": "symtrace.errors",
    "AdapterNotFound": "symtrace.errors",
    "AdapterUnavailable": "symtrace.errors",
    "AnchorError": "symtrace.errors",
    "Bundle": "symtrace.bundle",
    "BundleError": "symtrace.errors",
    "BundleFormatError": "symtrace.errors",
    "BundleIntegrityError": "symtrace.errors",
    "BundleNotFound": "symtrace.errors",
    "DivergenceKind": "symtrace.model.divergence",
    "DivergenceReport": "symtrace.model.divergence",
    "Edge": "symtrace.model.events",
    "EdgeKind": "symtrace.model.events",
    "Event": "symtrace.model.events",
    "EventType": "symtrace.model.events",
    "GuidedAnchorFailed": "symtrace.errors",
    "Handle": "symtrace.api",
    "MissingCall": "symtrace.errors",
    "NoDependentLLMRequest": "symtrace.errors",
    "OrderUnreachable": "symtrace.errors",
    "RedactionError": "symtrace.errors",
    "ReplayDivergence": "symtrace.errors",
    "RequestMismatch": "symtrace.errors",
    "ResolvedAnchor": "symtrace.api",
    "SymtraceError": "symtrace.errors",
    "SymtraceWarning": "symtrace.api",
    "UnexpectedCall": "symtrace.errors",
    "UnknownEvent": "symtrace.errors",
    "UnsupportedBundleVersion": "symtrace.errors",
    "UnsupportedConstruct": "symtrace.errors",
    "acall_tool": "symtrace.boundaries.tools",
    "agent": "symtrace.session.context",
    "call_tool": "symtrace.boundaries.tools",
    "final_result": "symtrace.api",
    "lane": "symtrace.session.context",
    "load_bundle": "symtrace.bundle",
    "reason": "symtrace.session.context",
    "record": "symtrace.api",
    "replay": "symtrace.api",
    "resolve_anchor": "symtrace.api",
    "tool": "symtrace.boundaries.tools",
}


class _Facade(types.ModuleType):
    """`symtrace.record` and `symtrace.replay` are API functions that share their names with
    the packages symtrace/record/ and symtrace/replay/. The import system binds a subpackage on
    its parent when first loaded; once the facade is lazy that can happen after the function
    was resolved, so the package object is not bound here (it stays in sys.modules)."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name in ("record", "replay") and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Facade


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

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, __all__)
