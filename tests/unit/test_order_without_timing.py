"""Order without timing: a result is handed out only once the previous one was used.

The scheduling is injected, not timed: "using a result" takes a fixed number of event-loop
iterations (`await asyncio.sleep(0)`), and a second result becomes ready in the middle of that
use, also after a fixed number of iterations. Nothing here depends on how fast the machine
is. Before the hand-off applied to recording and to a selective replay's live suffix, both
bundles named a completion order that differed from the order the results were used in, so
their replays diverged (the summary listed the results in the other order):

* recording: the second tool's result was stamped and used while the first receiver was still
  using its own;
* selective replay: after the anchor went live, a served result and a live one overlapped the
  same way, and the child bundle could not be replayed.
"""

from __future__ import annotations

import asyncio
import threading

import httpx
import pytest

import symtrace
from symtrace.boundaries.tools import acall_tool, call_tool
from symtrace.bundle import load_bundle
from symtrace.model.events import COMPLETED
from symtrace.session import context

USE_ITERATIONS = 6  # loop iterations the first receiver spends using its result
READY_AFTER = 2  # loop iterations after which the second result is ready (mid-use)
GUIDANCE = "Check the left side first."
SCRIPT = {
    "rules": [
        {"match": {"any_message_contains": GUIDANCE}, "reply": {"content": "guided left"}},
        {"match": {"any_message_contains": "summarise"}, "reply": {"content": "summary"}},
    ],
    "default": {"content": "plain left"},
}


async def _yields(n: int) -> None:
    for _ in range(n):
        await asyncio.sleep(0)


async def overlapping_tools() -> list[str]:
    """`first` gets its result at once and takes USE_ITERATIONS to use it; `second`'s body
    finishes READY_AFTER iterations later, in the middle of that use, and uses it at once."""
    used: list[str] = []

    async def worker(name: str, ready_after: int, use: int) -> None:
        async def body() -> str:
            await _yields(ready_after)
            return f"{name} result"

        with context.agent(name):
            value = await acall_tool(name, {"who": name}, body)
        await _yields(use)
        used.append(value)

    await asyncio.gather(worker("first", 0, USE_ITERATIONS), worker("second", READY_AFTER, 0))
    return used


def ranks(path, types=("tool_result",)) -> list[str]:
    """Lanes of the results in *path*, in their recorded completion order."""
    events = [e for e in load_bundle(path).events if e.type.value in types]
    return [e.lane for e in sorted(events, key=lambda e: e.meta[COMPLETED])]


def test_recording_stamps_the_order_results_were_used_in(tmp_path):
    with symtrace.record(tmp_path / "b", adapters=[]):
        used = asyncio.run(overlapping_tools())
    # the first receiver finished using its result before the second result was handed out
    assert used == ["first result", "second result"]
    assert ranks(tmp_path / "b") == ["first", "second"]


def test_a_recording_of_overlapping_results_replays_with_the_same_use_order(tmp_path):
    with symtrace.record(tmp_path / "b", adapters=[]):
        recorded = asyncio.run(overlapping_tools())
    for _ in range(5):
        with symtrace.replay(tmp_path / "b", adapters=[]):
            assert asyncio.run(overlapping_tools()) == recorded


def test_threads_take_turns_too(tmp_path):
    """A worker thread whose result arrives while another thread still uses its own waits
    until that thread is done (here: it ends), whatever the two threads' speeds."""
    first_got = threading.Event()
    used: list[str] = []

    def first() -> None:
        with context.agent("first"):
            value = call_tool("first", {}, lambda: "first result")
        first_got.set()
        sum(i * i for i in range(300_000))  # busy using it: not blocked, no boundary call
        used.append(value)

    def second() -> None:
        def body() -> str:
            first_got.wait(10)
            return "second result"

        with context.agent("second"):
            used.append(call_tool("second", {}, body))

    with symtrace.record(tmp_path / "b", adapters=[]):
        threads = [threading.Thread(target=first), threading.Thread(target=second)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
    assert used == ["first result", "second result"]
    assert ranks(tmp_path / "b") == ["first", "second"]


# -- the live suffix of a selective replay -----------------------------------------------------
def reply(response: httpx.Response) -> str:
    return response.json()["choices"][0]["message"]["content"]


async def live_suffix_program(url: str) -> list[str]:
    """Lane `left` asks the model (the anchor), then runs a tool (live after the anchor: its
    lane went live) that finishes READY_AFTER iterations in; lane `right` runs a tool once the
    answer came (served from the bundle) and takes USE_ITERATIONS to use it. The summary
    lists the tool results in the order they were used."""
    used: list[str] = []
    answered = asyncio.Event()
    async with httpx.AsyncClient() as client:

        async def left() -> None:
            with context.agent("left"):
                answer = reply(await client.post(f"{url}/chat/completions", json={
                    "model": "m", "messages": [{"role": "user", "content": "left?"}]}))
                answered.set()

                async def body() -> str:
                    await _yields(READY_AFTER)
                    return f"left tool after {answer}"

                used.append(await acall_tool("left_tool", {"answer": answer}, body))

        async def right() -> None:
            await answered.wait()
            with context.agent("right"):
                value = await acall_tool("right_tool", {}, _right_body)
            await _yields(USE_ITERATIONS)
            used.append(value)

        await asyncio.gather(left(), right())
        summary = await client.post(f"{url}/chat/completions", json={
            "model": "m",
            "messages": [{"role": "user", "content": "summarise: " + "; ".join(used)}]})
    return [*used, reply(summary)]


async def _right_body() -> str:
    return "right tool"


@pytest.fixture
def stub(stub_llm_factory):
    return stub_llm_factory(script=SCRIPT)


def test_the_child_of_a_selective_replay_replays_its_overlapping_live_suffix(stub, tmp_path):
    program = lambda: asyncio.run(live_suffix_program(stub.url))  # noqa: E731
    with symtrace.record(tmp_path / "b", adapters=[]):
        program()
    anchor = next(e.id for e in load_bundle(tmp_path / "b").events if e.lane == "left")
    with symtrace.replay(tmp_path / "b", adapters=[], anchor=anchor, guidance=GUIDANCE,
                         out=tmp_path / "child"):
        selective = program()
    lineage = load_bundle(tmp_path / "child").lineage or {}
    assert "right_tool" not in str(lineage["live_reasons"])  # served, not live: the overlap
    served = stub.served
    for _ in range(5):
        with symtrace.replay(tmp_path / "child", adapters=[]):
            assert program() == selective
    assert stub.served == served
    # the served result was used before the live one was handed out
    assert selective[:2] == ["right tool", "left tool after guided left"]
