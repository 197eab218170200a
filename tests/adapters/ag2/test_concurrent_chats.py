"""Classic AG2: one assistant in two concurrent `a_initiate_chat`s (two customers at once).
Each reply is a turn of the assistant's lane; replay binds each to its recorded turn whichever
chat asks first."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import symtrace

from ._support import load_example

QUESTIONS = ("Customer A: where is my order 1234?", "Customer B: my order 5557 is late.")


def desk(first_waits: bool) -> list[str]:
    ag2_common = load_example("ag2_common")
    from autogen import AssistantAgent, UserProxyAgent

    assistant = AssistantAgent("support", llm_config=ag2_common.llm_config())
    customers = [UserProxyAgent(f"customer{i}", human_input_mode="NEVER",
                                code_execution_config=False) for i in (1, 2)]

    async def chat(customer: Any, question: str, delay: float) -> str:
        await asyncio.sleep(delay)
        result = await customer.a_initiate_chat(assistant, message=question, max_turns=1,
                                                silent=True, clear_history=True)
        return str(result.chat_history[-1]["content"])

    async def both() -> list[str]:
        delays = (0.05, 0.0) if first_waits else (0.0, 0.05)
        return list(await asyncio.gather(*(chat(c, q, d) for c, q, d in
                                           zip(customers, QUESTIONS, delays, strict=True))))

    return asyncio.run(both())


def test_one_assistant_in_two_concurrent_chats_replays_in_either_order(
        tmp_path: Path, stub_llm_factory: Any, monkeypatch: Any) -> None:
    stub = stub_llm_factory(mode="stochastic", seed=5, tool_probability=0.0)
    monkeypatch.setenv("OPENAI_BASE_URL", stub.url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with symtrace.record(tmp_path / "b", adapters=["ag2"]):
        recorded = desk(first_waits=False)
    served = stub.served
    for first_waits in (True, False):
        with symtrace.replay(tmp_path / "b", adapters=["ag2"]):
            assert desk(first_waits) == recorded
    assert stub.served == served
