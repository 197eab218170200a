"""Completion-order delivery: replay hands recorded results back in the order they completed.

While recording, every event that hands a result to the program (an `agent_action`, a
`tool_result`) is stamped `meta.completed` = its rank in the run's global completion order,
across lanes. Concurrent agents (a GraphFlow fan-out, `asyncio.gather`, worker threads) see
each other's results in that order, and what they send next depends on it.

On replay a matched call whose recorded result completed after results not yet delivered is
*held* until those were delivered: async callers await, threads block. Delivery therefore
follows the recorded completion order exactly, whatever order the program issues the calls in.

A program that can never reach that order (it waits on a held result before issuing the call
that completed earlier) would hang. Replay serves results instantly, so a hold during which no
boundary call makes progress for `stall_timeout` seconds means exactly that: the waiter
raises, through the replayer, SYM-R105 "completion order unreachable" naming the held event
and the events it waits for.

A caller released after another caller's delivery also waits until that caller is done with
its result (session/handoff.py: a state, never a time grace), so the earlier result is used
first, as it was in the recording, whose results were handed out under the same rule. The
hand-off stays on after a selective replay went live (only the recorded order is dropped), so
the live suffix a child bundle records is a schedule its own replay can follow. Only
top-level records are ordered (calls made inside a recorded tool body are consumed with their
tool). Bundles recorded before completion stamps existed replay without holding.
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from collections.abc import Callable, Iterable, Sequence

from symtrace.errors import SessionError
from symtrace.model.events import ABANDONED, COMPLETED, Event, EventType
from symtrace.model.graph import children_index
from symtrace.replay.chaos import Chaos
from symtrace.session.handoff import DEFAULT_STALL_TIMEOUT, HandOff

NEVER = -1  # rank of a record whose result never came in the recording
TIMEOUT_ENV = "SYMTRACE_ORDER_TIMEOUT"


def stall_timeout_from_env(default: float = DEFAULT_STALL_TIMEOUT) -> float:
    """SYMTRACE_ORDER_TIMEOUT (seconds, > 0), or *default*; a bad value is a SessionError."""
    raw = os.environ.get(TIMEOUT_ENV)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not value > 0:
        raise SessionError(f"{TIMEOUT_ENV} must be a number of seconds > 0, got {raw!r}")
    return value


def completion_ranks(events: Sequence[Event]) -> dict[str, int] | None:
    """Record id -> recorded completion rank of its result, for top-level boundary records.

    A tool call completes with its tool_result. A call whose result never came (an abandoned
    LLM call, a tool call without result) ranks NEVER: replay holds it until its caller gives
    up. None when the bundle carries no completion stamps (it was recorded before they
    existed): such a bundle replays without holding.
    """
    results = {
        e.parents[0].source: e for e in events if e.type is EventType.TOOL_RESULT and e.parents
    }
    ranks: dict[str, int] = {}
    for event in events:
        if event.meta.get("within"):
            continue
        if event.type is EventType.AGENT_ACTION:
            carrier: Event | None = event
        elif event.type is EventType.TOOL_CALL:
            carrier = results.get(event.id)
        else:
            continue
        if carrier is None or carrier.meta.get(ABANDONED):
            ranks[event.id] = NEVER
            continue
        rank = carrier.meta.get(COMPLETED)
        if not isinstance(rank, int):
            return None
        ranks[event.id] = rank
    for tool_call in _bodies_that_replay(events, ranks):
        del ranks[tool_call]
    return ranks


_LATEST = float("inf")  # "no descendant has a rank"


def _bodies_that_replay(events: Sequence[Event], ranks: dict[str, int]) -> set[str]:
    """Tool calls whose lane went on while they ran: a descendant completed before them.

    That happens only when the tool's body itself made the calls that follow it on its lane
    (a CrewAI hand-off runs the coworker there) and the adapter runs that body again on
    replay. Such a call's begin delivers nothing (its result comes from the body), so it is
    neither held nor waited for; the calls its body makes are ordered as usual.

    One pass over G (children first) gives every node the earliest rank among its
    descendants, so the test is O(1) per tool call: a search per tool call would be O(n²)
    on a long lane, whose every call has the rest of the lane as descendants.
    """
    earliest = _earliest_by_position(events, ranks)
    if earliest is None:  # some edge points forward in O: walk G children-first instead
        earliest = _earliest_descendant_ranks(children_index(events), ranks)
    return {
        event.id
        for event in events
        if event.type is EventType.TOOL_CALL
        and ranks.get(event.id, NEVER) != NEVER
        and earliest.get(event.id, _LATEST) < ranks[event.id]
    }


def _position(event: Event) -> int:
    return event.position


def _earliest_by_position(
    events: Sequence[Event], ranks: dict[str, int]
) -> dict[str, float] | None:
    """`_earliest_descendant_ranks` in one backward pass over O, or None if it does not apply.

    Every edge of G points backwards in O (a parent completed before its child started), so
    walking O backwards finishes every child before its parents; each node hands its parents
    the smaller of its own rank and its descendants' earliest. An edge that points forward
    (a damaged or hand-made bundle) makes the pass unsound: None, and the caller walks G.
    """
    position = {event.id: event.position for event in events}
    earliest: dict[str, float] = {}
    for event in sorted(events, key=_position, reverse=True):  # O(n) when already in O
        rank = ranks.get(event.id, NEVER)
        handed = earliest.get(event.id, _LATEST)
        if rank != NEVER and rank < handed:
            handed = rank
        for edge in event.parents:
            if position.get(edge.source, -1) >= event.position:
                return None
            if handed < earliest.get(edge.source, _LATEST):
                earliest[edge.source] = handed
    return earliest


def _earliest_descendant_ranks(
    index: dict[str, list[str]], ranks: dict[str, int]
) -> dict[str, float]:
    """Node id -> the smallest completion rank among its descendants (NEVER ranks ignored)."""
    earliest: dict[str, float] = {}
    for root in index:
        if root in earliest:
            continue
        stack: list[tuple[str, int]] = [(root, 0)]
        earliest[root] = _LATEST  # in progress (G is acyclic: only a damaged bundle loops)
        while stack:
            node, i = stack[-1]
            children = index.get(node, ())
            if i < len(children):
                stack[-1] = (node, i + 1)
                child = children[i]
                if child not in earliest:
                    earliest[child] = _LATEST
                    stack.append((child, 0))
                continue
            stack.pop()
            best = _LATEST
            for child in children:
                rank = ranks.get(child, NEVER)
                best = min(best, earliest[child], rank if rank != NEVER else _LATEST)
            earliest[node] = best
    return earliest


class CompletionOrder:
    """Which recorded results may be delivered now; holds the others (sync and async).

    Shares the replayer's lock, so a match and the delivery bookkeeping never interleave.
    `check` (called under the lock while waiting) raises the session's first divergence, so
    a divergence anywhere wakes and fails every held call.
    """

    def __init__(
        self,
        ranks: dict[str, int] | None,
        lock: threading.RLock,
        check: Callable[[], None],
        on_stall: Callable[[str, list[str]], BaseException],
        stall_timeout: float,
        handoff: HandOff | None = None,
    ) -> None:
        self.enabled = ranks is not None
        self._ranks = {r: k for r, k in (ranks or {}).items() if k != NEVER}
        self._never = {r for r, k in (ranks or {}).items() if k == NEVER}
        self._order = sorted(self._ranks, key=self._ranks.__getitem__)
        self._pending = set(self._order)
        self._head = 0
        self._cond = threading.Condition(lock)
        self._check = check
        self._on_stall = on_stall
        self.stall_timeout = stall_timeout
        self._async_waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = []
        self._last_progress = time.monotonic()
        # the caller that got the last result (the session's: live results use it too)
        self.handoff = handoff or HandOff(lock, stall_timeout)
        self.chaos = Chaos.from_env()

    # -- state -------------------------------------------------------------------------------
    def may_deliver(self, record_id: str) -> bool:
        """True when every result that completed before *record_id*'s was delivered."""
        if not self.enabled:
            return True
        if record_id in self._never:
            return False
        if record_id not in self._pending:
            return True
        return self._order[self._head] == record_id

    def blockers(self, record_id: str) -> list[str]:
        """Undelivered records whose results completed before *record_id*'s, earliest first."""
        rank = self._ranks.get(record_id)
        if rank is None:
            return []
        return [r for r in self._order[self._head :] if r in self._pending and
                self._ranks[r] < rank]

    def delivered(self, record_ids: Iterable[str], to_caller: bool = False) -> None:
        """Mark results delivered (served to this thread, superseded, or abandoned)."""
        with self._cond:
            if to_caller:
                self.handoff.gave()
            for record_id in record_ids:
                self._pending.discard(record_id)
                self._never.discard(record_id)
            while self._head < len(self._order) and self._order[self._head] not in self._pending:
                self._head += 1
            self.progress()

    def disable(self) -> None:
        """Stop holding (selective replay went live: the recorded order no longer applies).

        The hand-off stays: each result is still used before the next one is handed out."""
        with self._cond:
            self.enabled = False
            self.progress()

    def arrived(self) -> None:
        """A boundary call arrived from this thread: it is done with its last result."""
        with self._cond:
            self.handoff.arrived()
            self.progress()

    def progress(self) -> None:
        """A boundary call arrived or a result was delivered: wake the waiters."""
        with self._cond:
            self._last_progress = time.monotonic()
            self._cond.notify_all()
            waiters, self._async_waiters = self._async_waiters, []
        for loop, future in waiters:
            loop.call_soon_threadsafe(_settle, future)

    # -- waiting -----------------------------------------------------------------------------
    def wait(self, record_id: str) -> None:
        """Block this thread until *record_id* may be delivered (or raise the divergence)."""
        with self._cond:
            while True:
                # the only thread left cannot be released by anyone: no need to wait it out
                remaining = self._poll(record_id, alone=threading.active_count() == 1)
                if remaining is None:
                    break
                self._cond.wait(remaining)
        self.chaos.pause()

    async def await_turn(self, record_id: str) -> None:
        """Async twin of wait(): the event loop keeps running the other tasks meanwhile."""
        loop = asyncio.get_running_loop()
        while True:
            with self._cond:
                remaining = self._poll(record_id)
                receiver = self.handoff.receiver
                if remaining is None:
                    if receiver is None or not receiver.on_my_loop():
                        break
                else:
                    future: asyncio.Future[None] = loop.create_future()
                    self._async_waiters.append((loop, future))
            if remaining is None:  # the last result went to another task of this loop
                await self.handoff.quiesce(loop)  # ... which has used it once nothing else runs
                with self._cond:
                    if self.handoff.receiver is receiver:
                        self.handoff.receiver = None
                continue
            try:
                await asyncio.wait_for(future, remaining)
            except TimeoutError:
                pass
        await self.chaos.apause()

    def after_delivery(self) -> None:
        """Hand-off point: a thread got its result (chaos may pause it here)."""
        self.chaos.pause()

    async def aafter_delivery(self) -> None:
        """Hand-off point: a task got its result (chaos may pause it here)."""
        await self.chaos.apause()

    def _poll(self, record_id: str, alone: bool = False) -> float | None:
        """None when *record_id* may go; else seconds left before the hold counts as a stall."""
        self._check()
        if self.may_deliver(record_id):
            return self.handoff.poll(self._last_progress)
        remaining = self._last_progress + self.stall_timeout - time.monotonic()
        if remaining <= 0 or alone:
            error = self._on_stall(record_id, self.blockers(record_id))
            self.progress()  # every other held call fails with the same divergence
            raise error
        return remaining


def _settle(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)
