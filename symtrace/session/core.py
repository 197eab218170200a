"""Sessions: the one object every boundary hook talks to.

A hook (the httpx transport patch, a tool wrapper, a framework adapter) turns what it
intercepted into a `BoundaryCall` and asks the active session to `begin()` it. The answer is a
`Ticket`: either *serve this recorded result* or *go live* (with the request to send, which a
selective replay may have augmented with guidance). After a live call the hook reports the
result with `finish()`. Hooks never know which mode is active: recording, strict replay and
selective replay differ only in the session.

This module holds the common machinery (ids, positions, completion ranks, the canonical
content of events and their hashes); graph derivation and writing are behind one seam, the
session's `sink` (session/sink.py, on the calling thread). The Recorder
lives in symtrace/record/recorder.py, the Replayer in symtrace/replay/ (replayer.py, one
module per job).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from symtrace.bundle.writer import BundleWriter
from symtrace.errors import RedactionError, SessionError
from symtrace.model.canonical import JSONValue, json_strings, to_json_value
from symtrace.model.events import (
    ABANDONED,
    COMPLETED,
    RESULT_TYPES,
    Edge,
    EdgeKind,
    Event,
    EventType,
    event_hashes,
    event_id,
)
from symtrace.model.hashing import digest, digest_canonical
from symtrace.model.intervention import Intervention
from symtrace.model.redaction import Redactor
from symtrace.session import context
from symtrace.session.context import Attribution
from symtrace.session.lanes import LaneIdentities
from symtrace.session.scheduling import HandOff
from symtrace.session.scheduling_options import SchedulingOptions
from symtrace.session.sink import TrajectorySink

LLM = "llm"
TOOL = "tool"


@dataclass(frozen=True, slots=True)
class BoundaryCall:
    """One intercepted call, in canonical (redacted) form."""

    kind: str  # LLM | TOOL
    request: JSONValue
    attribution: Attribution
    meta: dict[str, Any] = field(default_factory=dict)
    request_hash: str = ""
    # The turn of an explicit lane the call was made in (session/context.py): replay matches
    # the call within it; its `info` is in meta[TURN].
    turn: context.Turn | None = field(default=None, compare=False, repr=False)

    @classmethod
    def make(
        cls,
        kind: str,
        request: JSONValue,
        meta: dict[str, Any] | None = None,
        attribution: Attribution | None = None,
        *,
        canonical: bool = False,
    ) -> BoundaryCall:
        """*canonical*: *request* is already canonical data (see `digest_canonical`), so it is
        hashed without being canonicalised again."""
        meta = dict(meta or {})
        within = context.current_tool()
        if within is not None:  # made by a tool body: replayed tools skip it with their body
            meta["within"] = within
        attribution = attribution or context.current()
        turn = context.current_turn()
        if turn is not None and turn.lane == attribution.lane:
            meta[context.TURN] = turn.info
        else:
            turn = None
        request_hash = digest_canonical(request) if canonical else digest(request)
        return cls(kind, request, attribution, meta, request_hash, turn)

    @property
    def event_type(self) -> EventType:
        return EventType.AGENT_ACTION if self.kind == LLM else EventType.TOOL_CALL


@dataclass(slots=True)
class Ticket:
    """The session's answer to begin(): serve `served`, or go live with `request`."""

    call: BoundaryCall
    event_id: str
    position: int
    parents: tuple[Edge, ...]
    live: bool
    request: JSONValue  # what to send when live (may carry guidance)
    served: JSONValue = None  # recorded response (LLM) or tool outcome (TOOL) when not live
    intervention: Intervention | None = None  # set on the anchor of a selective replay
    completed: int | None = None  # completion rank reserved earlier (an abandoned stream)


class Session:
    """Shared machinery: event ids, positions, graph derivation, bundle writing."""

    mode = "session"

    def __init__(
        self,
        writer: BundleWriter | None,
        redactor: Redactor,
        first_ordinals: dict[EventType, int] | None = None,
        *,
        sink: TrajectorySink | None = None,
    ) -> None:
        """*writer*: the bundle to write (None: none); *sink*: instead, where events go (a
        recording's, which also completes the bundle: record/recording.py)."""
        self.sink: TrajectorySink = sink if sink is not None else TrajectorySink(writer)
        self.redactor = redactor
        self.events: list[Event] = []
        self.final_value: JSONValue = None
        self.has_final_value = False
        self._final_turn: context.Turn | None = None  # the final's turn (declare_final)
        self.refusal: str | None = None  # why redaction refused to record (nothing is kept)
        self.adapters_used: list[str] = []  # adapters whose framework was imported
        self._ordinals: dict[EventType, int] = dict(first_ordinals or {})
        self._position = 0
        self._completions = 0  # rank of the next result handed to the program
        self.lane_identities = LaneIdentities()
        self._open: dict[str, Ticket] = {}  # live LLM calls whose response has not come yet
        self._lock = threading.RLock()
        # one receiver at a time: a result is handed out once the previous one was used
        defaults = SchedulingOptions()
        self.handoff = HandOff(self._lock, defaults.stall_timeout, defaults.infer_from_state)

    # -- the hook-facing API -------------------------------------------------------------
    def begin(self, call: BoundaryCall) -> Ticket:
        raise NotImplementedError

    async def abegin(self, call: BoundaryCall) -> Ticket:
        """begin() for async hooks: a replayer may hold the call without blocking the loop."""
        return self.begin(call)

    def consumed(self) -> None:
        """A consumption point: the current caller is done with the last result it got (an
        adapter declares where, e.g. where a framework parks an agent until its next
        message), so the next result may be handed out (session/scheduling.py)."""
        self.handoff.arrived()

    async def ahand_off(self) -> None:
        """Async callers, right before finish(): wait until the caller that got the previous
        result is done with it (session/scheduling.py). finish() waits itself on a plain thread."""
        if self.handoff.receiver is not None:
            await self.handoff.await_settled()

    async def afinish(self, ticket: Ticket, response: JSONValue) -> Event:
        """finish() for async hooks: the hand-off awaited first (the loop keeps running the
        caller that got the previous result), so a hook cannot forget it."""
        await self.ahand_off()
        return self.finish(ticket, response)

    def finish(self, ticket: Ticket, response: JSONValue) -> Event:
        """Record a live call's result (LLM response or tool outcome); return the new event.

        The result reaches the program when this returns: it is stamped with its completion
        rank only once the previous result's caller is done with it (scheduling.py), so the
        recorded order is the order results were used in. A stream left open (completion
        reserved where it reached the program) takes no turn."""
        if ticket.completed is None:
            self.handoff.wait()
        with self._lock:
            event = self._finished(ticket, response)
            if ticket.completed is None:
                self.handoff.gave()
            return event

    def _finished(self, ticket: Ticket, response: JSONValue) -> Event:
        """finish() under the session's lock: redact and hash *response*, record the event."""
        self._open.pop(ticket.event_id, None)
        # One walk of the result serves redaction and hashing: canonical as it is (what a
        # parser returned), it is hashed as it is; redaction only replaces strings in it.
        strings = json_strings(response)
        try:  # what the program received: named secrets become restorable tokens
            where = f"the result of {ticket.event_id}"
            response = self.redactor.scrub_received(response, where, strings)
        except RedactionError as exc:
            self.refusal = str(exc)  # handed back: the parent keeps nothing of the bundle
            raise
        response_hash = digest_canonical(response) if strings is not None else None
        call = ticket.call
        if call.kind == LLM:
            meta = call.meta if ticket.completed is None else {**call.meta,
                                                                COMPLETED: ticket.completed}
            return self._record(ticket.event_id, ticket.position, EventType.AGENT_ACTION, call,
                                ticket.parents, meta, ticket.request, response, response_hash)
        return self._record(
            self._next_id(EventType.TOOL_RESULT), self._next_position(), EventType.TOOL_RESULT,
            call, (Edge(ticket.event_id, EdgeKind.DATA),),
            {k: v for k, v in call.meta.items() if k in ("call_id", "tool")},
            None, response, response_hash,
        )

    def declare_final(self, value: JSONValue, turn: context.Turn | None = None) -> None:
        """*value* is the run's final result, declared in *turn* (None: outside every turn).

        Concurrent turns of one agent that each declare one (two `ask()`s of one agent under
        `gather`) end in an order that is timing: a declaration of a turn that was still open
        when the held one's turn opened (on the same lane, `Turn.with_`) does not replace it,
        so the turn opened last in program order gives the result, whichever ended last."""
        with self._lock:
            held = self._final_turn
            if turn is not None and held is not None and turn in held.with_:
                return
            self._final_turn = turn
            self.final_value = value
            self.has_final_value = True

    def close(self) -> None:
        """End of the run; subclasses check what they must."""

    def abandon_open(self) -> None:
        """Record the LLM calls still waiting for a response as the session ends.

        A call that was started but whose response never reached the program (its task was
        cancelled, e.g. the loser of a race; or the run ended first) is part of the run: it is
        written as an `agent_action` without response, `meta.abandoned`, no completion rank.
        Replay matches it and holds it for good, until its caller gives up on it again.
        """
        with self._lock:
            if not self.sink.accepting:
                # the bundle was already sealed or dropped (a divergence aborts the child
                # bundle): there is nothing left to append these calls to
                self._open.clear()
                return
            for ticket in sorted(self._open.values(), key=lambda t: t.position):
                call = ticket.call
                self._record(ticket.event_id, ticket.position, EventType.AGENT_ACTION, call,
                             ticket.parents, {**call.meta, ABANDONED: True}, ticket.request)
            self._open.clear()

    # -- shared internals ----------------------------------------------------------------
    def scrub(self, request: JSONValue, strings: list[str] | None = None) -> JSONValue:
        """*request* redacted (*strings*: all of its strings, if known: `Redactor.scrub`)."""
        return self.redactor.scrub(request, strings)

    def _open_live(self, call: BoundaryCall, request: JSONValue) -> Ticket:
        """Allocate id, position and parents for a call that runs live."""
        with self._lock:
            ident = self._next_id(call.event_type)
            parents = self.guarded(
                self.sink.open_call, ident, call.event_type, call.attribution.lane, request,
                call.meta, call.attribution.dispatched_by,
            )
            ticket = Ticket(call, ident, self._next_position(), parents, True, request)
            if call.kind == LLM:
                self._open[ident] = ticket
            if call.kind == TOOL:  # the tool_call node exists as soon as the call is made
                self._record(ident, ticket.position, EventType.TOOL_CALL, call, parents,
                             call.meta, request)
            return ticket

    def reserve_completion(self) -> int:
        """A completion rank for a result that reached the program before it is recorded."""
        with self._lock:
            rank = self._completions
            self._completions += 1
            return rank

    def adopt(self, record: Event) -> Event:
        """Make a recorded event part of this run (served by a replay, not run again).

        It takes the next position, and a result the next completion rank, as replayed; it is
        written (to a child bundle) and followed by the graph like an event of this run.
        """
        with self._lock:
            event = replace(record, position=self._next_position())
            if record.type in RESULT_TYPES and COMPLETED in record.meta:
                meta = {k: v for k, v in record.meta.items() if k != COMPLETED}
                event = self._stamped(replace(event, meta=meta))
            self.sink.adopt(event)
            self.events.append(event)
            return event

    def _record(
        self,
        ident: str,
        position: int,
        event_type: EventType,
        call: BoundaryCall,
        parents: tuple[Edge, ...],
        meta: dict[str, Any],
        request: JSONValue = None,
        response: JSONValue = None,
        response_hash: str | None = None,
    ) -> Event:
        """Build *call*'s event once, stamped and hashed, then write and follow it.

        The digests already known are not computed again: *request*'s when it is the call's
        own (a boundary call hashes its request once, to match it), *response_hash*."""
        stamped = self._stamp(event_type, meta)
        if stamped is not None:
            meta = stamped
        lane = call.attribution.lane
        request_hash, response_hash, content_hash = event_hashes(
            event_type, lane, request, response,
            call.request_hash if request is call.request else None, response_hash)
        event = Event(ident, position, event_type, lane, call.attribution.agent,
                      call.attribution.reason, parents, request, request_hash, response,
                      response_hash, meta, content_hash)
        self.guarded(self.sink.emit, event)
        self.events.append(event)
        return event

    def guarded(self, operation: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Run a sink operation; a redaction refusal there (the writer's last check before a
        write) refuses the whole recording, as one in the session's own redaction does:
        nothing of the bundle is kept."""
        try:
            return operation(*args, **kwargs)
        except RedactionError as exc:
            self.refusal = str(exc)
            raise

    def _stamped(self, event: Event) -> Event:
        """Stamp a result-carrying event with its rank in the completion order (meta.completed).

        Events are emitted when their result reaches the program, so the stamp is the global
        order in which results were delivered, across lanes: what replay reproduces.
        """
        meta = self._stamp(event.type, event.meta)
        return event if meta is None else event.evolve(meta=meta)

    def _stamp(self, event_type: EventType, meta: dict[str, Any]) -> dict[str, Any] | None:
        """The stamped meta of an event of *event_type* with *meta* (`_stamped`), or None
        when it takes no stamp."""
        if event_type not in RESULT_TYPES or meta.get(ABANDONED) or COMPLETED in meta:
            return None
        return {**meta, COMPLETED: self.reserve_completion()}

    def _next_id(self, event_type: EventType) -> str:
        ordinal = self._ordinals.get(event_type, 0)
        self._ordinals[event_type] = ordinal + 1
        return event_id(event_type, ordinal)

    def _next_position(self) -> int:
        position = self._position
        self._position += 1
        return position


# -- the active session ----------------------------------------------------------------
_active: Session | None = None
_active_lock = threading.Lock()


def active() -> Session | None:
    return _active


def activate(session: Session) -> None:
    global _active
    with _active_lock:
        if _active is not None:
            raise SessionError(
                f"a symtrace {_active.mode} session is already active in this process; "
                "sessions do not nest"
            )
        _active = session
        context.reset_turns()


def deactivate(session: Session) -> None:
    global _active
    try:
        session.abandon_open()  # both the in-process and the CLI paths end a session here
    finally:  # a session that failed to end must still not stay active for the next one
        with _active_lock:
            if _active is session:
                _active = None


def final_result(value: Any, *, turn: context.Turn | None = None) -> None:
    """Declare the final output of the run under the active session (no-op without one).

    *turn*: the top-level turn whose result it is (adapters declaring after the turn's block
    ended); by default the top-level turn running here (see `Session.declare_final`)."""
    session = active()
    if session is not None:
        session.declare_final(to_json_value(value), turn or context.top_turn())


def instance_lane(obj: object, name: str) -> str:
    """The lane of *obj* (an agent, a task, a manager) whose display name is *name*.

    Outside a session this is *name*: nothing is recorded, so nothing needs telling apart.
    """
    session = active()
    if session is None:
        return name
    return session.lane_identities.lane_for(obj, name)
