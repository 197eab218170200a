"""Which recorded record a replayed call consumes (the matching rule).

* A call on a **strict** lane (explicit agent/lane attribution, or `main`) must match the
  *next unconsumed record of its turn* (session/context.py: one activation of the lane,
  identified by the turn that opened it and its ordinal there): same position in the turn's
  order and the same canonical request hash. Reordering within a turn is a divergence.
* Which recorded turn a replayed turn is, is decided at its first call, whatever order the
  scheduler runs concurrent turns in: among the recorded turns of its lane opened by (the
  recorded counterpart of) its parent and not yet taken, the lowest-ordinal one whose next
  record the call matches. A turn may be taken before a lower sibling only if the recording
  leaves their order open (events.siblings_independent(), the rule the graph's lane order
  follows too: the sibling was still open when it opened, or another task or thread opened
  it; forks only if they overlapped): two turns one task ran one after the other, swapped,
  are still a divergence. A bundle recorded before turns existed
  (no meta `turn`) keeps one order per lane.
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
from symtrace.model.events import RETRY_OF, EdgeKind, Event, EventType, siblings_independent
from symtrace.model.hashing import digest
from symtrace.model.intervention import Intervention
from symtrace.session.context import TURN, Turn, is_strict_lane
from symtrace.session.core import LLM, BoundaryCall

BOUNDARY_TYPES = (EventType.AGENT_ACTION, EventType.TOOL_CALL)

HINT_CHANGED = (
    "the request changed upstream of this call (prompt, tool output, config or code); "
    "re-record, or replay with --anchor on a causal parent to go live there"
)
HINT_LANE_DONE = "every recorded call of this lane was already consumed"
NEW_TURN = 1_000_000  # ordinals of turns a selective replay's live part opened (turn_info)


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


class _RecordedTurn:
    """A turn as recorded: its place among its siblings and its records in order."""

    __slots__ = ("children", "cursor", "fork", "info", "key", "ordinal", "parent")

    def __init__(self, info: dict[str, object]) -> None:
        self.info = info
        self.children: list[_RecordedTurn] = []
        self.key = str(info["key"])
        parent = info.get("parent")
        self.parent = str(parent["key"]) if isinstance(parent, dict) else ""
        self.ordinal = int(info.get("ordinal", 0))  # type: ignore[call-overload]
        self.fork = bool(info.get("fork", False))
        self.cursor = _Cursor()


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
        # turns: recorded key -> turn; (parent key, lane) -> its turns by ordinal
        self._turns: dict[str, _RecordedTurn] = {}
        self._siblings: dict[tuple[str, str], list[_RecordedTurn]] = {}
        self._bound: dict[Turn, str] = {}  # replayed turn -> the recorded turn it is
        self._lane_order: dict[str, _Cursor] = {}  # a lane's turned records, in position order
        self._taken: set[str] = set()  # recorded turns a replayed turn is bound to
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
            info = record.meta.get(TURN)
            if isinstance(info, dict) and "key" in info:
                self._recorded_turn(info).cursor.records.append(record)
                self._lane_order.setdefault(record.lane, _Cursor()).records.append(record)
            else:
                self._lanes.setdefault(record.lane, _Cursor()).records.append(record)
            if is_strict_lane(record.lane):
                continue
            if record.id in self._guided_ids:
                self._guided_records.append(record)
                continue
            key = (record.type, record.request_hash)
            self._pooled.setdefault(key, _Cursor()).records.append(record)

    def _recorded_turn(self, info: dict[str, object]) -> _RecordedTurn:
        turn = self._turns.get(str(info["key"]))
        if turn is None:
            parent = info.get("parent")
            if isinstance(parent, dict):  # known first through a call of a turn it opened
                self._recorded_turn(parent)
            turn = self._turns[str(info["key"])] = _RecordedTurn(info)
            siblings = self._siblings.setdefault((turn.parent, str(info["lane"])), [])
            siblings.append(turn)
            siblings.sort(key=lambda t: (t.fork, t.ordinal))
            parent = self._turns.get(turn.parent)
            if parent is not None:
                parent.children.append(turn)
        return turn

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
            turn = call.turn
            if turn is not None and lane not in self._lanes:  # else: recorded without turns
                return self._turn_match(call, turn)
            head = self._lane_head(lane)
            if self._matches(call, head):
                return head  # type: ignore[return-value]
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

    def _matches(self, call: BoundaryCall, head: Event | None) -> bool:
        return (head is not None and head.type is call.event_type
                and self._hash_for(call, head) == head.request_hash)

    # -- turns ---------------------------------------------------------------------------------
    def _turn_match(self, call: BoundaryCall, turn: Turn) -> Event | Mismatch:
        found = self._turn_match_by_tree(call, turn)
        if isinstance(found, Mismatch):
            # what replayed before turns existed still replays: the lane's next record in
            # recorded order, whichever turn a framework's threads make it from
            head = self._head(self._lane_order.get(call.attribution.lane))
            if self._matches(call, head):
                return head  # type: ignore[return-value]
        return found

    def _turn_match_by_tree(self, call: BoundaryCall, turn: Turn) -> Event | Mismatch:
        key = self._bound.get(turn)
        if key is not None:
            head = self._head(self._turns[key].cursor)
            return head if self._matches(call, head) else self._mismatch(call, head)  # type: ignore[return-value]
        candidates = self._candidates(turn)
        for candidate in candidates:
            head = self._head(candidate.cursor)
            if self._matches(call, head):
                self._bind(turn, candidate)
                return head  # type: ignore[return-value]
        # A framework thread or loop created inside one turn and reused by others carries
        # that turn's context: the tree differs, the turn does not. With no candidate under
        # its parent: any free turn of the lane whose next record the call matches, earliest.
        strays = [] if candidates else sorted((t for t in self._turns_of_lane(turn.lane)
                         if t.key not in self._taken and t.fork == turn.fork
                         and self._matches(call, self._head(t.cursor))),
                        key=lambda t: t.cursor.records[t.cursor.at].position)
        if strays:
            self._bind(turn, strays[0])
            return self._head(strays[0].cursor)  # type: ignore[return-value]
        heads = (self._head(c.cursor) for c in candidates)
        return self._mismatch(call, next((h for h in heads if h is not None), None))

    def _turns_of_lane(self, lane: str) -> list[_RecordedTurn]:
        return [t for (_, sibling_lane), turns in self._siblings.items() if sibling_lane == lane
                for t in turns]

    def _candidates(self, turn: Turn) -> list[_RecordedTurn]:
        """The recorded turns *turn* may be, in the order they are tried (see the module
        docstring): not taken, with a record still pending, no sequential sibling skipped."""
        if turn.parent is None:
            return []
        parent = self._bound.get(turn.parent)
        parents = ([parent] if parent is not None
                   else [""] if turn.parent.parent is None
                   else [c.key for c in self._candidates(turn.parent)])
        found: list[_RecordedTurn] = []
        for parent_key in parents:
            waiting: list[_RecordedTurn] = []  # lower siblings not taken yet
            for sibling in self._siblings.get((parent_key, turn.lane), ()):
                if sibling.key in self._taken or not self._alive(sibling):
                    continue
                if sibling.fork == turn.fork and all(
                        siblings_independent(w.info, sibling.info)
                        for w in waiting if w.fork == sibling.fork):
                    found.append(sibling)
                waiting.append(sibling)
        return found

    def _alive(self, turn: _RecordedTurn) -> bool:
        """Whether *turn* or a turn it opened still has a pending record."""
        return self._head(turn.cursor) is not None or any(map(self._alive, turn.children))

    def turn_info(self, turn: Turn) -> dict[str, object]:
        """What a live event of *turn* records of it in a child bundle: the recorded turn it
        was bound to, else a new turn under its parent's recorded key (ordinals past every
        recorded one: `+` marks them)."""
        key = self._bound.get(turn)
        if key is not None:
            return self._turns[key].info
        parent = (None if turn.parent is None or turn.parent.parent is None
                  else self.turn_info(turn.parent))
        mark = "~" if turn.fork else f">{turn.lane}#"
        return {"key": f"{parent['key'] if parent else ''}{mark}{turn.ordinal}+",
                "lane": turn.lane, "ordinal": NEW_TURN + turn.ordinal, "fork": turn.fork,
                "with": [self.turn_info(t)["key"] for t in turn.with_],
                "opener": turn.opener, "parent": parent}

    def _bind(self, turn: Turn, recorded: _RecordedTurn) -> None:
        """*turn* is *recorded*, and its unbound ancestors are *recorded*'s."""
        live: Turn | None = turn
        while live is not None and live.parent is not None and live not in self._bound:
            self._bound[live] = recorded.key
            self._taken.add(recorded.key)
            live = live.parent
            parent = self._turns.get(recorded.parent)
            if parent is None:
                break
            recorded = parent

    def _lane_head(self, lane: str) -> Event | None:
        return self._head(self._lanes.get(lane))

    def _head(self, cursor: _Cursor | None) -> Event | None:
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
