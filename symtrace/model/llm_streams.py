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


def sse_data(text: str) -> Iterator[Any]:
    """The parsed data of each SSE event of *text*, as `sse_events` yields them (the
    assemblers use no event name): the same events, found with a few passes of C string
    methods over the whole text instead of a Python step per line.

    An event is the text between two blank lines. A data line is the last line of its event
    in every provider's stream (`data: {...}`, or `event: …` then `data: …`): the payloads
    are sliced from the events' last lines when the text has no other data lines; otherwise
    each event's data lines are joined as `sse_events` joins them. A text with a line break
    other than "\n" and "\r\n" (str.splitlines breaks at eleven) is left to `sse_events`, so
    both split lines where it does; tests compare them. Parsed lazily, one event at a time:
    the assembler drops each before the next is parsed (a list of them all would be a burst
    of containers for the collector, hundreds on a token-by-token stream)."""
    lines = text.replace("\r\n", "\n") if "\r" in text else text  # one pass: "\r\r\n" → "\r\n"
    if ("\r" in lines or "\x0b" in lines or "\x0c" in lines or "\x1c" in lines
            or "\x1d" in lines or "\x1e" in lines or "\x85" in lines or "\u2028" in lines
            or "\u2029" in lines):
        for _, data in sse_events(text):
            yield data
        return
    events = lines.split("\n\n")
    # every event is one line: no line break is left once the separators are cut out (a
    # copy and one memchr pass cost less than counting every "\n" of the text)
    if "\n" not in "".join(events):
        payloads = [event[5:].strip() for event in events if event[:5] == "data:"]
    else:
        last = [event[event.rfind("\n") + 1:] for event in events]
        payloads = [line for line in last if line[:5] == "data:"]
        if len(payloads) == lines.count("\ndata:") + (lines[:5] == "data:"):  # no other
            payloads = [line[5:].strip() for line in payloads]
        else:  # an event of several data lines: joined by "\n"
            payloads = ["\n".join([line[5:].lstrip() for line in event.split("\n")
                                   if line[:5] == "data:"]).strip() for event in events]
    loads, invalid = orjson.loads, orjson.JSONDecodeError
    for payload in payloads:
        if payload and payload != "[DONE]":
            try:
                data = loads(payload)
            except invalid:  # skipped, as sse_events skips it
                continue
            yield data


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
    for chunk in sse_data(text):
        if not isinstance(chunk, dict):
            continue
        if not meta:  # the first object's, None too (a later chunk does not fill one in)
            meta.update(id=chunk.get("id"), model=chunk.get("model"), created=chunk.get("created"))
        if chunk.get("usage"):
            meta["usage"] = chunk["usage"]
        for choice in chunk.get("choices") or ():
            delta = choice.get("delta") or {}
            piece = delta.get("content")
            if piece:
                content.append(piece)
            for tc in delta.get("tool_calls") or ():
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
    for event in sse_data(text):
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
    for event in sse_data(text):
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


# What each wire format sends last: a stream whose text lacks it was cut off (the connection
# dropped, or the program stopped reading) before the provider finished it.
# (Providers name their events in an `event:` line; chat completions end with a `[DONE]`
# data line. A model's text cannot contain either line: it is inside JSON strings.)
_ENDS: dict[WireFormat, tuple[str, ...]] = {
    WireFormat.CHAT: ("data: [DONE]", "data:[DONE]"),
    WireFormat.RESPONSES: ("event: response.completed", "event: response.incomplete"),
    WireFormat.ANTHROPIC: ("event: message_stop",),
}


def stream_ended(fmt: WireFormat | None, text: str) -> bool:
    """Whether a stream of wire format *fmt* reached its provider's last event (a format
    symtrace does not know is taken as ended: nothing says otherwise)."""
    ends = _ENDS.get(fmt) if fmt is not None else None
    if ends is None:
        return True
    return any(end in text for end in ends)
