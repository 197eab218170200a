"""Shared by the AgentChat adapter tests (a module of its own, not conftest, so that another
test directory's conftest can never be imported in its place).

The scenarios are the programs in examples/autogen_agentchat/, loaded as modules under names
of their own (other frameworks' examples have modules called like theirs) and run in-process
inside `symtrace.record` / `symtrace.replay`. Every example keeps a `TOOL_RUNS` list its tool
bodies append to.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import symtrace

from ..._support import load_example as shared_load_example

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = ROOT / "examples" / "autogen_agentchat"
SCRIPTS = EXAMPLES / "scripts"
SCENARIOS = ("assistant_tools", "round_robin", "selector", "magentic_one",
             "streaming_tool_error")
ADAPTER = ["autogen_agentchat"]
# Reference bundles replayed in-process (test_agentchat_features.py) rather than through the
# CLI, which costs a child process with the framework (~15 s) per bundle.
IN_PROCESS = ("swarm", "graph_sequential", "graph_conditional", "save_state", "twin_teams")

if str(EXAMPLES) not in sys.path:  # for the examples' `from agentchat_common import ...`
    sys.path.insert(0, str(EXAMPLES))


def load_example(name: str) -> ModuleType:
    return shared_load_example(EXAMPLES, f"symtrace_agentchat_example_{name}", name)


def run_example(name: str) -> list[str]:
    """Run one scenario to its end; its transcript (last line: the final output)."""
    module = load_example(name)
    return asyncio.run(module.run())


class Scenario:
    """One example program and what a run of it left behind."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.module = load_example(name)

    @property
    def tool_runs(self) -> list[str]:
        return getattr(self.module, "TOOL_RUNS", [])

    def run(self) -> list[str]:
        """A run without symtrace's help (live); tool bodies append to tool_runs."""
        return run_example(self.name)

    def record(self, path: Path, **kwargs: Any) -> list[str]:
        self.tool_runs.clear()
        kwargs.setdefault("adapters", ADAPTER)
        with symtrace.record(path, task=self.name, **kwargs):
            return self.run()

    def replay(self, path: Path, **kwargs: Any) -> list[str]:
        self.tool_runs.clear()
        with symtrace.replay(path, **kwargs):
            return self.run()


def symtrace_cli(*args: str, env: dict[str, str] | None = None, timeout: int = 180
                 ) -> subprocess.CompletedProcess[str]:
    """`symtrace ARGS` from the repository root, as a user runs it."""
    return subprocess.run(
        [sys.executable, "-m", "symtrace", *args], cwd=ROOT, capture_output=True, text=True,
        env={**os.environ, **(env or {})}, timeout=timeout,
    )
