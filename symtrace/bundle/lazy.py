"""Events whose request and response are joined from the blob pack on first access.

Loading a bundle then costs one JSON parse per event line and no blob work: a replay reads an
event's content when it serves or compares it, a 50,000-event bundle loads without joining
50,000 conversations. To every reader a LazyEvent is an Event: `request` and `response` are
plain JSON data when read. `dataclasses.replace` (e.g. `with_hashes`) returns a plain-valued
copy, since its constructor receives the joined values.
"""

from __future__ import annotations

from typing import Any

from symtrace.bundle.blobs import Joiner
from symtrace.model.events import Edge, EdgeKind, Event, EventType

_TYPES = {member.value: member for member in EventType}
_KINDS = {member.value: member for member in EdgeKind}


class LazyEvent(Event):
    __slots__ = ("_joiner", "_request", "_response")

    @classmethod
    def of(cls, data: dict[str, Any], joiner: Joiner) -> LazyEvent:
        """An event from a parsed line whose request/response still hold blob refs.

        Event.from_json, with enum members looked up in dicts (Enum calls dominate loading
        a large bundle otherwise)."""
        event = cls(
            id=data["id"],
            position=int(data["position"]),
            type=_TYPES[data["type"]],
            lane=data["lane"],
            agent=data.get("agent"),
            reason=data.get("reason"),
            parents=tuple(Edge(p["source"], _KINDS[p["kind"]]) for p in data.get("parents", [])),
            request=data.get("request"),
            request_hash=data.get("request_hash"),
            response=data.get("response"),
            response_hash=data.get("response_hash"),
            meta=dict(data.get("meta") or {}),
            content_hash=data.get("content_hash", ""),
        )
        object.__setattr__(event, "_joiner", joiner)
        return event

    def _get(self, slot: str) -> Any:
        value = object.__getattribute__(self, slot)
        joiner = object.__getattribute__(self, "_joiner")
        if joiner is not None and not isinstance(value, _Joined):
            value = _Joined(joiner.join(value))
            object.__setattr__(self, slot, value)
        return value.value if isinstance(value, _Joined) else value

    @property  # type: ignore[override]
    def request(self) -> Any:
        return self._get("_request")

    @request.setter
    def request(self, value: Any) -> None:
        object.__setattr__(self, "_request", value)
        object.__setattr__(self, "_joiner", None)

    @property  # type: ignore[override]
    def response(self) -> Any:
        return self._get("_response")

    @response.setter
    def response(self, value: Any) -> None:
        object.__setattr__(self, "_response", value)
        object.__setattr__(self, "_joiner", None)


class _Joined:
    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value
