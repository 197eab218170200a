"""The OpenAI chat-completions wire format: completion JSON, stream chunks, SSE framing.

The point of the stub is that clients cannot tell it from a provider, so the shapes here follow
the real API: fresh ``chatcmpl-…``/``call_…`` ids and ``created`` on every response, a first
chunk carrying the role, content and tool-call arguments split over several chunks, a final
chunk with ``finish_reason``, an optional usage chunk with empty ``choices``, then ``[DONE]``.
"""

from __future__ import annotations

import math
import secrets
import string
import time
from collections.abc import Iterator
from typing import Any

import orjson

from symtrace.stub.reply import Reply, default_error_type

SYSTEM_FINGERPRINT = "fp_symtrace_stub"
_ALPHABET = string.ascii_letters + string.digits
DONE = b"data: [DONE]\n\n"


def random_id(prefix: str, length: int = 24) -> str:
    return prefix + "".join(secrets.choice(_ALPHABET) for _ in range(length))


def count_tokens(text: str) -> int:
    """A rough token count (≈ 4 characters a token); usage only has to be plausible."""
    return max(1, math.ceil(len(text) / 4)) if text else 0


def usage(body: dict[str, Any], reply: Reply) -> dict[str, Any]:
    prompt = count_tokens(orjson.dumps(body.get("messages", [])).decode())
    completion = count_tokens(reply.content or "") + sum(
        count_tokens(call.name) + count_tokens(call.arguments) for call in reply.tool_calls
    )
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
        "completion_tokens_details": {
            "reasoning_tokens": 0,
            "audio_tokens": 0,
            "accepted_prediction_tokens": 0,
            "rejected_prediction_tokens": 0,
        },
    }


def _model(body: dict[str, Any]) -> str:
    model = body.get("model")
    return model if isinstance(model, str) and model else "stub"


def completion(body: dict[str, Any], reply: Reply) -> dict[str, Any]:
    """A ``chat.completion`` object answering *body* with *reply*."""
    message: dict[str, Any] = {
        "role": "assistant",
        "content": reply.content,
        "refusal": None,
        "annotations": [],
    }
    if reply.tool_calls:
        message["tool_calls"] = [
            {
                "id": random_id("call_"),
                "type": "function",
                "function": {"name": call.name, "arguments": call.arguments},
            }
            for call in reply.tool_calls
        ]
    return {
        "id": random_id("chatcmpl-"),
        "object": "chat.completion",
        "created": int(time.time()),
        "model": _model(body),
        "system_fingerprint": SYSTEM_FINGERPRINT,
        "choices": [
            {
                "index": 0,
                "message": message,
                "logprobs": None,
                "finish_reason": reply.finish_reason,
            }
        ],
        "usage": usage(body, reply),
    }


def error_body(reply: Reply) -> dict[str, Any]:
    return {
        "error": {
            "message": reply.error or f"stub error {reply.status}",
            "type": reply.error_type or default_error_type(reply.status),
            "param": None,
            "code": reply.error_code,
        }
    }


def split_text(text: str, pieces: int = 4) -> list[str]:
    """*text* cut into up to *pieces* consecutive non-empty parts (at spaces when possible)."""
    if not text:
        return []
    words = text.split(" ")
    if len(words) >= pieces:
        size = math.ceil(len(words) / pieces)
        parts = [" ".join(words[i : i + size]) for i in range(0, len(words), size)]
        return [p + " " for p in parts[:-1]] + [parts[-1]]
    size = max(1, math.ceil(len(text) / pieces))
    return [text[i : i + size] for i in range(0, len(text), size)]


def chunks(body: dict[str, Any], reply: Reply) -> Iterator[dict[str, Any]]:
    """The ``chat.completion.chunk`` objects of a streamed answer, in order."""
    stream_options = body.get("stream_options")
    include_usage = isinstance(stream_options, dict) and bool(stream_options.get("include_usage"))
    base = {
        "id": random_id("chatcmpl-"),
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": _model(body),
        "system_fingerprint": SYSTEM_FINGERPRINT,
    }

    def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
        out = {
            **base,
            "choices": [
                {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
            ],
        }
        if include_usage:
            out["usage"] = None
        return out

    first: dict[str, Any] = {"role": "assistant", "content": "", "refusal": None}
    if reply.content is None and reply.tool_calls:
        first["content"] = None
    yield chunk(first)
    for piece in split_text(reply.content or ""):
        yield chunk({"content": piece})
    for index, call in enumerate(reply.tool_calls):
        yield chunk(
            {
                "tool_calls": [
                    {
                        "index": index,
                        "id": random_id("call_"),
                        "type": "function",
                        "function": {"name": call.name, "arguments": ""},
                    }
                ]
            }
        )
        for piece in split_text(call.arguments, pieces=3):
            yield chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
    yield chunk({}, reply.finish_reason)
    if include_usage:
        yield {**base, "choices": [], "usage": usage(body, reply)}


def event(obj: dict[str, Any]) -> bytes:
    """One SSE ``data:`` event carrying *obj* as compact JSON."""
    return b"data: " + orjson.dumps(obj) + b"\n\n"


def stream_events(body: dict[str, Any], reply: Reply) -> Iterator[bytes]:
    for obj in chunks(body, reply):
        yield event(obj)
    yield DONE
