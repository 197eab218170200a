"""OpenAI-shaped chat-completion objects built from generated text (pure: no llama_cpp).

Ids are derived from a digest of the request (deterministic, like the outputs at
temperature 0): a rerun of the same request gives byte-identical JSON apart from ``created``.
Streaming is served buffered: the finished completion is cut into the chunks an OpenAI
stream would carry (role, content or tool-call delta, finish_reason).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from symtrace.model.hashing import digest, short


def request_digest(
    messages: Sequence[Any], tools: Sequence[Any], choice: Any, sampling: Mapping[str, Any]
) -> str:
    return digest({"messages": list(messages), "tools": list(tools), "choice": choice,
                   "sampling": dict(sampling)})


def completion_id(request: str) -> str:
    return "chatcmpl-" + short(request, 24)


def tool_call_id(request: str, index: int) -> str:
    return "call_" + short(digest({"request": request, "index": index}), 24)


def usage(prompt_tokens: int, completion_tokens: int) -> dict[str, int]:
    return {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
    }


def chat_completion(
    *,
    request: str,
    model: str,
    created: int,
    content: str | None,
    tool_calls: Sequence[tuple[str, str]] = (),
    finish_reason: str,
    token_usage: Mapping[str, int],
) -> dict[str, Any]:
    """A ``chat.completion`` with *content* or *tool_calls* as ``(name, arguments)`` pairs."""
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = [
            {
                "id": tool_call_id(request, index),
                "type": "function",
                "function": {"name": name, "arguments": arguments},
            }
            for index, (name, arguments) in enumerate(tool_calls)
        ]
    return {
        "id": completion_id(request),
        "object": "chat.completion",
        "created": created,
        "model": model,
        "choices": [
            {"index": 0, "message": message, "logprobs": None, "finish_reason": finish_reason}
        ],
        "usage": dict(token_usage),
    }


def stream_chunks(completion: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The ``chat.completion.chunk`` sequence equivalent to a finished *completion*."""
    choice = completion["choices"][0]
    message = choice["message"]
    head = {"id": completion["id"], "object": "chat.completion.chunk",
            "created": completion["created"], "model": completion["model"]}

    def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
        return {**head, "choices": [
            {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
        ]}

    chunks = [chunk({"role": "assistant", "content": ""})]
    if message.get("content"):
        chunks.append(chunk({"content": message["content"]}))
    for index, call in enumerate(message.get("tool_calls") or []):
        chunks.append(chunk({"tool_calls": [{"index": index, **call}]}))
    chunks.append(chunk({}, choice["finish_reason"]))
    return chunks
