"""Helpers for the AG2 adapter tests: the example programs, runs of them under symtrace
against the embedded endpoint (real AG2, real HTTP), and the console comparison.

The examples in examples/ag2 are the programs under test. They are loaded under unique
module names (other frameworks' examples live in the same pytest process) and run in-process
with `symtrace.record` / `symtrace.replay`; the slow tests run them through the CLI.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import io
import logging
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import symtrace

from ..._support import load_example as shared_load_example
from ..._support import with_counted_tool_bodies

REPO = Path(__file__).resolve().parents[3]
EXAMPLES = REPO / "examples" / "ag2"
SCENARIOS = ("two_agent", "two_agent_async", "groupchat_auto", "groupchat_random",
             "tool_error", "cache")
# AG2 prints the EXECUTING/EXECUTED lines of tool calls gathered concurrently in whatever
# order the tasks reach them: recording (tools really await) and replay (bodies skipped) may
# interleave them differently. Declared volatile: same lines, same transcript, any order.
CONCURRENT_SCENARIOS = frozenset({"two_agent_async", "chats_async"})
TOOL_HELPERS = {  # the module-level helper each example's tool bodies call
    "two_agent": "_stable", "two_agent_async": "_stable", "groupchat_auto": "_stable",
    "tool_error": "_rate",
}


def load_example(name: str) -> ModuleType:
    """A fresh copy of examples/ag2/<name>.py (its helpers resolved from examples/ag2)."""
    return shared_load_example(EXAMPLES, f"ag2_example_{name}", name, fresh=True)


@dataclass
class Run:
    stdout: str
    final: Any  # the final value the session ended with
    tool_body_runs: int

    @property
    def transcript(self) -> list[str]:
        lines = self.stdout.splitlines()
        return lines[lines.index("TRANSCRIPT:") + 1:] if "TRANSCRIPT:" in lines else []


class Runner:
    """Runs an example (or any callable) in-process, under record or replay."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.monkeypatch = monkeypatch

    def example(self, name: str, **overrides: Any) -> tuple[ModuleType, Counter[str]]:
        return with_counted_tool_bodies(load_example(name), TOOL_HELPERS.get(name), overrides)

    def call(self, program: Callable[[], Any]) -> str:
        """Run *program*; return everything it printed, AG2's console output included."""
        from autogen.logger.logger_utils import get_event_logger

        streams = [h for h in get_event_logger().handlers if isinstance(h, logging.StreamHandler)]
        buffer = io.StringIO()
        previous = [h.setStream(buffer) for h in streams]  # bound to the stdout of its day
        try:
            with contextlib.redirect_stdout(buffer):
                result = program()
                if inspect.iscoroutine(result):
                    asyncio.run(result)
        finally:
            for handler, stream in zip(streams, previous, strict=True):
                handler.setStream(stream)
        return buffer.getvalue()

    def record(self, path: Path, name: str, *, seed: int | None = 7, **overrides: Any) -> Run:
        module, runs = self.example(name, **overrides)
        with symtrace.record(path, task=name, adapters=["ag2"], seed=seed) as handle:
            out = self.call(module.main)
        return Run(out, handle.session.final_value, runs["tool_body"])

    def replay(self, path: Path, name: str, **overrides: Any) -> Run:
        module, runs = self.example(name, **overrides)
        with symtrace.replay(path, adapters=["ag2"]) as handle:
            out = self.call(module.main)
        return Run(out, handle.session.final_value, runs["tool_body"])

    def live(self, name: str, **overrides: Any) -> Run:
        module, runs = self.example(name, **overrides)
        return Run(self.call(module.main), None, runs["tool_body"])


def assert_same_console(name: str, recorded: str, replayed: str) -> None:
    """Byte-identical output, except the declared-volatile interleaving (see above)."""
    if name not in CONCURRENT_SCENARIOS:
        assert replayed == recorded
        return
    assert sorted(replayed.splitlines()) == sorted(recorded.splitlines())
    assert replayed[replayed.index("FINAL:"):] == recorded[recorded.index("FINAL:"):]
