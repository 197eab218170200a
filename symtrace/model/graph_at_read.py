"""The event-dependency graph derived when a bundle is read, not while it is recorded.

Deriving a call's parents is half of what recording a conversation call costs (the writer
process's quote scan and value lookups over every re-sent message, docs/performance.md). A
recording made with `graph="at-read"` (bundle format 3) skips it: each call's line holds, in
place of its parents, what deriving them reads that the bundle does not hold otherwise:

* `seen`: how many event lines were written before the call started. The graph's state at a
  call's start is that of the events completed by then, and events are written in the
  order they complete, so these are the first `seen` lines of events.jsonl;
* `causes`: the lanes the adapter named as having caused the call's turn (its attribution's
  `dispatched_by`), when it named any.

Everything else a derivation reads is the event itself (type, lane, request, the provider's
call id in `meta`). The run's final_result holds them too: its parents (the sink events, and
the event whose output the declared value repeats) need the calls' parents.

derive_at_read() replays the recording's sequence: calls in the order they started
(position), each after the events completed before it, through the same GraphBuilder, so it
derives the parents a recording with the graph derived while recording gives (checked on the
same runs: tests/integrity/test_graph_at_read.py, and every framework scenario in
tests/adapters/*/test_*graph_at_read.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from operator import attrgetter
from typing import Any

from symtrace.errors import BundleFormatError
from symtrace.model.events import Edge, Event, EventType
from symtrace.model.graph import GraphBuilder, final_parents

SEEN, CAUSES = "seen", "causes"


def inputs_of(written: int, causes: Sequence[str]) -> dict[str, Any]:
    """What a call that starts after *written* event lines, caused by *causes*, writes in
    place of its parents."""
    return {SEEN: written, CAUSES: list(causes)} if causes else {SEEN: written}


def check_inputs(inputs: Any, line: int, where: str) -> None:
    """Raise BundleFormatError unless *inputs*, read from the event on *line* (0-based) of
    *where*, are what inputs_of() writes: `seen` counts lines before that one."""
    at = f"{where} line {line + 1}"
    if not isinstance(inputs, dict) or not inputs.keys() <= {SEEN, CAUSES} or SEEN not in inputs:
        raise BundleFormatError(f"{at}: parents to derive must be {{seen[, causes]}}")
    seen = inputs[SEEN]
    if type(seen) is not int or not 0 <= seen <= line:
        raise BundleFormatError(
            f"{at}: seen must count event lines before it (0..{line}), got {seen!r}")
    causes = inputs.get(CAUSES, [])
    if not isinstance(causes, list) or not all(isinstance(c, str) for c in causes):
        raise BundleFormatError(f"{at}: causes must be a list of lane names")


def derive_at_read(lines: Sequence[Event]) -> dict[str, tuple[Edge, ...]]:
    """The parents of every event in *lines* (a bundle's events in events.jsonl order) that
    holds the inputs of its derivation (`Event.derive`) instead of them: the calls, and the
    final_result (final_parents() of the events before it, as a recording computes them)."""
    graph = GraphBuilder()
    derived: dict[str, tuple[Edge, ...]] = {}

    def parents(event: Event) -> tuple[Edge, ...]:
        return derived[event.id] if event.derive is not None else event.parents

    done = 0
    for call in sorted((e for e in lines if e.derive is not None), key=attrgetter("position")):
        inputs = call.derive
        assert inputs is not None
        if call.type is EventType.FINAL_RESULT:
            before = [e for e in lines if e.position < call.position]
            value = call.response.get("value") if isinstance(call.response, dict) else None
            derived[call.id] = final_parents(before, value, parents)
            continue
        for event in lines[done:inputs[SEEN]]:  # completed before the call started
            if event.type is not EventType.FINAL_RESULT:  # (a recording's graph never sees one)
                graph.completed(event)
        done = max(done, inputs[SEEN])
        derived[call.id] = graph.parents_for(call.id, call.type, call.lane, call.request,
                                             call.meta, tuple(inputs.get(CAUSES, ())))
    return derived

