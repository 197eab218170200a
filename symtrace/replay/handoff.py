"""When the caller that got the previous recorded result is done with it: no time graces.

Completion-order delivery hands results out in the recorded order, but handing out is not
enough: the caller that got result k must also *use* it (append it to a chat, publish it to a
team, start its next step) before the caller of result k+1 runs on, because that is what
happened while recording, where an LLM latency separated the two. Replay serves instantly, so
replay waits for a state, not for a time:

* **the receiver is a thread** (a worker, an executor, another thread's event loop): it is
  done when it makes its next boundary call, ends, or is *blocked*: its innermost Python frame
  waits in a blocking primitive (a condition, an event, a join, a queue, a selector, a future,
  an idle pool worker). A thread blocked in C without such a frame (a bare lock acquire) is
  recognised by its CPU clock standing still over consecutive polls while its frame does not
  move; that counts the receiver's own progress, never wall-clock time.
* **the receiver is another task on the waiter's event loop**: it is done when the loop is
  quiescent: twice in a row, nothing but the waiter was ready to run (every other task waits
  on a future, a timer or I/O), bounded by a number of loop iterations, not by time.

A busy machine only delays every thread alike; it no longer changes which result is used first.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import threading
import time
from dataclasses import dataclass, field

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


@dataclass
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
        try:
            loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
            task = asyncio.current_task()
        except RuntimeError:
            loop, task = None, None
        thread = threading.current_thread()
        clock = None
        with contextlib.suppress(AttributeError, OSError, OverflowError, TypeError):
            clock = time.pthread_getcpuclockid(thread.ident or 0)
        return cls(thread, task, loop, clock)

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
            return False
        try:
            cpu = time.clock_gettime(self._clock)
        except OSError:  # the thread ended between the two looks
            return True
        here = (cpu, getattr(frame, "f_code", None), getattr(frame, "f_lasti", -1))
        self._still = self._still + 1 if here == self._last else 0
        self._last = here
        return self._still >= C_BLOCKED_POLLS


async def quiescent(loop: asyncio.AbstractEventLoop) -> None:
    """Yield until no other callback of *loop* is ready, twice in a row (bounded)."""
    ready = getattr(loop, "_ready", None)  # CPython's BaseEventLoop run queue
    if ready is None:
        for _ in range(FALLBACK_YIELDS):
            await asyncio.sleep(0)
        return
    idle = 0
    for _ in range(MAX_QUIESCENCE_YIELDS):
        await asyncio.sleep(0)
        idle = idle + 1 if len(ready) == 0 else 0
        if idle >= 2:
            return
