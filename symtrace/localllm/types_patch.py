"""Make assistant ``content`` nullable in llama-cpp-python's request types.

AG2, CrewAI and AgentChat send back an assistant turn with ``tool_calls`` and
``"content": null``, exactly as OpenAI returned it. llama-cpp-python 0.3.36 types that field
``NotRequired[str]``, so the server answers HTTP 500 for every such request, whatever the
chat format. The server's pydantic models resolve ``llama_cpp.ChatCompletionRequestMessage``
when ``llama_cpp.server.types`` is first imported, so this must run before that import.
"""

# No `from __future__ import annotations`: the TypedDict below must hold real types, since
# its annotations refer to the *llama_types* argument, which pydantic cannot resolve later.
import sys
from types import ModuleType
from typing import Any, Literal, NotRequired, Optional, Union

# pydantic needs typing_extensions' TypedDict before Python 3.12
from typing_extensions import TypedDict

SERVER_TYPES_MODULE = "llama_cpp.server.types"
_PATCHED = "_symtrace_nullable_assistant_content"


def nullable_assistant_message(llama_types: Any) -> type:
    """A copy of ``ChatCompletionRequestAssistantMessage`` whose ``content`` may be null."""

    class ChatCompletionRequestAssistantMessage(TypedDict):
        role: Literal["assistant"]
        content: NotRequired[Optional[str]]  # noqa: UP045 - evaluated by pydantic on 3.11
        tool_calls: NotRequired[llama_types.ChatCompletionMessageToolCalls]
        function_call: NotRequired[llama_types.ChatCompletionRequestAssistantMessageFunctionCall]

    return ChatCompletionRequestAssistantMessage


def message_union(llama_types: Any, assistant: type) -> Any:
    return Union[  # noqa: UP007 - a runtime Union object, rebuilt like llama_types builds it
        llama_types.ChatCompletionRequestSystemMessage,
        llama_types.ChatCompletionRequestUserMessage,
        assistant,
        llama_types.ChatCompletionRequestToolMessage,
        llama_types.ChatCompletionRequestFunctionMessage,
    ]


def patch_llama_types(llama_types: ModuleType, *exporters: ModuleType) -> None:
    """Swap the nullable message types into *llama_types* and the modules re-exporting it.

    Raises RuntimeError if the server's request models were already built (too late).
    Idempotent.
    """
    if getattr(llama_types, _PATCHED, False):
        return
    if SERVER_TYPES_MODULE in sys.modules:
        raise RuntimeError(
            f"{SERVER_TYPES_MODULE} is already imported: patch llama_types before importing "
            "llama_cpp.server"
        )
    assistant = nullable_assistant_message(llama_types)
    union = message_union(llama_types, assistant)
    for module in (llama_types, *exporters):
        module.ChatCompletionRequestAssistantMessage = assistant  # type: ignore[attr-defined]
        module.ChatCompletionRequestMessage = union  # type: ignore[attr-defined]
    setattr(llama_types, _PATCHED, True)
