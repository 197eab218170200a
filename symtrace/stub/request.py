"""Reading a chat-completions request the way a responder needs it.

Message ``content`` may be a string, ``None`` or a list of content parts; system prompts may
be ``system`` or ``developer`` messages. Both responders want the same few views ("the last
user text", "is there a tool result after it"), so they are computed here once.
"""

from __future__ import annotations

import hashlib
from typing import Any

import orjson

SYSTEM_ROLES = frozenset({"system", "developer"})
# Request fields that change the transport, not the answer: a streamed and a plain request
# with equal remaining fields get the same deterministic (temperature 0 + seed) answer.
TRANSPORT_FIELDS = frozenset({"stream", "stream_options"})


def messages(body: dict[str, Any]) -> list[dict[str, Any]]:
    raw = body.get("messages")
    if not isinstance(raw, list):
        return []
    return [m for m in raw if isinstance(m, dict)]


def content_text(content: object) -> str:
    """Text of a message ``content``: a string, or the ``text`` of its text parts joined."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, dict) and isinstance(part.get("text"), str):
                parts.append(part["text"])
        return "\n".join(parts)
    return ""


def last_index(msgs: list[dict[str, Any]], role: str) -> int:
    for i in range(len(msgs) - 1, -1, -1):
        if msgs[i].get("role") == role:
            return i
    return -1


def last_user_text(body: dict[str, Any]) -> str:
    msgs = messages(body)
    i = last_index(msgs, "user")
    return content_text(msgs[i].get("content")) if i >= 0 else ""


def system_text(body: dict[str, Any]) -> str:
    return "\n".join(
        content_text(m.get("content")) for m in messages(body) if m.get("role") in SYSTEM_ROLES
    )


def all_text(body: dict[str, Any]) -> str:
    return "\n".join(content_text(m.get("content")) for m in messages(body))


def tool_result_after_last_user(body: dict[str, Any]) -> bool:
    msgs = messages(body)
    start = last_index(msgs, "user") + 1
    return any(m.get("role") == "tool" for m in msgs[start:])


def last_is_tool_result(body: dict[str, Any]) -> bool:
    msgs = messages(body)
    return bool(msgs) and msgs[-1].get("role") == "tool"


def trailing_tool_results(body: dict[str, Any]) -> list[str]:
    """Contents of the ``tool`` messages at the end of the conversation."""
    out: list[str] = []
    for m in reversed(messages(body)):
        if m.get("role") != "tool":
            break
        out.append(content_text(m.get("content")))
    return out[::-1]


def tools(body: dict[str, Any]) -> list[dict[str, Any]]:
    """Function definitions offered by the request (``{"name", "parameters", ...}``)."""
    raw = body.get("tools")
    if not isinstance(raw, list):
        return []
    out = []
    for tool in raw:
        if isinstance(tool, dict) and isinstance(tool.get("function"), dict):
            fn = tool["function"]
            if isinstance(fn.get("name"), str):
                out.append(fn)
    return out


def _ordinal_ids(body: dict[str, Any]) -> dict[str, Any]:
    """Replace provider-invented tool-call ids by ordinals so they do not perturb a digest."""
    ids: dict[str, str] = {}

    def ordinal(raw: object) -> object:
        return ids.setdefault(raw, f"call#{len(ids)}") if isinstance(raw, str) else raw

    out_msgs = []
    for m in messages(body):
        m = dict(m)
        if isinstance(m.get("tool_calls"), list):
            m["tool_calls"] = [
                {**c, "id": ordinal(c.get("id"))} if isinstance(c, dict) else c
                for c in m["tool_calls"]
            ]
        if "tool_call_id" in m:
            m["tool_call_id"] = ordinal(m["tool_call_id"])
        out_msgs.append(m)
    return {**body, "messages": out_msgs}


def request_digest(body: dict[str, Any]) -> bytes:
    """SHA-256 of the request's answer-shaping content (sorted-key JSON, ids as ordinals)."""
    kept = {k: v for k, v in body.items() if k not in TRANSPORT_FIELDS}
    return hashlib.sha256(orjson.dumps(_ordinal_ids(kept), option=orjson.OPT_SORT_KEYS)).digest()
