"""Where a session's trajectory goes: graph derivation and bundle writing, behind one seam.

A session assigns ids, positions, lanes and completion ranks and builds each event's canonical
(redacted) content and hashes; what it then needs done with them is small: the parents of a
call that starts (`open_call`, the graph's state at request time decides them), an event
whose result reached the program (`emit`: write it, then let the graph learn what it
produced), an event materialised from a recording (`adopt`, replay only), and at the end the
bundle's completion, closing or abort.

Two implementations: `InlineSink` (here) derives and writes in the calling thread, as every
session did before; `OffloadedSink` (symtrace/record/offload.py) ships the same operations to
a writer process that runs the same `GraphBuilder` and `BundleWriter` on them, so the bundle
is byte-identical (docs/recording-process.md).
"""

from __future__ import annotations

from typing import Any, Protocol

from symtrace.bundle.writer import BundleWriter
from symtrace.model.canonical import JSONValue
from symtrace.model.events import Edge, Event, EventType
from symtrace.model.graph import GraphBuilder
from symtrace.model.graph_at_read import inputs_of


class TrajectorySink(Protocol):
    """What a session hands its events to (see the module doc)."""

    @property
    def accepting(self) -> bool:
        """Events can still be appended (False once the bundle was sealed or dropped)."""
        ...

    def open_call(self, ident: str, event_type: EventType, lane: str, request: JSONValue,
                  meta: dict[str, Any], dispatched_by: tuple[str, ...],
                  body_json: bytes | None = None) -> tuple[Edge, ...]:
        """The parents of a call that starts now; () when they are derived elsewhere (the
        event then takes the parents its call got there). *body_json*: the JSON text
        `request["body"]` is the parse of (`BoundaryCall.body_json`), if known."""
        ...

    def emit(self, event: Event) -> None:
        """Write *event* (hashed), then let the graph learn from it."""
        ...

    def adopt(self, event: Event) -> None:
        """Write a replayed event and follow it in the graph."""
        ...


class InlineSink:
    """Derive parents and write the bundle in the calling thread (*writer* None: no bundle).

    A recording whose graph is derived at read (`BundleWriter.graph_at_read`) writes what
    each call's derivation reads instead (symtrace.model.graph_at_read); a replay, which
    passes the *graph* it decides live calls by, derives while it writes."""

    def __init__(self, writer: BundleWriter | None, graph: GraphBuilder | None = None) -> None:
        self.writer = writer
        self.at_read = graph is None and writer is not None and writer.graph_at_read
        self.graph = graph or GraphBuilder()
        self._inputs: dict[str, dict[str, Any]] = {}  # call id -> inputs_of() (at read)

    @property
    def accepting(self) -> bool:
        return self.writer is None or self.writer.is_open

    def open_call(self, ident: str, event_type: EventType, lane: str, request: JSONValue,
                  meta: dict[str, Any], dispatched_by: tuple[str, ...],
                  body_json: bytes | None = None) -> tuple[Edge, ...]:
        if self.at_read:
            assert self.writer is not None
            self._inputs[ident] = inputs_of(len(self.writer.events), dispatched_by)
            return ()
        return self.graph.parents_for(ident, event_type, lane, request, meta,
                                      dispatched_by=dispatched_by)

    def emit(self, event: Event) -> None:
        if self.at_read:
            assert self.writer is not None
            inputs = self._inputs.pop(event.id, None)
            self.writer.write_event(event if inputs is None else event.evolve(derive=inputs))
            return
        if self.writer is not None:
            self.writer.write_event(event)
        self.graph.completed(event)

    def adopt(self, event: Event) -> None:
        if self.writer is not None:
            self.writer.write_event(event)
        self.graph.follow(event)
