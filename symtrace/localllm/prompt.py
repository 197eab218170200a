"""ChatML prompt rendering for the ``chatml-tools`` format (pure: no llama_cpp needed).

What the stock ``chatml-function-calling`` template drops, this renders: ``role: tool``
results become ``<|im_start|>tool`` turns (the model must see what its call returned), and an
assistant turn with ``tool_calls`` and ``content: null`` renders its calls instead of failing.
When tools are offered, past assistant turns use the same ``message:`` /
``functions.<name>:`` shape the model is asked to produce, so the history teaches the format.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import orjson

from symtrace.localllm.chat_request import InvalidChatRequest, ToolChoice

IM_START = "<|im_start|>"
IM_END = "<|im_end|>"
MESSAGE_PREFIX = "message:"
DEFAULT_SYSTEM = "You are a helpful assistant."


def function_prefix(name: str) -> str:
    return f"functions.{name}:"


def message_text(content: Any, where: str) -> str:
    """Text of a message ``content``: a string, ``None`` (empty) or a list of text parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence):
        texts = []
        for part in content:
            if not isinstance(part, Mapping) or part.get("type") != "text":
                kind = part.get("type") if isinstance(part, Mapping) else type(part).__name__
                raise InvalidChatRequest(f"{where}: content part {kind!r} is not supported")
            texts.append(str(part.get("text", "")))
        return "".join(texts)
    raise InvalidChatRequest(f"{where}: content must be a string, null or a list of parts")


def tools_block(tools: Sequence[Mapping[str, Any]], choice: ToolChoice) -> str:
    """The system-prompt section that lists the tools and the two reply shapes."""
    lines = ["", "", "You have access to the following functions:"]
    for tool in tools:
        function = tool["function"]
        if choice.mode == "function" and function["name"] != choice.name:
            continue
        lines.append("")
        lines.append(function_prefix(function["name"]))
        if function.get("description"):
            lines.append(f"description: {function['description']}")
        parameters = function.get("parameters") or {"type": "object", "properties": {}}
        schema = orjson.dumps(parameters, option=orjson.OPT_SORT_KEYS).decode()
        lines.append(f"parameters: {schema}")
    lines += [
        "",
        "To call a function, reply with its name and JSON arguments:",
        "functions.<function_name>:",
        '{"arg1": "value1"}',
    ]
    if choice.mode == "auto":
        lines += [
            "",
            "To answer the user, reply with:",
            MESSAGE_PREFIX,
            "<your answer>",
            "",
            "A tool turn holds the result of your last call: use it to answer the user.",
        ]
    return "\n".join(lines)


def _assistant_body(message: Mapping[str, Any], with_tools: bool, where: str) -> str:
    parts: list[str] = []
    text = message_text(message.get("content"), where)
    if text:
        parts.append(f"{MESSAGE_PREFIX}\n{text}" if with_tools else text)
    calls = list(message.get("tool_calls") or [])
    legacy = message.get("function_call")
    if isinstance(legacy, Mapping):
        calls.append({"function": legacy})
    for index, call in enumerate(calls):
        function = call.get("function") if isinstance(call, Mapping) else None
        if not isinstance(function, Mapping) or not isinstance(function.get("name"), str):
            raise InvalidChatRequest(f"{where}.tool_calls[{index}] has no function name")
        arguments = function.get("arguments", "")
        if not isinstance(arguments, str):  # some clients send the object itself
            arguments = orjson.dumps(arguments, option=orjson.OPT_SORT_KEYS).decode()
        parts.append(f"{function_prefix(function['name'])}\n{arguments}")
    return "\n".join(parts)


def render_prompt(
    messages: Sequence[Mapping[str, Any]],
    tools: Sequence[Mapping[str, Any]],
    choice: ToolChoice,
) -> str:
    """The full ChatML prompt, ending with the open assistant turn."""
    with_tools = choice.tools_offered and bool(tools)
    turns: list[tuple[str, str]] = []
    for index, message in enumerate(messages):
        where = f"messages[{index}]"
        if not isinstance(message, Mapping):
            raise InvalidChatRequest(f"{where} is not an object")
        role = message.get("role")
        if role in ("system", "user"):
            turns.append((role, message_text(message.get("content"), where)))
        elif role == "assistant":
            turns.append(("assistant", _assistant_body(message, with_tools, where)))
        elif role in ("tool", "function"):
            turns.append(("tool", message_text(message.get("content"), where)))
        else:
            raise InvalidChatRequest(f"{where}.role {role!r} is not supported")
    if with_tools:
        block = tools_block(tools, choice)
        if turns and turns[0][0] == "system":
            turns[0] = ("system", turns[0][1] + block)
        else:
            turns.insert(0, ("system", DEFAULT_SYSTEM + block))
    rendered = "".join(f"{IM_START}{role}\n{text}{IM_END}\n" for role, text in turns)
    return f"{rendered}{IM_START}assistant\n"
