"""Stochastic mode: sampling-like variety, seeded reproducibility, schema-valid outputs."""

from __future__ import annotations

import json
import random
from typing import Any

import openai
import pytest

from symtrace.stub import StochasticConfig, StochasticResponder, StubLLM
from symtrace.stub.schema import generate

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"type": "string"},
                    "days": {"type": "integer", "minimum": 1, "maximum": 7},
                    "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
                    "detailed": {"type": "boolean"},
                },
                "required": ["city", "days", "unit"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "search",
            "parameters": {
                "type": "object",
                "properties": {
                    "query": {"type": "string", "minLength": 3},
                    "limit": {"type": "number", "minimum": 0.5, "maximum": 2.5},
                },
                "required": ["query"],
            },
        },
    },
]
QUESTION = [{"role": "user", "content": "What is the weather in Paris this weekend?"}]


def client(stub: StubLLM) -> openai.OpenAI:
    return openai.OpenAI(base_url=stub.url, api_key="stub-key", max_retries=0)


def answer(c: openai.OpenAI, **kwargs: Any) -> tuple[Any, ...]:
    kwargs.setdefault("messages", QUESTION)
    resp = c.chat.completions.create(model="m", **kwargs)
    msg = resp.choices[0].message
    calls = tuple((t.function.name, t.function.arguments) for t in msg.tool_calls or [])
    return msg.content, calls, resp.choices[0].finish_reason


def check_weather_args(args: dict[str, Any]) -> None:
    assert isinstance(args["city"], str) and args["city"]
    assert isinstance(args["days"], int) and 1 <= args["days"] <= 7
    assert args["unit"] in ("celsius", "fahrenheit")
    assert isinstance(args.get("detailed", False), bool)


def test_unseeded_identical_requests_vary() -> None:
    with StubLLM() as stub:
        c = client(stub)
        answers = [answer(c, tools=TOOLS) for _ in range(10)]
        texts = [answer(c) for _ in range(10)]
    assert len(set(answers)) >= 4
    assert len(set(texts)) >= 5
    assert all(content and finish == "stop" for content, _, finish in texts)
    assert any("paris" in (content or "").lower() for content, _, _ in texts)


def test_seeded_servers_give_identical_sequences() -> None:
    def run(seed: int) -> list[tuple[Any, ...]]:
        with StubLLM(seed=seed) as stub:
            c = client(stub)
            return [answer(c, tools=TOOLS if i % 2 else None) for i in range(8)]

    first, second = run(11), run(11)
    assert first == second
    assert run(12) != first


def test_reset_restarts_a_seeded_sequence() -> None:
    with StubLLM(seed=5) as stub:
        c = client(stub)
        before = [answer(c, tools=TOOLS) for _ in range(4)]
        stub.reset()
        assert [answer(c, tools=TOOLS) for _ in range(4)] == before


def test_tool_calls_satisfy_the_schema() -> None:
    names = set()
    with StubLLM(tool_probability=1.0) as stub:
        c = client(stub)
        for _ in range(15):
            _, calls, finish = answer(c, tools=TOOLS)
            assert calls and finish == "tool_calls" and len(calls) <= 2
            assert len({name for name, _ in calls}) == len(calls)
            for name, raw in calls:
                names.add(name)
                args = json.loads(raw)
                if name == "get_weather":
                    check_weather_args(args)
                else:
                    assert len(args["query"]) >= 3
                    assert 0.5 <= args.get("limit", 1) <= 2.5
    assert names == {"get_weather", "search"}


def test_tool_choice_is_respected() -> None:
    with StubLLM(tool_probability=0.0) as stub:
        c = client(stub)
        assert answer(c, tools=TOOLS)[1] == ()
        _, calls, _ = answer(c, tools=TOOLS, tool_choice="required")
        assert calls
        named = {"type": "function", "function": {"name": "search"}}
        assert [n for n, _ in answer(c, tools=TOOLS, tool_choice=named)[1]] == ["search"]
    with StubLLM(tool_probability=1.0) as stub:
        c = client(stub)
        assert answer(c, tools=TOOLS, tool_choice="none")[1] == ()
        for _ in range(5):
            assert len(answer(c, tools=TOOLS, parallel_tool_calls=False)[1]) == 1


def test_agent_loops_terminate() -> None:
    """After a tool result a text answer becomes likely, so tool loops end."""
    with StubLLM() as stub:
        c = client(stub)
        for _ in range(6):
            messages: list[Any] = list(QUESTION)
            for _step in range(30):
                resp = c.chat.completions.create(model="m", messages=messages, tools=TOOLS)
                msg = resp.choices[0].message
                if not msg.tool_calls:
                    assert msg.content
                    break
                messages.append(msg.model_dump(exclude_none=True))
                for call in msg.tool_calls:
                    messages.append({"role": "tool", "tool_call_id": call.id, "content": "42"})
            else:
                pytest.fail("agent loop did not terminate")


def test_after_tool_result_tool_calls_are_rarer() -> None:
    body = {
        "messages": [
            *QUESTION,
            {"role": "assistant", "content": None, "tool_calls": []},
            {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
        ],
        "tools": TOOLS,
    }
    responder = StochasticResponder(seed=3)
    replies = [responder.respond(body, i) for i in range(400)]
    rate = sum(bool(r.tool_calls) for r in replies) / len(replies)
    assert 0.15 < rate < 0.35
    fresh = [responder.respond({"messages": QUESTION, "tools": TOOLS}, i) for i in range(400)]
    assert sum(bool(r.tool_calls) for r in fresh) / 400 > 0.45


def test_terminate_probability() -> None:
    always = StochasticResponder(seed=1, config=StochasticConfig(terminate_probability=1.0))
    never = StochasticResponder(seed=1, config=StochasticConfig(terminate_probability=0.0))
    default = StochasticResponder(seed=1)
    body = {"messages": QUESTION}
    assert all((always.respond(body, i).content or "").endswith("TERMINATE") for i in range(20))
    assert not any("TERMINATE" in (never.respond(body, i).content or "") for i in range(20))
    hits = sum("TERMINATE" in (default.respond(body, i).content or "") for i in range(300))
    assert 50 < hits < 130
    with pytest.raises(ValueError):
        StochasticConfig(terminate_probability=1.5)


def test_temperature_zero_with_request_seed_is_deterministic() -> None:
    kwargs: dict[str, Any] = {"tools": TOOLS, "temperature": 0, "seed": 42}
    with StubLLM() as one, StubLLM() as two:
        a = [answer(client(one), **kwargs) for _ in range(3)]
        b = answer(client(two), **kwargs)
        # streamed and non-streamed requests get the same answer
        stream = client(two).chat.completions.stream(model="m", messages=QUESTION, **kwargs)
        with stream as s:
            final = s.get_final_completion().choices[0].message
        others = {answer(client(one), **{**kwargs, "seed": s}) for s in range(5)}
    assert a[0] == a[1] == a[2] == b
    streamed = tuple((t.function.name, t.function.arguments) for t in final.tool_calls or [])
    assert (final.content, streamed) == a[0][:2]
    assert len(others) > 1


def test_response_format_json_schema_and_object() -> None:
    schema = {
        "type": "object",
        "properties": {
            "title": {"type": "string"},
            "score": {"type": "integer", "minimum": 0, "maximum": 10},
            "tags": {"type": "array", "items": {"type": "string"}},
            "meta": {"$ref": "#/$defs/Meta"},
        },
        "required": ["title", "score", "tags", "meta"],
        "additionalProperties": False,
        "$defs": {
            "Meta": {
                "type": "object",
                "properties": {"ok": {"type": "boolean"}, "when": {"format": "date"}},
                "required": ["ok", "when"],
            }
        },
    }
    fmt = {"type": "json_schema", "json_schema": {"name": "r", "schema": schema, "strict": True}}
    with StubLLM() as stub:
        c = client(stub)
        for _ in range(5):
            content, _, _ = answer(c, response_format=fmt)
            value = json.loads(content)
            assert isinstance(value["title"], str) and 0 <= value["score"] <= 10
            assert isinstance(value["tags"], list) and all(
                isinstance(t, str) for t in value["tags"]
            )
            assert isinstance(value["meta"]["ok"], bool) and len(value["meta"]["when"]) == 10
        content, _, _ = answer(c, response_format={"type": "json_object"})
        assert isinstance(json.loads(content), dict)


def test_schema_generator_edge_cases() -> None:
    rng = random.Random(0)
    assert generate({"const": 3}, rng) == 3
    assert generate({"type": ["null", "integer"], "maximum": -5}, rng) <= -5
    assert generate({"anyOf": [{"type": "null"}, {"type": "boolean"}]}, rng) in (True, False)
    assert len(generate({"type": "string", "maxLength": 4}, rng)) <= 4
    value = generate({"type": "array", "items": {"type": "integer"}, "minItems": 3}, rng)
    assert len(value) >= 3 and all(isinstance(v, int) for v in value)
    assert generate({"type": "integer", "exclusiveMinimum": 0, "exclusiveMaximum": 2}, rng) == 1
    deep: dict[str, Any] = {"$ref": "#"}
    assert isinstance(generate({"type": "object", "properties": {"x": deep}}, rng), dict)
    merged = {"allOf": [{"properties": {"a": {"type": "integer"}}, "required": ["a"]}]}
    assert isinstance(generate(merged, rng)["a"], int)
