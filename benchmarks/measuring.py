"""Measuring helpers for the benchmark scripts: estimators, a hook CPU meter, child-process CPU.

Imported by `recording_overhead.py` and `recording_components.py` (scripts run from this
directory put it on `sys.path`); the pure parts are unit-tested in
`tests/unit/test_bench_measuring.py`.

* `median_ci`: the median of a sample and a distribution-free confidence interval for it
  (order statistics: the interval [x_(k), x_(n-k+1)] covers the population median with
  probability 1 - 2 P(Binomial(n, 1/2) <= k - 1), whatever the distribution). Run-to-run
  noise of a benchmark cell is mostly a few large outliers (a collection, a preemption), which
  move a mean but not a median.
* `HookMeter`: thread CPU charged to a stack of modes ("hook", "transport", "gc", ...) by
  wrappers around the functions that enter them, so the CPU a recorder spends in its own hooks
  is separated from the real transport call its hook wraps and from the garbage collector
  (gc.callbacks). Main thread only: CPU of other threads is not seen.
* `ChildCPU`: cumulative CPU of this process's descendant processes read from /proc
  (per-task `schedstat`, nanoseconds; `stat` utime + stime in clock ticks where schedstat is
  absent), so the CPU of a writer process symtrace starts is counted even though
  `time.process_time` of this process does not include it.
"""

from __future__ import annotations

import asyncio
import functools
import gc
import json
import math
import os
import statistics
import threading
import time
import weakref
from collections import Counter
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any


# -- estimators ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Estimate:
    median: float
    low: float  # confidence interval of the median (see median_ci)
    high: float
    n: int

    def scaled(self, factor: float) -> Estimate:
        return Estimate(self.median * factor, self.low * factor, self.high * factor, self.n)


def ci_rank(n: int, level: float = 0.95) -> int:
    """The k (1-based) of the order-statistic interval [x_(k), x_(n-k+1)] for the median: the
    largest k whose coverage 1 - 2 P(B <= k-1), B ~ Binomial(n, 1/2), is at least *level*;
    1 (min..max, coverage 1 - 2^(1-n)) when the sample is too small for *level*."""
    if n < 1:
        raise ValueError("no values")
    best, below = 1, 0.0
    for k in range(1, n // 2 + 2):
        below += math.comb(n, k - 1) / 2**n  # P(B <= k - 1)
        if 2 * below > 1 - level:
            break
        best = k
    return min(best, (n + 1) // 2)


def median_ci(values: Iterable[float], level: float = 0.95) -> Estimate:
    xs = sorted(values)
    if not xs:
        raise ValueError("no values")
    k = ci_rank(len(xs), level)
    return Estimate(statistics.median(xs), xs[k - 1], xs[len(xs) - k], len(xs))


# -- garbage collector state --------------------------------------------------------------------
def pin_gc() -> None:
    """Put the collector in the same state before every measured cell: everything alive now
    collected once and frozen (moved out of the generations the collector walks), young
    generations empty. Without it a full collection of the whole heap (~50 ms on the benchmark's
    heap) lands in whichever cell happens to cross the threshold: +1 ms per call in a 40-call
    cell, at random. What a cell allocates is still collected in the cell as usual."""
    gc.collect()
    gc.freeze()


# -- CPU of hooks, transport and collector, by mode ----------------------------------------------
class HookMeter:
    """Thread CPU charged to the mode on top of a stack (``"other"`` when empty).

    Wrappers made by `wrap` / `wrap_async` / `wrap_iter` / `wrap_aiter` push their mode while
    the wrapped code runs, so nested modes take their own time out of the enclosing one (a
    hook's figure excludes the transport call inside it). `gc_callback` (installed by
    `install_gc`) charges collections to ``"gc"``. Only the thread that made the meter is
    metered; calls from other threads pass through uncounted."""

    def __init__(self, clock: Callable[[], int] = time.thread_time_ns) -> None:
        self.clock = clock
        self.thread = threading.get_ident()
        self.stack: list[str] = []
        self.totals: Counter[str] = Counter()
        self._since = clock()

    def _charge(self) -> None:
        now = self.clock()
        self.totals[self.stack[-1] if self.stack else "other"] += now - self._since
        self._since = now

    def enter(self, mode: str) -> bool:
        if threading.get_ident() != self.thread:
            return False
        self._charge()
        self.stack.append(mode)
        return True

    def leave(self) -> None:
        self._charge()
        self.stack.pop()

    def reset(self) -> None:
        self._charge()
        self.totals.clear()

    def take(self) -> Counter[str]:
        """The totals since the last reset (ns), and reset."""
        self._charge()
        totals, self.totals = self.totals, Counter()
        return totals

    # -- the collector
    def gc_callback(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self.enter("gc")
        elif self.stack and self.stack[-1] == "gc" and threading.get_ident() == self.thread:
            self.leave()

    def install_gc(self) -> None:
        gc.callbacks.append(self.gc_callback)

    def uninstall_gc(self) -> None:
        if self.gc_callback in gc.callbacks:
            gc.callbacks.remove(self.gc_callback)

    # -- wrappers
    def wrap(self, func: Callable[..., Any], mode: str) -> Callable[..., Any]:
        meter = self

        @functools.wraps(func)
        def metered(*args: Any, **kwargs: Any) -> Any:
            if not meter.enter(mode):
                return func(*args, **kwargs)
            try:
                return func(*args, **kwargs)
            finally:
                meter.leave()

        return _mark(metered)

    def wrap_async(self, func: Callable[..., Any], mode: str) -> Callable[..., Any]:
        """For a coroutine function: the mode covers the coroutine from start to return,
        including what the event loop runs while it waits (one task at a time is assumed)."""
        meter = self

        @functools.wraps(func)
        async def metered(*args: Any, **kwargs: Any) -> Any:
            if not meter.enter(mode):
                return await func(*args, **kwargs)
            try:
                return await func(*args, **kwargs)
            finally:
                meter.leave()

        assert asyncio.iscoroutinefunction(metered)
        return _mark(metered)

    def wrap_iter(self, func: Callable[..., Iterator[Any]], mode: str) -> Callable[..., Any]:
        """For a method returning an iterator (``__iter__``): each step is charged to *mode*,
        what the consumer does between steps is not."""
        meter = self

        @functools.wraps(func)
        def metered(*args: Any, **kwargs: Any) -> Iterator[Any]:
            inner = func(*args, **kwargs)
            try:
                while True:
                    entered = meter.enter(mode)
                    try:
                        item = next(inner)
                    except StopIteration:
                        return
                    finally:
                        if entered:
                            meter.leave()
                    yield item
            finally:  # the consumer stopped early: the inner iterator ends now, as unwrapped
                getattr(inner, "close", lambda: None)()

        return _mark(metered)

    def wrap_aiter(self, func: Callable[..., AsyncIterator[Any]], mode: str) -> Callable[..., Any]:
        meter = self

        @functools.wraps(func)
        async def metered(*args: Any, **kwargs: Any) -> AsyncIterator[Any]:
            inner = func(*args, **kwargs).__aiter__()
            try:
                while True:
                    entered = meter.enter(mode)
                    try:
                        item = await inner.__anext__()
                    except StopAsyncIteration:
                        return
                    finally:
                        if entered:
                            meter.leave()
                    yield item
            finally:
                if hasattr(inner, "aclose"):
                    await inner.aclose()

        return _mark(metered)


# The wrappers a meter made, by identity. Not an attribute on them: functools.wraps copies a
# function's __dict__ to its wrapper, so a recorder that wraps a metered function with it
# (vcrpy wraps httpx's transport method so) would carry the mark too, and its hook would be
# taken for the plain transport and never metered.
_METERED: weakref.WeakSet[Callable[..., Any]] = weakref.WeakSet()


def _mark(metered: Callable[..., Any]) -> Callable[..., Any]:
    _METERED.add(metered)
    return metered


def is_metered(func: Any) -> bool:
    """Whether *func* is a wrapper a HookMeter made (not one that merely wraps one)."""
    return func in _METERED  # (False for what cannot be weakly referenced: None, a builtin)


# -- a contention probe ---------------------------------------------------------------------------
def probe_work() -> int:
    """A fixed piece of interpreter work (dicts, strings, json) of ~0.15 ms: the same in every
    cell whatever the recorder, so its CPU measures how much the machine's other load slows
    this process's code down at that moment."""
    rows = [{"role": "user", "content": f"message {i} " + "x" * (i % 50), "n": i}
            for i in range(80)]
    back = json.loads(json.dumps(rows))
    return sum(len(r["content"]) for r in back) + len(sorted(r["content"] for r in rows))


class Probe:
    """Runs `probe_work` when called (between two calls of a workload) and counts its main-
    thread CPU; `take()` returns (ns, runs) since the last take."""

    def __init__(self, clock: Callable[[], int] = time.thread_time_ns) -> None:
        self.clock = clock
        self.ns = 0
        self.runs = 0

    def __call__(self) -> None:
        start = self.clock()
        probe_work()
        self.ns += self.clock() - start
        self.runs += 1

    def take(self) -> tuple[int, int]:
        taken = (self.ns, self.runs)
        self.ns, self.runs = 0, 0
        return taken


def normalised(values: list[float], probes: list[float], reference: float) -> list[float]:
    """*values* scaled by reference / probe of the same cell: what each cell would have cost at
    the machine speed of *reference* (a probe's CPU per run)."""
    return [v * reference / p if p > 0 else v for v, p in zip(values, probes, strict=True)]


# -- CPU of descendant processes, from /proc -----------------------------------------------------
def parse_stat(text: str) -> tuple[int, int]:
    """(ppid, utime + stime in clock ticks) from a /proc/PID/stat line. The command name (field
    2) is in parentheses and may itself contain spaces and parentheses: split after the last
    ')'."""
    rest = text[text.rindex(")") + 2:].split()
    # rest[0] is field 3 (state): ppid is field 4, utime and stime fields 14 and 15
    return int(rest[1]), int(rest[11]) + int(rest[12])


def parse_schedstat(text: str) -> int:
    """Nanoseconds on CPU from a /proc/PID/task/TID/schedstat line (its first field)."""
    return int(text.split()[0])


def descendants(parents: dict[int, int], root: int, exclude: Iterable[int] = ()) -> set[int]:
    """The processes below *root* in the pid -> ppid map, without the subtrees of *exclude*."""
    children: dict[int, list[int]] = {}
    for pid, ppid in parents.items():
        children.setdefault(ppid, []).append(pid)
    skip = set(exclude)
    found: set[int] = set()
    todo = [root]
    while todo:
        for child in children.get(todo.pop(), ()):
            if child not in skip and child not in found:
                found.add(child)
                todo.append(child)
    return found


def accumulate(seen: dict[int, int], sample: dict[int, int]) -> int:
    """CPU (ns) added since *seen* by the processes of *sample* (pid -> cumulative ns); a pid
    new in *sample* counts from zero (it started since). Updates *seen*. A process that exited
    between samples loses what it ran since the previous one (a reused writer does not exit)."""
    added = 0
    for pid, cpu in sample.items():
        added += max(0, cpu - seen.get(pid, 0))
        seen[pid] = max(cpu, seen.get(pid, 0))
    return added


class ChildCPU:
    """Cumulative CPU (ns) of this process's descendants (except *exclude* and theirs)."""

    def __init__(self, exclude: Iterable[int] = (), proc: Path = Path("/proc")) -> None:
        self.proc = proc
        self.exclude = set(exclude)
        self.available = (proc / str(os.getpid()) / "stat").exists()
        self.tick_ns = 1e9 / os.sysconf("SC_CLK_TCK") if self.available else 0.0
        self._seen: dict[int, int] = {}
        self.total = 0

    def _cpu(self, pid: int, ticks: int) -> int:
        tasks = self.proc / str(pid) / "task"
        try:
            return sum(parse_schedstat((task / "schedstat").read_text())
                       for task in tasks.iterdir())
        except (OSError, ValueError, IndexError):
            return int(ticks * self.tick_ns)

    def sample(self) -> int:
        """Cumulative CPU of the descendants so far (ns); 0 without /proc."""
        if not self.available:
            return 0
        parents: dict[int, int] = {}
        ticks: dict[int, int] = {}
        for entry in self.proc.iterdir():
            if not entry.name.isdigit():
                continue
            try:
                parents[int(entry.name)], ticks[int(entry.name)] = parse_stat(
                    (entry / "stat").read_text())
            except (OSError, ValueError, IndexError):
                continue  # exited while we looked
        below = descendants(parents, os.getpid(), self.exclude)
        self.total += accumulate(self._seen, {pid: self._cpu(pid, ticks[pid]) for pid in below})
        return self.total
