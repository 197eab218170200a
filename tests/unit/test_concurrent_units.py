"""Units of work that declare the final result (`context.activation`) and which turns ran at
once for a selective replay's live frontier (`replay/live.py ran_at_once`), issue 33."""

from __future__ import annotations

import asyncio

from symtrace.model.redaction import Redactor
from symtrace.replay.live import ran_at_once
from symtrace.session import context
from symtrace.session.core import Session


def test_overlapping_units_keep_the_later_opened_ones_result_whichever_ends_last() -> None:
    context.reset_turns()
    session = Session(None, Redactor(()))

    async def unit(name: str, delay: float) -> None:
        with context.activation("chat") as opened:
            await asyncio.sleep(delay)
            session.declare_final(name, opened)

    async def both(delays: tuple[float, float]) -> None:
        await asyncio.gather(unit("first", delays[0]), unit("second", delays[1]))

    for delays in ((0.0, 0.02), (0.02, 0.0)):
        asyncio.run(both(delays))
        assert session.final_value == "second"


def test_units_one_after_the_other_keep_the_last_and_inner_units_are_the_outer_one() -> None:
    context.reset_turns()
    with context.activation("kickoff") as outer, context.activation("kickoff") as inner:
        assert inner is outer
    with context.activation("kickoff") as later:
        assert later is not outer and outer not in later.with_
    with context.agent("planner"), context.activation("chat") as in_turn:
        assert in_turn is context.top_turn()


def test_sibling_turns_that_overlapped_ran_at_once_and_sequential_ones_did_not() -> None:
    context.reset_turns()
    turns: dict[str, context.Turn] = {}

    async def ask(name: str) -> None:
        with context.agent("researcher"):
            turns[name] = context.current_turn()  # type: ignore[assignment]
            await asyncio.sleep(0.01)

    async def program() -> None:
        await ask("before")
        await asyncio.gather(ask("a"), ask("b"))
        await ask("after")

    asyncio.run(program())
    assert ran_at_once(turns["a"], turns["b"]) and ran_at_once(turns["b"], turns["a"])
    assert not ran_at_once(turns["before"], turns["after"])  # one task, one after the other
    # the gather's turns and the step after it: other tasks opened them, and the record
    # does not say the step waited for them (events.siblings_independent)
    assert ran_at_once(turns["a"], turns["after"])
    assert not ran_at_once(turns["a"], turns["a"]) and not ran_at_once(None, turns["a"])
    with context.agent("researcher"):
        outer = context.current_turn()
        with context.agent("researcher/tool#0"):
            inner = context.current_turn()
    assert not ran_at_once(outer, inner)  # one inside the other
