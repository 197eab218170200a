"""Assembling a recorded SSE stream into the one response object it stands for.

Replay serves a stream chunk for chunk, exactly as recorded; the assembled object is for
everything that reads a bundle (graph, diagnosis, viewer, export), which then sees a streamed
call like a plain one. One assembler per wire format (see llm_wire).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import orjson

from symtrace.model.llm_wire import WireFormat

JSONValue = Any


def sse_events(text: str) -> Iterator[tuple[str | None, Any]]:
    """(event name, parsed data) of each SSE event; `[DONE]` and unparsable data skipped."""
    name: str | None = None
    data: list[str] = []
    for line in [*text.splitlines(), ""]:
        if not line:
            if data:
                payload = "\n".join(data).strip()
                if payload and payload != "[DONE]":
                    try:
                        yield name, orjson.loads(payload)
                    except orjson.JSONDecodeError:
                        pass
            name, data = None, []
        elif line.startswith("event:"):
            name = line[6:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].lstrip())


def assemble(fmt: WireFormat | None, text: str) -> JSONValue:
    """The response object a stream of *fmt* stands for (chat when unknown)."""
    if fmt is WireFormat.RESPONSES:
        return _responses(text)
    if fmt is WireFormat.ANTHROPIC:
        return _anthropic(text)
    return _chat(text)


def _chat(text: str) -> JSONValue:
    content: list[str] = []
    calls: dict[int, dict[str, Any]] = {}
    meta: dict[str, Any] = {}
    finish_reason = None
    for _, chunk in sse_events(text):
        if not isinstance(chunk, dict):
            continue
        for key in ("id", "model", "created"):
            meta.setdefault(key, chunk.get(key))
        if chunk.get("usage"):
            meta["usage"] = chunk["usage"]
        for choice in chunk.get("choices") or []:
            delta = choice.get("delta") or {}
            if delta.get("content"):
                content.append(delta["content"])
            for tc in delta.get("tool_calls") or []:
                slot = calls.setdefault(
                    tc.get("index", 0),
                    {"id": None, "type": "function", "function": {"name": "", "arguments": ""}},
                )
                slot["id"] = tc.get("id") or slot["id"]
                function = tc.get("function") or {}
                slot["function"]["name"] += function.get("name") or ""
                slot["function"]["arguments"] += function.get("arguments") or ""
            finish_reason = choice.get("finish_reason") or finish_reason
    message: dict[str, Any] = {"role": "assistant", "content": "".join(content) or None}
    if calls:
        message["tool_calls"] = [calls[i] for i in sorted(calls)]
    return {
        "object": "chat.completion",
        **{k: v for k, v in meta.items() if v is not None},
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
    }


def _responses(text: str) -> JSONValue:
    """The `response.completed` (or last `response.*`) event's response; deltas otherwise."""
    final: JSONValue = None
    items: dict[int, dict[str, Any]] = {}
    for _, event in sse_events(text):
        if not isinstance(event, dict):
            continue
        if isinstance(event.get("response"), dict):
            final = event["response"]
        if event.get("type") == "response.output_item.done" and isinstance(event.get("item"), dict):
            items[int(event.get("output_index") or 0)] = event["item"]
    if isinstance(final, dict) and (final.get("output") or not items):
        return final
    out = dict(final) if isinstance(final, dict) else {"object": "response"}
    out["output"] = [items[i] for i in sorted(items)]
    return out


def _anthropic(text: str) -> JSONValue:
    message: dict[str, Any] = {}
    blocks: dict[int, dict[str, Any]] = {}
    partial: dict[int, list[str]] = {}
    for _, event in sse_events(text):
        if not isinstance(event, dict):
            continue
        kind = event.get("type")
        if kind == "message_start" and isinstance(event.get("message"), dict):
            message = dict(event["message"])
        elif kind == "content_block_start" and isinstance(event.get("content_block"), dict):
            blocks[int(event.get("index") or 0)] = dict(event["content_block"])
        elif kind == "content_block_delta" and isinstance(event.get("delta"), dict):
            index = int(event.get("index") or 0)
            block = blocks.setdefault(index, {"type": "text", "text": ""})
            delta = event["delta"]
            if delta.get("type") == "text_delta":
                block["text"] = (block.get("text") or "") + (delta.get("text") or "")
            elif delta.get("type") == "input_json_delta":
                partial.setdefault(index, []).append(delta.get("partial_json") or "")
        elif kind == "message_delta":
            message.update(event.get("delta") or {})
            if isinstance(event.get("usage"), dict):
                message["usage"] = {**(message.get("usage") or {}), **event["usage"]}
    for index, pieces in partial.items():
        try:
            blocks[index]["input"] = orjson.loads("".join(pieces) or "{}")
        except orjson.JSONDecodeError:
            blocks[index]["input"] = {"$partial_json": "".join(pieces)}
    message.setdefault("type", "message")
    message["content"] = [blocks[i] for i in sorted(blocks)]
    return message
