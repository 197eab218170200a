"""Fail-closed replay: strict, and selective (to an anchor, then live).

The `Replayer` is the session a replay activates; it only orchestrates. Each job has its
module under `symtrace/replay/`:

* matching.py: which record a call consumes (strict lanes by order, pooled lanes by content;
  the rule is documented there and in docs/replay-semantics.md);
* session/scheduling.py: when a matched result may be handed back (holds);
* serving.py: what a matched record serves, and what is consumed with it;
* child.py: the replayed run's own trajectory (the child bundle) and its lineage;
* live.py: which calls follow a selective replay live, and the recorded egress endpoints;
* held_tools.py: with `hold_tools`, live tool calls identical to recorded ones get the
  recorded outcome instead of running (a controlled rollout);
* reports.py: the divergence reports.

Nothing is ever matched by similarity, and nothing goes live in strict mode. The first
divergence is kept: every later boundary call raises it again, and close() reports it even
if the program caught the exception.

Selective replay serves records strictly until the anchor record is matched. Its request is
augmented with the guidance (q̂ = q ⊕ Δ) and sent live; from then on live.py decides which
calls go live, and every other call must still match the remaining records strictly.

Locking: one re-entrant lock, the session's `_lock`, guards all replay state (matcher,
server, trajectory, frontier, first divergence) and the session's ids, positions and writer;
the completion order's condition variable is built on the same lock, so a thread held for
its turn releases it while it waits. Nothing blocks while holding it except that wait.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any, NoReturn

from symtrace.bundle.reader import Bundle
from symtrace.bundle.writer import BundleWriter
from symtrace.errors import (
    GuidedAnchorFailed,
    MissingCall,
    OrderUnreachable,
    ReplayDivergence,
    SessionError,
)
from symtrace.model import intervention as guidance_mod
from symtrace.model.canonical import JSONValue
from symtrace.model.divergence import DivergenceKind
from symtrace.model.events import ATTEMPT, RETRY_OF, Event, EventType
from symtrace.model.graph import descendants
from symtrace.model.intervention import Intervention
from symtrace.model.redaction import Redactor
from symtrace.model.seeded_ids import scheme_of
from symtrace.replay import reports
from symtrace.replay.anchor_retries import AnchorAttempts
from symtrace.replay.child_bundle import ChildTrajectory, lineage
from symtrace.replay.held_tools import HeldToolOutputs
from symtrace.replay.live import LiveFrontier, recorded_endpoints
from symtrace.replay.matching import Matcher, Mismatch
from symtrace.replay.serving import RecordServer
from symtrace.session.context import TURN
from symtrace.session.core import LLM, TOOL, BoundaryCall, Session, Ticket
from symtrace.session.scheduling import (
    Chaos,
    CompletionOrder,
    StarvedPool,
    completion_ranks,
    on_event_loop_thread,
)
from symtrace.session.scheduling_options import SchedulingOptions
from symtrace.session.sink import TrajectorySink


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
        hold_tools: bool = False,
        scheduling: SchedulingOptions | None = None,
    ) -> None:
        scheme_of(bundle.initial_state)  # ids it cannot derive as recorded: refused up front
        sink = TrajectorySink(writer)
        super().__init__(writer, redactor, _next_ordinals(bundle.events), sink=sink)
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
        self.held_tools = HeldToolOutputs(bundle.events) if hold_tools and anchor else None
        self.matcher = Matcher(bundle.events, self.recorded_intervention)
        self.trajectory = ChildTrajectory(self)
        self.server = RecordServer(
            self.matcher, self.trajectory, self._diverge, restore=redactor.restore
        )
        self.frontier = LiveFrontier(sink.graph)
        self.anchor_attempts = AnchorAttempts()  # the anchor's attempts: retries get Δ too
        self.reporter = reports.Reporter(
            bundle, warnings, self.matcher, lambda: self.server.matched
        )
        self._first: ReplayDivergence | None = None
        self.on_live: list[Callable[[], None]] = []  # called when a selective replay goes live
        # called once, when the first divergence is kept (before the program sees it)
        self.on_divergence: list[Callable[[], None]] = []
        options = scheduling or SchedulingOptions()
        self.handoff.stall_timeout = options.stall_timeout
        self.handoff.infer = options.infer_from_state
        self.order = CompletionOrder(
            completion_ranks(bundle.events),
            self._lock,
            self._raise_first,
            self._order_stalled,
            options.stall_timeout,
            self.handoff,  # served and live results take turns through the same hand-off
            # SYMTRACE_CHAOS: the stress tests' hook, read once here (scheduling.Chaos)
            Chaos(options.chaos_seed) if options.chaos_seed is not None else Chaos.from_env(),
        )

    @property
    def records(self) -> list[Event]:
        return self.matcher.records

    @property
    def replayed_ids(self) -> list[str]:
        return self.trajectory.replayed_ids

    @property
    def live_ids(self) -> list[str]:
        return self.trajectory.live_ids

    @property
    def anchor_live_id(self) -> str | None:
        return self.trajectory.anchor_live_id

    # -- hook-facing -----------------------------------------------------------------------
    def begin(self, call: BoundaryCall) -> Ticket:
        claimed = self._claim(call)
        if isinstance(claimed, Ticket):
            held = self._held_outcome(claimed)
            if held is None:
                return claimed
            self.finish(claimed, held)
            return self._served_held(claimed, held)
        if not on_event_loop_thread():  # a sync call on a loop's thread must not block it
            self.order.wait(claimed.id)
        ticket = self._deliver(call, claimed)
        self.order.after_delivery()
        return ticket

    async def abegin(self, call: BoundaryCall) -> Ticket:
        claimed = self._claim(call)
        if isinstance(claimed, Ticket):
            held = self._held_outcome(claimed)
            if held is None:
                return claimed
            await self.afinish(claimed, held)
            return self._served_held(claimed, held)
        try:
            await self.order.await_turn(claimed.id)
        except asyncio.CancelledError:
            # the caller gave up on this result: it no longer holds back the later ones
            self.order.delivered([claimed.id])
            raise
        ticket = self._deliver(call, claimed)
        await self.order.aafter_delivery()
        return ticket

    def consumed(self) -> None:
        self.order.arrived()  # the hand-off, and the held calls waiting behind it

    def finish(self, ticket: Ticket, response: JSONValue) -> Event:
        event = super().finish(ticket, response)  # waits its turn (hand-off) unlocked
        with self._lock:
            self.anchor_attempts.finished(ticket.event_id, ticket.call, response)
            self.trajectory.ran_live(event.id)
            self.frontier.produced_by(event)
            return event

    def close(self) -> None:
        """Raise the first divergence, or MissingCall when records were never consumed."""
        with self._lock:
            self._raise_first()
            if self.frontier.started:
                self._check_anchor_reached_the_model()
                return
            left = self.matcher.unconsumed()
            if left:
                report = self.reporter.report(
                    DivergenceKind.MISSING_CALL, left[0], None, "end", hint=reports.HINT_MISSING
                )
                self._first = MissingCall(report)
                raise self._first

    def endpoints(self) -> set[tuple[str, int]]:
        """(host, port) of every endpoint the recording talked to through an HTTP seam."""
        return recorded_endpoints(self.matcher.records)

    def egress_blocked(self, attempt: dict[str, Any]) -> ReplayDivergence:
        """Egress guard callback: the program opened a connection no record serves.

        The divergence is kept (sticky) even if the program swallows the error it gets."""
        with self._lock:
            report = self.reporter.report(
                DivergenceKind.EGRESS_BLOCKED, None, None, "network",
                hint=reports.egress_hint(attempt), actual=attempt,
            )
            error = reports.error_for(report)
            if self._first is None:
                self._keep_first(error)
                self.order.progress()
            return error

    @property
    def served_count(self) -> int:
        """Boundary calls served from the bundle so far."""
        return self.server.matched

    @property
    def live_count(self) -> int:
        """Boundary calls sent live (0 in a strict replay)."""
        return len(self.live_ids)

    @property
    def divergence(self) -> ReplayDivergence | None:
        return self._first

    @property
    def not_reached(self) -> list[str]:
        return [r.id for r in self.matcher.not_reached()]

    def lineage(self, parent_path: str) -> dict[str, Any]:
        """What a child bundle says about where it came from (selective replays only)."""
        if self.live_intervention is None:
            raise SessionError("a strict replay writes no child bundle: it has no lineage")
        out = lineage(
            self.bundle,
            parent_path,
            self.anchor,
            self.live_intervention,
            self.trajectory,
            self.matcher.superseded,
            self.matcher.not_reached(),
            self.frontier.reasons,
        )
        if self.held_tools is not None:
            out["held_tool_events"] = list(self.held_tools.held)
        # every attempt the anchor took (its retries carry Δ too), and why each one failed
        out["anchor_attempts"] = self.anchor_attempts.to_json()
        return out

    # -- held tool outputs (controlled rollouts) -------------------------------------------
    def _held_outcome(self, ticket: Ticket) -> JSONValue | None:
        """The recorded outcome a live tool call is held to, or None (it runs live)."""
        if self.held_tools is None or not ticket.live or ticket.call.kind != TOOL:
            return None
        with self._lock:
            outcome = self.held_tools.take(ticket.call.request, self.matcher.consumed)
            if outcome is not None:
                self.held_tools.held.append(ticket.event_id)
            return outcome

    def _served_held(self, ticket: Ticket, outcome: JSONValue) -> Ticket:
        """The live ticket, now finished with *outcome*, handed out like a served record:
        the tool boundary returns (or raises) the outcome without running the body."""
        return replace(ticket, live=False, served=self.redactor.restore(outcome))

    # -- claiming and delivering -----------------------------------------------------------
    def _claim(self, call: BoundaryCall) -> Ticket | Event:
        """Match *call*: a live ticket, or the record it consumes (delivered in its turn)."""
        with self._lock:
            self._raise_first()
            self.order.arrived()
            reason = self.frontier.follows(call)
            if reason is not None:
                if self.anchor_attempts.is_retry(call):
                    return self._retry_anchor(call)
                return self._live(call, call.request, reason)
            matched = self.matcher.match(call)
            if isinstance(matched, Mismatch):
                report = self.reporter.report(
                    matched.kind,
                    matched.expected,
                    call,
                    call.kind,
                    hint=matched.hint,
                    pending=matched.pending,
                )
                self._fail(reports.error_for(report))
            self.matcher.consume(matched)  # no other call may match it while it is held
            return matched

    def _deliver(self, call: BoundaryCall, record: Event) -> Ticket:
        with self._lock:
            self._raise_first()
            intervention = self.live_intervention
            if intervention is not None and record.id == self.anchor:
                ticket = self._start_live(call, record, intervention)
            else:
                ticket = self.server.serve(call, record)
            self.order.delivered([record.id], to_caller=True)
            return ticket

    def _start_live(self, call: BoundaryCall, record: Event, intervention: Intervention) -> Ticket:
        self.frontier.started = True
        self.order.disable()
        for callback in self.on_live:  # e.g. the egress guard stands down
            callback()
        self.matcher.supersede({record.id} | descendants(self.bundle.events, record.id))
        ticket = self._live(call, intervention.apply(call.request),
                            "the anchor: recorded request + guidance")
        ticket.intervention = intervention
        self.trajectory.anchor_live_id = ticket.event_id
        self.anchor_attempts.started(call, ticket.event_id)
        return ticket

    # -- retries of the anchor (replay/anchor_retries.py) ----------------------------------
    def _retry_anchor(self, call: BoundaryCall) -> Ticket:
        """The anchor's request sent again after a failed attempt: live, with Δ again."""
        intervention = self.live_intervention
        assert intervention is not None  # only a selective replay has anchor attempts
        first = self.anchor_attempts.first
        attempt = len(self.anchor_attempts.attempts) + 1
        marked = replace(call, meta={**call.meta, RETRY_OF: first, ATTEMPT: attempt})
        ticket = self._live(marked, intervention.apply(call.request),
                            f"a retry of the anchor {first} (attempt {attempt}): recorded "
                            "request + guidance")
        ticket.intervention = intervention
        self.anchor_attempts.retried(ticket.event_id)
        return ticket

    def _check_anchor_reached_the_model(self) -> None:
        """At the end of a selective run: fail when no guided attempt of the anchor
        succeeded (the guidance never reached the model)."""
        attempts = self.anchor_attempts
        if not attempts.failed:
            return
        failures = attempts.failures()
        count = len(attempts.attempts)
        tried = "the only guided attempt" if count == 1 else f"all {count} guided attempts"
        report = self.reporter.report(
            DivergenceKind.ANCHOR_FAILED, self.matcher.by_id.get(self.anchor or ""), None,
            LLM, pending=[], actual=attempts.to_json(),
            hint=(f"the provider failed {tried} of the anchor ({'; '.join(failures)}): the "
                  "guidance never reached the model, so this run says nothing about the "
                  "repair. Count it as an infrastructure error and replay again when the "
                  "endpoint is healthy (or let the program retry more)."),
        )
        self._first = GuidedAnchorFailed(report)
        raise self._first

    def _live(self, call: BoundaryCall, request: JSONValue, reason: str) -> Ticket:
        if call.turn is not None:  # the child bundle names the recorded turn it continues
            call = replace(call, meta={**call.meta, TURN: self.matcher.turn_info(call.turn)})
        ticket = self._open_live(call, request)
        self.frontier.went_live(call, ticket.event_id, reason)
        self.trajectory.ran_live(ticket.event_id)
        return ticket

    # -- divergences -----------------------------------------------------------------------
    def _raise_first(self) -> None:
        if self._first is not None:
            # a fresh traceback each time: re-raising the same object would append every
            # retry's frames to one traceback (an SDK retrying a refused call three times)
            raise self._first.with_traceback(None)

    def _keep_first(self, error: ReplayDivergence) -> ReplayDivergence:
        """The first divergence: *error* if there was none (then the hooks are told)."""
        if self._first is None:
            self._first = error
            for hook in self.on_divergence:
                hook()
        return self._first

    def _fail(self, error: ReplayDivergence) -> NoReturn:
        """Keep the first divergence, wake every held call (they fail with it), raise it."""
        first = self._keep_first(error)
        self.order.progress()
        raise first.with_traceback(None)

    def _diverge(
        self, kind: DivergenceKind, expected: Event, call: BoundaryCall, hint: str
    ) -> NoReturn:
        report = self.reporter.report(kind, expected, call, call.kind, hint=hint)
        self._fail(reports.error_for(report))

    def _order_stalled(self, record_id: str, blockers: list[str],
                       starved: StarvedPool | None) -> ReplayDivergence:
        """The divergence a stalled hold raises (called under the lock)."""
        if self._first is None:
            held = self.matcher.by_id[record_id]
            waiting = sorted(
                (self.matcher.by_id[b] for b in blockers), key=lambda r: r.position
            )
            report = self.reporter.report(
                DivergenceKind.ORDER_UNREACHABLE,
                held,
                None,
                LLM if held.is_llm else TOOL,
                hint=reports.order_stalled_hint(record_id, bool(waiting),
                                                self.order.stall_timeout, starved),
                waiting_for=waiting,
            )
            self._keep_first(OrderUnreachable(report))
        return self._first


def _next_ordinals(events: Sequence[Event]) -> dict[EventType, int]:
    """Live events in a child bundle never reuse an id of the parent."""
    out: dict[EventType, int] = {}
    for event in events:
        ordinal = int(event.id.rsplit("_", 1)[1])
        out[event.type] = max(out.get(event.type, 0), ordinal + 1)
    return out
