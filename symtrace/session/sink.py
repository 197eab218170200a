"""Where a session's trajectory goes: graph derivation and bundle writing, behind one seam.

A session assigns ids, positions, lanes and completion ranks and builds each event's canonical
(redacted) content and hashes; what it then needs done with them is small: the parents of a
call that starts (`open_call`: the graph's state at request time decides them), an event
whose result reached the program (`emit`: write it, then let the graph learn what it
produced), and an event materialised from a recording (`adopt`, replay only).

Both are done on the calling thread, before the call returns to the program: an event is in
the bundle's files once its result is (a killed program leaves every event it received), and
the graph is derived while recording, so every event line carries its parents (one bundle
format; docs/recording-process.md says why not a writer thread, process or a later derivation).
"""

from __future__ import annotations

from typing import Any

from symtrace.bundle.writer import BundleWriter
from symtrace.model.canonical import JSONValue
from symtrace.model.events import Edge, Event, EventType
from symtrace.model.graph import GraphBuilder


class TrajectorySink:
    """Derive parents and write the bundle (*writer* None: no bundle); a replay passes the
    *graph* it decides live calls by."""

    def __init__(self, writer: BundleWriter | None, graph: GraphBuilder | None = None) -> None:
        self.writer = writer
        self.graph = graph or GraphBuilder()

    @property
    def accepting(self) -> bool:
        """Events can still be appended (False once the bundle was sealed or dropped)."""
        return self.writer is None or self.writer.is_open

    def open_call(self, ident: str, event_type: EventType, lane: str, request: JSONValue,
                  meta: dict[str, Any], dispatched_by: tuple[str, ...]) -> tuple[Edge, ...]:
        """The parents of a call that starts now."""
        return self.graph.parents_for(ident, event_type, lane, request, meta,
                                      dispatched_by=dispatched_by)

    def emit(self, event: Event) -> None:
        """Write *event* (hashed), then let the graph learn from it."""
        if self.writer is not None:
            self.writer.write_event(event)
        self.graph.completed(event)

    def adopt(self, event: Event) -> None:
        """Write a replayed event and follow it in the graph."""
        if self.writer is not None:
            self.writer.write_event(event)
        self.graph.follow(event)
