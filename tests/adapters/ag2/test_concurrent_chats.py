"""Classic AG2: one assistant in two concurrent `a_initiate_chat`s (two customers at once).
Each reply is a turn of the assistant's lane, opened in its chat's task (not on whichever
executor thread AG2 runs the reply on): replay binds each to its recorded turn whichever chat
asks first. The orders are forced with events, not delays, so the scheduler decides nothing."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import symtrace
from symtrace.session.core import active

from ._support import load_example

QUESTIONS = ("Customer A: where is my order 1234?", "Customer B: my order 5557 is late.")


def desk(first: int | None, until_asked: bool = False, one_worker: bool = False) -> list[str]:
    """Both chats in one `gather`; the other chat starts once *first*'s (0 or 1) chat ended,
    or, *until_asked*, once the replay matched its request (None: both start at once).
    *one_worker*: AG2 runs both replies on one executor thread."""
    ag2_common = load_example("ag2_common")
    from autogen import AssistantAgent, UserProxyAgent

    assistant = AssistantAgent("support", llm_config=ag2_common.llm_config())
    customers = [UserProxyAgent(f"customer{i}", human_input_mode="NEVER",
                                code_execution_config=False) for i in (1, 2)]

    async def both() -> list[str]:
        if one_worker:  # AG2 runs every reply on the loop's default executor
            asyncio.get_running_loop().set_default_executor(ThreadPoolExecutor(max_workers=1))
        done = asyncio.Event()

        async def chat(i: int) -> str:
            if first is not None and i != first:
                await (asked() if until_asked else done.wait())
            try:
                result = await customers[i].a_initiate_chat(
                    assistant, message=QUESTIONS[i], max_turns=1, silent=True,
                    clear_history=True)
            finally:
                done.set()
            return str(result.chat_history[-1]["content"])

        return list(await asyncio.gather(chat(0), chat(1)))

    return asyncio.run(both())


async def asked() -> None:
    """Until the replay matched a request (held or served: the order is the replay's now)."""
    session = active()
    while not session.matcher.consumed:  # type: ignore[union-attr]
        await asyncio.sleep(0.001)


def test_one_assistant_in_two_concurrent_chats_replays_in_either_order(
        tmp_path: Path, stub_llm_factory: Any, monkeypatch: Any) -> None:
    """Recorded with customer A's chat done before B's starts, on one executor thread (which
    used to make the two replies one sequence of the thread), replayed with B's request
    first, A's first and both at once: each time the results are the recorded ones."""
    stub = stub_llm_factory(mode="stochastic", seed=5, tool_probability=0.0)
    monkeypatch.setenv("OPENAI_BASE_URL", stub.url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with symtrace.record(tmp_path / "b", adapters=["ag2"]):
        recorded = desk(first=0, one_worker=True)
    served = stub.served
    for first in (1, 0, None):
        with symtrace.replay(tmp_path / "b", adapters=["ag2"]):
            assert desk(first, until_asked=True) == recorded, first
    assert stub.served == served
