"""Placing repair guidance into an LLM request: q̂ = q ⊕ Δ.

Placements (documented in docs/replay-semantics.md):

* ``user`` (default): a new trailing user message whose content is Δ. It is the last thing the
  model reads, and it is valid after a user or a tool message in the chat-completions API.
* ``system``: Δ appended to the first system message (a system message is inserted at the
  front when there is none). Use it when the framework re-sends the system prompt verbatim and
  you want the guidance to persist in the agent's instructions for this call.
* ``last``: Δ appended to the content of the last message, whatever its role.

The operation is pure: the canonical request is copied, never mutated.

Each provider wire format (symtrace.model.llm_wire) gets Δ in its own shape: chat
completions as above; the Responses API as a trailing `input` message (`user`), appended to
`instructions` (`system`) or to the last input item (`last`); Anthropic messages as a trailing
user message, appended to the top-level `system` (`system`: Anthropic has no system role in
`messages`) or to the last message.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

from symtrace.model.canonical import JSONValue
from symtrace.model.llm_wire import WireFormat, format_of_request

PLACEMENTS = ("user", "system", "last")
DEFAULT_PLACEMENT = "user"
SEPARATOR = "\n\n"


def validate_placement(placement: str) -> str:
    if placement not in PLACEMENTS:
        raise ValueError(
            f"unknown guidance placement {placement!r}; choose one of {', '.join(PLACEMENTS)}"
        )
    return placement


def apply_to_messages(messages: list[JSONValue], guidance: str, placement: str) -> list[JSONValue]:
    validate_placement(placement)
    out = copy.deepcopy(messages)
    if not guidance:  # no Δ: the anchor is only regenerated live (e.g. a study's RQ1 replay)
        return out
    if placement == "user" or not out:
        out.append({"role": "user", "content": guidance})
    elif placement == "system":
        index = next(
            (i for i, m in enumerate(out) if isinstance(m, dict) and m.get("role") == "system"),
            None,
        )
        if index is None:
            out.insert(0, {"role": "system", "content": guidance})
        else:
            out[index] = _append(out[index], guidance)
    else:
        out[-1] = _append(out[-1], guidance)
    return out


def apply_to_request(request: JSONValue, guidance: str, placement: str) -> JSONValue:
    """Apply Δ to a canonical HTTP request (`{"path": …, "body": {…}, …}`) in its format."""
    if not isinstance(request, dict) or not isinstance(request.get("body"), dict):
        raise ValueError("guidance can only be applied to an LLM request with a JSON body")
    fmt = format_of_request(request) or WireFormat.CHAT
    return {**request, "body": apply_to_body(request["body"], fmt, guidance, placement)}


def apply_to_body(body: JSONValue, fmt: WireFormat, guidance: str, placement: str) -> JSONValue:
    """Apply Δ to a request body of wire format *fmt* (canonical or as sent on the wire)."""
    validate_placement(placement)
    if not isinstance(body, dict):
        raise ValueError("guidance can only be applied to a request with a JSON object body")
    if fmt is WireFormat.RESPONSES:
        return _responses_body(body, guidance, placement)
    if not isinstance(body.get("messages"), list):
        raise ValueError("guidance can only be applied to a request that has messages")
    if fmt is WireFormat.ANTHROPIC and placement == "system":
        system = body.get("system")
        if isinstance(system, list):
            return {**body, "system": [*copy.deepcopy(system), {"type": "text", "text": guidance}]}
        text = system if isinstance(system, str) else ""
        return {**body, "system": (text + SEPARATOR + guidance) if text else guidance}
    return {**body, "messages": apply_to_messages(body["messages"], guidance, placement)}


def _responses_body(body: dict, guidance: str, placement: str) -> dict:
    if placement == "system":
        text = body.get("instructions") if isinstance(body.get("instructions"), str) else ""
        return {**body, "instructions": (text + SEPARATOR + guidance) if text else guidance}
    items = body.get("input")
    if isinstance(items, str):
        items = [{"role": "user", "content": items}]
    if not isinstance(items, list):
        raise ValueError("guidance can only be applied to a Responses request with input")
    items = copy.deepcopy(items)
    if placement == "user" or not items:
        items.append({"role": "user", "content": guidance})
    else:
        items[-1] = _append(items[-1], guidance)
    return {**body, "input": items}


def _append(message: JSONValue, guidance: str) -> JSONValue:
    if not isinstance(message, dict):
        return message
    content = message.get("content")
    if isinstance(content, list):
        return {**message, "content": [*content, {"type": "text", "text": guidance}]}
    text = content if isinstance(content, str) else ""
    return {**message, "content": (text + SEPARATOR + guidance) if text else guidance}


@dataclass(frozen=True, slots=True)
class Intervention:
    """Guidance Δ applied at one LLM event (q̂ = q ⊕ Δ)."""

    event_id: str
    guidance: str
    placement: str = DEFAULT_PLACEMENT

    def apply(self, request: JSONValue) -> JSONValue:
        return apply_to_request(request, self.guidance, self.placement)

    def apply_to_body(self, body: JSONValue, fmt: WireFormat = WireFormat.CHAT) -> JSONValue:
        """Apply Δ to a raw (non-canonical) JSON request body, as sent on the wire."""
        return apply_to_body(body, fmt, self.guidance, self.placement)
