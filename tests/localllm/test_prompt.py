"""ChatML rendering of the chatml-tools format (pure, no llama_cpp)."""

from __future__ import annotations

import pytest

from symtrace.localllm.chat_request import InvalidChatRequest, ToolChoice, normalise_tools
from symtrace.localllm.prompt import render_prompt

TOOLS = normalise_tools([{"type": "function", "function": {
    "name": "get_weather", "description": "Weather of a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}])

# What AG2 and CrewAI send after a tool ran: assistant content null, then a tool turn.
TOOL_ROUND = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "Weather in Lisbon?"},
    {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_1", "type": "function",
         "function": {"name": "get_weather", "arguments": '{"city": "Lisbon"}'}}]},
    {"role": "tool", "tool_call_id": "call_1", "content": "sunny, 24 C"},
]


def test_tool_round_renders_exactly() -> None:
    assert render_prompt(TOOL_ROUND, TOOLS, ToolChoice("auto")) == (
        "<|im_start|>system\nBe brief.\n\n"
        "You have access to the following functions:\n\n"
        "functions.get_weather:\n"
        "description: Weather of a city\n"
        'parameters: {"properties":{"city":{"type":"string"}},"type":"object"}\n\n'
        "To call a function, reply with its name and JSON arguments:\n"
        "functions.<function_name>:\n"
        '{"arg1": "value1"}\n\n'
        "To answer the user, reply with:\n"
        "message:\n"
        "<your answer>\n\n"
        "A tool turn holds the result of your last call: use it to answer the user.<|im_end|>\n"
        "<|im_start|>user\nWeather in Lisbon?<|im_end|>\n"
        '<|im_start|>assistant\nfunctions.get_weather:\n{"city": "Lisbon"}<|im_end|>\n'
        "<|im_start|>tool\nsunny, 24 C<|im_end|>\n"
        "<|im_start|>assistant\n"
    )


def test_no_tools_renders_plain_chatml() -> None:
    messages = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"},
                {"role": "user", "content": "bye"}]
    assert render_prompt(messages, [], ToolChoice("none")) == (
        "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\nhello<|im_end|>\n"
        "<|im_start|>user\nbye<|im_end|>\n<|im_start|>assistant\n"
    )


def test_tool_choice_none_hides_the_tools_but_keeps_the_history() -> None:
    prompt = render_prompt(TOOL_ROUND, TOOLS, ToolChoice("none"))
    assert "You have access" not in prompt
    assert 'functions.get_weather:\n{"city": "Lisbon"}' in prompt
    assert "<|im_start|>tool\nsunny, 24 C<|im_end|>" in prompt


def test_past_text_replies_use_the_message_shape_when_tools_are_offered() -> None:
    messages = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    assert "<|im_start|>assistant\nmessage:\nhello<|im_end|>" in render_prompt(
        messages, TOOLS, ToolChoice("auto"))


def test_default_system_prompt_is_added_for_tools() -> None:
    prompt = render_prompt([{"role": "user", "content": "x"}], TOOLS, ToolChoice("required"))
    assert prompt.startswith("<|im_start|>system\nYou are a helpful assistant.\n\nYou have")
    assert "To answer the user" not in prompt  # required: a call is the only option


def test_forced_function_lists_only_that_tool() -> None:
    tools = normalise_tools([*TOOLS, {"type": "function", "function": {"name": "other"}}])
    prompt = render_prompt([{"role": "user", "content": "x"}], tools,
                           ToolChoice("function", "get_weather"))
    assert "functions.get_weather:" in prompt
    assert "functions.other:" not in prompt


def test_content_parts_legacy_calls_and_object_arguments() -> None:
    messages = [
        {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
        {"role": "assistant", "content": "", "function_call": {"name": "f", "arguments": {"x": 1}}},
        {"role": "function", "name": "f", "content": "2"},
    ]
    prompt = render_prompt(messages, [], ToolChoice("none"))
    assert "<|im_start|>user\nab<|im_end|>" in prompt
    assert '<|im_start|>assistant\nfunctions.f:\n{"x":1}<|im_end|>' in prompt
    assert "<|im_start|>tool\n2<|im_end|>" in prompt


@pytest.mark.parametrize(
    ("message", "fragment"),
    [
        ({"role": "user", "content": [{"type": "image_url", "image_url": "x"}]}, "image_url"),
        ({"role": "critic", "content": "x"}, "role 'critic'"),
        ({"role": "user", "content": 3}, "content must be"),
        ({"role": "assistant", "tool_calls": [{"function": {}}]}, "no function name"),
        ("hello", "not an object"),
    ],
)
def test_unrenderable_messages_are_rejected(message: object, fragment: str) -> None:
    with pytest.raises(InvalidChatRequest, match=fragment):
        render_prompt([message], [], ToolChoice("none"))  # type: ignore[list-item]
