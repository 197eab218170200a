"""A deterministic stub endpoint and the program that exercises every recording path, for the
tests that compare two recordings of one run byte for byte (test_offload_differential.py,
test_graph_at_read.py). `deterministic_stub` is the fixture (tests/integrity/conftest.py)."""

from __future__ import annotations

import itertools
import sys
import threading
import time
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from symtrace.stub import StubLLM
from symtrace.stub.reply import Reply, ToolCall

PROGRAMS = Path(__file__).parent / "programs"
sys.path.insert(0, str(PROGRAMS))
import offload_mix  # noqa: E402, F401 - the program, for the tests

_THREAD = threading.local()  # the request a stub thread is answering


class Deterministic:
    """Replies that depend on the request only (never on arrival order)."""

    mode = "policy"

    def respond(self, body: dict[str, Any], call_index: int) -> Reply:
        messages = body.get("messages") or [{}]
        last = str(messages[-1].get("content") or "")
        # the call the program cancels is answered while later calls run: its ids must not
        # take numbers from theirs
        _THREAD.unnumbered = "pooled -2" in last
        if "FAIL" in last:
            return Reply(status=500, error="the endpoint failed")
        if "SLOW" in last:  # pooled calls complete in reverse issue order
            time.sleep(0.2 * int(last.split()[1]))
        if body.get("tools") and "USE TOOL" in last:
            return Reply(tool_calls=(ToolCall("lookup", '{"topic": "Porto"}'),))
        return Reply(content=f"About {last[:40]}: " + "take the tram, then walk. " * 12)


def deterministic_stub(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """A deterministic stub; `stub.restart_ids()` pins the next ids from 0 again."""
    from symtrace.stub import formats, sse

    def restart_ids() -> None:
        counter = itertools.count()

        def pinned(prefix: str, length: int = 24) -> str:
            if getattr(_THREAD, "unnumbered", False):
                return prefix + "x" * length
            return f"{prefix}{next(counter):0{length}d}"

        monkeypatch.setattr(sse, "random_id", pinned)
        monkeypatch.setattr(formats, "random_id", pinned)

    monkeypatch.setattr(sse, "time", types.SimpleNamespace(time=lambda: 1_700_000_000.0))
    with StubLLM(responder=Deterministic()) as server:
        server.restart_ids = restart_ids
        yield server


def files(path: Path) -> dict[str, bytes]:
    return {f.name: f.read_bytes() for f in sorted(path.iterdir())}


