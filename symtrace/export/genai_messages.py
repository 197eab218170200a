"""Chat messages in the shape the GenAI conventions give `gen_ai.input.messages` and
`gen_ai.output.messages`: a role and typed parts (text, tool_call, tool_call_response)."""

from __future__ import annotations

from typing import Any

from symtrace.diagnosis.message_text import parse_json


def input_messages(messages: list[Any]) -> list[dict[str, Any]]:
    """Chat messages in the GenAI conventions' shape: role plus typed parts."""
    out = []
    for message in messages:
        if not isinstance(message, dict):
            continue
        role = str(message.get("role") or "user")
        parts: list[dict[str, Any]] = []
        if role == "tool":
            parts.append({"type": "tool_call_response", "id": message.get("tool_call_id"),
                          "response": message.get("content")})
        else:
            parts.extend(_text_parts(message.get("content")))
            parts.extend(_call_parts(message.get("tool_calls")))
        out.append({"role": role, "parts": parts})
    return out


def output_messages(choices: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for choice in choices:
        message = choice.get("message") if isinstance(choice.get("message"), dict) else {}
        parts = [*_text_parts(message.get("content")), *_call_parts(message.get("tool_calls"))]
        out.append({"role": str(message.get("role") or "assistant"), "parts": parts,
                    "finish_reason": choice.get("finish_reason")})
    return out


def _text_parts(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "content": content}]
    if isinstance(content, list):
        return [{"type": "text", "content": p.get("text")} for p in content
                if isinstance(p, dict) and p.get("type") == "text"]
    return []


def _call_parts(calls: Any) -> list[dict[str, Any]]:
    parts = []
    for call in calls if isinstance(calls, list) else []:
        function = call.get("function") if isinstance(call, dict) else None
        if isinstance(function, dict):
            parts.append({"type": "tool_call", "id": call.get("id"), "name": function.get("name"),
                          "arguments": parse_json(function.get("arguments"))})
    return parts
