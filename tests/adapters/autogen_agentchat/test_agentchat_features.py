"""AgentChat feature coverage (issue 11): Swarm handoffs, GraphFlow (sequential, fan-out,
conditional loop), SelectorGroupChat, save_state/load_state, and two concurrent teams with
same-named agents.

For each feature, in-process against the scripted stub (with the per-agent latency of
`scripts/<name>.latency.json`, so concurrent agents complete in a realistic order): record;
20 strict replays with 0 endpoint requests, no tool body run and identical output; a changed
system prompt diverging at that agent's first call; selective replay from that call, then
strict replays of the child bundle.
"""

from __future__ import annotations

import pytest
from stub_latency import add_latency

import symtrace
from symtrace.bundle import load_bundle
from symtrace.model.divergence import DivergenceKind

from ._support import IN_PROCESS, ROOT

pytestmark = [
    pytest.mark.framework("autogen_agentchat"),
    pytest.mark.filterwarnings("ignore:Pydantic serializer warnings"),
]

REPLAYS = 20
# feature -> the agent whose prompt the perturbation changes (and the selective anchor)
FEATURES = {
    "swarm": "booker",
    "graph_sequential": "publisher",
    "graph_fanout": "style_reviewer",
    "graph_conditional": "publisher",
    "selector": "writer",
    "save_state": "critic",
    "twin_teams": "critic",
}
GUIDANCE = "Double-check names and numbers before you answer."


@pytest.fixture
def recorded(scenario, scripted, tmp_path):
    def make(name: str):
        run = scenario(name)
        stub = add_latency(scripted(name), name)
        transcript = run.record(tmp_path / name)
        return run, stub, transcript, load_bundle(tmp_path / name)

    return make


def first_call_of(bundle, agent: str):
    calls = [e for e in bundle.events if e.is_llm and e.agent == agent]
    return min(calls, key=lambda e: e.position)


@pytest.mark.parametrize("name", FEATURES)
def test_twenty_strict_replays(name, recorded, tmp_path):
    run, stub, transcript, _ = recorded(name)
    served = stub.served
    for _ in range(REPLAYS):
        assert run.replay(tmp_path / name) == transcript
    assert stub.served == served
    assert run.tool_runs == []


@pytest.mark.parametrize("name", FEATURES)
def test_changed_prompt_diverges_at_that_agent(name, recorded, tmp_path, monkeypatch):
    run, _, _, bundle = recorded(name)
    target = first_call_of(bundle, FEATURES[name])
    monkeypatch.setenv("AGENTCHAT_EXAMPLE_PERTURB", FEATURES[name])
    with pytest.raises(symtrace.RequestMismatch) as info:
        run.replay(tmp_path / name)
    report = info.value.report
    assert report.event_id == target.id
    assert report.agent == FEATURES[name]
    assert [d.path for d in report.differences] == ["/body/messages/0/content"]


@pytest.mark.parametrize("name", FEATURES)
def test_selective_replay_then_child_replays(name, recorded, tmp_path):
    run, stub, _, bundle = recorded(name)
    anchor = first_call_of(bundle, FEATURES[name])
    stub.reset()
    with symtrace.replay(tmp_path / name, anchor=anchor.id, guidance=GUIDANCE,
                         out=tmp_path / "child"):
        repaired = run.run()
    assert stub.served >= 1
    assert stub.requests[0]["messages"][-1] == {"role": "user", "content": GUIDANCE}
    assert repaired[-1].startswith("FINAL: ")
    child = load_bundle(tmp_path / "child")
    assert child.lineage["anchor"] == anchor.id
    served = stub.served
    for _ in range(3):
        assert run.replay(tmp_path / "child") == repaired
    assert stub.served == served


def test_fan_out_needs_the_recorded_completion_order(recorded, tmp_path):
    """Issue 11's failure: served at once, the slower reviewer's review comes first and the
    editor's request no longer matches; held in completion order, it replays."""
    run, _, transcript, bundle = recorded("graph_fanout")
    legal, style = (first_call_of(bundle, a) for a in ("legal_reviewer", "style_reviewer"))
    assert legal.position < style.position  # asked first ...
    assert style.meta["completed"] < legal.meta["completed"]  # ... answered last
    assert transcript.index("style_reviewer: STYLE: friendly tone, good length; add one "
                            "sentence on the river.") < transcript.index(
        "legal_reviewer: LEGAL: 'the best francesinha in the world' needs a source or a "
        "softer claim.")
    with pytest.raises(symtrace.RequestMismatch) as info, \
            symtrace.replay(tmp_path / "graph_fanout") as handle:
        handle.session.order.disable()  # what replay did before completion-order delivery
        run.run()
    assert info.value.report.kind is DivergenceKind.REQUEST_MISMATCH
    assert info.value.report.agent == "editor"
    assert run.replay(tmp_path / "graph_fanout") == transcript


def test_same_named_agents_get_a_lane_each(recorded):
    _, _, _, twins = recorded("twin_teams")
    assert {e.lane for e in twins.events if e.is_llm} == {
        "writer", "writer@2", "critic", "critic@2"
    }
    _, _, _, saved = recorded("save_state")
    assert [e.lane for e in saved.events if e.is_llm] == [
        "writer", "critic", "writer@2", "critic@2"
    ]


@pytest.mark.parametrize("name", IN_PROCESS)
def test_reference_bundle_replays_in_process(name, scenario, monkeypatch):
    """The committed bundle (recorded through the CLI) replays with no endpoint to the output
    it printed when it was recorded."""
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")  # nothing listens there
    bundle = ROOT / "bundles" / f"autogen_agentchat-{name}"
    run = scenario(name)
    lines = run.replay(bundle)
    assert "\n".join(lines) + "\n" == (bundle / "stdout.txt").read_text()
    assert run.tool_runs == []


def test_one_agent_tool_called_twice_at_once(stub_llm_factory, use_stub, tmp_path):
    """Two calls of one AgentTool in one response run one agent instance twice at once: each
    run gets its own lane under its tool call, and replays in the recorded completion order."""
    import asyncio
    import time

    from agentchat_common import model_client, transcript
    from autogen_agentchat.agents import AssistantAgent
    from autogen_agentchat.tools import AgentTool

    ask = [{"name": "expert", "arguments": {"task": f"Best sight in {city}?"}}
           for city in ("Lisbon", "Porto")]
    stub = use_stub(stub_llm_factory(script={"rules": [
        {"match": {"agent": "You are the expert", "last_user_contains": "Lisbon"},
         "reply": {"content": "Lisbon: the Belem Tower."}},
        {"match": {"agent": "You are the expert"}, "reply": {"content": "Porto: the Ribeira."}},
        {"match": {"agent": "You are the manager", "tool_result_present": False},
         "reply": {"tool_calls": ask}},
    ], "default": {"content": "Belem Tower and Ribeira."}}))
    answer = stub.answer

    def slow_lisbon(body, call_index):  # the call made first completes last
        if "Lisbon" in str(body["messages"][-1].get("content")):
            time.sleep(0.3)
        return answer(body, call_index)

    stub.answer = slow_lisbon

    async def program():
        client = model_client()
        expert = AssistantAgent("expert", model_client=client, description="Knows Portugal.",
                                system_message="You are the expert.")
        manager = AssistantAgent("manager", model_client=client, tools=[AgentTool(expert)],
                                 reflect_on_tool_use=True, system_message="You are the manager.")
        result = await manager.run(task="Two sights, please.")
        await client.close()
        return transcript([result])

    with symtrace.record(tmp_path / "run", adapters=["autogen_agentchat"]):
        recorded = asyncio.run(program())
    lanes = [e.lane for e in load_bundle(tmp_path / "run").events if e.agent == "expert"]
    assert sorted(lanes) == ["manager/tool#0/expert", "manager/tool#1/expert"]
    stub.answer = answer
    served = stub.served
    for _ in range(5):
        with symtrace.replay(tmp_path / "run"):
            assert asyncio.run(program()) == recorded
    assert stub.served == served
