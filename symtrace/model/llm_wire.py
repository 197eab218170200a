"""Provider wire formats: which HTTP requests are LLM calls, and one chat-shaped view of them.

Three formats reach symtrace's HTTP boundary as LLM calls:

* OpenAI chat completions: `POST …/chat/completions` (and legacy `…/completions`);
  response `choices[0].message`; streams of `chat.completion.chunk` objects then `[DONE]`.
* OpenAI Responses API: `POST …/responses`; request `instructions` + `input` (a string or a
  list of items: messages, `function_call`, `function_call_output`); response `output` items;
  streams of typed events ending in `response.completed`, which carries the whole response.
* Anthropic messages: `POST …/v1/messages`; request `system` + `messages` whose content is a
  string or blocks (`text`, `tool_use`, `tool_result`); response `content` blocks; streams of
  `message_start`, `content_block_*`, `message_delta`, `message_stop` events.

Everything downstream of the boundary (event graph, attribution, diagnosis, export,
guidance placement) reads a request as a list of chat messages and a response as one
assistant chat message. `chat_messages` and `reply_message` give that view for every format,
so each reader is written once, against the chat-completions shape, and a new format is one
more branch here. Pure functions over JSON values: no I/O, no SDK imports.
"""

from __future__ import annotations

from enum import StrEnum
from functools import lru_cache
from typing import Any

import orjson

JSONValue = Any


class WireFormat(StrEnum):
    CHAT = "openai.chat"
    RESPONSES = "openai.responses"
    ANTHROPIC = "anthropic.messages"


# The path suffixes of each format's create call (after any /v1 prefix). Suffix matching, not
# equality: SDKs talk to proxies and Azure-style deployments with longer path prefixes.
_SUFFIXES: tuple[tuple[str, WireFormat], ...] = (
    ("/chat/completions", WireFormat.CHAT),
    ("/completions", WireFormat.CHAT),
    ("/responses", WireFormat.RESPONSES),
    ("/v1/messages", WireFormat.ANTHROPIC),
)


@lru_cache(maxsize=256)  # a program calls a few endpoints, each format decided once per call
def wire_format(method: str, path: str) -> WireFormat | None:
    """The LLM wire format of a request, or None when it is not an LLM call."""
    if method.upper() != "POST":
        return None
    clean = path.rstrip("/")
    for suffix, fmt in _SUFFIXES:
        if clean.endswith(suffix):
            return fmt
    return None


def format_of_request(request: JSONValue) -> WireFormat | None:
    """The format of a canonical HTTP request (`{"method", "path", "body", ...}`)."""
    if not isinstance(request, dict):
        return None
    method, path = request.get("method"), request.get("path")
    if not isinstance(method, str) or not isinstance(path, str):
        return None
    return wire_format(method, path)


# -- requests: one chat-shaped view ----------------------------------------------------------
def chat_messages(request: JSONValue) -> list[dict[str, Any]]:
    """The messages of a canonical LLM request, in chat-completions shape.

    Roles `system`/`user`/`assistant`/`tool`; assistant tool calls as `tool_calls`
    (`{"id", "type": "function", "function": {"name", "arguments"}}`); tool results as
    `{"role": "tool", "tool_call_id", "content"}`.
    """
    body = request.get("body") if isinstance(request, dict) else None
    if not isinstance(body, dict):
        return []
    fmt = format_of_request(request) or WireFormat.CHAT
    if fmt is WireFormat.RESPONSES:
        return _responses_messages(body)
    if fmt is WireFormat.ANTHROPIC:
        return _anthropic_messages(body)
    return [m for m in body.get("messages") or [] if isinstance(m, dict)]


def _responses_messages(body: dict[str, Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    if isinstance(body.get("instructions"), str):
        out.append({"role": "system", "content": body["instructions"]})
    items = body.get("input")
    if isinstance(items, str):
        return [*out, {"role": "user", "content": items}]
    for item in items if isinstance(items, list) else []:
        if not isinstance(item, dict):
            continue
        kind = item.get("type", "message")
        if kind == "message":
            role = item.get("role", "user")
            out.append({"role": "system" if role == "developer" else role,
                        "content": _parts_text(item.get("content"))})
        elif kind == "function_call":
            out.append({"role": "assistant", "content": None,
                        "tool_calls": [_tool_call(item.get("call_id"), item.get("name"),
                                                  item.get("arguments"))]})
        elif kind == "function_call_output":
            out.append({"role": "tool", "tool_call_id": item.get("call_id"),
                        "content": _parts_text(item.get("output"))})
    return out


def _anthropic_messages(body: dict[str, Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    system = body.get("system")
    if system:
        out.append({"role": "system", "content": _parts_text(system)})
    for message in body.get("messages") or []:
        if not isinstance(message, dict):
            continue
        role, content = message.get("role"), message.get("content")
        if not isinstance(content, list):
            out.append({"role": role, "content": content})
            continue
        texts = [b.get("text") for b in content if isinstance(b, dict) and b.get("type") == "text"]
        calls = [_tool_call(b.get("id"), b.get("name"), b.get("input"))
                 for b in content if isinstance(b, dict) and b.get("type") == "tool_use"]
        for block in content:
            if isinstance(block, dict) and block.get("type") == "tool_result":
                out.append({"role": "tool", "tool_call_id": block.get("tool_use_id"),
                            "content": _parts_text(block.get("content"))})
        if texts or calls:
            entry: dict[str, Any] = {"role": role,
                                     "content": "\n".join(t for t in texts if t) or None}
            if calls:
                entry["tool_calls"] = calls
            out.append(entry)
    return out


# -- responses: one assistant message ----------------------------------------------------------
def reply_message(body: JSONValue) -> dict[str, Any] | None:
    """The (first) assistant message of an LLM response body, any format, streams assembled."""
    messages = reply_messages(body)
    return messages[0] if messages else None


def reply_messages(body: JSONValue) -> list[dict[str, Any]]:
    """Every assistant message of a response body (chat `choices`; one for the others)."""
    if isinstance(body, dict) and isinstance(body.get("choices"), list):
        return [c["message"] for c in body["choices"]
                if isinstance(c, dict) and isinstance(c.get("message"), dict)]
    message = _single_reply(body)
    return [message] if message is not None else []


def _single_reply(body: JSONValue) -> dict[str, Any] | None:
    if not isinstance(body, dict):
        return None
    if body.get("object") == "response" or isinstance(body.get("output"), list):
        texts, calls = [], []
        for item in body.get("output") or []:
            if not isinstance(item, dict):
                continue
            if item.get("type") == "message":
                texts.append(_parts_text(item.get("content")))
            elif item.get("type") == "function_call":
                calls.append(_tool_call(item.get("call_id"), item.get("name"),
                                        item.get("arguments")))
        return _assistant(texts, calls)
    if body.get("type") == "message" and isinstance(body.get("content"), list):
        blocks = [b for b in body["content"] if isinstance(b, dict)]
        return _assistant(
            [b.get("text") or "" for b in blocks if b.get("type") == "text"],
            [_tool_call(b.get("id"), b.get("name"), b.get("input"))
             for b in blocks if b.get("type") == "tool_use"])
    return None


def _assistant(texts: list[str], calls: list[dict[str, Any]]) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": "".join(texts) or None}
    if calls:
        message["tool_calls"] = calls
    return message


def _tool_call(call_id: object, name: object, arguments: object) -> dict[str, Any]:
    if not isinstance(arguments, str):  # Anthropic sends the input object, OpenAI its JSON text
        arguments = orjson.dumps(arguments, option=orjson.OPT_SORT_KEYS).decode()
    return {"id": call_id, "type": "function",
            "function": {"name": name or "", "arguments": arguments}}


def _parts_text(content: object) -> str:
    """Text of a content value: a string, or the `text` of its parts joined by newlines."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(_parts_text(p) if not isinstance(p, dict) else str(p.get("text") or "")
                         for p in content if p is not None)
    return ""


# -- echoed provider ids (the tool-call-ids-to-ordinals rule) --------------------------------
def normalise_echoed_ids(request: JSONValue) -> JSONValue:
    """Replace provider-invented tool-call ids a request echoes back by ordinals of first
    appearance (`call#0`, …), in the request's own format.

    Chat: `messages[].tool_calls[].id`, `messages[].tool_call_id`. Responses:
    `input[].call_id` of `function_call`/`function_call_output` items. Anthropic:
    `tool_use.id` and `tool_result.tool_use_id` blocks. The structure (which result answers
    which call) stays in the key; the noise goes.
    """
    if not isinstance(request, dict) or not isinstance(request.get("body"), dict):
        return request
    fmt = format_of_request(request)
    body = request["body"]
    ids: dict[str, str] = {}

    def ordinal(raw: object) -> object:
        return ids.setdefault(raw, f"call#{len(ids)}") if isinstance(raw, str) else raw

    if fmt is WireFormat.RESPONSES and isinstance(body.get("input"), list):
        if not any(isinstance(item, dict) and "call_id" in item for item in body["input"]):
            return request  # no ids echoed: nothing to copy
        items = [
            {**item, "call_id": ordinal(item["call_id"])}
            if isinstance(item, dict) and "call_id" in item else item
            for item in body["input"]
        ]
        return {**request, "body": {**body, "input": items}}
    if not isinstance(body.get("messages"), list):
        return request
    if fmt is not WireFormat.ANTHROPIC and not any(
        isinstance(m, dict) and ("tool_calls" in m or "tool_call_id" in m)
        for m in body["messages"]
    ):
        return request  # no ids echoed: nothing to copy (a request is mostly re-sent history)
    if fmt is WireFormat.ANTHROPIC:
        messages = [_anthropic_ids(m, ordinal) for m in body["messages"]]
    else:
        messages = [_chat_ids(m, ordinal) for m in body["messages"]]
    if all(new is old for new, old in zip(messages, body["messages"], strict=True)):
        return request  # no ids echoed
    return {**request, "body": {**body, "messages": messages}}


def _chat_ids(message: object, ordinal: Any) -> object:
    if not isinstance(message, dict) or ("tool_calls" not in message
                                         and "tool_call_id" not in message):
        return message
    message = dict(message)
    calls = message.get("tool_calls")
    if isinstance(calls, list):
        message["tool_calls"] = [
            {**call, "id": ordinal(call.get("id"))} if isinstance(call, dict) else call
            for call in calls
        ]
    if "tool_call_id" in message:
        message["tool_call_id"] = ordinal(message["tool_call_id"])
    return message


def _anthropic_ids(message: object, ordinal: Any) -> object:
    if not isinstance(message, dict) or not isinstance(message.get("content"), list):
        return message
    blocks = []
    for block in message["content"]:
        if isinstance(block, dict) and block.get("type") == "tool_use" and "id" in block:
            block = {**block, "id": ordinal(block["id"])}
        elif isinstance(block, dict) and block.get("type") == "tool_result":
            block = {**block, "tool_use_id": ordinal(block.get("tool_use_id"))}
        blocks.append(block)
    if all(new is old for new, old in zip(blocks, message["content"], strict=True)):
        return message
    return {**message, "content": blocks}
