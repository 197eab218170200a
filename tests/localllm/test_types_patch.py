"""Nullable assistant content in llama-cpp-python's request types (pure: pydantic only).

``FakeLlamaTypes`` mirrors the five message TypedDicts of llama_cpp/llama_types.py 0.3.36
that the patch rebuilds the union from; the real module is covered by test_real_model.py.
"""

from __future__ import annotations

import sys
import types
from typing import Literal, NotRequired, Optional, Union

import pytest
from pydantic import TypeAdapter, ValidationError
from typing_extensions import TypedDict

from symtrace.localllm.types_patch import SERVER_TYPES_MODULE, patch_llama_types


class Function(TypedDict):
    name: str
    arguments: str


class ToolCall(TypedDict):
    id: str
    type: Literal["function"]
    function: Function


class System(TypedDict):
    role: Literal["system"]
    content: Optional[str]  # noqa: UP045


class User(TypedDict):
    role: Literal["user"]
    content: Optional[str]  # noqa: UP045


class Assistant(TypedDict):  # as shipped: content must be a string when present
    role: Literal["assistant"]
    content: NotRequired[str]
    tool_calls: NotRequired[list[ToolCall]]


class Tool(TypedDict):
    role: Literal["tool"]
    content: Optional[str]  # noqa: UP045
    tool_call_id: str


class FunctionMessage(TypedDict):
    role: Literal["function"]
    content: Optional[str]  # noqa: UP045
    name: str


def fake_llama_types() -> types.ModuleType:
    module = types.ModuleType("fake_llama_types")
    module.ChatCompletionMessageToolCalls = list[ToolCall]
    module.ChatCompletionRequestAssistantMessageFunctionCall = Function
    module.ChatCompletionRequestSystemMessage = System
    module.ChatCompletionRequestUserMessage = User
    module.ChatCompletionRequestAssistantMessage = Assistant
    module.ChatCompletionRequestToolMessage = Tool
    module.ChatCompletionRequestFunctionMessage = FunctionMessage
    module.ChatCompletionRequestMessage = Union[System, User, Assistant, Tool, FunctionMessage]  # noqa: UP007
    return module


NULL_CONTENT_TURN = [
    {"role": "user", "content": "weather?"},
    {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "w", "arguments": "{}"}}]},
    {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
]


def test_shipped_types_reject_null_assistant_content_and_patched_accept_it() -> None:
    llama_types, exporter = fake_llama_types(), types.ModuleType("fake_llama_cpp")
    with pytest.raises(ValidationError):  # the HTTP 500 of every chat format
        TypeAdapter(list[llama_types.ChatCompletionRequestMessage]).validate_python(
            NULL_CONTENT_TURN)
    patch_llama_types(llama_types, exporter)
    for module in (llama_types, exporter):
        validated = TypeAdapter(list[module.ChatCompletionRequestMessage]).validate_python(
            NULL_CONTENT_TURN)
        assert validated[1]["content"] is None
        assert validated[1]["tool_calls"][0]["function"]["name"] == "w"
    patched = llama_types.ChatCompletionRequestMessage
    patch_llama_types(llama_types, exporter)  # idempotent
    assert llama_types.ChatCompletionRequestMessage is patched


def test_patch_after_server_types_import_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, SERVER_TYPES_MODULE, types.ModuleType("x"))
    with pytest.raises(RuntimeError, match="already imported"):
        patch_llama_types(fake_llama_types())
