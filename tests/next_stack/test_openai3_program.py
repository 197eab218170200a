"""A plain openai 3 program (no framework: sync, async and a streamed completion, and a
`@symtrace.tool` function) on httpx2: every request recorded, 20 strict replays with no
request, no tool body run and identical output, a changed prompt diverging at that request,
a selective replay and a strict replay of its child."""

from __future__ import annotations

import asyncio
import contextlib
import io

import pytest

import symtrace
from symtrace import load_bundle

BODY_RUNS: list[str] = []
PROMPTS = {"plan": "Plan a day in Lisbon.", "pack": "What should I pack?"}


@symtrace.tool
def forecast(city: str) -> str:
    BODY_RUNS.append(city)
    return f"{city}: 19°C"


def program() -> str:
    import openai

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        client = openai.OpenAI(max_retries=0)
        plan = client.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": PROMPTS["plan"]}])
        print("plan:", plan.choices[0].message.content)
        print("tool:", forecast("Lisbon"))

        async def pack() -> str:
            async with openai.AsyncOpenAI(max_retries=0) as aclient:
                reply = await aclient.chat.completions.create(
                    model="gpt-4o-mini", messages=[{"role": "user", "content": PROMPTS["pack"]}])
            return reply.choices[0].message.content or ""

        print("pack:", asyncio.run(pack()))
        stream = client.chat.completions.create(
            model="gpt-4o-mini", stream=True,
            messages=[{"role": "user", "content": "Summarise the day."}])
        print("summary:", "".join(chunk.choices[0].delta.content or ""
                                  for chunk in stream if chunk.choices))
        client.close()
    return out.getvalue()


@pytest.fixture
def recorded(stub_llm_factory, monkeypatch, tmp_path):
    stub = stub_llm_factory(mode="stochastic", seed=11)
    monkeypatch.setenv("OPENAI_BASE_URL", stub.url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    BODY_RUNS.clear()
    with symtrace.record(tmp_path / "b", task="openai3") as handle:
        output = program()
        handle.final_result(output)
    return stub, output, tmp_path / "b"


def test_twenty_strict_replays_without_any_request(recorded) -> None:
    stub, output, bundle = recorded
    served = stub.served
    assert served == 3 == len([e for e in load_bundle(bundle).events if e.is_llm])
    BODY_RUNS.clear()
    for attempt in range(20):
        with symtrace.replay(bundle):
            assert program() == output, f"replay {attempt}"
    assert stub.served == served and BODY_RUNS == []


def test_an_edit_diverges_at_the_changed_request(recorded, monkeypatch) -> None:
    stub, _, bundle = recorded
    second = [e for e in load_bundle(bundle).events if e.is_llm][1]
    monkeypatch.setitem(PROMPTS, "pack", "What should I pack for rain?")
    served = stub.served
    with pytest.raises(symtrace.RequestMismatch) as caught, symtrace.replay(bundle):
        program()
    assert caught.value.report.event_id == second.id
    assert stub.served == served


def test_selective_replay_and_child_replay(recorded, tmp_path) -> None:
    stub, _, bundle = recorded
    anchor = [e for e in load_bundle(bundle).events if e.is_llm][1]
    served = stub.served
    with symtrace.replay(bundle, anchor=anchor.id, guidance="Pack light.",
                         out=tmp_path / "child"):
        repaired = program()
    assert stub.served > served  # the anchor went live (calls it does not feed may replay)
    assert stub.requests[served]["messages"][-1] == {"role": "user", "content": "Pack light."}
    served = stub.served
    BODY_RUNS.clear()
    with symtrace.replay(tmp_path / "child"):
        assert program() == repaired
    assert stub.served == served and BODY_RUNS == []
