"""One AG2 1.x `Agent` serving two customers at once: two concurrent `ask()`s are two turns
of its lane; replay binds each to its recorded turn whichever customer asks first."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

import symtrace
from symtrace.model.events import TURN

CUSTOMERS = ("Customer A: where is my order 1234?", "Customer B: my order 5557 is late.")


async def support_desk(first_waits: bool) -> str:
    from ag2 import Agent
    from ag2.config import OpenAIConfig

    triage = Agent("triage", "You are the support triage agent.",
                   config=OpenAIConfig(model="gpt-4o-mini", max_retries=0))

    async def customer(question: str, delay: float) -> str:
        await asyncio.sleep(delay)
        return str((await triage.ask(question)).body)

    delays = (0.05, 0.0) if first_waits else (0.0, 0.05)
    replies = await asyncio.gather(*(customer(q, d)
                                     for q, d in zip(CUSTOMERS, delays, strict=True)))
    summary = await triage.ask("Summarise: " + " | ".join(replies))
    return str(summary.body)


@pytest.mark.timeout(180)
def test_one_agent_serving_two_concurrent_asks_replays_in_either_order(
        endpoint: Any, tmp_path: Path) -> None:
    stub = endpoint(stochastic=True)
    with symtrace.record(tmp_path / "b", adapters=["ag2v1"]) as rec:
        recorded = asyncio.run(support_desk(first_waits=False))
    served = stub.served
    events = symtrace.load_bundle(tmp_path / "b").events
    assert {e.meta[TURN]["key"] for e in events if e.is_llm} == {
        ">triage#0", ">triage#1", ">triage#2"}
    assert rec.session.final_value == recorded  # the last ask's reply, declared by the adapter
    for first_waits in (True, False, True):
        with symtrace.replay(tmp_path / "b", adapters=["ag2v1"]) as replay:
            assert asyncio.run(support_desk(first_waits)) == recorded
        assert replay.session.final_value == recorded
    assert stub.served == served
