"""The hand-off to the next held caller waits for a state, never for a time (session/scheduling)."""

from __future__ import annotations

import asyncio
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
