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
from symtrace.model.events import Edge, Event


def _lazy_field(slot: str) -> property:
    """A field read joined on first access; written (by the constructor) as given."""

    def get(self: LazyEvent) -> Any:
        value = object.__getattribute__(self, slot)
        joiner = object.__getattribute__(self, "_joiner")
        if joiner is not None and not isinstance(value, _Joined):
            value = _Joined(joiner.join(value))
            object.__setattr__(self, slot, value)
        return value.value if isinstance(value, _Joined) else value

    def set(self: LazyEvent, value: Any) -> None:
        object.__setattr__(self, slot, value)
        object.__setattr__(self, "_joiner", None)

    return property(get, set)


class LazyEvent(Event):
    __slots__ = ("_joiner", "_request", "_response")

    @classmethod
    def of(
        cls, data: dict[str, Any], joiner: Joiner,
        edges: dict[tuple[str, str], Edge] | None = None,
    ) -> LazyEvent:
        """An event from a parsed line whose request/response still hold blob refs (built as
        Event.from_json builds every event read, then given the joiner)."""
        event = cls.from_json(data, edges)
        object.__setattr__(event, "_joiner", joiner)
        return event  # type: ignore[return-value]

    def _take_content(self, request: Any, response: Any) -> None:
        object.__setattr__(self, "_request", request)  # blob refs, joined once `of` gives a
        object.__setattr__(self, "_response", response)  # joiner
        object.__setattr__(self, "_joiner", None)

    request = _lazy_field("_request")  # type: ignore[assignment]
    response = _lazy_field("_response")  # type: ignore[assignment]


class _Joined:
    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value
