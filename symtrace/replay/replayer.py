"""Fail-closed replay: strict, and selective (to an anchor, then live).

Matching rule (also in docs/replay-semantics.md):

* A call on a **strict** lane (explicit agent/lane attribution, or `main`) must match the
  *next unconsumed record of that lane*: same position in the lane's order and the same
  canonical request hash. Reordering within a lane is a divergence.
* A call on a **pooled** lane (unattributed worker threads / asyncio tasks) is matched among
  the *enabled* pooled records (every data parent already consumed) by content hash, the
  earliest position first. Benign interleavings of concurrent calls therefore replay, while a
  request nobody recorded, or one whose inputs were not produced yet, diverges.
* Nothing is ever matched by similarity, and nothing goes live in strict mode. The first
  divergence is kept: every later boundary call raises it again, and close() reports it even
  if the program caught the exception.

Selective replay serves records strictly until the anchor record is matched. Its request is
augmented with the guidance (q̂ = q ⊕ Δ) and sent live. From then on the anchor and its causal
descendants in G are no longer expected: a call goes live when its lane already went live or
its request carries a value a live event produced; any other call must still match the
remaining (non-descendant) records strictly.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from symtrace.boundaries import guard
from symtrace.bundle.reader import Bundle
from symtrace.bundle.writer import BundleWriter
from symtrace.errors import (
    BundleIntegrityError,
    MissingCall,
    OrderUnreachable,
    ReplayDivergence,
    RequestMismatch,
    UnexpectedCall,
)
from symtrace.model import intervention as guidance_mod
from symtrace.model.canonical import JSONValue
from symtrace.model.divergence import (
    Candidate,
    DivergenceKind,
    DivergenceReport,
    json_differences,
)
from symtrace.model.events import (
    ABANDONED,
    COMPLETED,
    RESULT_TYPES,
    EdgeKind,
    Event,
    EventType,
    summarize,
)
from symtrace.model.graph import consumed as consumed_fps
from symtrace.model.graph import descendants, produced, quoted_texts, request_text
from symtrace.model.hashing import digest
from symtrace.model.intervention import Intervention
from symtrace.model.redaction import Redactor
from symtrace.replay.completion_order import (
    CompletionOrder,
    completion_ranks,
    stall_timeout_from_env,
)
from symtrace.session.context import is_strict_lane
from symtrace.session.core import LLM, TOOL, BoundaryCall, Session, Ticket

ERRORS = {
    DivergenceKind.REQUEST_MISMATCH: RequestMismatch,
    DivergenceKind.UNEXPECTED_CALL: UnexpectedCall,
    DivergenceKind.MISSING_CALL: MissingCall,
    DivergenceKind.ORDER_UNREACHABLE: OrderUnreachable,
}


class Replayer(Session):
    """Serves recorded results; strict unless an anchor is given (then selective)."""

    def __init__(
        self,
        bundle: Bundle,
        redactor: Redactor,
        *,
        anchor: str | None = None,
        guidance: str | None = None,
        placement: str = guidance_mod.DEFAULT_PLACEMENT,
        writer: BundleWriter | None = None,
        warnings: Sequence[str] = (),
        order_timeout: float | None = None,
    ) -> None:
        super().__init__(writer, redactor, _next_ordinals(bundle.events))
        self.bundle = bundle
        self.mode = "selective" if anchor else "replay"
        self.anchor = anchor
        self.live_intervention = Intervention(anchor, guidance or "", placement) if anchor else None
        # A child bundle carries its own intervention: strict replay re-applies it.
        recorded = (bundle.lineage or {}).get("intervention")
        self.recorded_intervention = (
            Intervention(recorded["event_id"], recorded["guidance"], recorded["placement"])
            if recorded
            else None
        )
        self.warnings = tuple(warnings)
        self.records = [
            e for e in bundle.events if e.type in (EventType.AGENT_ACTION, EventType.TOOL_CALL)
        ]
        self._results = {
            e.parents[0].source: e
            for e in bundle.events
            if e.type is EventType.TOOL_RESULT and e.parents
        }
        self._consumed: set[str] = set()
        self._matched = 0
        self._first: ReplayDivergence | None = None
        self._live_started = False
        self._superseded: set[str] = set()  # anchor + descendants (selective)
        self._live_lanes: set[str] = set()
        self._live_values: set[str] = set()
        self._live_quoted: list[str] = []  # longer live texts a later prompt may quote
        self.replayed_ids: list[str] = []
        self.live_ids: list[str] = []
        self.anchor_live_id: str | None = None
        self._mlock = threading.RLock()
        self.order = CompletionOrder(
            completion_ranks(bundle.events),
            self._mlock,
            self._raise_first,
            self._order_stalled,
            order_timeout if order_timeout is not None else stall_timeout_from_env(),
        )

    # -- hook-facing -----------------------------------------------------------------------
    def begin(self, call: BoundaryCall) -> Ticket:
        claimed = self._claim(call)
        if isinstance(claimed, Ticket):
            return claimed
        if not _on_event_loop_thread():  # a sync call on a loop's thread must not block it
            self.order.wait(claimed.id)
        return self._deliver(call, claimed)

    async def abegin(self, call: BoundaryCall) -> Ticket:
        claimed = self._claim(call)
        if isinstance(claimed, Ticket):
            return claimed
        try:
            await self.order.await_turn(claimed.id)
        except asyncio.CancelledError:
            # the caller gave up on this result: it no longer holds back the later ones
            self.order.delivered([claimed.id])
            raise
        return self._deliver(call, claimed)

    def _claim(self, call: BoundaryCall) -> Ticket | Event:
        """Match *call*: a live ticket, or the record it consumes (delivered in its turn)."""
        with self._mlock:
            self._raise_first()
            self.order.arrived()
            if self._live_started and self._goes_live(call):
                return self._live(call, call.request)
            record, report = self._match(call)
            if record is None:
                assert report is not None
                self._fail(ERRORS[report.kind](report))
            assert record is not None
            self._consumed.add(record.id)  # no other call may match it while it is held
            return record

    def _deliver(self, call: BoundaryCall, record: Event) -> Ticket:
        with self._mlock:
            self._raise_first()
            if self.live_intervention and record.id == self.anchor:
                ticket = self._start_live(call, record)
            else:
                ticket = self._serve(call, record)
            self.order.delivered([record.id], to_caller=True)
            return ticket

    def _raise_first(self) -> None:
        if self._first is not None:
            raise self._first

    def _fail(self, error: ReplayDivergence) -> None:
        """Keep the first divergence, wake every held call (they fail with it), raise it."""
        if self._first is None:
            self._first = error
        self.order.progress()
        raise self._first

    def _order_stalled(self, record_id: str, blockers: list[str]) -> ReplayDivergence:
        """The divergence a stalled hold raises (called under the lock)."""
        if self._first is None:
            held = next(r for r in self.records if r.id == record_id)
            waiting = [r for r in self.records if r.id in set(blockers)]
            report = self._report(
                DivergenceKind.ORDER_UNREACHABLE,
                held,
                None,
                LLM if held.is_llm else TOOL,
                hint=f"no boundary call progressed for {self.order.stall_timeout:g}s while "
                + (
                    f"{record_id} was held for results that completed before it in the "
                    "recording; the program waits for this result before asking for those "
                    "(a timing-dependent branch or a changed control flow)"
                    if waiting
                    else f"{record_id} was held: its result never came in the recording (the "
                    "caller gave up on it, or the run ended first), and now the program "
                    "waits for it"
                )
                + "; raise SYMTRACE_ORDER_TIMEOUT if the program computes that long "
                "between calls",
                waiting_for=waiting,
            )
            self._first = OrderUnreachable(report)
        return self._first

    def finish(self, ticket: Ticket, response: JSONValue) -> Event:
        with self._mlock:
            event = super().finish(ticket, response)
            if event.id not in self.live_ids:
                self.live_ids.append(event.id)
            self._live_values.update(produced(event))
            self._live_quoted.extend(quoted_texts(event))
            return event

    def close(self) -> None:
        """Raise the first divergence, or MissingCall when records were never consumed."""
        with self._mlock:
            if self._first is not None:
                raise self._first
            if self._live_started:
                return
            left = [r for r in self.records if r.id not in self._consumed]
            if left:
                first = left[0]
                report = self._report(
                    DivergenceKind.MISSING_CALL,
                    first,
                    None,
                    "end",
                    hint="the program finished (or stopped calling) before making this "
                    "recorded call; a branch or loop took a different turn upstream",
                )
                self._first = MissingCall(report)
                raise self._first

    def endpoints(self) -> set[tuple[str, int]]:
        """(host, port) of every endpoint the recording talked to through httpx."""
        out = set()
        for record in self.records:
            host, port = record.meta.get("host"), record.meta.get("port")
            if host:
                out.add((str(host), int(port) if port else 443))
                if not port:
                    out.add((str(host), 80))
        return out

    def block_live(self, host: str, port: int) -> None:
        """Egress guard callback: a connection to a recorded endpoint bypassed httpx."""
        with self._mlock:
            if self._first is None and not self._live_started:
                report = self._report(
                    DivergenceKind.UNEXPECTED_CALL,
                    None,
                    None,
                    "network",
                    hint=f"the program connected to {host}:{port}, a recorded endpoint, "
                    "without going through httpx; record that call as a tool boundary",
                )
                self._first = UnexpectedCall(report)
                self.order.progress()

    @property
    def divergence(self) -> ReplayDivergence | None:
        return self._first

    @property
    def not_reached(self) -> list[str]:
        return [
            r.id
            for r in self.records
            if r.id not in self._consumed and r.id not in self._superseded
        ]

    # -- matching ----------------------------------------------------------------------------
    def _match(self, call: BoundaryCall) -> tuple[Event | None, DivergenceReport | None]:
        lane = call.attribution.lane
        pending = [
            r for r in self.records if r.id not in self._consumed and r.id not in self._superseded
        ]
        same_kind = [r for r in pending if r.type is call.event_type]
        if is_strict_lane(lane):
            # the next record of the lane, whatever its kind: an LLM call arriving where a
            # tool call was recorded is a reordering, not a match further down the lane
            head = next((r for r in pending if r.lane == lane), None)
            if (
                head is not None
                and head.type is call.event_type
                and self._hash_for(call, head) == head.request_hash
            ):
                return head, None
            expected = head
        else:
            enabled = [r for r in same_kind if not is_strict_lane(r.lane) and self._enabled(r)]
            for record in enabled:
                if self._hash_for(call, record) == record.request_hash:
                    return record, None
            expected = next((r for r in enabled if r.lane == lane), None) or (
                enabled[0] if enabled else None
            )
        if expected is None:
            kind = DivergenceKind.UNEXPECTED_CALL
            hint = (
                "every recorded call of this lane was already consumed"
                if any(r.lane == lane for r in self.records)
                else f"the recording has no calls on lane {lane!r}"
            )
        else:
            kind = DivergenceKind.REQUEST_MISMATCH
            hint = (
                "the request changed upstream of this call (prompt, tool output, config or "
                "code); re-record, or replay with --anchor on a causal parent to go live there"
            )
        return None, self._report(kind, expected, call, call.kind, hint=hint, pending=pending)

    def _enabled(self, record: Event) -> bool:
        return all(
            edge.source in self._consumed for edge in record.parents if edge.kind is EdgeKind.DATA
        )

    def _hash_for(self, call: BoundaryCall, record: Event) -> str:
        intervention = self.recorded_intervention
        if call.kind == LLM and intervention is not None and intervention.event_id == record.id:
            return digest(intervention.apply(call.request))
        return call.request_hash

    # -- serving and going live --------------------------------------------------------------
    def _serve(self, call: BoundaryCall, record: Event) -> Ticket:
        self._consumed.add(record.id)
        self._matched += 1
        served: JSONValue
        if record.type is EventType.AGENT_ACTION:
            if record.meta.get(ABANDONED):  # reached only when nothing is held any more
                report = self._report(
                    DivergenceKind.UNEXPECTED_CALL, record, call, call.kind,
                    hint="the recording has no response for this call (its caller gave up "
                    "on it); the program now uses it",
                )
                self._fail(UnexpectedCall(report))
            served = record.response
            self._materialise(record)
        else:
            result = self._results.get(record.id)
            if result is None:  # recorded call whose result never came (crashed run)
                report = self._report(
                    DivergenceKind.UNEXPECTED_CALL,
                    record,
                    call,
                    call.kind,
                    hint="the recording stopped before this tool call returned",
                )
                self._fail(UnexpectedCall(report))
            served = result.response
            self._consumed.add(result.id)
            self._materialise(record)
            self._skip_nested(record.id)
            self._materialise(result)
        served = self.redactor.restore(served)  # [REDACTED:NAME] -> this process's NAME
        return Ticket(call, record.id, record.position, record.parents, False, call.request, served)

    def _skip_nested(self, tool_call_id: str) -> None:
        """The tool body does not run on replay, so calls it made are consumed with it."""
        for nested in self.records:
            if nested.meta.get("within") == tool_call_id and nested.id not in self._consumed:
                self._consumed.add(nested.id)
                self._materialise(nested)
                result = self._results.get(nested.id)
                if result is not None:
                    self._consumed.add(result.id)
                    self._skip_nested(nested.id)
                    self._materialise(result)

    def _materialise(self, record: Event) -> None:
        """Re-check the served content against its recorded digest; write it to the child."""
        if record.response is not None and digest(record.response) != record.response_hash:
            raise BundleIntegrityError(
                f"{record.id}: served content does not match its recorded digest"
            )
        with self._lock:
            materialised = self._renumbered(record)
            if self.writer is not None:
                self.writer.write_event(materialised)
            self.events.append(materialised)
            self.graph.follow(materialised)
            self.replayed_ids.append(record.id)

    def _renumbered(self, record: Event) -> Event:
        """A replayed event in the child: its position and completion rank as replayed."""
        renumbered = replace(record, position=self._next_position())
        if record.type in RESULT_TYPES and COMPLETED in record.meta:
            meta = {k: v for k, v in record.meta.items() if k != COMPLETED}
            return self._stamped(replace(renumbered, meta=meta))
        return renumbered

    def _start_live(self, call: BoundaryCall, record: Event) -> Ticket:
        assert self.live_intervention is not None
        self._live_started = True
        self.order.disable()
        guard.release()
        self._superseded = {record.id} | descendants(self.bundle.events, record.id)
        request = self.live_intervention.apply(call.request)
        ticket = self._live(call, request)
        ticket.intervention = self.live_intervention
        self.anchor_live_id = ticket.event_id
        return ticket

    def _live(self, call: BoundaryCall, request: JSONValue) -> Ticket:
        self._live_lanes.add(call.attribution.lane)
        ticket = self._open_live(call, request)
        self.live_ids.append(ticket.event_id)
        return ticket

    def _goes_live(self, call: BoundaryCall) -> bool:
        if call.attribution.lane in self._live_lanes:
            return True
        fps = consumed_fps(call.event_type, call.request, call.meta)
        if any(fp in self._live_values for fp in fps):
            return True
        if call.kind == LLM and self._live_quoted:  # quoted inside a larger message (graph.py)
            haystack = request_text(call.request)
            return any(text in haystack for text in self._live_quoted)
        return False

    # -- reports -----------------------------------------------------------------------------
    def _report(
        self,
        kind: DivergenceKind,
        expected: Event | None,
        call: BoundaryCall | None,
        boundary: str,
        *,
        hint: str,
        pending: list[Event] | None = None,
        waiting_for: Sequence[Event] = (),
    ) -> DivergenceReport:
        pending = (
            pending
            if pending is not None
            else [r for r in self.records if r.id not in self._consumed]
        )
        anchor_pos = expected.position if expected else (pending[0].position if pending else 0)
        nearest = sorted(pending, key=lambda r: (abs(r.position - anchor_pos), r.position))[:3]
        actual = call.request if call else None
        return DivergenceReport(
            kind=kind,
            bundle=str(self.bundle.path),
            bundle_digest=self.bundle.digest,
            position=expected.position if expected else None,
            event_id=expected.id if expected else None,
            lane=(expected.lane if expected else None) or (call.attribution.lane if call else None),
            agent=(expected.agent if expected else None)
            or (call.attribution.agent if call else None),
            boundary=boundary,
            matched_before=self._matched,
            expected=expected.request if expected else None,
            actual=actual,
            expected_hash=expected.request_hash if expected else None,
            actual_hash=call.request_hash if call else None,
            differences=json_differences(expected.request, actual)
            if expected is not None and call is not None
            else (),
            nearest=tuple(_candidate(r) for r in nearest),
            causal_parents=expected.parent_ids if expected else (),
            rules=tuple(self.bundle.config.get("normalisation", ())),
            warnings=self.warnings,
            hint=hint,
            waiting_for=tuple(_candidate(r) for r in waiting_for),
        )

    def lineage(self, parent_path: str) -> dict[str, Any]:
        """What a child bundle says about where it came from."""
        assert self.live_intervention is not None
        return {
            "parent": parent_path,
            "parent_digest": self.bundle.digest,
            "anchor": self.anchor,
            "intervention": {
                "event_id": self.anchor_live_id,
                "guidance": self.live_intervention.guidance,
                "placement": self.live_intervention.placement,
            },
            "replayed_events": list(self.replayed_ids),
            "live_events": list(self.live_ids),
            "superseded_events": sorted(self._superseded),
            "not_reached_events": self.not_reached,
        }


def _candidate(record: Event) -> Candidate:
    return Candidate(
        record.id, record.position, record.type.value, record.lane, record.agent,
        summarize(record.request, 60),
    )


def _on_event_loop_thread() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def _next_ordinals(events: Sequence[Event]) -> dict[EventType, int]:
    """Live events in a child bundle never reuse an id of the parent."""
    out: dict[EventType, int] = {}
    for event in events:
        ordinal = int(event.id.rsplit("_", 1)[1])
        out[event.type] = max(out.get(event.type, 0), ordinal + 1)
    return out
