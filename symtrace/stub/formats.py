"""The OpenAI Responses and Anthropic messages wire formats of the stub.

Responders decide a `Reply` from a chat-completions-shaped body; `chat_body` gives them that
view of a Responses or Anthropic request (through symtrace.model.llm_wire, the one place that
knows the formats), and the encoders here put the reply on the wire the way the real API does:
fresh `resp_…`/`msg_…`/`toolu_…` ids, a Responses event stream ending in
`response.completed`, an Anthropic stream of `message_start`, `content_block_*`,
`message_delta`, `message_stop` events.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import orjson

from symtrace.model.llm_wire import WireFormat, chat_messages
from symtrace.stub.reply import Reply
from symtrace.stub.sse import count_tokens, random_id, split_text

PATHS: dict[str, WireFormat] = {
    "/v1/responses": WireFormat.RESPONSES,
    "/responses": WireFormat.RESPONSES,
    "/v1/messages": WireFormat.ANTHROPIC,
}


def chat_body(fmt: WireFormat, path: str, body: dict[str, Any]) -> dict[str, Any]:
    """*body* of format *fmt* as a chat-completions request (what responders read)."""
    chat: dict[str, Any] = {
        k: body[k] for k in ("model", "stream", "temperature", "seed") if k in body
    }
    chat["messages"] = chat_messages({"method": "POST", "path": path, "body": body})
    tools = []
    for tool in body.get("tools") or []:
        if not isinstance(tool, dict) or not isinstance(tool.get("name"), str):
            continue
        schema = tool.get("input_schema") if fmt is WireFormat.ANTHROPIC else tool.get("parameters")
        tools.append({"type": "function", "function": {
            "name": tool["name"], "description": tool.get("description", ""),
            "parameters": schema or {"type": "object", "properties": {}}}})
    if tools:
        chat["tools"] = tools
    return chat


def bad_request(fmt: WireFormat, body: dict[str, Any]) -> str | None:
    """Why the real API would refuse *body* with a 400, or None."""
    if fmt is WireFormat.ANTHROPIC:
        if not isinstance(body.get("messages"), list):
            return "messages: Field required"
        if not isinstance(body.get("max_tokens"), int):
            return "max_tokens: Field required"
    elif "input" not in body:
        return "Missing required parameter: 'input'."
    return None


# -- OpenAI Responses ------------------------------------------------------------------------
def _usage_tokens(body: dict[str, Any], reply: Reply) -> tuple[int, int]:
    prompt = count_tokens(orjson.dumps(body).decode())
    completion = count_tokens(reply.content or "") + sum(
        count_tokens(c.name) + count_tokens(c.arguments) for c in reply.tool_calls)
    return prompt, completion


def _output_items(reply: Reply) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    if reply.content is not None:
        items.append({"id": random_id("msg_"), "type": "message", "status": "completed",
                      "role": "assistant",
                      "content": [{"type": "output_text", "text": reply.content,
                                   "annotations": [], "logprobs": []}]})
    for call in reply.tool_calls:
        items.append({"id": random_id("fc_"), "type": "function_call", "status": "completed",
                      "call_id": random_id("call_"), "name": call.name,
                      "arguments": call.arguments})
    return items


def response_object(body: dict[str, Any], reply: Reply,
                    output: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    prompt, completion = _usage_tokens(body, reply)
    return {
        "id": random_id("resp_"), "object": "response", "created_at": int(time.time()),
        "status": "completed", "model": body.get("model") or "stub", "error": None,
        "incomplete_details": None, "instructions": body.get("instructions"),
        "output": _output_items(reply) if output is None else output,
        "parallel_tool_calls": True, "tool_choice": body.get("tool_choice", "auto"),
        "tools": body.get("tools") or [], "temperature": body.get("temperature"),
        "top_p": None, "metadata": {}, "text": {"format": {"type": "text"}},
        "usage": {"input_tokens": prompt, "output_tokens": completion,
                  "total_tokens": prompt + completion,
                  "input_tokens_details": {"cached_tokens": 0},
                  "output_tokens_details": {"reasoning_tokens": 0}},
    }


def response_events(body: dict[str, Any], reply: Reply) -> Iterator[bytes]:
    final = response_object(body, reply)
    started = {**final, "status": "in_progress", "output": [], "usage": None}
    seq = iter(range(1 << 30))

    def event(kind: str, **fields: Any) -> bytes:
        data = {"type": kind, "sequence_number": next(seq), **fields}
        return b"event: " + kind.encode() + b"\ndata: " + orjson.dumps(data) + b"\n\n"

    yield event("response.created", response=started)
    yield event("response.in_progress", response=started)
    for index, item in enumerate(final["output"]):
        if item["type"] == "message":
            text = item["content"][0]["text"]
            yield event("response.output_item.added", output_index=index,
                        item={**item, "status": "in_progress", "content": []})
            part = {"type": "output_text", "text": "", "annotations": []}
            yield event("response.content_part.added", item_id=item["id"],
                        output_index=index, content_index=0, part=part)
            for piece in split_text(text):
                yield event("response.output_text.delta", item_id=item["id"],
                            output_index=index, content_index=0, delta=piece, logprobs=[])
            yield event("response.output_text.done", item_id=item["id"], output_index=index,
                        content_index=0, text=text, logprobs=[])
            yield event("response.content_part.done", item_id=item["id"], output_index=index,
                        content_index=0, part={**part, "text": text})
        else:
            yield event("response.output_item.added", output_index=index,
                        item={**item, "status": "in_progress", "arguments": ""})
            for piece in split_text(item["arguments"], pieces=3):
                yield event("response.function_call_arguments.delta", item_id=item["id"],
                            output_index=index, delta=piece)
            yield event("response.function_call_arguments.done", item_id=item["id"],
                        output_index=index, arguments=item["arguments"])
        yield event("response.output_item.done", output_index=index, item=item)
    yield event("response.completed", response=final)


# -- Anthropic messages ----------------------------------------------------------------------
def _stop_reason(reply: Reply) -> str:
    return "tool_use" if reply.tool_calls else "end_turn"


def _blocks(reply: Reply) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    if reply.content:
        blocks.append({"type": "text", "text": reply.content})
    for call in reply.tool_calls:
        blocks.append({"type": "tool_use", "id": random_id("toolu_"), "name": call.name,
                       "input": orjson.loads(call.arguments or "{}")})
    return blocks


def anthropic_message(body: dict[str, Any], reply: Reply) -> dict[str, Any]:
    prompt, completion = _usage_tokens(body, reply)
    return {
        "id": random_id("msg_"), "type": "message", "role": "assistant",
        "model": body.get("model") or "stub", "content": _blocks(reply),
        "stop_reason": _stop_reason(reply), "stop_sequence": None,
        "usage": {"input_tokens": prompt, "output_tokens": completion,
                  "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0},
    }


def anthropic_events(body: dict[str, Any], reply: Reply) -> Iterator[bytes]:
    final = anthropic_message(body, reply)

    def event(kind: str, **fields: Any) -> bytes:
        return (b"event: " + kind.encode() + b"\ndata: "
                + orjson.dumps({"type": kind, **fields}) + b"\n\n")

    usage = final["usage"]
    yield event("message_start", message={
        **final, "content": [], "stop_reason": None,
        "usage": {**usage, "output_tokens": 1}})
    for index, block in enumerate(final["content"]):
        if block["type"] == "text":
            yield event("content_block_start", index=index,
                        content_block={"type": "text", "text": ""})
            yield event("ping")
            for piece in split_text(block["text"]):
                yield event("content_block_delta", index=index,
                            delta={"type": "text_delta", "text": piece})
        else:
            yield event("content_block_start", index=index,
                        content_block={**block, "input": {}})
            for piece in split_text(orjson.dumps(block["input"]).decode(), pieces=3):
                yield event("content_block_delta", index=index,
                            delta={"type": "input_json_delta", "partial_json": piece})
        yield event("content_block_stop", index=index)
    yield event("message_delta", delta={"stop_reason": final["stop_reason"],
                                        "stop_sequence": None},
                usage={"output_tokens": usage["output_tokens"]})
    yield event("message_stop")


def anthropic_error(status: int, message: str) -> dict[str, Any]:
    kind = {400: "invalid_request_error", 401: "authentication_error", 404: "not_found_error",
            429: "rate_limit_error"}.get(status, "api_error")
    return {"type": "error", "error": {"type": kind, "message": message}}
