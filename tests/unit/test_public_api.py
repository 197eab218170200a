"""The public surface is deliberate, and importing symtrace imports no framework."""

from __future__ import annotations

import subprocess
import sys

import symtrace

EXPECTED = {
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
}


def test_all_is_pinned():
    assert set(symtrace.__all__) == EXPECTED


def test_import_imports_no_framework_or_sdk():
    code = (
        "import sys, symtrace, symtrace.cli; "
        "bad = [m for m in sys.modules if m.split('.')[0] in "
        "('autogen', 'crewai', 'autogen_agentchat', 'autogen_ext', 'openai', 'ag2')]; "
        "print(bad); sys.exit(1 if bad else 0)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_arming_every_adapter_imports_no_framework():
    code = (
        "import sys; from symtrace.frameworks.registry import resolve; armed = resolve(None); "
        "[a.install() for a in armed]; "
        "bad = [m for m in sys.modules if m.split('.')[0] in "
        "('autogen', 'crewai', 'autogen_agentchat', 'autogen_ext')]; "
        "[a.uninstall() for a in armed]; print(bad); sys.exit(1 if bad else 0)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
