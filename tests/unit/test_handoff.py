"""The hand-off to the next held caller waits for a state, never for a time (session/scheduling):
facts and declared consumption points first, the receiver's state only as the fallback."""

from __future__ import annotations

import asyncio
import sys
import threading
import time

import pytest

from symtrace.errors import SessionError
from symtrace.session import scheduling as handoff
from symtrace.session.scheduling import CHAOS_ENV, Chaos, Receiver, quiescent


def receiver_in(target, *args) -> tuple[Receiver, threading.Thread, threading.Event]:
    """Start *target* on a thread; return that thread as the last result's receiver."""
    box: list[Receiver] = []
    ready = threading.Event()

    def body() -> None:
        box.append(Receiver.current())
        ready.set()
        target(*args)

    thread = threading.Thread(target=body, daemon=True)
    thread.start()
    ready.wait(5)
    return box[0], thread, ready


def settles(receiver: Receiver, polls: int = 200) -> bool:
    for _ in range(polls):
        if receiver.thread_settled():
            return True
        time.sleep(handoff.POLL)
    return False


def test_a_thread_waiting_on_an_event_is_settled():
    release = threading.Event()
    receiver, thread, _ = receiver_in(release.wait)
    assert settles(receiver)
    release.set()
    thread.join(5)


def test_a_busy_thread_is_not_settled_until_it_blocks_or_ends():
    stop = threading.Event()

    def spin() -> None:
        while not stop.is_set():
            sum(range(200))

    receiver, thread, _ = receiver_in(spin)
    assert not settles(receiver, polls=60)  # however long it works, it is still working
    stop.set()
    thread.join(5)
    assert receiver.thread_settled()  # ended


def test_a_thread_blocked_in_c_on_a_bare_lock_is_settled_by_its_still_cpu_clock():
    lock = threading.Lock()
    lock.acquire()
    receiver, thread, _ = receiver_in(lock.acquire)
    assert settles(receiver, polls=handoff.C_BLOCKED_POLLS * 20)
    lock.release()
    thread.join(5)


def test_the_receivers_next_call_is_recognised_on_its_own_thread_and_task():
    async def main() -> tuple[bool, bool]:
        mine = Receiver.current()

        async def other() -> bool:
            return mine.is_caller()

        return mine.is_caller(), await asyncio.create_task(other())

    assert asyncio.run(main()) == (True, False)


def test_quiescence_waits_for_every_runnable_task_of_the_loop():
    async def main() -> list[str]:
        log: list[str] = []

        async def busy() -> None:
            for _ in range(30):  # 30 loop iterations of work, no timer, no I/O
                await asyncio.sleep(0)
            log.append("busy done")

        task = asyncio.create_task(busy())
        await asyncio.sleep(0)
        await quiescent(asyncio.get_running_loop())
        log.append("released")
        await task
        return log

    assert asyncio.run(main()) == ["busy done", "released"]


def test_quiescence_does_not_wait_for_a_task_parked_on_a_timer():
    async def main() -> bool:
        parked = asyncio.create_task(asyncio.sleep(30))
        await asyncio.sleep(0)
        await asyncio.wait_for(quiescent(asyncio.get_running_loop()), 5)
        parked.cancel()
        return True

    assert asyncio.run(main())


def test_chaos_is_off_unless_asked_and_validates_its_seed(monkeypatch):
    monkeypatch.delenv(CHAOS_ENV, raising=False)
    assert not Chaos.from_env().enabled
    monkeypatch.setenv(CHAOS_ENV, "7")
    chaos = Chaos.from_env()
    assert chaos.enabled and chaos.seed == 7
    monkeypatch.setenv(CHAOS_ENV, "1")
    assert Chaos.from_env().enabled
    monkeypatch.setenv(CHAOS_ENV, "lots")
    with pytest.raises(SessionError, match=CHAOS_ENV):
        Chaos.from_env()


def test_chaos_draws_never_touch_the_programs_random():
    import random

    random.seed(3)
    expected = [random.random() for _ in range(3)]
    random.seed(3)
    chaos = Chaos(11)
    for _ in range(20):
        chaos.pause()
    asyncio.run(chaos.apause())
    assert [random.random() for _ in range(3)] == expected


def test_two_callers_waiting_together_see_the_loop_quiescent(monkeypatch):
    """Two results handed out at once both wait for the busy receiver, and for nothing else:
    each waiter's own next step is always ready, which used to keep both from ever seeing
    the loop quiescent (they waited out the bound, then raced)."""
    monkeypatch.setattr(handoff, "MAX_QUIESCENCE_YIELDS", 100_000)
    yields = 0
    sleep = asyncio.sleep

    async def counted(delay, *args):
        nonlocal yields
        yields += 1
        return await sleep(delay, *args)

    async def main() -> list[str]:
        gate = handoff.HandOff(threading.RLock(), 20)
        log: list[str] = []

        async def busy() -> None:
            gate.gave()
            for _ in range(30):
                await sleep(0)
            log.append("receiver done")

        async def waiter(name: str) -> None:
            await gate.await_settled()
            gate.gave()
            log.append(name)

        await asyncio.gather(busy(), waiter("first"), waiter("second"))
        return log

    monkeypatch.setattr(handoff.asyncio, "sleep", counted)
    assert asyncio.run(main()) == ["receiver done", "first", "second"]
    assert yields < 1_000  # not the bound: released once only the waiters were left


# -- releases from facts and declared consumption points (infer_from_state=False) ----------
def handed_to_a_thread(hand_off: handoff.HandOff, then) -> threading.Thread:
    """A thread that gets a result (it becomes the receiver), then runs *then*."""
    got = threading.Event()

    def body() -> None:
        hand_off.gave()
        got.set()
        then()

    thread = threading.Thread(target=body, daemon=True)
    thread.start()
    assert got.wait(5)
    return thread


def waiting_thread(hand_off: handoff.HandOff) -> tuple[threading.Thread, threading.Event]:
    done = threading.Event()

    def body() -> None:
        hand_off.wait()
        done.set()

    thread = threading.Thread(target=body, daemon=True)
    thread.start()
    return thread, done


@pytest.mark.parametrize("infer", [True, False])
def test_a_parked_receiver_holds_the_next_result_until_its_consumption_point(infer):
    """Without inference a receiver parked outside symtrace's boundaries (here: on an Event,
    as a framework parks an agent until its next message) is not guessed done; it is done
    when it reaches a consumption point an adapter declares. With inference (the fallback),
    its blocked frame releases the next result without it."""
    hand_off = handoff.HandOff(threading.RLock(), stall_timeout=60, infer=infer)
    parked, leave = threading.Event(), threading.Event()

    def park_then_consume() -> None:
        parked.set()
        leave.wait(10)  # the framework's "wait for my next message"
        hand_off.arrived()  # the declared consumption point (Session.consumed)
        leave.wait(10)

    receiver = handed_to_a_thread(hand_off, park_then_consume)
    assert parked.wait(5)
    waiter, done = waiting_thread(hand_off)
    if infer:
        assert done.wait(10)  # the blocked frame was enough
    else:
        assert not done.wait(0.3)  # parked is not done: nothing is guessed
        assert hand_off.receiver is not None
    leave.set()
    assert done.wait(10)
    waiter.join(5)
    receiver.join(5)


def test_without_inference_a_receiver_thread_that_ends_is_done():
    hand_off = handoff.HandOff(threading.RLock(), stall_timeout=60, infer=False)
    go = threading.Event()
    receiver = handed_to_a_thread(hand_off, lambda: go.wait(10))
    waiter, done = waiting_thread(hand_off)
    assert not done.wait(0.2)
    go.set()  # the receiver ends: a fact, no frame looked at
    assert done.wait(10)
    waiter.join(5)
    receiver.join(5)


def test_without_inference_a_receiver_task_that_is_done_releases_its_loop_neighbour():
    hand_off = handoff.HandOff(threading.RLock(), stall_timeout=60, infer=False)
    order: list[str] = []

    async def receiver(step: asyncio.Event) -> None:
        hand_off.gave()
        await step.wait()  # parked on the loop: not done, and no quiescence is consulted
        order.append("receiver used it")

    async def main() -> None:
        step = asyncio.Event()
        task = asyncio.create_task(receiver(step))
        for _ in range(3):
            await asyncio.sleep(0)
        waiting = asyncio.create_task(hand_off.await_settled())
        for _ in range(50):
            await asyncio.sleep(0)
        assert not waiting.done()  # the loop is quiescent, yet nothing is guessed
        step.set()
        await asyncio.wait_for(waiting, 10)
        order.append("next result")
        await task

    asyncio.run(main())
    assert order == ["receiver used it", "next result"]


def test_a_declared_consumption_point_releases_through_the_active_session(tmp_path):
    """`contract.consumption_point` (what adapters list in their hook tables) tells the
    active session that its caller is done with its last result, sync and async alike."""
    from symtrace.frameworks.contract import consumption_point
    from symtrace.session.core import activate, deactivate
    from tests.unit._support import recorder

    session, writer = recorder(tmp_path / "b")
    session.handoff.infer = False

    def parks(x: int) -> int:
        return x + 1

    async def aparks(x: int) -> int:
        return x + 2

    sync_point, async_point = consumption_point(parks), consumption_point(aparks)
    activate(session)
    try:
        session.handoff.gave()
        assert session.handoff.receiver is not None
        assert sync_point(1) == 2 and session.handoff.receiver is None

        async def task() -> int:
            session.handoff.gave()
            assert session.handoff.receiver is not None
            value = await async_point(1)
            assert session.handoff.receiver is None
            return value

        assert asyncio.run(task()) == 3
    finally:
        deactivate(session)
        writer.abort()


async def _cancelled_as_it_is_settled(wait) -> bool:
    """True when a waiter cancelled in the same loop turn its future is settled is cancelled."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[None] = loop.create_future()
    waiter = asyncio.create_task(wait(future, 10))
    await asyncio.sleep(0)  # the waiter awaits now
    future.set_result(None)  # progress ...
    waiter.cancel()  # ... and the caller gives up on the held call, together
    try:
        await waiter
    except asyncio.CancelledError:
        return True
    return False


def test_a_held_call_cancelled_as_progress_arrives_is_cancelled():
    """A held async call waits for progress with `until_progress`; asyncio.wait_for (3.11)
    would swallow this cancellation and the caller that gave up would wait on for a turn."""
    assert asyncio.run(_cancelled_as_it_is_settled(handoff.until_progress))
    if sys.version_info < (3, 12):  # what the old wait_for did
        assert not asyncio.run(_cancelled_as_it_is_settled(asyncio.wait_for))
