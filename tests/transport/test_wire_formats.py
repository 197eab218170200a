"""Provider wire formats: recognition, the chat-shaped view, stream assembly, echoed ids."""

from __future__ import annotations

import orjson
import pytest

from symtrace.model.llm_streams import assemble
from symtrace.model.llm_wire import (
    WireFormat,
    chat_messages,
    normalise_echoed_ids,
    reply_message,
    wire_format,
)
from symtrace.stub import formats
from symtrace.stub.reply import Reply, ToolCall


@pytest.mark.parametrize(("method", "path", "expected"), [
    ("POST", "/v1/chat/completions", WireFormat.CHAT),
    ("POST", "/openai/deployments/x/chat/completions", WireFormat.CHAT),
    ("POST", "/v1/completions", WireFormat.CHAT),
    ("POST", "/v1/responses", WireFormat.RESPONSES),
    ("POST", "/v1/messages", WireFormat.ANTHROPIC),
    ("GET", "/v1/chat/completions", None),
    ("POST", "/v1/responses/input_tokens", None),  # CrewAI's preflight: not a completion
    ("POST", "/v1/messages/count_tokens", None),
    ("POST", "/v1/threads/t_1/messages", None),  # Assistants API, not Anthropic
    ("POST", "/v1/embeddings", None),
])
def test_llm_requests_are_recognised_by_method_and_path(method, path, expected):
    assert wire_format(method, path) is expected


def request(path: str, body: dict) -> dict:
    return {"method": "POST", "path": path, "query": "", "body": body}


def test_responses_request_as_chat_messages():
    body = {"instructions": "be brief", "input": [
        {"role": "user", "content": [{"type": "input_text", "text": "weather?"}]},
        {"type": "function_call", "call_id": "call_9", "name": "get", "arguments": "{\"c\":1}"},
        {"type": "function_call_output", "call_id": "call_9", "output": "sunny"},
    ]}
    assert chat_messages(request("/v1/responses", body)) == [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "weather?"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_9", "type": "function",
             "function": {"name": "get", "arguments": "{\"c\":1}"}}]},
        {"role": "tool", "tool_call_id": "call_9", "content": "sunny"},
    ]
    assert chat_messages(request("/v1/responses", {"input": "hi"})) == [
        {"role": "user", "content": "hi"}]


def test_anthropic_request_as_chat_messages():
    body = {"system": [{"type": "text", "text": "terse"}], "max_tokens": 5, "messages": [
        {"role": "user", "content": "weather?"},
        {"role": "assistant", "content": [
            {"type": "text", "text": "checking"},
            {"type": "tool_use", "id": "toolu_1", "name": "get", "input": {"c": 1}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": "sunny"}]},
    ]}
    assert chat_messages(request("/v1/messages", body)) == [
        {"role": "system", "content": "terse"},
        {"role": "user", "content": "weather?"},
        {"role": "assistant", "content": "checking", "tool_calls": [
            {"id": "toolu_1", "type": "function",
             "function": {"name": "get", "arguments": "{\"c\":1}"}}]},
        {"role": "tool", "tool_call_id": "toolu_1", "content": "sunny"},
    ]


REPLY = Reply(content="It is sunny in Lisbon today.",
              tool_calls=(ToolCall("get_weather", "{\"city\": \"Lisbon\"}"),))
BODY = {"model": "m", "input": "weather?", "max_tokens": 10,
        "messages": [{"role": "user", "content": "weather?"}]}


@pytest.mark.parametrize(("fmt", "plain", "events"), [
    (WireFormat.RESPONSES, formats.response_object, formats.response_events),
    (WireFormat.ANTHROPIC, formats.anthropic_message, formats.anthropic_events),
])
def test_a_stream_assembles_to_the_reply_the_plain_response_carries(fmt, plain, events):
    text = b"".join(events(BODY, REPLY)).decode()
    assembled = assemble(fmt, text)
    streamed, direct = reply_message(assembled), reply_message(plain(BODY, REPLY))
    assert streamed["content"] == direct["content"] == REPLY.content
    strip = [{**c, "id": None} for c in direct["tool_calls"]]
    assert [{**c, "id": None} for c in streamed["tool_calls"]] == strip
    assert orjson.loads(strip[0]["function"]["arguments"]) == {"city": "Lisbon"}


def test_chat_stream_assembly_keeps_tool_call_fragments_together():
    from symtrace.stub import sse

    text = b"".join(sse.stream_events({"model": "m", "messages": []}, REPLY)).decode()
    message = reply_message(assemble(WireFormat.CHAT, text))
    assert message["content"] == REPLY.content
    assert message["tool_calls"][0]["function"] == {
        "name": "get_weather", "arguments": "{\"city\": \"Lisbon\"}"}


@pytest.mark.parametrize(("path", "body", "echoed"), [
    ("/v1/chat/completions", {"messages": [
        {"role": "assistant", "tool_calls": [{"id": "call_x", "function": {}}]},
        {"role": "tool", "tool_call_id": "call_x", "content": "r"}]},
     lambda b: (b["messages"][0]["tool_calls"][0]["id"], b["messages"][1]["tool_call_id"])),
    ("/v1/responses", {"input": [
        {"type": "function_call", "call_id": "call_x", "name": "f", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "call_x", "output": "r"}]},
     lambda b: (b["input"][0]["call_id"], b["input"][1]["call_id"])),
    ("/v1/messages", {"messages": [
        {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_x", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_x"}]}]},
     lambda b: (b["messages"][0]["content"][0]["id"],
                b["messages"][1]["content"][0]["tool_use_id"])),
])
def test_echoed_provider_ids_become_ordinals_in_every_format(path, body, echoed):
    normal = normalise_echoed_ids(request(path, body))["body"]
    assert echoed(normal) == ("call#0", "call#0")
