"""Events whose request and response are joined from the blob pack on first access.

Loading a bundle then costs one JSON parse per event line and no blob work: a replay reads an
event's content when it serves or compares it, a 50,000-event bundle loads without joining
50,000 conversations. To every reader a LazyEvent is an Event: `request` and `response` are
plain JSON data when read. `dataclasses.replace` (e.g. `with_hashes`) returns a plain-valued
copy, since its constructor receives the joined values.
"""

from __future__ import annotations

import threading
from typing import Any

from symtrace.bundle.blobs import Joiner
from symtrace.errors import BundleFormatError
from symtrace.model.events import Edge, Event
from symtrace.model.graph_at_read import derive_at_read

_set = object.__setattr__


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
        """An event from a parsed line whose request/response still hold blob refs."""
        event = object.__new__(cls)
        event._fill(data, {} if edges is None else edges)
        _set(event, "_request", data.get("request"))
        _set(event, "_response", data.get("response"))
        _set(event, "_joiner", joiner)
        return event

    request = _lazy_field("_request")  # type: ignore[assignment]
    response = _lazy_field("_response")  # type: ignore[assignment]


class DerivedEvent(LazyEvent):
    """A call of a bundle whose graph is derived at read (format 3): its parents are derived,
    for all of the bundle's calls at once, when one of them is first read (a bundle that is
    only listed, inspected or verified never derives them)."""

    __slots__ = ("_derivation", "_parents")

    def _get_parents(self) -> tuple[Edge, ...]:
        parents = object.__getattribute__(self, "_parents")
        if parents is None:
            object.__getattribute__(self, "_derivation").run()
            parents = object.__getattribute__(self, "_parents")
        return parents  # type: ignore[no-any-return]

    def _set_parents(self, value: tuple[Edge, ...]) -> None:
        _set(self, "_parents", value)  # given (a copy's constructor): final
        _set(self, "_derivation", None)

    parents = property(_get_parents, _set_parents)  # type: ignore[assignment]


class Derivation:
    """The derivation shared by one bundle's DerivedEvents (run once, on first need; threads
    reading parents meanwhile wait for it)."""

    def __init__(self, lines: list[Event]) -> None:
        self.lines = lines  # events.jsonl order (the bundle sorts its own list by position)
        self._lock = threading.RLock()
        self._running = False
        self._done = False
        for event in lines:
            if type(event) is DerivedEvent:
                _set(event, "_parents", None)
                _set(event, "_derivation", self)

    def run(self) -> None:
        with self._lock:
            if self._done:
                return
            if self._running:  # the derivation read a call's parents before deriving them
                raise BundleFormatError(
                    "a call's event line comes before the call started (its seen is too large)")
            self._running = True
            try:
                derived = derive_at_read(self.lines)
            finally:
                self._running = False
            for event in self.lines:
                if type(event) is DerivedEvent:
                    _set(event, "_parents", derived[event.id])
            self._done = True


class _Joined:
    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value
