"""Why replay matters, and how it fails: a live rerun differs; replay does not, and a change
makes it fail closed at the first affected event, never by going live."""

from __future__ import annotations

import asyncio

import pytest

import symtrace
from symtrace.bundle import load_bundle
from symtrace.errors import RequestMismatch, UnexpectedCall

pytestmark = [
    pytest.mark.framework("autogen_agentchat"),
    pytest.mark.filterwarnings("ignore:Pydantic serializer warnings"),
]


@pytest.mark.parametrize("name", ["assistant_tools", "round_robin", "selector"])
def test_a_live_rerun_differs_but_replay_does_not(name, scenario, stochastic, tmp_path):
    run = scenario(name)
    recorded = run.record(tmp_path / "run")
    reruns = [run.run() for _ in range(2)]  # live, same program, same task
    assert any(rerun != recorded for rerun in reruns), "a sampling endpoint varies"

    served = stochastic.served
    assert run.replay(tmp_path / "run") == recorded
    assert stochastic.served == served


def test_a_changed_prompt_fails_at_the_agents_first_call(scenario, scripted, tmp_path,
                                                         monkeypatch):
    run = scenario("round_robin")
    stub = scripted("round_robin")
    run.record(tmp_path / "run")
    critic_first = next(e for e in load_bundle(tmp_path / "run").events if e.agent == "critic")

    monkeypatch.setenv("ROUND_ROBIN_CRITIC_PROMPT", "You are the critic. Be harsh. Say APPROVE.")
    served = stub.served
    with pytest.raises(RequestMismatch) as raised:
        run.replay(tmp_path / "run")
    report = raised.value.report
    assert report.event_id == critic_first.id
    assert report.agent == "critic"
    assert report.lane == "critic"
    assert any("messages" in d.path for d in report.differences)
    assert report.matched_before == 1  # the writer's first draft replayed
    assert stub.served == served, "a diverged replay never goes live"


def test_a_model_call_nobody_recorded_fails_closed(scenario, scripted, tmp_path):
    """A call the hooks cannot attribute (here: user code calling the client directly) is
    still matched at the transport; unrecorded, it raises instead of reaching the endpoint."""
    from autogen_core.models import UserMessage

    run = scenario("assistant_tools")
    stub = scripted("assistant_tools")
    run.record(tmp_path / "run")
    client = run.module.model_client()

    async def extra_call():
        return await client.create([UserMessage(content="one more thing", source="user")])

    served = stub.served
    with pytest.raises(UnexpectedCall), symtrace.replay(tmp_path / "run"):
        run.run()
        asyncio.run(extra_call())
    assert stub.served == served
