"""The stub LLM over real HTTP, through the real openai SDK and httpx (no mocks)."""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any

import httpx
import openai
import pytest

from symtrace.stub import ScriptError, StubLLM
from symtrace.testing import pytest_plugin

# Bound here too so these tests run whether or not the pytest11 entry point is installed.
stub_llm = pytest_plugin.stub_llm
stub_llm_factory = pytest_plugin.stub_llm_factory

WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather for a city",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
            "required": ["city"],
        },
    },
}
TIME_TOOL = {
    "type": "function",
    "function": {
        "name": "get_time",
        "parameters": {"type": "object", "properties": {"tz": {"type": "string"}}},
    },
}

SCRIPT: dict[str, Any] = {
    "rules": [
        {"match": {"last_user_contains": "boom"}, "reply": {"status": 500, "error": "kaboom"}},
        {"match": {"last_user_contains": "slow down"}, "reply": {"status": 429, "error": "rate"}},
        {
            "match": {"last_user_contains": "weather", "tool_result_present": True},
            "reply": {"content": "It is sunny in Paris. TERMINATE"},
        },
        {
            "match": {"last_user_contains": "weather", "has_tools": True},
            "reply": {"tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}}]},
        },
        {
            "match": {"last_user_contains": "both"},
            "reply": {
                "tool_calls": [
                    {"name": "get_weather", "arguments": {"city": "Rome", "days": 2}},
                    {"name": "get_time", "arguments": {"tz": "Europe/Rome"}},
                ]
            },
        },
        {"match": {"agent": "You are the critic"}, "reply": {"content": "critic says no"}},
        {"match": {"call_index": 0}, "reply": {"content": "first call"}},
    ],
    "default": {"content": "Hello from the stub, this reply is long enough to be split up."},
}


def client(stub: StubLLM) -> openai.OpenAI:
    return openai.OpenAI(base_url=stub.url, api_key="stub-key", max_retries=0)


def user(text: str) -> list[dict[str, Any]]:
    return [{"role": "user", "content": text}]


@pytest.fixture
def scripted() -> Any:
    with StubLLM(mode="scripted", script=SCRIPT) as stub:
        yield stub


def test_scripted_text_reply_is_a_real_chat_completion(scripted: StubLLM) -> None:
    c = client(scripted)
    first = c.chat.completions.create(model="gpt-4o-mini", messages=user("hi"))
    assert first.choices[0].message.content == "first call"  # call_index 0
    resp = c.chat.completions.create(model="gpt-4o-mini", messages=user("hi"))
    assert resp.object == "chat.completion"
    assert resp.id.startswith("chatcmpl-") and resp.id != first.id
    assert resp.model == "gpt-4o-mini"
    assert resp.choices[0].finish_reason == "stop"
    assert resp.choices[0].message.role == "assistant"
    assert resp.choices[0].message.content == SCRIPT["default"]["content"]
    assert resp.usage is not None and resp.usage.total_tokens > 0
    assert scripted.served == 2
    assert scripted.requests[1]["messages"] == user("hi")


def test_scripted_tool_call_round_trip(scripted: StubLLM) -> None:
    c = client(scripted)
    messages: list[Any] = user("What is the weather in Paris?")
    resp = c.chat.completions.create(model="m", messages=messages, tools=[WEATHER_TOOL])
    choice = resp.choices[0]
    assert choice.finish_reason == "tool_calls"
    (call,) = choice.message.tool_calls or []
    assert call.id.startswith("call_") and call.function.name == "get_weather"
    assert json.loads(call.function.arguments) == {"city": "Paris"}
    messages.append(choice.message.model_dump(exclude_none=True))
    messages.append({"role": "tool", "tool_call_id": call.id, "content": "sunny, 24C"})
    final = c.chat.completions.create(model="m", messages=messages, tools=[WEATHER_TOOL])
    assert final.choices[0].message.content == "It is sunny in Paris. TERMINATE"
    assert scripted.requests[1]["messages"][-1]["tool_call_id"] == call.id


def test_tool_call_ids_are_fresh_per_response(scripted: StubLLM) -> None:
    c = client(scripted)
    ids = set()
    for _ in range(3):
        resp = c.chat.completions.create(model="m", messages=user("weather?"), tools=[WEATHER_TOOL])
        ids.add((resp.choices[0].message.tool_calls or [])[0].id)
    assert len(ids) == 3


def test_parallel_tool_calls(scripted: StubLLM) -> None:
    resp = client(scripted).chat.completions.create(
        model="m", messages=user("do both"), tools=[WEATHER_TOOL, TIME_TOOL]
    )
    calls = resp.choices[0].message.tool_calls or []
    assert [c.function.name for c in calls] == ["get_weather", "get_time"]
    assert json.loads(calls[0].function.arguments) == {"city": "Rome", "days": 2}
    assert len({c.id for c in calls}) == 2


def test_agent_match_uses_system_message(scripted: StubLLM) -> None:
    scripted.reset()
    client(scripted).chat.completions.create(model="m", messages=user("warm up"))
    messages = [{"role": "system", "content": "You are the critic."}, *user("review this")]
    resp = client(scripted).chat.completions.create(model="m", messages=messages)
    assert resp.choices[0].message.content == "critic says no"


def test_streaming_text_is_real_sse(scripted: StubLLM) -> None:
    stream = client(scripted).chat.completions.create(
        model="m",
        messages=user("hello there"),
        stream=True,
        stream_options={"include_usage": True},
    )
    chunks = list(stream)
    assert chunks[0].choices[0].delta.role == "assistant"
    pieces = [
        c.choices[0].delta.content for c in chunks if c.choices and c.choices[0].delta.content
    ]
    assert len(pieces) >= 3
    assert "".join(pieces) in ("first call", SCRIPT["default"]["content"])
    finals = [c.choices[0].finish_reason for c in chunks if c.choices]
    assert finals[-1] == "stop" and finals.count("stop") == 1
    assert chunks[-1].choices == [] and chunks[-1].usage is not None
    assert len({c.id for c in chunks}) == 1


def test_raw_sse_framing_ends_with_done(scripted: StubLLM) -> None:
    body = {"model": "m", "messages": user("hello"), "stream": True}
    with httpx.stream("POST", f"{scripted.url}/chat/completions", json=body) as resp:
        assert resp.headers["content-type"].startswith("text/event-stream")
        lines = [line for line in resp.iter_lines() if line]
    assert all(line.startswith("data: ") for line in lines)
    assert lines[-1] == "data: [DONE]"
    assert json.loads(lines[0][6:])["object"] == "chat.completion.chunk"


def test_streaming_tool_calls_reassembled_by_the_sdk(scripted: StubLLM) -> None:
    with client(scripted).chat.completions.stream(
        model="m", messages=user("do both"), tools=[WEATHER_TOOL, TIME_TOOL]
    ) as stream:
        final = stream.get_final_completion()
    calls = final.choices[0].message.tool_calls or []
    assert final.choices[0].finish_reason == "tool_calls"
    assert [c.function.name for c in calls] == ["get_weather", "get_time"]
    assert json.loads(calls[0].function.arguments) == {"city": "Rome", "days": 2}
    assert json.loads(calls[1].function.arguments) == {"tz": "Europe/Rome"}
    assert all(c.id.startswith("call_") for c in calls)


def test_streaming_tool_call_arguments_arrive_in_pieces(scripted: StubLLM) -> None:
    stream = client(scripted).chat.completions.create(
        model="m", messages=user("weather please"), tools=[WEATHER_TOOL], stream=True
    )
    deltas = [c.choices[0].delta.tool_calls for c in stream if c.choices[0].delta.tool_calls]
    assert deltas[0][0].id and deltas[0][0].function.name == "get_weather"
    pieces = [d[0].function.arguments for d in deltas if d[0].function.arguments]
    assert len(pieces) > 1 and json.loads("".join(pieces)) == {"city": "Paris"}


def test_async_client_concurrent_and_streaming(scripted: StubLLM) -> None:
    async def main() -> tuple[list[str], str]:
        ac = openai.AsyncOpenAI(base_url=scripted.url, api_key="k", max_retries=0)
        async with ac:
            results = await asyncio.gather(
                *[ac.chat.completions.create(model="m", messages=user(f"q{i}")) for i in range(8)]
            )
            stream = await ac.chat.completions.create(model="m", messages=user("s"), stream=True)
            text = "".join([c.choices[0].delta.content or "" async for c in stream])
        return [r.choices[0].message.content or "" for r in results], text

    contents, text = asyncio.run(main())
    assert len(contents) == 8 and text == SCRIPT["default"]["content"]
    assert scripted.served == 9


def test_concurrent_threads_counted_exactly(stub_llm: StubLLM) -> None:
    errors: list[BaseException] = []

    def worker() -> None:
        try:
            c = client(stub_llm)
            for i in range(5):
                c.chat.completions.create(model="m", messages=user(f"question {i}"))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert errors == []
    assert stub_llm.served == 40 and len(stub_llm.requests) == 40
    stats = httpx.get(f"{stub_llm.root_url}/_stub/stats").json()
    assert stats["served"] == 40 and stats["by_path"] == {"/v1/chat/completions": 40}


def test_error_rules_raise_sdk_errors(scripted: StubLLM) -> None:
    c = client(scripted)
    with pytest.raises(openai.InternalServerError) as info:
        c.chat.completions.create(model="m", messages=user("boom"))
    assert info.value.status_code == 500 and "kaboom" in str(info.value)
    assert info.value.body["message"] == "kaboom"  # type: ignore[index]
    with pytest.raises(openai.RateLimitError):
        c.chat.completions.create(model="m", messages=user("slow down"))
    assert scripted.served == 2


def test_stats_reset_and_unprefixed_path(scripted: StubLLM) -> None:
    body = {"model": "m", "messages": user("x")}
    assert httpx.post(f"{scripted.root_url}/chat/completions", json=body).status_code == 200
    assert httpx.post(f"{scripted.url}/chat/completions", json=body).status_code == 200
    stats = httpx.get(f"{scripted.root_url}/_stub/stats").json()
    assert stats["served"] == 2
    assert stats["by_path"] == {"/chat/completions": 1, "/v1/chat/completions": 1}
    assert httpx.post(f"{scripted.root_url}/_stub/reset").json() == {"ok": True}
    assert httpx.get(f"{scripted.root_url}/_stub/stats").json()["served"] == 0
    assert scripted.served == 0 and scripted.requests == []


def test_malformed_body_and_unknown_path(scripted: StubLLM) -> None:
    url = f"{scripted.url}/chat/completions"
    bad = httpx.post(url, content=b"{not json", headers={"content-type": "application/json"})
    assert bad.status_code == 400 and "not valid JSON" in bad.json()["error"]["message"]
    assert httpx.post(url, json=[1, 2]).status_code == 400
    assert httpx.post(url, json={"model": "m"}).status_code == 400  # no messages
    too_many = httpx.post(url, json={"model": "m", "messages": user("x"), "n": 2})
    assert too_many.status_code == 400
    assert httpx.get(f"{scripted.url}/nope").status_code == 404
    missing = httpx.post(f"{scripted.url}/completions", json={})
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "unknown_url"
    with pytest.raises(openai.BadRequestError):
        client(scripted).chat.completions.create(model="m", messages=user("x"), n=3)
    assert scripted.served == 0


def test_no_default_echoes(stub_llm_factory: Any) -> None:
    stub = stub_llm_factory(script={"rules": []})
    resp = client(stub).chat.completions.create(model="m", messages=user("ping 42"))
    assert "ping 42" in (resp.choices[0].message.content or "")


def test_bad_scripts_are_errors(tmp_path: Any) -> None:
    with pytest.raises(ScriptError, match="unknown key 'last_user_has'"):
        StubLLM(script={"rules": [{"match": {"last_user_has": "x"}, "reply": {"content": "y"}}]})
    with pytest.raises(ScriptError, match="has_tools must be a bool"):
        StubLLM(script={"rules": [{"match": {"has_tools": "yes"}, "reply": {"content": "y"}}]})
    with pytest.raises(ScriptError, match="needs 'content'"):
        StubLLM(script={"rules": [{"reply": {}}]})
    with pytest.raises(ScriptError, match="status"):
        StubLLM(script={"default": {"status": 200, "error": "x"}})
    with pytest.raises(ScriptError, match="not found"):
        StubLLM(script=tmp_path / "missing.json")
    broken = tmp_path / "broken.json"
    broken.write_text("{rules: [")
    with pytest.raises(ScriptError, match="not valid JSON"):
        StubLLM(mode="scripted", script=str(broken))
    with pytest.raises(ValueError, match="only used in scripted mode"):
        StubLLM(mode="stochastic", script={"rules": []})


def test_script_file_is_loaded(tmp_path: Any) -> None:
    path = tmp_path / "script.json"
    path.write_text(json.dumps({"default": {"content": "from file"}}))
    with StubLLM(script=path) as stub:
        resp = client(stub).chat.completions.create(model="m", messages=user("x"))
    assert stub.mode == "scripted" and resp.choices[0].message.content == "from file"


def test_non_loopback_host_refused() -> None:
    for host in ("0.0.0.0", "192.168.1.10", "example.com", "::"):
        with pytest.raises(ValueError, match="loopback"):
            StubLLM(host=host)


def test_lifecycle_stop_is_idempotent_and_closes() -> None:
    stub = StubLLM().start()
    assert stub.start() is stub and stub.running
    c = client(stub)
    c.chat.completions.create(model="m", messages=user("x"))
    url = stub.url
    stub.stop()
    stub.stop()
    assert not stub.running
    with pytest.raises(httpx.TransportError):
        httpx.post(f"{url}/chat/completions", json={"model": "m", "messages": user("x")})
    with pytest.raises(openai.APIConnectionError):
        c.chat.completions.create(model="m", messages=user("x"))


def test_models_endpoint(stub_llm: StubLLM) -> None:
    assert [m.id for m in client(stub_llm).models.list()] == ["stub"]


def test_fixtures(stub_llm: StubLLM, stub_llm_factory: Any) -> None:
    assert stub_llm.running and stub_llm.mode == "stochastic" and stub_llm.seed is None
    assert stub_llm.url.endswith("/v1")
    seeded = stub_llm_factory(seed=7)
    scripted_stub = stub_llm_factory(mode="scripted", script={"default": {"content": "ok"}})
    assert seeded.seed == 7 and seeded.port != stub_llm.port
    resp = client(scripted_stub).chat.completions.create(model="m", messages=user("x"))
    assert resp.choices[0].message.content == "ok"
