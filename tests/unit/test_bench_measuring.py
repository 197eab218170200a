"""The pure helpers of benchmarks/measuring.py: the median's confidence interval, the hook
meter's accounting by mode, and the /proc parsing that counts a writer process's CPU.
(Benchmarks are not timed in tests; these check the arithmetic the benchmark reports with.)"""

from __future__ import annotations

import asyncio
import functools
import importlib.util
import math
import os
import sys
from pathlib import Path

import pytest

from ._support import FakeClock

REPO = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("bench_measuring",
                                               REPO / "benchmarks" / "measuring.py")
assert _spec and _spec.loader
measuring = importlib.util.module_from_spec(_spec)
sys.modules.setdefault("bench_measuring", measuring)  # dataclasses look their module up
_spec.loader.exec_module(measuring)


def _coverage(n: int, k: int) -> float:
    return 1 - 2 * sum(math.comb(n, j) for j in range(k)) / 2**n


@pytest.mark.parametrize("n", [1, 2, 5, 6, 9, 10, 15, 20, 25, 30, 60])
def test_ci_rank_is_the_narrowest_interval_with_95_percent_coverage(n):
    k = measuring.ci_rank(n)
    assert 1 <= k <= (n + 1) // 2
    if _coverage(n, 1) >= 0.95:
        assert _coverage(n, k) >= 0.95
        assert k == (n + 1) // 2 or _coverage(n, k + 1) < 0.95
    else:
        assert k == 1  # too few values for 95 %: min..max


def test_ci_rank_matches_the_textbook_table():
    # Conover, Practical Nonparametric Statistics: n=10 -> 2nd, n=20 -> 6th, n=30 -> 10th
    assert [measuring.ci_rank(n) for n in (10, 20, 30)] == [2, 6, 10]


def test_median_ci_of_a_sample():
    est = measuring.median_ci([5.0, 1.0, 9.0, 3.0, 7.0, 2.0, 8.0, 4.0, 6.0, 100.0])
    assert est.median == 5.5
    assert (est.low, est.high, est.n) == (2.0, 9.0, 10)  # the outlier 100 is outside
    assert measuring.median_ci([3.0]).low == measuring.median_ci([3.0]).high == 3.0
    with pytest.raises(ValueError):
        measuring.median_ci([])


def test_hook_meter_charges_nested_modes_to_themselves():
    clock = FakeClock()
    meter = measuring.HookMeter(clock)

    def transport():
        clock.now += 70

    def hook():
        clock.now += 10
        wrapped_transport()
        clock.now += 5
        meter.gc_callback("start", {})
        clock.now += 100  # a collection during the hook: not the hook's
        meter.gc_callback("stop", {})
        clock.now += 3

    wrapped_transport = meter.wrap(transport, "transport")
    meter.reset()
    clock.now += 1000  # the program's own work
    meter.wrap(hook, "hook")()
    totals = meter.take()
    assert totals == {"other": 1000, "hook": 18, "transport": 70, "gc": 100}
    assert meter.take() == {"other": 0}
    assert measuring.is_metered(wrapped_transport) and not measuring.is_metered(transport)


def test_a_recorders_wrapper_of_a_metered_function_is_not_taken_for_the_meters_own():
    """vcrpy installs its httpx hook as `functools.wraps(<the transport method it found>)`;
    when that method is the meter's transport wrapper, functools.wraps copies its __dict__ to
    vcrpy's hook. A mark kept there made the benchmark take vcrpy's hook for the plain
    transport and leave it unmetered (its CPU went to "other")."""
    meter = measuring.HookMeter(FakeClock())

    def transport() -> None:
        pass

    metered = meter.wrap(transport, "transport")

    @functools.wraps(metered)
    def recorders_hook() -> None:
        metered()

    assert measuring.is_metered(metered)
    assert not measuring.is_metered(recorders_hook)
    assert not measuring.is_metered(None)
    assert not measuring.is_metered(len)
    assert measuring.is_metered(meter.wrap(recorders_hook, "hook"))


def test_hook_meter_pops_its_mode_when_the_call_raises():
    meter = measuring.HookMeter(FakeClock())

    def fails():
        raise KeyError("x")

    with pytest.raises(KeyError):
        meter.wrap(fails, "hook")()
    assert meter.stack == []


def test_hook_meter_charges_only_the_steps_of_an_iterator():
    clock = FakeClock()
    meter = measuring.HookMeter(clock)

    def chunks(_self):
        for _ in range(3):
            clock.now += 7
            yield b"x"

    meter.reset()
    for _ in meter.wrap_iter(chunks, "transport")(None):
        clock.now += 100  # the consumer between steps
    assert meter.take() == {"transport": 21, "other": 300}


def test_hook_meter_iterator_closes_its_inner_iterator_when_stopped_early():
    meter = measuring.HookMeter(FakeClock())
    closed = []

    def chunks(_self):
        try:
            yield from (b"a", b"b", b"c")
        finally:
            closed.append(True)

    wrapped = meter.wrap_iter(chunks, "transport")(None)
    assert next(wrapped) == b"a"
    wrapped.close()
    assert closed == [True] and meter.stack == []


def test_hook_meter_async_wrappers():
    clock = FakeClock()
    meter = measuring.HookMeter(clock)

    async def request():
        clock.now += 40
        return "r"

    async def chunks(_self):
        for _ in range(2):
            clock.now += 5
            yield b"x"

    async def main():
        meter.reset()
        assert await meter.wrap_async(request, "transport")() == "r"
        return [c async for c in meter.wrap_aiter(chunks, "transport")(None)]

    assert asyncio.run(main()) == [b"x", b"x"]
    assert meter.take()["transport"] == 50


def test_parse_stat_with_a_command_name_holding_spaces_and_parentheses():
    line = ("4534 (py (x) y) S 4493 4489 1429 0 -1 4194304 1927 0 0 0 52 7 0 0 20 0 1 0 "
            "5662710 16961536 3331 18446744073709551615 1 2 3")
    assert measuring.parse_stat(line) == (4493, 59)
    assert measuring.parse_schedstat("545030046 149941 7\n") == 545030046


def test_descendants_and_accumulated_cpu():
    parents = {10: 1, 11: 10, 12: 11, 13: 10, 20: 1, 21: 20}
    assert measuring.descendants(parents, 10) == {11, 12, 13}
    assert measuring.descendants(parents, 10, exclude={11}) == {13}
    assert measuring.descendants(parents, 1, exclude={20}) == {10, 11, 12, 13}
    seen: dict[int, int] = {}
    assert measuring.accumulate(seen, {11: 500}) == 500  # new: counted from zero
    assert measuring.accumulate(seen, {11: 800, 13: 50}) == 350
    assert measuring.accumulate(seen, {13: 60}) == 10  # 11 exited: nothing subtracted


def test_child_cpu_reads_a_proc_tree(tmp_path):
    me = os.getpid()

    def proc(pid, ppid, ticks, schedstat=None):
        d = tmp_path / str(pid)
        (d / "task" / str(pid)).mkdir(parents=True)
        (d / "stat").write_text(f"{pid} (p) S {ppid} 0 0 0 0 0 0 0 0 0 {ticks} 0 0 0 20 0 1")
        if schedstat is not None:
            (d / "task" / str(pid) / "schedstat").write_text(f"{schedstat} 0 0")

    proc(me, 1, 0, 0)
    proc(me + 1, me, 0, 2_000_000)  # the writer: 2 ms
    proc(me + 2, me, 0, 9_000_000)  # the stub endpoint: excluded
    proc(me + 3, me + 1, 3)  # a grandchild without schedstat: 3 ticks
    children = measuring.ChildCPU(exclude={me + 2}, proc=tmp_path)
    tick = 1e9 / os.sysconf("SC_CLK_TCK")
    assert children.sample() == 2_000_000 + int(3 * tick)
    (tmp_path / str(me + 1) / "task" / str(me + 1) / "schedstat").write_text("2500000 0 0")
    assert children.sample() == 2_500_000 + int(3 * tick)
