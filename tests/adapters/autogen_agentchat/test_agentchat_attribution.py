"""What a recording of each scenario says: who called the model, on which lane, and why.

The event graph must read like the run: agent_action -> tool_call -> tool_result -> the next
agent_action, messages passed between agents as data edges, the team managers' own calls
named by their reason, one final_result.
"""

from __future__ import annotations

import itertools

import pytest

from symtrace.bundle import load_bundle
from symtrace.model.events import EdgeKind, EventType

pytestmark = [
    pytest.mark.framework("autogen_agentchat"),
    pytest.mark.filterwarnings("ignore:Pydantic serializer warnings"),
]


def record(name, scenario, scripted, tmp_path):
    scripted(name)
    scenario(name).record(tmp_path / name)
    return load_bundle(tmp_path / name)


def llm(bundle):
    return [e for e in bundle.events if e.is_llm]


def of_type(bundle, event_type):
    return [e for e in bundle.events if e.type is event_type]


def data_parents(event):
    return {p.source for p in event.parents if p.kind is EdgeKind.DATA}


def test_parallel_tool_calls_get_a_lane_each(scenario, scripted, tmp_path):
    bundle = record("assistant_tools", scenario, scripted, tmp_path)
    actions = llm(bundle)
    assert {(e.agent, e.lane, e.reason) for e in actions} == {
        ("travel_agent", "travel_agent", None)}
    calls = of_type(bundle, EventType.TOOL_CALL)
    assert [(c.request["tool"], c.lane) for c in calls[:2]] == [
        ("get_weather", "travel_agent/tool#0"),
        ("get_exchange_rate", "travel_agent/tool#1"),
    ]
    assert calls[2].lane == "travel_agent/tool#0"  # the second run's only call
    first = actions[0]
    assert all(first.id in data_parents(c) for c in calls[:2])
    assert all(c.meta["call_id"] and c.meta["tool"] == c.request["tool"] for c in calls)
    results = of_type(bundle, EventType.TOOL_RESULT)
    # each result's parent is its own call; the two parallel tools complete in no promised
    # order (a thread pool under asyncio.gather: 3.13 reorders them)
    assert sorted(min(data_parents(r)) for r in results) == [c.id for c in calls]
    assert all(len(data_parents(r)) == 1 for r in results)
    reflection = actions[1]
    assert {results[0].id, results[1].id} <= data_parents(reflection)
    final = bundle.final_result()
    assert actions[-1].id in data_parents(final)


def test_round_robin_messages_are_data_edges_between_agents(scenario, scripted, tmp_path):
    bundle = record("round_robin", scenario, scripted, tmp_path)
    actions = llm(bundle)
    assert [e.agent for e in actions] == ["writer", "critic", "writer", "critic"]
    assert [e.lane for e in actions] == ["writer", "critic", "writer", "critic"]
    for before, after in itertools.pairwise(actions):
        assert before.id in data_parents(after), f"{after.id} reads {before.id}'s message"


def test_speaker_selection_is_attributed_to_the_selector(scenario, scripted, tmp_path):
    bundle = record("selector", scenario, scripted, tmp_path)
    actions = llm(bundle)
    assert [(e.agent, e.reason) for e in actions] == [
        ("SelectorGroupChatManager", "speaker_selection"),
        ("planner", None),
        ("SelectorGroupChatManager", "speaker_selection"),
        ("researcher", None),
        ("researcher", None),
        ("SelectorGroupChatManager", "speaker_selection"),
        ("writer", None),
    ]
    assert {e.lane for e in actions if e.reason} == {"SelectorGroupChatManager"}
    assert [c.lane for c in of_type(bundle, EventType.TOOL_CALL)] == [
        "researcher/tool#0", "researcher/tool#1"]


def test_magentic_one_orchestrator_calls_are_named(scenario, scripted, tmp_path):
    bundle = record("magentic_one", scenario, scripted, tmp_path)
    actions = llm(bundle)
    orchestrator = "MagenticOneOrchestrator"
    assert [(e.agent, e.reason) for e in actions] == [
        (orchestrator, "planning"),         # task ledger: facts
        (orchestrator, "planning"),         # task ledger: plan
        (orchestrator, "progress_ledger"),  # -> researcher
        ("researcher", None),               # asks for two tools at once
        ("researcher", None),               # reflects on their results
        (orchestrator, "progress_ledger"),  # no progress: a stall (max_stalls=1)
        (orchestrator, "replanning"),       # updated facts
        (orchestrator, "replanning"),       # new plan
        (orchestrator, "progress_ledger"),  # -> writer
        ("writer", None),
        (orchestrator, "progress_ledger"),  # satisfied
        (orchestrator, "final_answer"),
    ]
    assert {e.lane for e in actions if e.agent == orchestrator} == {orchestrator}
    # The instruction the ledger (JSON) hands on is a message-passing edge to the agent.
    assert actions[2].id in data_parents(actions[3])
    assert actions[8].id in data_parents(actions[9])
    # The agents' answers reach the orchestrator's next ledger.
    assert actions[4].id in data_parents(actions[5])
    assert actions[9].id in data_parents(actions[10])
    assert actions[-1].id in data_parents(bundle.final_result())


def test_streaming_and_a_raising_tool_are_recorded_as_data(scenario, scripted, tmp_path):
    bundle = record("streaming_tool_error", scenario, scripted, tmp_path)
    actions = llm(bundle)
    assert all(e.response["stream"] for e in actions), "the client streamed (SSE)"
    # the two tools run at once: their results are in the order they completed, which varies;
    # each is on the lane of its call, numbered in the order the calls were made
    results = {r.lane: r.response for r in of_type(bundle, EventType.TOOL_RESULT)}
    assert set(results) == {"support/tool#0", "support/tool#1"}
    assert results["support/tool#0"] == {"ok": True, "value": "A-100: shipped, arrives tomorrow"}
    error = results["support/tool#1"]
    assert error["ok"] is False
    assert error["error"]["type"] == "OrderNotFound"
    assert error["error"]["message"] == "no order Z-999"


def test_a_recorded_tool_exception_is_re_raised_as_its_own_type(scenario, tmp_path):
    """A direct `run_json` call (no workbench to format the error) sees the exception itself."""
    import asyncio

    from autogen_core import CancellationToken
    from autogen_core.tools import FunctionTool

    import symtrace

    example = scenario("streaming_tool_error").module
    tool = FunctionTool(example.lookup_order, description="The status of an order.")

    async def lookup(order_id):
        return await tool.run_json({"order_id": order_id}, CancellationToken(), call_id="c1")

    with symtrace.record(tmp_path / "run", adapters=["autogen_agentchat"]):
        assert asyncio.run(lookup("A-100")) == "A-100: shipped, arrives tomorrow"
        with pytest.raises(example.OrderNotFound, match="no order Z-999"):
            asyncio.run(lookup("Z-999"))
    example.TOOL_RUNS.clear()
    with symtrace.replay(tmp_path / "run"):
        assert asyncio.run(lookup("A-100")) == "A-100: shipped, arrives tomorrow"
        with pytest.raises(example.OrderNotFound, match="no order Z-999") as raised:
            asyncio.run(lookup("Z-999"))
    assert type(raised.value) is example.OrderNotFound
    assert example.TOOL_RUNS == []
