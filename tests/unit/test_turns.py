"""Turns (session/context.py): what identifies one, and how replay binds a replayed turn to
its recorded one (replay/matching.py) whatever order concurrent turns arrive in."""

from __future__ import annotations

import asyncio
import contextvars
import threading

from symtrace.bundle import load_bundle
from symtrace.bundle.completion import complete_bundle
from symtrace.model.divergence import DivergenceKind, DivergenceReport
from symtrace.model.events import TURN
from symtrace.replay.matching import Matcher, Mismatch
from symtrace.replay.reports import outcome_hint
from symtrace.session import context

from ._support import chat_request, chat_response, llm_call, recorder, run


def turn_here() -> context.Turn | None:
    return context.current_turn()


class TestIdentity:
    def test_carried_attribution_puts_a_worker_threads_call_in_the_callers_turn(self):
        """`run_in_executor` does not copy the context: without `carried()` the thread's call
        has no turn; with it, it is a fork of the caller's turn, whichever pool thread runs it,
        and the thread's own context is as before afterwards."""
        context.reset_turns()

        async def ask() -> tuple[object, ...]:
            loop = asyncio.get_running_loop()
            with context.agent("support"):
                opened = turn_here()
                bare = await loop.run_in_executor(None, turn_here)
                carried = await loop.run_in_executor(None, context.carried(), turn_here)
                after = await loop.run_in_executor(None, turn_here)
            return opened, bare, carried, after

        opened, bare, carried, after = asyncio.run(ask())
        assert bare is None and after is None
        assert isinstance(carried, context.Turn) and carried.fork
        assert carried.parent is opened and carried.key == ">support#0~0"

    def test_blocks_open_turns_numbered_per_parent_and_lane_a_reentry_stays_in_its_turn(self):
        context.reset_turns()
        with context.agent("writer"):
            first = turn_here()
            with context.agent("writer"):  # the same lane in the same task: one turn
                assert turn_here() is first
            with context.agent("critic"):
                inner = turn_here()
        with context.agent("writer"):
            second = turn_here()
        assert first is not None and inner is not None and second is not None
        assert (first.key, inner.key, second.key) == (
            ">writer#0", ">writer#0>critic#0", ">writer#1")
        assert inner.info["parent"]["key"] == ">writer#0"
        assert second.with_ == ()  # the first had closed: sequential

    def test_turns_open_at_once_name_each_other_and_their_tasks(self):
        context.reset_turns()

        async def one() -> context.Turn | None:
            with context.agent("researcher"):
                await asyncio.sleep(0.01)
                return turn_here()

        async def both() -> list[context.Turn | None]:
            return list(await asyncio.gather(one(), one()))

        a, b = asyncio.run(both())
        assert a is not None and b is not None
        assert (a.key, b.key) == (">researcher#0", ">researcher#1")
        assert b.with_ == (a,) and a.opener != b.opener

    def test_calls_of_one_turn_from_other_threads_are_forks_of_it(self):
        context.reset_turns()
        seen: list[context.Turn | None] = []
        with context.agent("researcher"):
            own = turn_here()
            ctx = contextvars.copy_context()  # as a thread pool or to_thread copies it
            worker = threading.Thread(target=lambda: ctx.run(lambda: seen.append(turn_here())))
            worker.start()
            worker.join()
        assert own is not None and seen[0] is not None
        assert seen[0].fork and seen[0].parent is own and seen[0].key == ">researcher#0~0"

    def test_a_call_records_its_turn(self):
        context.reset_turns()
        with context.agent("writer"):
            call = llm_call(chat_request("x"), lane="writer")
        assert call.meta[TURN]["key"] == ">writer#0" and call.turn is not None


def recorded_turns(tmp_path, concurrent: bool):
    """Two turns of `researcher` asking "a" then "b"; *concurrent*: the second opened while
    the first was open (else after it closed)."""
    context.reset_turns()
    session, writer = recorder(tmp_path / "b")
    if concurrent:
        with context.agent("researcher"):
            first = llm_call(chat_request("a"), lane="researcher")
            with context.agent("other"), context.lane("researcher"):
                second = llm_call(chat_request("b"), lane="researcher")
    else:
        with context.agent("researcher"):
            first = llm_call(chat_request("a"), lane="researcher")
        with context.agent("researcher"):
            second = llm_call(chat_request("b"), lane="researcher")
    run(session, first, chat_response("x"))
    run(session, second, chat_response("y"))
    complete_bundle(writer, exit_code=0, status="ok")
    return load_bundle(tmp_path / "b")


class TestBinding:
    def test_concurrent_turns_bind_in_whichever_order_they_arrive(self, tmp_path):
        context.reset_turns()
        session, writer = recorder(tmp_path / "b")

        async def program(order: tuple[str, str]) -> list:
            calls: list = []

            async def turn(text: str) -> None:
                with context.agent("researcher"):
                    await asyncio.sleep(0.01 if text == order[1] else 0)
                    calls.append(llm_call(chat_request(text), lane="researcher"))

            await asyncio.gather(turn("a"), turn("b"))
            return calls

        for call in asyncio.run(program(("a", "b"))):
            run(session, call, chat_response("r-" + str(call.request)))
        complete_bundle(writer, exit_code=0, status="ok")
        bundle = load_bundle(tmp_path / "b")
        context.reset_turns()
        matcher = Matcher(bundle.events, None)
        swapped = asyncio.run(program(("b", "a")))  # "b" arrives first this time
        for call in swapped:
            found = matcher.match(call)
            assert not isinstance(found, Mismatch)
            assert found.request_hash == call.request_hash
            matcher.consume(found)

    def test_sequential_turns_of_one_task_swapped_diverge(self, tmp_path):
        bundle = recorded_turns(tmp_path, concurrent=False)
        context.reset_turns()
        matcher = Matcher(bundle.events, None)
        with context.agent("researcher"):
            found = matcher.match(llm_call(chat_request("b"), lane="researcher"))
        assert isinstance(found, Mismatch) and found.kind is DivergenceKind.REQUEST_MISMATCH
        assert found.expected is not None and found.expected.request == bundle.events[0].request

    def test_a_bundle_without_turns_keeps_one_order_per_lane(self, tmp_path):
        session, writer = recorder(tmp_path / "b")
        run(session, llm_call(chat_request("a"), lane="researcher"), chat_response("x"))
        complete_bundle(writer, exit_code=0, status="ok")
        bundle = load_bundle(tmp_path / "b")
        assert TURN not in bundle.events[0].meta  # made outside every block
        context.reset_turns()
        matcher = Matcher(bundle.events, None)
        with context.agent("researcher"):
            found = matcher.match(llm_call(chat_request("a"), lane="researcher"))
        assert not isinstance(found, Mismatch)


class TestOutcomeReport:
    def test_a_final_result_that_is_another_turns_reply_is_named_as_such(self, tmp_path):
        bundle = recorded_turns(tmp_path, concurrent=True)
        other = bundle.events[1]
        text = other.response["body"]["choices"][0]["message"]["content"]
        hint = outcome_hint(bundle, "final result differs", text)
        assert other.id in hint and "ended in another order" in hint
        assert "does not pin" in outcome_hint(bundle, "final result differs", "elsewhere")

    def test_an_outcome_is_labelled_outcome_not_end_request(self):
        report = DivergenceReport(kind=DivergenceKind.OUTCOME_MISMATCH, bundle="b",
                                  bundle_digest="d", position=3, event_id="final_result_0000",
                                  lane="main", agent=None, boundary="end", matched_before=2,
                                  expected={"value": "x"}, actual={"value": "y"})
        text = report.render(100)
        assert "expected outcome:" in text and "end request" not in text
