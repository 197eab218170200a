"""Scheduling: when a result reaches the program (recording, replay and a live suffix alike).

**The rule.** The next result is handed out once the caller that got the previous one has
*consumed* it — and, on replay, once every result that completed before it in the recording
was handed out. Consumed means one of, in this order:

1. its next boundary call (same thread, same task) — what symtrace sees at its own boundary;
2. a consumption point an adapter declares in its hook table (`contract.consumption_point`
   calls `Session.consumed()`: the framework handed on the message made of the result, or
   parked the agent until its next message);
3. a fact about the receiver: its task is done, its thread ended, or the thread-pool work
   item it ran the call in finished (the result was passed on to whoever submitted it);
4. only with the fallback `SchedulingOptions.infer_from_state` (on by default until every
   adapter declares where it parks): its state — a thread waiting in a blocking primitive
   (frame inspection, a still CPU clock for one blocked in C), a task of the waiter's own
   loop once that loop is quiescent (asyncio's ready queue).

The recorded completion order is `CompletionOrder` (from the `meta.completed` ranks a
recording stamps); who got the last result is `HandOff`. Every knob — the order timeout, the
fallback, test chaos — is one `SchedulingOptions` (scheduling_options.py), built with the
replay's options; nothing here reads the environment except the stress tests' chaos hook.

Why: concurrent agents see each other's results in the order they were *used* (appended to
a chat, published to a team), so recording hands results out under the same rule and the
recorded completion order is always a schedule replay can follow.

A receiver not seen consuming for a whole order timeout without boundary progress is left
to itself. On replay a matched call whose recorded result completed after undelivered ones
is *held* (awaits, or blocks its thread); a hold with no boundary progress for the order
timeout is SYM-R105 (the program cannot reach the recorded order; on a thread pool every
worker of which is held, the report names the pool). The hand-off stays on once a selective
replay goes live (only the recorded order is dropped); calls inside a recorded tool body are
consumed with their tool; bundles without completion stamps replay without holding.

Test chaos (`SYMTRACE_CHAOS`: `1` a fresh seed, or an integer seed) pauses at random right
after a result is handed out and before a held caller is released: threads sleep a few
milliseconds or not at all, tasks yield a random number of times (no timers: on replay none
stands between a result and its use). A private generator, never the program's `random`.
docs/replay-semantics.md ("Completion order") has the long form.
"""

from __future__ import annotations

import asyncio
import asyncio.events as asyncio_events
import concurrent.futures
import contextlib
import functools
import os
import random
import secrets
import sys
import threading
import time
import weakref
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from symtrace.errors import SessionError
from symtrace.model.events import ABANDONED, COMPLETED, Event, EventType
from symtrace.model.graph import children_index

CHAOS_ENV = "SYMTRACE_CHAOS"
THREAD_PAUSES = (0.0, 0.0, 0.0005, 0.002, 0.006)  # seconds a thread may be held back
MAX_YIELDS = 8  # an asyncio task yields 0..MAX_YIELDS times


class Chaos:
    """Random pauses at hand-off points; inert unless enabled."""

    def __init__(self, seed: int | None) -> None:
        self.enabled = seed is not None
        self.seed = seed
        self._rng = random.Random(seed)

    @classmethod
    def from_env(cls) -> Chaos:
        raw = os.environ.get(CHAOS_ENV, "").strip()
        if not raw or raw == "0":
            return cls(None)
        if raw == "1":
            return cls(secrets.randbits(32))
        try:
            return cls(int(raw))
        except ValueError:
            raise SessionError(f"{CHAOS_ENV} must be 1 or an integer seed, got {raw!r}") from None

    def pause(self) -> None:
        if self.enabled:
            delay = self._rng.choice(THREAD_PAUSES)
            if delay:
                time.sleep(delay)

    async def apause(self) -> None:
        if not self.enabled:
            return
        for _ in range(self._rng.randint(0, MAX_YIELDS)):
            await asyncio.sleep(0)

POLL = 0.002  # seconds between two looks at a thread receiver (a polling period, not a grace)
C_BLOCKED_POLLS = 25  # polls with the receiver's CPU clock and frame unchanged: blocked in C
MAX_QUIESCENCE_YIELDS = 500  # loop iterations a waiter spends waiting for quiescence at most
FALLBACK_YIELDS = 25  # loops without a visible ready queue (not CPython's): yield this often

# (file name, function) of innermost frames that mean "this thread waits for someone else"
BLOCKING_FRAMES = frozenset({
    ("threading.py", "wait"),  # Condition.wait, Event.wait
    ("threading.py", "_wait_for_tstate_lock"),  # Thread.join
    ("threading.py", "join"),
    ("queue.py", "get"),
    ("queue.py", "put"),
    ("selectors.py", "select"),  # an idle event loop
    ("futures/_base.py", "result"),  # concurrent.futures.Future.result
    ("futures/_base.py", "wait"),
    ("futures/_base.py", "as_completed"),
    ("futures/thread.py", "_worker"),  # an idle ThreadPoolExecutor worker
})


@dataclass(slots=True)  # one per recorded result (gave)
class Receiver:
    """The caller a result was last handed to: its thread, and its task if it had one."""

    thread: threading.Thread
    task: asyncio.Task[object] | None
    loop: asyncio.AbstractEventLoop | None
    _clock: int | None = None
    _last: tuple[float, object, int] | None = field(default=None, repr=False)
    _still: int = 0

    @classmethod
    def current(cls) -> Receiver:
        # cheap on purpose: it runs at every result a recording hands out (no exception raised
        # outside a loop, the CPU clock looked up only when a blocked thread is suspected)
        loop = asyncio_events._get_running_loop()
        task = asyncio.current_task(loop) if loop is not None else None
        return cls(threading.current_thread(), task, loop)

    def is_caller(self) -> bool:
        """True when the current caller is this receiver (its next boundary call arrived)."""
        if self.thread is not threading.current_thread():
            return False
        if self.task is None:
            return True
        try:
            return asyncio.current_task() is self.task
        except RuntimeError:
            return False

    def finished(self) -> bool:
        """A fact, no guess: the receiver's task is done, or (no task) its thread ended."""
        if self.task is not None:
            return self.task.done()
        return not self.thread.is_alive()

    def on_my_loop(self) -> bool:
        """True when the receiver is another task of the event loop running this caller."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return False
        return self.loop is loop and self.task is not asyncio.current_task()

    def thread_settled(self) -> bool:
        """The receiver thread ended or waits for someone else (see the module docstring)."""
        if self.thread is threading.current_thread() or not self.thread.is_alive():
            return True
        frame = sys._current_frames().get(self.thread.ident or -1)
        if frame is None:
            return True
        path, name = frame.f_code.co_filename, frame.f_code.co_name
        tail = os.path.join(os.path.basename(os.path.dirname(path)), os.path.basename(path))
        if (os.path.basename(path), name) in BLOCKING_FRAMES or (tail, name) in BLOCKING_FRAMES:
            return True
        return self._blocked_in_c(frame)

    def _blocked_in_c(self, frame: object) -> bool:
        if self._clock is None:
            with contextlib.suppress(AttributeError, OSError, OverflowError, TypeError):
                self._clock = time.pthread_getcpuclockid(self.thread.ident or 0)
            if self._clock is None:
                return False
        try:
            cpu = time.clock_gettime(self._clock)
        except OSError:  # the thread ended between the two looks
            return True
        here = (cpu, getattr(frame, "f_code", None), getattr(frame, "f_lasti", -1))
        self._still = self._still + 1 if here == self._last else 0
        self._last = here
        return self._still >= C_BLOCKED_POLLS


async def quiescent(
    loop: asyncio.AbstractEventLoop, waiting: Callable[[], int] = lambda: 0
) -> None:
    """Yield until no other callback of *loop* is ready, twice in a row (bounded).

    *waiting* counts the other tasks of the loop yielding in here right now: each always has
    its next step ready, so two results arriving together do not keep each other from ever
    seeing the loop quiescent (they would both wait out the bound, then race)."""
    ready = getattr(loop, "_ready", None)  # CPython's BaseEventLoop run queue
    if ready is None:
        for _ in range(FALLBACK_YIELDS):
            await asyncio.sleep(0)
        return
    idle = 0
    for _ in range(MAX_QUIESCENCE_YIELDS):
        await asyncio.sleep(0)
        idle = idle + 1 if len(ready) <= waiting() else 0
        if idle >= 2:
            return


def on_event_loop_thread() -> bool:
    """True when this thread runs an event loop (a sync wait here would block that loop)."""
    return asyncio_events._get_running_loop() is not None


class HandOff:
    """Who got the last result, and waiting until that caller is done with it (sync, async).

    Shares the session's lock. `gave()` after a result reached its caller; `arrived()` when
    the caller reaches a point that shows it is done with its result — its next boundary
    call, or a consumption point an adapter declares (`Session.consumed`); `wait()` /
    `await_settled()` before handing the next result out. `poll()` is the single decision
    the waits (and the replay's completion order) take, under the lock: facts first (the
    receiver's consumption, its thread ended, its task done), then — only with *infer* —
    the receiver's state (blocked frames, CPU clock, a quiescent loop).
    """

    def __init__(self, lock: threading.RLock, stall_timeout: float, infer: bool = True) -> None:
        self._lock = lock
        self.cond = self._cond = threading.Condition(lock)  # the completion order's too
        self.stall_timeout = stall_timeout
        self.infer = infer  # SchedulingOptions.infer_from_state
        self.receiver: Receiver | None = None
        self._since = time.monotonic()  # last boundary progress seen by the hand-off
        self._waiting = 0  # threads blocked in wait(): only then is there anyone to notify
        self._quiescing: Counter[asyncio.AbstractEventLoop] = Counter()  # tasks in quiesce()
        self._async_waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = []
        self._watched: weakref.WeakSet[asyncio.Task[object]] = weakref.WeakSet()

    # gave() and arrived() run at every recorded result and call: a few microseconds, no more
    def gave(self) -> None:
        """The current caller got a result: it is the receiver now."""
        receiver = Receiver.current()
        with self._lock:
            self.receiver = receiver
            self.progress()
        if self.infer:
            return
        task = receiver.task
        if task is not None:
            if task not in self._watched:
                self._watched.add(task)
                task.add_done_callback(self._task_done)  # a fact: the task ended
            return
        # a pool worker (run_in_executor, to_thread, a framework's executor): the end of
        # its work item is the end of the receiver's turn there (the result is passed on)
        worker = _PoolWorker.here()
        if worker is not None and isinstance(worker.item, concurrent.futures.Future):
            worker.item.add_done_callback(functools.partial(self._item_done, receiver))

    def arrived(self) -> None:
        """This caller showed it is done with its last result (its next boundary call, or a
        declared consumption point): if it got the last result, it is no longer waited for."""
        if self.receiver is None and not self._waiting and not self._async_waiters:
            return  # nobody to release, nobody waiting
        with self._lock:
            if self.receiver is not None and self.receiver.is_caller():
                self.receiver = None
            self.progress()

    def _item_done(self, receiver: Receiver, _item: object) -> None:
        with self._lock:
            if self.receiver is receiver:
                self.receiver = None
                self.progress()

    def _task_done(self, task: asyncio.Task[object]) -> None:
        with self._lock:
            if self.receiver is not None and self.receiver.task is task:
                self.receiver = None
                self.progress()

    def progress(self) -> None:
        """Boundary progress: wake every waiter, sync and async (under the lock)."""
        self._since = time.monotonic()
        self._cond.notify_all()
        waiters, self._async_waiters = self._async_waiters, []
        for loop, future in waiters:
            loop.call_soon_threadsafe(_settle, future)

    def poll(self, idle_since: float | None = None) -> float | None:
        """None when the current caller may get a result now; else seconds to look again.

        Under the lock. With *infer*, a receiver that is another task of this caller's loop
        is not decided here (a thread cannot see a loop's quiescence): `await_settled`
        awaits it."""
        receiver = self.receiver
        if receiver is None or receiver.is_caller():
            return None
        if receiver.finished():
            self.receiver = None
            return None
        if self.infer:
            if receiver.thread is threading.current_thread():
                return None  # its loop: see await_settled
            if receiver.thread_settled():
                self.receiver = None
                return None
        since = self._since if idle_since is None else max(idle_since, self._since)
        remaining = since + self.stall_timeout - time.monotonic()
        if remaining <= 0:
            return None
        # a thread's end is a fact nobody announces: look at it now and then
        return POLL if self.infer or receiver.task is None else remaining

    def wait(self) -> None:
        """Block this thread until the receiver of the last result is done with it.

        Never on a thread that runs an event loop: blocking it would stop the very tasks
        that are to finish with their results (async callers use `await_settled`)."""
        if self.receiver is None or on_event_loop_thread():
            return
        with self._cond:
            self._waiting += 1
            try:
                while (remaining := self.poll()) is not None:
                    self._cond.wait(remaining)
            finally:
                self._waiting -= 1

    async def await_settled(self) -> None:
        """Async twin of wait(): the event loop keeps running the receiver meanwhile."""
        loop = asyncio.get_running_loop()
        while True:
            with self._cond:
                receiver = self.receiver
                if receiver is None or receiver.is_caller():
                    return
                mine = self.infer and receiver.on_my_loop()
                remaining = None if mine else self.poll()
                if not mine and remaining is not None:
                    future = self.waiter(loop)
            if mine:  # another task of this loop got the last result
                await self.release_on_loop(loop, receiver)
                continue
            if remaining is None:
                return
            await until_progress(future, remaining)

    def waiter(self, loop: asyncio.AbstractEventLoop) -> asyncio.Future[None]:
        """A future of *loop* settled at the next progress (under the lock)."""
        future: asyncio.Future[None] = loop.create_future()
        self._async_waiters.append((loop, future))
        return future

    async def release_on_loop(self, loop: asyncio.AbstractEventLoop,
                              receiver: Receiver | None) -> None:
        """(*infer* only) *receiver*, another task of this loop, got the last result: it has
        used it once the loop is quiescent (nothing else can run); then nobody waits for it."""
        await self.quiesce(loop)
        with self._cond:
            if self.receiver is receiver:
                self.receiver = None

    async def quiesce(self, loop: asyncio.AbstractEventLoop) -> None:
        """`quiescent(loop)`, not counting the other callers waiting in here for their turn."""
        self._quiescing[loop] += 1
        try:
            await quiescent(loop, lambda: self._quiescing[loop] - 1)
        finally:
            self._quiescing[loop] -= 1
            if not self._quiescing[loop]:
                del self._quiescing[loop]


NEVER = -1  # rank of a record whose result never came in the recording


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


@dataclass(frozen=True, slots=True)
class StarvedPool:
    """Every worker of a ThreadPoolExecutor is held, and work waits in its queue: that work
    cannot start (nor make the calls a hold waits for) until a hold on the pool ends."""

    max_workers: int
    queued: int


class _PoolWorker:
    """The ThreadPoolExecutor whose worker this thread is, from the thread's own stack (its
    outermost frames are `concurrent.futures.thread._worker(executor_reference, work_queue,
    ...)`; asyncio's default executor and `to_thread` are one too). None: not a pool worker."""

    __slots__ = ("item", "max_workers", "queue")

    def __init__(self, queue: object, max_workers: int, item: object) -> None:
        self.queue, self.max_workers, self.item = queue, max_workers, item

    @classmethod
    def here(cls) -> _PoolWorker | None:
        frame = sys._getframe(1)
        while frame.f_back is not None:  # _worker is near the bottom of the thread's stack
            frame = frame.f_back
            code = frame.f_code
            if code.co_name == "_worker" and code.co_filename.endswith(_POOL_MODULE):
                local = frame.f_locals
                executor = local.get("executor_reference", lambda: None)()
                queue = local.get("work_queue")
                workers = getattr(executor, "_max_workers", None)
                if queue is None or not isinstance(workers, int):
                    return None
                return cls(queue, workers, getattr(local.get("work_item"), "future", None))
        return None


_POOL_MODULE = os.path.join("concurrent", "futures", "thread.py")


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
        on_stall: Callable[[str, list[str], StarvedPool | None], BaseException],
        stall_timeout: float,
        handoff: HandOff | None = None,
        chaos: Chaos | None = None,
    ) -> None:
        self.enabled = ranks is not None
        self._ranks_given = ranks is not None  # stamped bundle: unranked records deliver nothing
        self._ranks = {r: k for r, k in (ranks or {}).items() if k != NEVER}
        self._never = {r for r, k in (ranks or {}).items() if k == NEVER}
        self._order = sorted(self._ranks, key=self._ranks.__getitem__)
        self._pending = set(self._order)
        self._head = 0
        self._check = check
        self._on_stall = on_stall
        self.stall_timeout = stall_timeout
        self._last_progress = time.monotonic()
        # the caller that got the last result (the session's: live results use it too)
        self.handoff = handoff or HandOff(lock, stall_timeout)
        self._cond = self.handoff.cond  # one condition: any progress wakes every waiter
        self.chaos = chaos or Chaos(None)
        self._held_workers: dict[threading.Thread, _PoolWorker] = {}  # sync holds on pools

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
        """Mark results delivered (served to this thread, superseded, or abandoned).

        *to_caller*: the current caller got them, so it is the receiver now — unless none of
        them hands the caller anything at its begin: a tool call whose body replays (it is
        left out of the ranks) delivers nothing there; its body's calls are the receivers."""
        record_ids = tuple(record_ids)
        with self._cond:
            if to_caller and (self._ranks_given is False or any(
                    r in self._ranks or r in self._never for r in record_ids)):
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
            self.handoff.progress()

    # -- waiting -----------------------------------------------------------------------------
    def wait(self, record_id: str) -> None:
        """Block this thread until *record_id* may be delivered (or raise the divergence).

        The hold occupies this thread: on a pool worker, the pool runs nothing else
        meanwhile (`starved_pool` tells the divergence report so)."""
        me = threading.current_thread()
        with self._cond:
            if self.may_deliver(record_id) and self.handoff.receiver is None:
                pass  # the common case: no hold, no stack walk
            elif (worker := _PoolWorker.here()) is not None:
                self._held_workers[me] = worker
            try:
                while True:
                    # the only thread left cannot be released by anyone: no need to wait
                    remaining = self._poll(record_id, alone=threading.active_count() == 1)
                    if remaining is None:
                        break
                    self._cond.wait(remaining)
            finally:
                self._held_workers.pop(me, None)
        self.chaos.pause()

    def starved_pool(self) -> StarvedPool | None:
        """A pool every worker of which is held here while work waits in its queue (under
        the lock): the held calls occupy the threads the queued work would run on."""
        held: Counter[int] = Counter(id(w.queue) for w in self._held_workers.values())
        for worker in self._held_workers.values():
            queued = _queued(worker.queue)
            if held[id(worker.queue)] >= worker.max_workers and queued:
                return StarvedPool(worker.max_workers, queued)
        return None

    async def await_turn(self, record_id: str) -> None:
        """Async twin of wait(): the event loop keeps running the other tasks meanwhile."""
        loop = asyncio.get_running_loop()
        while True:
            with self._cond:
                remaining = self._poll(record_id)
                receiver = self.handoff.receiver
                if remaining is None:
                    if receiver is None or not (self.handoff.infer and receiver.on_my_loop()):
                        break
                else:
                    future = self.handoff.waiter(loop)
            if remaining is None:  # the last result went to another task of this loop
                await self.handoff.release_on_loop(loop, receiver)
                continue
            await until_progress(future, remaining)
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
            error = self._on_stall(record_id, self.blockers(record_id), self.starved_pool())
            self.progress()  # every other held call fails with the same divergence
            raise error
        return remaining


async def until_progress(future: asyncio.Future[None], timeout: float) -> None:
    """Wait for *future* (settled at the next progress) at most *timeout* seconds.

    Not `asyncio.wait_for`: on Python 3.11 it swallows a cancellation that arrives together
    with the future's result, and a cancelled held call (its caller gave up on it) would
    then go on waiting for a turn that never comes."""
    await asyncio.wait((future,), timeout=timeout)


def _queued(queue: object) -> int:
    try:
        return int(queue.qsize())  # type: ignore[attr-defined]
    except (AttributeError, TypeError, ValueError, NotImplementedError):
        return 0


def _settle(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)
