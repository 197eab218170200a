"""Tool and tool_choice normalisation (pure, no llama_cpp)."""

from __future__ import annotations

import pytest

from symtrace.localllm.chat_request import (
    INVALID_PREFIX,
    InvalidChatRequest,
    ToolChoice,
    normalise_tool_choice,
    normalise_tools,
)

WEATHER = {"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}
ADD = {"type": "function", "function": {"name": "add"}}


def test_missing_tool_choice_means_auto_when_tools_are_offered() -> None:
    # AG2 sends tools without tool_choice; the stock format then ignored the tools.
    assert normalise_tool_choice(None, [WEATHER]) == ToolChoice("auto")
    assert normalise_tool_choice(None, []) == ToolChoice("none")


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("none", ToolChoice("none")),
        ("auto", ToolChoice("auto")),
        ("required", ToolChoice("required")),
        ({"type": "function", "function": {"name": "add"}}, ToolChoice("function", "add")),
    ],
)
def test_explicit_tool_choice(given: object, expected: ToolChoice) -> None:
    assert normalise_tool_choice(given, [WEATHER, ADD]) == expected


def test_auto_without_tools_is_none() -> None:
    assert normalise_tool_choice("auto", []) == ToolChoice("none")


@pytest.mark.parametrize(
    ("given", "tools", "fragment"),
    [
        ({"type": "function", "function": {"name": "nope"}}, [ADD], "not among the tools"),
        ("required", [], "needs at least one tool"),
        ("sometimes", [ADD], "tool_choice must be"),
        ({"type": "function"}, [ADD], "tool_choice must be"),
    ],
)
def test_bad_tool_choice_is_a_400_error(given: object, tools: list, fragment: str) -> None:
    with pytest.raises(InvalidChatRequest) as info:
        normalise_tool_choice(given, normalise_tools(tools))
    assert fragment in str(info.value)
    assert str(info.value).startswith(INVALID_PREFIX)


def test_legacy_functions_and_function_call() -> None:
    tools = normalise_tools(None, [{"name": "add", "parameters": {"type": "object"}}])
    assert tools == [{"type": "function", "function": {"name": "add",
                                                       "parameters": {"type": "object"}}}]
    assert normalise_tool_choice(None, tools, {"name": "add"}) == ToolChoice("function", "add")
    assert normalise_tool_choice(None, tools, "none") == ToolChoice("none")
    # tool_choice wins over the legacy field
    assert normalise_tool_choice("auto", tools, "none") == ToolChoice("auto")


@pytest.mark.parametrize(
    ("tools", "functions", "fragment"),
    [
        ([{"type": "function", "function": {"name": "a:b"}}], None, "must match"),
        ([{"type": "function", "function": {"name": ""}}], None, "must match"),
        ([ADD, ADD], None, "given twice"),
        ([{"type": "retrieval"}], None, "not a function tool"),
        (["add"], None, "not a function tool"),
        ([{"type": "function", "function": {"name": "x", "parameters": []}}], None,
         "parameters must be an object"),
        ([ADD], [{"name": "add"}], "not both"),
    ],
)
def test_bad_tools_are_rejected(tools: list, functions: list | None, fragment: str) -> None:
    with pytest.raises(InvalidChatRequest, match=fragment):
        normalise_tools(tools, functions)
