"""Opt-in: `symtrace export --otlp` into a real trace backend, Arize Phoenix.

Phoenix cannot share the project's environment (it needs protobuf 7; the frameworks pin 5),
so it lives in a venv of its own and this test runs only when told where:

    python -m venv /tmp/phx && /tmp/phx/bin/pip install arize-phoenix
    SYMTRACE_PHOENIX=/tmp/phx/bin/phoenix pytest tests/export/test_phoenix.py

Not run in CI (installing Phoenix pulls ~280 packages; it takes ~40 s to start).
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from symtrace.bundle import load_bundle
from symtrace.cli import main

PHOENIX = os.environ.get("SYMTRACE_PHOENIX")
pytestmark = pytest.mark.skipif(
    not PHOENIX, reason="opt-in: set SYMTRACE_PHOENIX to a phoenix executable (see docstring)"
)
BUNDLES = Path(__file__).resolve().parents[2] / "bundles"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def phoenix(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    port = free_port()
    env = {**os.environ, "PHOENIX_HOST": "127.0.0.1", "PHOENIX_PORT": str(port),
           "PHOENIX_GRPC_PORT": str(free_port()), "PHOENIX_TELEMETRY_ENABLED": "false",
           "PHOENIX_WORKING_DIR": str(tmp_path_factory.mktemp("phoenix"))}
    log = tmp_path_factory.mktemp("phoenix-log") / "log.txt"
    with open(log, "wb") as out:
        process = subprocess.Popen([str(PHOENIX), "serve"], env=env, stdout=out,
                                   stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 180
        while True:
            try:
                if httpx.get(f"{url}/v1/projects", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"phoenix did not start:\n{log.read_text()[-2000:]}")
            time.sleep(1)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def test_phoenix_reads_the_spans_as_llm_tool_and_agent_spans(phoenix: str) -> None:
    names = ["autogen_agentchat-magentic_one", "autogen_agentchat-streaming_tool_error"]
    for name in names:
        assert main(["export", str(BUNDLES / name), "--otlp", phoenix, "--start-time",
                     "now"]) == 0
    expected = sum(len(load_bundle(BUNDLES / n).events) for n in names)
    spans: list[dict] = []
    for _ in range(30):  # ingestion is asynchronous
        spans = httpx.get(f"{phoenix}/v1/projects/default/spans?limit=1000",
                          timeout=10).json()["data"]
        if sum("symtrace.event_id" in s["attributes"] for s in spans) >= expected:
            break
        time.sleep(1)
    assert sum("symtrace.event_id" in s["attributes"] for s in spans) == expected
    kinds = Counter((s["name"].split(" ")[0], s["span_kind"]) for s in spans)
    assert kinds[("chat", "LLM")] > 0
    assert kinds[("execute_tool", "TOOL")] > 0
    assert kinds[("invoke_agent", "AGENT")] > 0
    chat = next(s for s in spans if s["name"].startswith("chat "))
    assert any(k.startswith("llm.input_messages.") for k in chat["attributes"])
    failed = {s["name"] for s in spans if s["status_code"] == "ERROR"}
    assert failed == {"tool_result lookup_order", "execute_tool lookup_order"}
    assert len({s["context"]["trace_id"] for s in spans}) == len(names)
