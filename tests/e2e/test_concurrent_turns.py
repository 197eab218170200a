"""One agent, concurrent turns: `symtrace.agent` blocks under `asyncio.gather` and in threads.

Each block is a turn of the lane `researcher`; replay binds each replayed turn to its recorded
one by its cause and first request, so a replay passes whichever task asks first. The replays
here force the *other* order than the recording's (the first task waits before asking), the
order that made the lane-wide cursor diverge before turns existed.
"""

from __future__ import annotations

import asyncio
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import openai
import pytest

import symtrace
from symtrace.errors import ReplayDivergence
from symtrace.model.events import TURN
from tests.diff_checks import assert_reorderings_listed

QUESTIONS = ("How durable is the Falcon?", "Is the Orca backpack waterproof?")


@symtrace.tool
def stock(product: str) -> str:
    if product.startswith("Orca"):
        raise LookupError(f"no stock data for {product}")
    return f"{product}: 12 in stock"


async def research(stub, question: str, delay: float) -> str:
    client = openai.AsyncOpenAI(base_url=stub.url, api_key="sk-test", max_retries=0)
    with symtrace.agent("researcher"):
        await asyncio.sleep(delay)  # which task asks first: the test decides
        first = await client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": question}])
        try:
            fact = stock(question.split()[-1].rstrip("?"))
        except LookupError as exc:
            fact = f"error: {exc}"
        second = await client.chat.completions.create(model="m", messages=[
            {"role": "user", "content": question},
            {"role": "assistant", "content": first.choices[0].message.content or ""},
            {"role": "user", "content": fact}])
        return second.choices[0].message.content or ""


async def program(stub, first_waits: bool) -> str:
    delays = (0.05, 0.0) if first_waits else (0.0, 0.05)
    answers = await asyncio.gather(*(research(stub, q, d)
                                     for q, d in zip(QUESTIONS, delays, strict=True)))
    client = openai.AsyncOpenAI(base_url=stub.url, api_key="sk-test", max_retries=0)
    with symtrace.agent("critic"):
        verdict = await client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": " | ".join(answers)}])
    return verdict.choices[0].message.content or ""


def test_concurrent_turns_of_one_agent_replay_in_either_order(tmp_path, stub_llm):
    with symtrace.record(tmp_path / "b") as rec:
        answer = asyncio.run(program(stub_llm, first_waits=False))
        rec.final_result(answer)
    served = stub_llm.served
    turns = {e.meta[TURN]["key"] for e in symtrace.load_bundle(tmp_path / "b").events
             if TURN in e.meta and e.lane == "researcher"}
    assert turns == {">researcher#0", ">researcher#1"}
    for first_waits in (True, False, True):
        with symtrace.replay(tmp_path / "b"):
            assert asyncio.run(program(stub_llm, first_waits)) == answer
    assert stub_llm.served == served


def test_a_selective_replay_at_each_concurrent_call_writes_a_child_that_replays(
        tmp_path, stub_llm):
    with symtrace.record(tmp_path / "b"):
        asyncio.run(program(stub_llm, first_waits=False))
    calls = [e.id for e in symtrace.load_bundle(tmp_path / "b").events if e.is_llm]
    for anchor in calls:
        child = tmp_path / f"child-{anchor}"
        with symtrace.replay(tmp_path / "b", anchor=anchor, guidance="Be brief.", out=child):
            asyncio.run(program(stub_llm, first_waits=True))
        with symtrace.replay(child):
            asyncio.run(program(stub_llm, first_waits=False))


def test_two_sequential_turns_swapped_still_diverge(tmp_path, stub_llm):
    """Turns that did not overlap in the recording keep their order: a swap is a change."""
    client = openai.OpenAI(base_url=stub_llm.url, api_key="sk-test", max_retries=0)

    def ask(questions: tuple[str, ...]) -> None:
        for question in questions:
            with symtrace.agent("researcher"):
                client.chat.completions.create(
                    model="m", messages=[{"role": "user", "content": question}])

    with symtrace.record(tmp_path / "b"):
        ask(QUESTIONS)
    with pytest.raises(ReplayDivergence), symtrace.replay(tmp_path / "b"):
        ask(QUESTIONS[::-1])


def test_turns_in_threads_replay_whichever_thread_asks_first(tmp_path, stub_llm):
    def work(question: str, delay: float) -> str:
        client = openai.OpenAI(base_url=stub_llm.url, api_key="sk-test", max_retries=0)
        with symtrace.agent("researcher"):
            time.sleep(delay)
            return client.chat.completions.create(
                model="m", messages=[{"role": "user", "content": question}],
            ).choices[0].message.content or ""

    def run(first_waits: bool) -> list[str]:
        delays = (0.1, 0.0) if first_waits else (0.0, 0.1)
        with ThreadPoolExecutor(2) as pool:
            return list(pool.map(work, QUESTIONS, delays))

    with symtrace.record(tmp_path / "b"):
        recorded = run(first_waits=False)
    for first_waits in (True, False):
        with symtrace.replay(tmp_path / "b"):
            assert run(first_waits) == recorded
    assert threading.active_count() >= 1


def test_the_final_result_of_concurrent_top_level_turns_is_the_later_opened_ones(
        tmp_path, stub_llm):
    """Each turn declares its answer as the run's result when it ends; which ends last is
    timing, so the turn opened last (program order) wins, whichever ended last."""

    async def declaring(first_waits: bool) -> None:
        async def turn(question: str, delay: float) -> None:
            client = openai.AsyncOpenAI(base_url=stub_llm.url, api_key="sk-test",
                                        max_retries=0)
            with symtrace.agent("researcher"):
                reply = await client.chat.completions.create(
                    model="m", messages=[{"role": "user", "content": question}])
                await asyncio.sleep(delay)
                symtrace.final_result(question + (reply.choices[0].message.content or ""))

        delays = (0.05, 0.0) if first_waits else (0.0, 0.05)
        await asyncio.gather(*(turn(q, d) for q, d in zip(QUESTIONS, delays, strict=True)))

    with symtrace.record(tmp_path / "b") as rec:
        asyncio.run(declaring(first_waits=True))
    assert str(rec.session.final_value).startswith(QUESTIONS[1])
    with symtrace.replay(tmp_path / "b") as replay:
        asyncio.run(declaring(first_waits=False))
    assert str(replay.session.final_value).startswith(QUESTIONS[1])


def test_diff_names_the_anchor_of_a_concurrent_runs_child_and_lists_reorderings(
        tmp_path, stub_llm):
    from symtrace.bundle.inspect import diff_bundles, render_diff

    with symtrace.record(tmp_path / "b"):
        asyncio.run(program(stub_llm, first_waits=False))
    parent = symtrace.load_bundle(tmp_path / "b")
    anchor = [e for e in parent.events if e.is_llm and e.lane == "researcher"][-1]
    child = tmp_path / "child"
    with symtrace.replay(tmp_path / "b", anchor=anchor.id, guidance="Be brief.", out=child):
        asyncio.run(program(stub_llm, first_waits=True))  # the other task asks first
    result = diff_bundles(parent, symtrace.load_bundle(child))
    assert not result.identical and result.left is not None
    assert result.left.id == anchor.id and result.field == "request"
    text = render_diff(result, parent, symtrace.load_bundle(child), 100)
    assert f"A: {anchor.id}" in text and "/:" not in text
    assert diff_bundles(parent, parent).identical
    # the other task asked first: its turn's events, if they moved before the anchor, are a
    # reordering of unrelated turns, listed, not the divergence
    assert_reorderings_listed(tmp_path / "b", child)
