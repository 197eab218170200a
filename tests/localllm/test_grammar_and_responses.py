"""Decision grammar, ids and stream chunks (pure, no llama_cpp)."""

from __future__ import annotations

import pytest
from openai.types.chat import ChatCompletion, ChatCompletionChunk

from symtrace.localllm.chat_request import ToolChoice
from symtrace.localllm.grammar import decision_grammar, gbnf_literal, parse_decision
from symtrace.localllm.responses import (
    chat_completion,
    completion_id,
    request_digest,
    stream_chunks,
    tool_call_id,
    usage,
)

NAMES = ["get_weather", "add"]


def test_decision_grammar_per_choice() -> None:
    assert decision_grammar(NAMES, ToolChoice("auto")) == (
        'root ::= "message:" | "functions.get_weather:" | "functions.add:"\n'
    )
    assert decision_grammar(NAMES, ToolChoice("required")) == (
        'root ::= "functions.get_weather:" | "functions.add:"\n'
    )
    assert decision_grammar(NAMES, ToolChoice("function", "add")) == 'root ::= "functions.add:"\n'
    with pytest.raises(ValueError, match="not offered"):
        decision_grammar([], ToolChoice("required"))


def test_gbnf_literal_escapes() -> None:
    assert gbnf_literal('a"b\\c\n') == '"a\\"b\\\\c\\n"'


@pytest.mark.parametrize(
    ("text", "expected"),
    [("message", None), ("message:", None), ("functions.add", "add"),
     (" functions.get_weather:", "get_weather")],
)
def test_parse_decision(text: str, expected: str | None) -> None:
    assert parse_decision(text, NAMES, ToolChoice("auto")) == expected


def test_parse_decision_rejects_what_the_grammar_forbids() -> None:
    with pytest.raises(ValueError, match="none of"):
        parse_decision("message", NAMES, ToolChoice("required"))
    with pytest.raises(ValueError, match="none of"):
        parse_decision("functions.mul", NAMES, ToolChoice("auto"))


def test_ids_are_deterministic_and_distinct() -> None:
    a = request_digest([{"role": "user", "content": "x"}], [], ["auto", None], {"seed": 1})
    b = request_digest([{"role": "user", "content": "y"}], [], ["auto", None], {"seed": 1})
    assert a == request_digest([{"role": "user", "content": "x"}], [], ["auto", None],
                               {"seed": 1})
    assert completion_id(a) != completion_id(b)
    assert tool_call_id(a, 0) == tool_call_id(a, 0) != tool_call_id(a, 1)
    assert tool_call_id(a, 0).startswith("call_") and len(tool_call_id(a, 0)) == 29


def _tool_completion() -> dict:
    return chat_completion(request=request_digest([], [], [], {}), model="m", created=7,
                           content=None, tool_calls=[("add", '{"a": 1}')],
                           finish_reason="tool_calls", token_usage=usage(10, 5))


def test_completions_validate_as_openai_objects() -> None:
    parsed = ChatCompletion.model_validate(_tool_completion())
    call = parsed.choices[0].message.tool_calls[0]
    assert (call.function.name, call.function.arguments) == ("add", '{"a": 1}')
    assert parsed.choices[0].message.content is None
    assert parsed.usage.total_tokens == 15


def test_stream_chunks_carry_the_same_tool_call() -> None:
    completion = _tool_completion()
    chunks = [ChatCompletionChunk.model_validate(c) for c in stream_chunks(completion)]
    assert chunks[0].choices[0].delta.role == "assistant"
    call = chunks[1].choices[0].delta.tool_calls[0]
    assert (call.index, call.id, call.function.name, call.function.arguments) == (
        0, completion["choices"][0]["message"]["tool_calls"][0]["id"], "add", '{"a": 1}')
    assert chunks[-1].choices[0].finish_reason == "tool_calls"
    assert {c.id for c in chunks} == {completion["id"]}


def test_stream_chunks_for_text() -> None:
    completion = chat_completion(request="sha256:" + "0" * 64, model="m", created=1,
                                 content="hello", finish_reason="stop",
                                 token_usage=usage(1, 1))
    chunks = stream_chunks(completion)
    text = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks)
    assert text == "hello"
    assert chunks[-1]["choices"][0]["finish_reason"] == "stop"
