"""Held tool outputs: a controlled live suffix (EDGE's counterfactual rollout).

A selective replay's live suffix normally runs every tool call it makes. A controlled
rollout instead keeps the world fixed where the run did not change: a live tool call whose
canonical request (tool name + arguments, as recorded) is identical to one the recording
made gets the recorded outcome (value or exception) and its body does not run; a new or
changed call runs live. So only the intervened step and the reasoning downstream of it
differ between the recording and the rollout, not the tools' own nondeterminism (a clock,
a counter, a service that answers differently the second time).

The k-th identical call of the new run gets the k-th recorded outcome: a recorded call the
replay already served in the prefix is skipped (it was that call's), and once the recorded
ones are used up a further identical call runs live (the recording never saw it). A held
call is still an event of the new run (tool_call + tool_result with the recorded outcome),
so its child bundle replays strictly like any other.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Container, Sequence

from symtrace.model.canonical import JSONValue
from symtrace.model.events import Event, EventType
from symtrace.model.hashing import digest


class HeldToolOutputs:
    """The recorded outcome of every recorded tool call, by canonical request."""

    def __init__(self, events: Sequence[Event]) -> None:
        results = {e.parents[0].source: e for e in events
                   if e.type is EventType.TOOL_RESULT and e.parents}
        self._outcomes: dict[str, deque[tuple[str, JSONValue]]] = {}
        for event in events:  # sorted by position: identical calls keep their recorded order
            result = results.get(event.id)
            if event.type is EventType.TOOL_CALL and result is not None:
                self._outcomes.setdefault(digest(event.request), deque()).append(
                    (event.id, result.response))
        self.held: list[str] = []  # ids of the live tool_call events that were held

    def take(self, request: JSONValue, served: Container[str]) -> JSONValue | None:
        """The recorded outcome for *request*'s next identical call, or None (run it live).
        *served*: the recorded calls the replay served (theirs are not to be handed again)."""
        queue = self._outcomes.get(digest(request))
        while queue:
            call_id, outcome = queue.popleft()
            if call_id not in served:
                return outcome
        return None
