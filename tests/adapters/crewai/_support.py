"""Helpers for the CrewAI adapter tests (tests/<area>/_support.py, imported relatively).

The scenarios are the programs in examples/crewai/, loaded as modules under names of their
own and run in-process inside `symtrace.record` / `symtrace.replay` against the real
framework and real HTTP to `StubLLM`. Their tool bodies count themselves in
`crewai_common.TOOL_RUNS`. CrewAI itself is imported only when an example is loaded.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import symtrace

from ..._support import CREWAI_QUIET_ENV
from ..._support import load_example as shared_load_example

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = ROOT / "examples" / "crewai"
SCRIPTS = EXAMPLES / "scripts"
SCENARIOS = ("sequential", "hierarchical", "parallel_tools", "tool_error", "structured_output")
ADAPTER = ["crewai"]
QUIET_ENV = {**CREWAI_QUIET_ENV, "CREWAI_DISABLE_TRACKING": "1", "OPENAI_API_KEY": "sk-test"}


# -- the example crews -------------------------------------------------------------------------
def load_example(name: str) -> ModuleType:
    return shared_load_example(EXAMPLES, f"symtrace_crewai_example_{name}", name)


def common() -> ModuleType:
    """examples/crewai/crewai_common.py, the module the examples themselves import."""
    if str(EXAMPLES) not in sys.path:
        sys.path.insert(0, str(EXAMPLES))
    return importlib.import_module("crewai_common")


def tool_runs() -> dict[str, int]:
    return dict(common().TOOL_RUNS)


def script(name: str) -> dict[str, Any]:
    return json.loads((SCRIPTS / f"{name}.json").read_text())


@dataclass
class Run:
    """What one kickoff of an example left behind."""

    output: Any
    transcript: list[str]

    @property
    def final(self) -> str:
        return str(self.output.raw)


def run_example(name: str, edit: Callable[[Any], None] | None = None) -> Run:
    """Build the example's crew or flow (optionally *edit* it), kick it off, keep its
    transcript (a flow's: its state, without the random state id, then its output's)."""
    module = load_example(name)
    runnable = module.build_flow() if hasattr(module, "build_flow") else module.build_crew()
    if edit is not None:
        edit(runnable)
    output = runnable.kickoff()
    state = runnable.state if hasattr(module, "build_flow") else {}
    lines = [f"state {key}: {state[key]}" for key in sorted(state) if key != "id"]
    return Run(output, [*lines, *common().transcript(output), f"FINAL: {output.raw}"])


@dataclass
class Recorded:
    name: str
    bundle: Path
    run: Run
    stub: Any  # the endpoint it was recorded against (still running)
    served: int  # requests the endpoint answered while recording

    def events(self) -> list[symtrace.Event]:
        return list(symtrace.load_bundle(self.bundle).events)


def replay_example(bundle: Path, name: str, edit: Callable[[Any], None] | None = None,
                   **kwargs: Any) -> Run:
    with symtrace.replay(bundle, **kwargs):
        return run_example(name, edit)


def llm_events(events: list[symtrace.Event]) -> list[symtrace.Event]:
    return [e for e in events if e.is_llm]


def tool_calls(events: list[symtrace.Event], tool: str | None = None) -> list[symtrace.Event]:
    return [e for e in events if e.type is symtrace.EventType.TOOL_CALL
            and (tool is None or e.meta.get("tool") == tool)]


def subprocess_env(home: dict[str, str], **extra: str) -> dict[str, str]:
    """The environment for a `symtrace` child process: isolated home, no proxies."""
    env = {key: value for key, value in os.environ.items()
           if not key.lower().endswith("_proxy") and not key.startswith(("OPENAI_", "CREWAI_"))}
    return {**env, **home, **extra}
