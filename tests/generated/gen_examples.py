"""The repository's example programs as `Check` runners (the defects' regression tests).

An example is loaded under a module name of its own (each framework's examples have helper
modules with the same names) and run in-process; its printed output is the transcript the
check compares. `Program` values for examples carry no agents: the prompt-perturbation
property needs generated prompts, so only record/strict replay and every-anchor run on them.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import io
import logging
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from gen_spec import Program

from tests._support import load_example

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"


def load(framework: str, name: str) -> ModuleType:
    return load_example(EXAMPLES / framework, f"gen_example_{framework}_{name}", name)


def program(framework: str, name: str) -> Program:
    return Program(framework=framework, topology=f"example:{name}", agents=())


def _printed(call: Callable[[], Any]) -> list[str]:
    buffer = io.StringIO()
    streams = []
    if "autogen" in sys.modules:  # AG2 logs its console lines through a handler of its own
        from autogen.logger.logger_utils import get_event_logger

        streams = [h for h in get_event_logger().handlers
                   if isinstance(h, logging.StreamHandler)]
    previous = [h.setStream(buffer) for h in streams]
    try:
        with contextlib.redirect_stdout(buffer):
            result = call()
            if inspect.iscoroutine(result):
                result = asyncio.run(result)
    finally:
        for handler, stream in zip(streams, previous, strict=True):
            handler.setStream(stream)
    lines = buffer.getvalue().splitlines()
    if "FINAL:" in lines[-1:] or any(line.startswith("FINAL:") for line in lines):
        # AG2 examples end with their outcome; the console lines before it interleave tool
        # calls gathered concurrently in task order (declared volatile by the AG2 tests)
        lines = lines[next(i for i, line in enumerate(lines) if line.startswith("FINAL:")):]
    if isinstance(result, list):  # AgentChat examples' run() returns the transcript
        return lines + [str(line) for line in result]
    return lines + ([] if result is None else [f"RESULT: {result}"])


def runner(framework: str, name: str, entry: str = "main") -> Callable[[Program], list[str]]:
    """A Check runner that runs examples/<framework>/<name>.py's *entry* and returns what it
    printed (and returned)."""

    def run(_: Program) -> list[str]:
        return _printed(getattr(load(framework, name), entry))

    return run
