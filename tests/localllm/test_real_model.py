"""The chatml-tools server with the real SmolLM2-135M model (marker ``localmodel``).

Structure and reproducibility only, never answer quality: a 135M model answers badly.
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

import symtrace
from symtrace.localllm import LocalLLM, LocalLLMStartError

pytestmark = pytest.mark.localmodel

SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
TOOLS = [{"type": "function", "function": {
    "name": "get_weather", "description": "Current weather of a city", "parameters": SCHEMA}}]
ASK = [{"role": "system", "content": "You report the weather. Use the tools."},
       {"role": "user", "content": "What is the weather in Paris?"}]


def _alive(pid: int) -> bool:
    """Running (a zombie waiting for a non-reaping PID 1 counts as gone)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def chat(llm: LocalLLM, **body: Any) -> httpx.Response:
    body.setdefault("model", "smollm2-135m")
    body.setdefault("temperature", 0)
    return httpx.post(f"{llm.url}/chat/completions", json=body, timeout=120, trust_env=False)


@pytest.mark.parametrize(
    "tool_choice",
    [None, {"type": "function", "function": {"name": "get_weather"}}],
    ids=["absent-as-AG2-sends-it", "forced"],
)
def test_tool_request_gives_a_schema_valid_call(local_llm: LocalLLM, tool_choice: Any) -> None:
    extra = {"tool_choice": tool_choice} if tool_choice else {}
    response = chat(local_llm, messages=ASK, tools=TOOLS, **extra)
    assert response.status_code == 200, response.text
    choice = response.json()["choices"][0]
    assert choice["finish_reason"] == "tool_calls"
    (call,) = choice["message"]["tool_calls"]
    assert call["function"]["name"] == "get_weather"
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.validate(json.loads(call["function"]["arguments"]), SCHEMA)


def test_tool_result_turn_with_null_content_is_answered(local_llm: LocalLLM) -> None:
    # What AG2 and CrewAI send back after the tool ran: HTTP 500 on the stock server.
    messages = [*ASK,
                {"role": "assistant", "content": None, "tool_calls": [
                    {"id": "call_1", "type": "function",
                     "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}]},
                {"role": "tool", "tool_call_id": "call_1", "content": "Paris: sunny, 21 C"}]
    response = chat(local_llm, messages=messages, tools=TOOLS, tool_choice="auto",
                    max_tokens=48)
    assert response.status_code == 200, response.text
    message = response.json()["choices"][0]["message"]
    assert message["content"] or message.get("tool_calls")


def test_temperature_zero_is_reproducible(local_llm: LocalLLM) -> None:
    first = chat(local_llm, messages=ASK, tools=TOOLS).json()
    second = chat(local_llm, messages=ASK, tools=TOOLS).json()
    plain = [chat(local_llm, messages=ASK, max_tokens=24).json() for _ in range(2)]
    assert first["choices"] == second["choices"]  # tool-call ids included
    assert first["id"] == second["id"]
    assert plain[0]["choices"] == plain[1]["choices"]
    assert plain[0]["choices"][0]["message"]["content"]


def test_streaming_request_gets_the_same_tool_call(local_llm: LocalLLM) -> None:
    from openai import OpenAI

    client = OpenAI(base_url=local_llm.url, api_key="x", max_retries=0)
    stream = client.chat.completions.create(model="m", messages=ASK, tools=TOOLS,
                                            temperature=0, stream=True)
    calls = [c for chunk in stream for c in chunk.choices[0].delta.tool_calls or []]
    whole = chat(local_llm, messages=ASK, tools=TOOLS).json()
    expected = whole["choices"][0]["message"]["tool_calls"][0]
    assert [(c.id, c.function.name, c.function.arguments) for c in calls] == [
        (expected["id"], expected["function"]["name"], expected["function"]["arguments"])]


def test_bad_tool_choice_is_http_400(local_llm: LocalLLM) -> None:
    response = chat(local_llm, messages=ASK, tools=TOOLS,
                    tool_choice={"type": "function", "function": {"name": "nope"}})
    assert response.status_code == 400, response.text
    assert response.json()["error"]["type"] == "invalid_request_error"
    assert "not among the tools" in response.json()["error"]["message"]


def test_ag2_run_records_and_strict_replays_without_the_model(
    local_llm: LocalLLM, programs_on_path: Path, monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    pytest.importorskip("autogen")
    for name, value in local_llm.env().items():
        monkeypatch.setenv(name, value)
    spec = importlib.util.spec_from_file_location("localllm_ag2_tool",
                                                  programs_on_path / "ag2_tool.py")
    program = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(program)
    import local_common

    before = local_llm.served
    with symtrace.record(tmp_path / "b", task="weather", adapters=["ag2"], seed=1):
        program.main()
    recorded = capsys.readouterr().out
    served = local_llm.served - before
    summary = json.loads(recorded.split("SUMMARY ", 1)[1])
    assert summary["tool_calls"] and summary["tool_calls"][0][0] == "get_weather"
    assert summary["tool_results"] >= 1 and served >= 2  # the model saw the tool result
    runs = len(local_common.TOOL_RUNS)

    with symtrace.replay(tmp_path / "b", adapters=["ag2"]):
        program.main()
    assert capsys.readouterr().out == recorded
    assert local_llm.served - before == served, "strict replay reached the model"
    assert len(local_common.TOOL_RUNS) == runs, "a tool body ran during replay"


@pytest.mark.usefixtures("local_model_installed")
def test_cli_serves_until_sigint(tmp_path: Path) -> None:
    port_file = tmp_path / "port"
    proc = subprocess.Popen([sys.executable, "-m", "symtrace", "local-llm",
                             "--port-file", str(port_file)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        assert line.startswith("local-llm listening on http://127.0.0.1:"), proc.stderr.read()
        url = line.split()[-1]
        assert url == f"http://127.0.0.1:{port_file.read_text().strip()}/v1"
        assert httpx.get(f"{url}/models", trust_env=False).json()["data"][0]["id"]
    finally:
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=30) == 0


@pytest.mark.usefixtures("local_model_installed")
def test_model_that_cannot_load_is_a_start_error(tmp_path: Path) -> None:
    garbage = tmp_path / "broken.gguf"
    garbage.write_bytes(b"not a gguf file" * 100)
    llm = LocalLLM(model_path=garbage)
    with pytest.raises(LocalLLMStartError) as info:
        llm.start()
    assert info.value.returncode not in (None, 0)
    assert info.value.stderr_tail
    assert not llm.running


@pytest.mark.usefixtures("local_model_installed")
def test_server_exits_when_its_parent_dies(tmp_path: Path) -> None:
    # The parent starts a server and is SIGKILLed: the orphan must not keep serving.
    pid_file = tmp_path / "pid"
    parent = subprocess.Popen([sys.executable, "-c", (
        "import pathlib, sys, time\n"
        "from symtrace.localllm import LocalLLM\n"
        "llm = LocalLLM().start()\n"
        f"pathlib.Path({str(pid_file)!r}).write_text(str(llm.pid))\n"
        "time.sleep(60)\n")])
    try:
        for _ in range(600):
            if pid_file.exists() and pid_file.read_text():
                break
            assert parent.poll() is None
            time.sleep(0.1)
        child = int(pid_file.read_text())
    finally:
        parent.kill()
        parent.wait()
    for _ in range(100):
        if not _alive(child):
            return
        time.sleep(0.1)
    os.kill(child, signal.SIGKILL)
    pytest.fail("the server outlived its parent by 10 s")
