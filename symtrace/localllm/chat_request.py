"""Normalising the tool part of a chat-completions request (pure: no llama_cpp needed).

OpenAI's rules, which the stock ``chatml-function-calling`` format gets wrong: a request with
tools and no ``tool_choice`` means ``"auto"`` (AG2 sends exactly that); legacy ``functions`` /
``function_call`` map onto ``tools`` / ``tool_choice``. Anything the handler could not honour
is an ``InvalidChatRequest`` (HTTP 400), never a silently ignored field.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping, Sequence
from typing import Any, Literal

# The server maps exceptions whose text starts with this to HTTP 400 (see serve.py).
INVALID_PREFIX = "chatml-tools rejected the request: "
# OpenAI's function-name rule; it also keeps names safe inside GBNF literals and stop strings.
TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")

Mode = Literal["none", "auto", "required", "function"]


class InvalidChatRequest(ValueError):
    """A request the chat format cannot honour; served as HTTP 400 invalid_request_error."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(INVALID_PREFIX + reason)


@dataclasses.dataclass(frozen=True)
class ToolChoice:
    """What the model may do this turn: no tools, choose freely, must call, or call *name*."""

    mode: Mode
    name: str | None = None

    @property
    def tools_offered(self) -> bool:
        return self.mode != "none"


def normalise_tools(
    tools: Sequence[Mapping[str, Any]] | None,
    functions: Sequence[Mapping[str, Any]] | None = None,
) -> list[dict[str, Any]]:
    """Validated ``[{"type": "function", "function": {...}}]`` (legacy functions converted)."""
    if tools and functions:
        raise InvalidChatRequest("send either 'tools' or the legacy 'functions', not both")
    items: list[Any] = (
        list(tools) if tools else [{"type": "function", "function": f} for f in functions or []]
    )
    result: list[dict[str, Any]] = []
    seen: set[str] = set()
    for index, tool in enumerate(items):
        function = tool.get("function") if isinstance(tool, Mapping) else None
        if not isinstance(tool, Mapping) or tool.get("type", "function") != "function" or not (
            isinstance(function, Mapping)
        ):
            raise InvalidChatRequest(f"tools[{index}] is not a function tool")
        name = function.get("name")
        if not isinstance(name, str) or not TOOL_NAME.match(name):
            raise InvalidChatRequest(
                f"tools[{index}].function.name {name!r} must match {TOOL_NAME.pattern}"
            )
        if name in seen:
            raise InvalidChatRequest(f"tool name {name!r} is given twice")
        seen.add(name)
        parameters = function.get("parameters")
        if parameters is not None and not isinstance(parameters, Mapping):
            raise InvalidChatRequest(f"tools[{index}].function.parameters must be an object")
        result.append({"type": "function", "function": dict(function)})
    return result


def normalise_tool_choice(
    tool_choice: Any,
    tools: Sequence[Mapping[str, Any]],
    function_call: Any = None,
) -> ToolChoice:
    """Map ``tool_choice`` (or legacy ``function_call``) onto a ``ToolChoice``.

    Missing means ``auto`` when tools are offered, as in OpenAI's API.
    """
    if tool_choice is None and function_call is not None:
        tool_choice = (
            {"type": "function", "function": {"name": function_call.get("name")}}
            if isinstance(function_call, Mapping)
            else function_call
        )
    names = [tool["function"]["name"] for tool in tools]
    if tool_choice is None:
        return ToolChoice("auto" if names else "none")
    if tool_choice in ("none", "auto"):
        return ToolChoice(tool_choice if names else "none")
    if tool_choice == "required":
        if not names:
            raise InvalidChatRequest("tool_choice 'required' needs at least one tool")
        return ToolChoice("required")
    if isinstance(tool_choice, Mapping):
        function = tool_choice.get("function")
        name = function.get("name") if isinstance(function, Mapping) else None
        if tool_choice.get("type", "function") == "function" and isinstance(name, str):
            if name not in names:
                raise InvalidChatRequest(
                    f"tool_choice names {name!r}, which is not among the tools {names}"
                )
            return ToolChoice("function", name)
    raise InvalidChatRequest(
        f"tool_choice must be 'none', 'auto', 'required' or a function, got {tool_choice!r}"
    )
