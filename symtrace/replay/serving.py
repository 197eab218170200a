"""Serving a matched record: its recorded result, and the records consumed along with it.

An LLM record serves its recorded response. A tool call serves its recorded outcome (the
tool_result), and since the tool body does not run on replay, the boundary calls that body
made are consumed with it. Everything served is materialised into the new run's trajectory.
A record that has nothing to serve (an abandoned LLM call, a tool call whose result never
came) is a divergence: the program now uses a result the recording never had.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NoReturn

from symtrace.model.canonical import JSONValue
from symtrace.model.divergence import DivergenceKind
from symtrace.model.events import ABANDONED, Event, EventType
from symtrace.replay.child_bundle import ChildTrajectory
from symtrace.replay.matching import Matcher
from symtrace.replay.reports import HINT_ABANDONED, HINT_NO_RESULT
from symtrace.session.core import BoundaryCall, Ticket

# (kind, expected record, call, hint) -> raises the replay's divergence
Diverge = Callable[[DivergenceKind, Event, BoundaryCall, str], NoReturn]


class RecordServer:
    """Serves matched records (under the replayer's lock)."""

    def __init__(
        self,
        matcher: Matcher,
        trajectory: ChildTrajectory,
        diverge: Diverge,
        *,
        restore: Callable[[JSONValue], JSONValue] = lambda value: value,
    ) -> None:
        self._matcher = matcher
        self._restore = restore  # [REDACTED:NAME] -> this process's NAME (model/redaction.py)
        self._trajectory = trajectory
        self._diverge = diverge
        self.matched = 0  # records served so far (reported as "matched before")

    def serve(self, call: BoundaryCall, record: Event) -> Ticket:
        self._matcher.consume(record)
        self.matched += 1
        served: JSONValue
        if record.type is EventType.AGENT_ACTION:
            if record.meta.get(ABANDONED):  # reached only when nothing is held any more
                self._diverge(DivergenceKind.UNEXPECTED_CALL, record, call, HINT_ABANDONED)
            served = record.response
            self._trajectory.materialise(record)
        else:
            result = self._matcher.result_of(record)
            if result is None:  # recorded call whose result never came (crashed run)
                self._diverge(DivergenceKind.UNEXPECTED_CALL, record, call, HINT_NO_RESULT)
            served = result.response
            self._matcher.consume(result)
            self._trajectory.materialise(record)
            self._skip_nested(record)
            self._trajectory.materialise(result)
        served = self._restore(served)
        return Ticket(call, record.id, record.position, record.parents, False, call.request, served)

    def _skip_nested(self, tool_call: Event) -> None:
        """The tool body does not run on replay, so calls it made are consumed with it."""
        for nested in self._matcher.nested(tool_call):
            if nested.id in self._matcher.consumed:
                continue
            self._matcher.consume(nested)
            self._trajectory.materialise(nested)
            result = self._matcher.result_of(nested)
            if result is not None:
                self._matcher.consume(result)
                self._skip_nested(nested)
                self._trajectory.materialise(result)
