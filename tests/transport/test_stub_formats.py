"""The stub serves the OpenAI Responses and Anthropic messages formats as the real SDKs expect."""

from __future__ import annotations

import pytest

from symtrace.stub import StubLLM

SCRIPT = {"rules": [
    {"match": {"tool_result_present": True}, "reply": {"content": "Sunny in Lisbon."}},
    {"match": {"last_user_contains": "weather", "has_tools": True},
     "reply": {"tool_calls": [{"name": "get_weather", "arguments": {"city": "Lisbon"}}]}},
], "default": {"content": "Hello there."}}


def test_anthropic_messages_plain_stream_tools_and_errors():
    anthropic = pytest.importorskip("anthropic")
    with StubLLM(script=SCRIPT) as stub:
        client = anthropic.Anthropic(base_url=stub.root_url, api_key="k", max_retries=0)
        tool = {"name": "get_weather", "description": "weather",
                "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}}}
        first = client.messages.create(
            model="c", max_tokens=50, tools=[tool],
            messages=[{"role": "user", "content": "weather?"}])
        assert first.stop_reason == "tool_use"
        [use] = [b for b in first.content if b.type == "tool_use"]
        assert (use.name, use.input) == ("get_weather", {"city": "Lisbon"})
        with client.messages.stream(model="c", max_tokens=50, tools=[tool], messages=[
            {"role": "user", "content": "weather?"},
            {"role": "assistant", "content": [b.model_dump() for b in first.content]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": use.id, "content": "sunny"}]},
        ]) as stream:
            assert "".join(stream.text_stream) == "Sunny in Lisbon."
            assert stream.get_final_message().stop_reason == "end_turn"
        with pytest.raises(anthropic.BadRequestError, match="max_tokens"):
            client.post("/v1/messages", cast_to=object, body={"model": "c", "messages": []})
        assert stub.stats()["by_path"] == {"/v1/messages": 2}


def test_openai_responses_plain_stream_and_tools():
    openai = pytest.importorskip("openai")
    with StubLLM(script=SCRIPT) as stub:
        client = openai.OpenAI(base_url=stub.url, api_key="k", max_retries=0)
        assert client.responses.create(model="m", input="hi").output_text == "Hello there."
        tools = [{"type": "function", "name": "get_weather", "parameters": {"type": "object"}}]
        called = client.responses.create(model="m", input="weather?", tools=tools)
        [call] = [item for item in called.output if item.type == "function_call"]
        assert call.name == "get_weather"
        events = client.responses.create(model="m", stream=True, tools=tools, input=[
            {"role": "user", "content": "weather?"},
            {"type": "function_call", "call_id": call.call_id, "name": call.name,
             "arguments": call.arguments},
            {"type": "function_call_output", "call_id": call.call_id, "output": "sunny"}])
        kinds = [event.type for event in events]
        assert kinds[0] == "response.created" and kinds[-1] == "response.completed"
        assert stub.served == 3
