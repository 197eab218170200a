"""One receiver at a time: a result reaches the program only once the previous one was used.

Concurrent agents (a GraphFlow fan-out, `asyncio.gather`, worker threads) see each other's
results in the order the results were *used*: the caller that got result k appends it to a
chat, publishes it to a team, starts its next step, and only then does what result k+1 causes
happen. While recording, nothing enforced that: two results arriving close together (an LLM
answer read off the socket while another task was still publishing its tool result) could be
used in the other order than they were handed out, and the recorded completion order then
named a schedule no replay could reproduce (the summary that read both diverged, or the
transcript interleaved differently). So every session hands results out through one
`HandOff`: recording, replay and the live suffix of a selective replay alike. Before a result
reaches its caller, the caller that got the previous result must be done with it; the recorded
completion order is then exactly the schedule replay enforces. It waits for a state, never for
a time:

* **the receiver is a thread** (a worker, an executor, another thread's event loop): it is
  done when it makes its next boundary call, ends, or is *blocked*: its innermost Python frame
  waits in a blocking primitive (a condition, an event, a join, a queue, a selector, a future,
  an idle pool worker). A thread blocked in C without such a frame (a bare lock acquire) is
  recognised by its CPU clock standing still over consecutive polls while its frame does not
  move; that counts the receiver's own progress, never wall-clock time.
* **the receiver is another task on the waiter's event loop**: it is done when the loop is
  quiescent: twice in a row, nothing but the waiter was ready to run (every other task waits
  on a future, a timer or I/O), bounded by a number of loop iterations, not by time.

A receiver still busy after a whole stall timeout without any boundary progress is left to
itself (a program that computes for minutes between two calls is not held for ever). A busy
machine only delays every thread alike; it no longer changes which result is used first.
"""

from __future__ import annotations

import asyncio
import asyncio.events as asyncio_events
import contextlib
import os
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

POLL = 0.002  # seconds between two looks at a thread receiver (a polling period, not a grace)
C_BLOCKED_POLLS = 25  # polls with the receiver's CPU clock and frame unchanged: blocked in C
DEFAULT_STALL_TIMEOUT = 20.0  # seconds without any boundary progress: stop waiting
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

    Shares the session's lock. `gave()` after a result reached its caller, `arrived()` when a
    boundary call arrives (the receiver's own next call means it is done), `wait()` /
    `await_settled()` before handing the next result out. `poll()` is the single decision the
    waits (and the replay's completion order) take, under the lock.
    """

    def __init__(self, lock: threading.RLock, stall_timeout: float) -> None:
        self._lock = lock
        self._cond = threading.Condition(lock)
        self.stall_timeout = stall_timeout
        self.receiver: Receiver | None = None
        self._since = time.monotonic()  # last boundary progress seen by the hand-off
        self._waiting = 0  # threads blocked in wait(): only then is there anyone to notify
        self._quiescing: Counter[asyncio.AbstractEventLoop] = Counter()  # tasks in quiesce()

    # gave() and arrived() run at every recorded result and call: a few microseconds, no more
    def gave(self) -> None:
        """The current caller got a result: it is the receiver now."""
        receiver = Receiver.current()
        with self._lock:
            self.receiver = receiver
            self._progress()

    def arrived(self) -> None:
        """A boundary call arrived from this caller: if it got the last result, it is done."""
        if self.receiver is None and not self._waiting:
            return  # nobody to release, nobody waiting
        with self._lock:
            if self.receiver is not None and self.receiver.is_caller():
                self.receiver = None
            self._progress()

    def _progress(self) -> None:
        self._since = time.monotonic()
        if self._waiting:
            self._cond.notify_all()

    def poll(self, idle_since: float | None = None) -> float | None:
        """None when the current caller may get a result now; else seconds to look again.

        Under the lock. A receiver that is another task of this caller's loop is not decided
        here (a thread cannot see a loop's quiescence): `await_settled` awaits it."""
        receiver = self.receiver
        if receiver is None or receiver.thread is threading.current_thread():
            return None  # nothing to wait for, or the same thread (its loop: see await_settled)
        if receiver.thread_settled():
            self.receiver = None
            return None
        since = self._since if idle_since is None else max(idle_since, self._since)
        if time.monotonic() - since > self.stall_timeout:
            return None
        return POLL

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
                mine = receiver.on_my_loop()
                remaining = None if mine else self.poll()
            if mine:  # another task of this loop got the last result: it has used it once
                await self.quiesce(loop)  # nothing else can run
                with self._cond:
                    if self.receiver is receiver:
                        self.receiver = None
                continue
            if remaining is None:
                return
            await asyncio.sleep(remaining)  # a receiver on another thread: look again

    async def quiesce(self, loop: asyncio.AbstractEventLoop) -> None:
        """`quiescent(loop)`, not counting the other callers waiting in here for their turn."""
        self._quiescing[loop] += 1
        try:
            await quiescent(loop, lambda: self._quiescing[loop] - 1)
        finally:
            self._quiescing[loop] -= 1
            if not self._quiescing[loop]:
                del self._quiescing[loop]
