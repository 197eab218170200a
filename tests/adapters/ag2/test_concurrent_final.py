"""Classic AG2: of top-level chats that ran at once, the final result is the chat opened later,
whichever ended last (issue 33: R107 blamed the program for the end order, which is timing).

One assistant serves two customers in two `a_initiate_chat`s under `gather`; an async reply
function delays each chat inside it (after it opened), so the test decides which chat ends
last. The recording and the replay end them in opposite orders.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import symtrace

from ._support import load_example

QUESTIONS = ("Customer A: where is my order 1234?", "Customer B: my order 5557 is late.")


def desk(last_to_end: int) -> list[str]:
    ag2_common = load_example("ag2_common")
    from autogen import Agent, AssistantAgent, UserProxyAgent

    assistant = AssistantAgent("support", llm_config=ag2_common.llm_config())
    customers = [UserProxyAgent(f"customer{i}", human_input_mode="NEVER",
                                code_execution_config=False) for i in (1, 2)]

    async def pause(recipient: Any, messages: Any, sender: Any, config: Any
                    ) -> tuple[bool, None]:
        await asyncio.sleep(0.3 if customers.index(sender) == last_to_end else 0.0)
        return False, None  # then the model replies as usual

    assistant.register_reply([Agent, None], pause, position=0)

    async def both() -> list[str]:
        results = await asyncio.gather(*(
            customer.a_initiate_chat(assistant, message=question, max_turns=1, silent=True)
            for customer, question in zip(customers, QUESTIONS, strict=True)))
        return [str(r.summary) for r in results]

    return asyncio.run(both())


def test_the_final_result_of_concurrent_chats_does_not_depend_on_which_ended_last(
        tmp_path: Path, stub_llm_factory: Any, monkeypatch: Any) -> None:
    stub = stub_llm_factory(mode="stochastic", seed=11, tool_probability=0.0)
    monkeypatch.setenv("OPENAI_BASE_URL", stub.url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with symtrace.record(tmp_path / "b", adapters=["ag2"]) as recording:
        summaries = desk(last_to_end=0)
    assert recording.session.final_value == summaries[1]  # the chat opened later
    with symtrace.replay(tmp_path / "b", adapters=["ag2"]) as replay:
        assert desk(last_to_end=1) == summaries
    assert replay.session.final_value == summaries[1]
