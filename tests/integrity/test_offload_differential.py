"""A recording written by the writer process is byte-identical to one written inline.

The same program (tests/integrity/programs/offload_mix.py: conversation, tools, a provider
tool call, a failing tool, pooled asyncio calls, a stream read whole and one abandoned, an
HTTP 500) is recorded twice against one deterministic stub endpoint, once with
`writer="inline"` and once through the writer process, through the API and through
`symtrace record -- python ...`; every file of the two bundles must be equal byte for byte.
The stub's fresh ids and `created` stamps are pinned so two recordings can be equal at all.
"""

from __future__ import annotations

import os
import subprocess
import sys

import orjson

import symtrace
from symtrace.bundle import load_bundle, verify_bundle
from symtrace.record import offload

from ._deterministic import PROGRAMS, files, offload_mix


def test_api_recording_is_byte_identical_through_the_writer_process(stub, tmp_path):
    bundles = {}
    for how in ("inline", "process"):
        stub.restart_ids()
        bundles[how] = tmp_path / how
        with symtrace.record(bundles[how], writer=how, seed=11, task="plan a trip"):
            offload_mix.run(stub.url)
    inline, offloaded = files(bundles["inline"]), files(bundles["process"])
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
    inline, offloaded = files(bundles["inline"]), files(bundles["process"])
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
