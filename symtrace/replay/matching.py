"""Which recorded record a replayed call consumes (the matching rule).

* A call on a **strict** lane (explicit agent/lane attribution, or `main`) must match the
  *next unconsumed record of that lane*: same position in the lane's order and the same
  canonical request hash. Reordering within a lane is a divergence.
* A call on a **pooled** lane (unattributed worker threads / asyncio tasks) is matched among
  the *enabled* pooled records (every data parent already consumed) by content hash, the
  earliest position first. Benign interleavings of concurrent calls therefore replay, while a
  request nobody recorded, or one whose inputs were not produced yet, diverges.
* Nothing is ever matched by similarity.

The matcher holds no lock: the replayer calls it under its own.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from symtrace.model.divergence import DivergenceKind
from symtrace.model.events import EdgeKind, Event, EventType
from symtrace.model.hashing import digest
from symtrace.model.intervention import Intervention
from symtrace.session.context import is_strict_lane
from symtrace.session.core import LLM, BoundaryCall

BOUNDARY_TYPES = (EventType.AGENT_ACTION, EventType.TOOL_CALL)

HINT_CHANGED = (
    "the request changed upstream of this call (prompt, tool output, config or code); "
    "re-record, or replay with --anchor on a causal parent to go live there"
)
HINT_LANE_DONE = "every recorded call of this lane was already consumed"


@dataclass(frozen=True, slots=True)
class Mismatch:
    """Why a call matched nothing: the divergence kind, the record expected, the pending."""

    kind: DivergenceKind
    expected: Event | None
    hint: str
    pending: list[Event]


class Matcher:
    """The records a replay still expects, and which one each call consumes."""

    def __init__(self, events: Sequence[Event], recorded: Intervention | None) -> None:
        # events come sorted by position (Bundle.events)
        self.records = [e for e in events if e.type in BOUNDARY_TYPES]
        self.by_id = {r.id: r for r in self.records}
        self.consumed: set[str] = set()
        self.superseded: set[str] = set()
        self._results = {
            e.parents[0].source: e
            for e in events
            if e.type is EventType.TOOL_RESULT and e.parents
        }
        # A child bundle's anchor was sent as q ⊕ Δ: replay matches it with Δ re-applied.
        self._recorded = recorded

    # -- state -------------------------------------------------------------------------------
    def is_pending(self, record: Event) -> bool:
        return record.id not in self.consumed and record.id not in self.superseded

    def consume(self, event: Event) -> None:
        self.consumed.add(event.id)

    def supersede(self, ids: Iterable[str]) -> None:
        self.superseded.update(ids)

    def result_of(self, tool_call: Event) -> Event | None:
        """The recorded tool_result of *tool_call* (None when the recording stopped first)."""
        return self._results.get(tool_call.id)

    def nested(self, tool_call: Event) -> list[Event]:
        """Records made inside *tool_call*'s body, in position order."""
        return [r for r in self.records if r.meta.get("within") == tool_call.id]

    def unconsumed(self) -> list[Event]:
        """Records never consumed, superseded ones included (reports, close)."""
        return [r for r in self.records if r.id not in self.consumed]

    def not_reached(self) -> list[Event]:
        """Records neither consumed nor superseded."""
        return [r for r in self.records if self.is_pending(r)]

    # -- matching ----------------------------------------------------------------------------
    def match(self, call: BoundaryCall) -> Event | Mismatch:
        """The record *call* consumes, or why it matches none (the caller consumes it)."""
        lane = call.attribution.lane
        pending = self.not_reached()
        same_kind = [r for r in pending if r.type is call.event_type]
        expected: Event | None
        if is_strict_lane(lane):
            # the next record of the lane, whatever its kind: an LLM call arriving where a
            # tool call was recorded is a reordering, not a match further down the lane
            head = next((r for r in pending if r.lane == lane), None)
            if (
                head is not None
                and head.type is call.event_type
                and self._hash_for(call, head) == head.request_hash
            ):
                return head
            expected = head
        else:
            enabled = [r for r in same_kind if not is_strict_lane(r.lane) and self._enabled(r)]
            for record in enabled:
                if self._hash_for(call, record) == record.request_hash:
                    return record
            expected = next((r for r in enabled if r.lane == lane), None) or (
                enabled[0] if enabled else None
            )
        if expected is None:
            hint = (
                HINT_LANE_DONE
                if any(r.lane == lane for r in self.records)
                else f"the recording has no calls on lane {lane!r}"
            )
            return Mismatch(DivergenceKind.UNEXPECTED_CALL, None, hint, pending)
        return Mismatch(DivergenceKind.REQUEST_MISMATCH, expected, HINT_CHANGED, pending)

    def _enabled(self, record: Event) -> bool:
        return all(
            edge.source in self.consumed for edge in record.parents if edge.kind is EdgeKind.DATA
        )

    def _hash_for(self, call: BoundaryCall, record: Event) -> str:
        recorded = self._recorded
        if call.kind == LLM and recorded is not None and recorded.event_id == record.id:
            return digest(recorded.apply(call.request))
        return call.request_hash
