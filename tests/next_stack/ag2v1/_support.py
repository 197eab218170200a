"""Helpers of the AG2 1.x adapter tests: the example programs of examples/ag2v1, run
in-process under `symtrace.record` / `symtrace.replay` (real AG2 1.x, real HTTP over httpx2)."""

from __future__ import annotations

import asyncio
import contextlib
import io
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import symtrace

from ..._support import load_example as shared_load_example
from ..._support import with_counted_tool_bodies

REPO = Path(__file__).resolve().parents[3]
EXAMPLES = REPO / "examples" / "ag2v1"
SCENARIOS = ("delegation", "subtasks", "hub_consulting", "hub_delegate")
TOOL_HELPERS = {"delegation": "_reading", "subtasks": "_reading"}  # what the tool bodies call


def load_example(name: str) -> ModuleType:
    """A fresh copy of examples/ag2v1/<name>.py (helpers resolved from examples/ag2v1)."""
    return shared_load_example(EXAMPLES, f"ag2v1_example_{name}", name, fresh=True)


@dataclass
class Run:
    stdout: str
    final: Any
    tool_body_runs: int


class Runner:
    """Runs an example in-process, under record or replay, counting tool body runs."""

    def example(self, name: str, **overrides: Any) -> tuple[ModuleType, Counter[str]]:
        return with_counted_tool_bodies(load_example(name), TOOL_HELPERS.get(name), overrides)

    @staticmethod
    def call(program: Callable[[], Any]) -> str:
        buffer = io.StringIO()
        with contextlib.redirect_stdout(buffer):
            asyncio.run(program())
        return buffer.getvalue()

    def record(self, path: Path, name: str, *, seed: int | None = 7, **overrides: Any) -> Run:
        module, runs = self.example(name, **overrides)
        with symtrace.record(path, task=name, adapters=["ag2v1"], seed=seed) as handle:
            out = self.call(module.main)
        return Run(out, handle.session.final_value, runs["tool_body"])

    def replay(self, path: Path, name: str, order_timeout: float | None = None,
               **overrides: Any) -> Run:
        module, runs = self.example(name, **overrides)
        with symtrace.replay(path, adapters=["ag2v1"], order_timeout=order_timeout) as handle:
            out = self.call(module.main)
        return Run(out, handle.session.final_value, runs["tool_body"])
