"""A recording written by the writer process is byte-identical to one written inline.

The same program (tests/integrity/programs/offload_mix.py: conversation, tools, a provider
tool call, a failing tool, pooled asyncio calls, a stream read whole and one abandoned, an
HTTP 500) is recorded twice against one deterministic stub endpoint, once with
`writer="inline"` and once through the writer process, through the API and through
`symtrace record -- python ...`; every file of the two bundles must be equal byte for byte.
The stub's fresh ids and `created` stamps are pinned so two recordings can be equal at all.
"""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
import threading
import time
import types
from pathlib import Path
from typing import Any

import orjson
import pytest

import symtrace
from symtrace.bundle import load_bundle, verify_bundle
from symtrace.record import offload
from symtrace.stub import StubLLM
from symtrace.stub.reply import Reply, ToolCall

PROGRAMS = Path(__file__).parent / "programs"
sys.path.insert(0, str(PROGRAMS))
import offload_mix  # noqa: E402

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


@pytest.fixture
def stub(monkeypatch):
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


def _files(path: Path) -> dict[str, bytes]:
    return {f.name: f.read_bytes() for f in sorted(path.iterdir())}


def test_api_recording_is_byte_identical_through_the_writer_process(stub, tmp_path):
    bundles = {}
    for how in ("inline", "process"):
        stub.restart_ids()
        bundles[how] = tmp_path / how
        with symtrace.record(bundles[how], writer=how, seed=11, task="plan a trip"):
            offload_mix.run(stub.url)
    inline, offloaded = _files(bundles["inline"]), _files(bundles["process"])
    assert sorted(inline) == ["blobs.jsonl", "events.jsonl", "manifest.json", "sums.jsonl"]
    for name in inline:
        assert inline[name] == offloaded[name], name
    events = verify_bundle(bundles["process"]).events
    kinds = {e.type.value for e in events}
    assert kinds == {"agent_action", "tool_call", "tool_result", "final_result"}
    assert any(e.meta.get("abandoned") for e in events)  # the stream left open
    assert sum(1 for e in events for p in e.parents if p.kind.value == "data") >= 5
    assert offload.writer_cpu_seconds() > 0


def test_cli_recording_is_byte_identical_through_the_writer_process(stub, tmp_path):
    bundles = {}
    for how in ("inline", "process"):
        stub.restart_ids()
        bundles[how] = tmp_path / how
        env = {**os.environ, "OPENAI_BASE_URL": stub.url, "PYTHONHASHSEED": "5",
               "SYMTRACE_WRITER": how}
        done = subprocess.run(
            [sys.executable, "-m", "symtrace", "record", "-o", str(bundles[how]), "--seed", "3",
             "--", sys.executable, str(PROGRAMS / "offload_mix.py")],
            env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
    inline, offloaded = _files(bundles["inline"]), _files(bundles["process"])
    for name in ("events.jsonl", "blobs.jsonl", "stdout.txt"):
        assert inline[name] == offloaded[name], name
    # the manifest captures SYMTRACE_* variables: only SYMTRACE_WRITER (and so the seal
    # over it, and its sums line in the trailer) may differ
    assert inline["sums.jsonl"].splitlines()[:-1] == offloaded["sums.jsonl"].splitlines()[:-1]
    manifests = [orjson.loads(inline["manifest.json"]), orjson.loads(offloaded["manifest.json"])]
    for manifest in manifests:
        assert manifest["config"]["command"]["env"].pop("SYMTRACE_WRITER") in (
            "inline", "process")
        manifest.pop("digest")
    assert manifests[0] == manifests[1]
    assert load_bundle(bundles["process"]).complete
