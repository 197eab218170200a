"""Held tool outputs: a controlled live suffix (EDGE's counterfactual rollout).

A selective replay's live suffix normally runs every tool call it makes. A controlled
rollout instead keeps the world fixed where the run did not change: a live tool call whose
canonical request (tool name + arguments, as recorded) is identical to one the recording
made gets the recorded outcome (value or exception) and its body does not run; a new or
changed call runs live. So only the intervened step and the reasoning downstream of it
differ between the recording and the rollout, not the tools' own nondeterminism (a clock,
a counter, a service that answers differently the second time).

Repeated identical calls take the recorded outcomes in recorded order; once they are used
up, a further identical call runs live (the recording never saw it). The held call is still
an event of the new run (tool_call + tool_result with the recorded outcome), so its child
bundle replays strictly like any other.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence

from symtrace.model.canonical import JSONValue
from symtrace.model.events import Event, EventType
from symtrace.model.hashing import digest


class HeldToolOutputs:
    """The recorded outcome of every recorded tool call, by canonical request."""

    def __init__(self, events: Sequence[Event]) -> None:
        results = {e.parents[0].source: e for e in events
                   if e.type is EventType.TOOL_RESULT and e.parents}
        self._outcomes: dict[str, deque[JSONValue]] = {}
        for event in events:  # sorted by position: identical calls keep their recorded order
            result = results.get(event.id)
            if event.type is EventType.TOOL_CALL and result is not None:
                self._outcomes.setdefault(digest(event.request), deque()).append(result.response)
        self.held: list[str] = []  # ids of the live tool_call events that were held

    def take(self, request: JSONValue) -> JSONValue | None:
        """The recorded outcome for *request*'s next identical call, or None (run it live)."""
        queue = self._outcomes.get(digest(request))
        return queue.popleft() if queue else None
