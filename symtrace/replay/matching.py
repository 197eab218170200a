"""Which recorded record a replayed call consumes (the matching rule).

* A call on a **strict** lane (explicit agent/lane attribution, or `main`) must match the
  *next unconsumed record of that lane*: same position in the lane's order and the same
  canonical request hash. Reordering within a lane is a divergence.
* A call on a **pooled** lane (unattributed worker threads / asyncio tasks) is matched among
  the *enabled* pooled records (every data parent already consumed) by content hash, the
  earliest position first. Benign interleavings of concurrent calls therefore replay, while a
  request nobody recorded, or one whose inputs were not produced yet, diverges.
* Nothing is ever matched by similarity.

Matching costs O(1) per call whatever the bundle's size: each strict lane keeps a cursor on
its next pending record, and pooled records are indexed by (type, request hash), each bucket
with a cursor past its consumed front. Records only ever leave the pending set (consumed, or
superseded by a selective replay going live), so a cursor never moves back. Only a mismatch,
which ends the replay, looks at all records (to name the nearest ones in its report).

The matcher holds no lock: the replayer calls it under its own.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from symtrace.model.divergence import DivergenceKind
from symtrace.model.events import RETRY_OF, EdgeKind, Event, EventType
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


class _Cursor:
    """Records in position order, and the index of the first one still pending."""

    __slots__ = ("at", "records")

    def __init__(self) -> None:
        self.records: list[Event] = []
        self.at = 0


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
        self._nested: dict[str, list[Event]] = {}
        self._lanes: dict[str, _Cursor] = {}
        self._pooled: dict[tuple[EventType, str | None], _Cursor] = {}
        # A child bundle's anchor was sent as q ⊕ Δ, and so was every retry of it
        # (replay/anchor_retries.py): replay matches them with Δ re-applied.
        self._recorded = recorded
        self._guided_ids = _guided_ids(self.records, recorded)
        self._guided_records: list[Event] = []
        for record in self.records:
            within = record.meta.get("within")
            if within:
                self._nested.setdefault(within, []).append(record)
            self._lanes.setdefault(record.lane, _Cursor()).records.append(record)
            if is_strict_lane(record.lane):
                continue
            if record.id in self._guided_ids:
                self._guided_records.append(record)
                continue
            key = (record.type, record.request_hash)
            self._pooled.setdefault(key, _Cursor()).records.append(record)

    # -- state -------------------------------------------------------------------------------
    def is_pending(self, record: Event) -> bool:
        return record.id not in self.consumed and record.id not in self.superseded

    def consume(self, record: Event) -> None:
        self.consumed.add(record.id)

    def supersede(self, ids: Iterable[str]) -> None:
        self.superseded.update(ids)

    def result_of(self, tool_call: Event) -> Event | None:
        """The recorded tool_result of *tool_call* (None when the recording stopped first)."""
        return self._results.get(tool_call.id)

    def nested(self, tool_call: Event) -> list[Event]:
        """Records made inside *tool_call*'s body, in position order."""
        return self._nested.get(tool_call.id, [])

    def unconsumed(self) -> list[Event]:
        """Records never consumed, superseded ones included (reports, close)."""
        return [r for r in self.records if r.id not in self.consumed]

    def not_reached(self) -> list[Event]:
        return [r for r in self.records if self.is_pending(r)]

    # -- matching ----------------------------------------------------------------------------
    def match(self, call: BoundaryCall) -> Event | Mismatch:
        """The record *call* consumes, or why it matches none (the caller consumes it)."""
        lane = call.attribution.lane
        if is_strict_lane(lane):
            head = self._lane_head(lane)
            if (
                head is not None
                and head.type is call.event_type
                and self._hash_for(call, head) == head.request_hash
            ):
                return head
            # the next record of the lane, whatever its kind: an LLM call arriving where a
            # tool call was recorded is a reordering, not a match further down the lane
            return self._mismatch(call, head)
        found = self._pooled_match(call)
        if found is not None:
            return found
        enabled = [
            r
            for r in self.not_reached()
            if r.type is call.event_type and not is_strict_lane(r.lane) and self._enabled(r)
        ]
        expected = next((r for r in enabled if r.lane == lane), None) or (
            enabled[0] if enabled else None
        )
        return self._mismatch(call, expected)

    def _lane_head(self, lane: str) -> Event | None:
        cursor = self._lanes.get(lane)
        if cursor is None:
            return None
        records = cursor.records
        while cursor.at < len(records) and not self.is_pending(records[cursor.at]):
            cursor.at += 1
        return records[cursor.at] if cursor.at < len(records) else None

    def _pooled_match(self, call: BoundaryCall) -> Event | None:
        """The earliest enabled pending pooled record with the call's hash."""
        found: Event | None = None
        cursor = self._pooled.get((call.event_type, call.request_hash))
        if cursor is not None:
            records = cursor.records
            while cursor.at < len(records) and not self.is_pending(records[cursor.at]):
                cursor.at += 1
            for i in range(cursor.at, len(records)):
                if self.is_pending(records[i]) and self._enabled(records[i]):
                    found = records[i]
                    break
        for special in self._guided_records:  # in position order: the first pending one
            if (
                special.type is call.event_type
                and self.is_pending(special)
                and (found is None or special.position < found.position)
                and self._enabled(special)
                and self._hash_for(call, special) == special.request_hash
            ):
                return special
        return found

    def _enabled(self, record: Event) -> bool:
        return all(
            edge.source in self.consumed for edge in record.parents if edge.kind is EdgeKind.DATA
        )

    def _hash_for(self, call: BoundaryCall, record: Event) -> str:
        recorded = self._recorded
        if call.kind == LLM and recorded is not None and record.id in self._guided_ids:
            return digest(recorded.apply(call.request))
        return call.request_hash

    def _mismatch(self, call: BoundaryCall, expected: Event | None) -> Mismatch:
        lane = call.attribution.lane
        pending = self.not_reached()
        if expected is None:
            hint = (
                HINT_LANE_DONE
                if lane in self._lanes
                else f"the recording has no calls on lane {lane!r}"
            )
            return Mismatch(DivergenceKind.UNEXPECTED_CALL, None, hint, pending)
        return Mismatch(DivergenceKind.REQUEST_MISMATCH, expected, HINT_CHANGED, pending)


def _guided_ids(records: Sequence[Event], recorded: Intervention | None) -> frozenset[str]:
    """The LLM records a child bundle sent with Δ: its anchor and the anchor's retries."""
    if recorded is None:
        return frozenset()
    anchor = recorded.event_id
    return frozenset(r.id for r in records
                     if r.is_llm and (r.id == anchor or r.meta.get(RETRY_OF) == anchor))
