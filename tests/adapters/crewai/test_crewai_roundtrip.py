"""Record -> strict replay for every scenario: same transcript, no request, no tool body run.

And what each scenario must show in its bundle: who made each call (agent, lane, reason), tool
calls as tool_call/tool_result pairs on per-call lanes, hand-offs to coworkers, data edges from
each LLM decision to its tool calls and on to the next decision and the next agent.
"""

from __future__ import annotations

import asyncio

import pytest

import symtrace
from symtrace.model.events import EdgeKind, EventType

from ._support import (
    ADAPTER,
    SCENARIOS,
    llm_events,
    load_example,
    replay_example,
    tool_calls,
    tool_runs,
)

pytestmark = pytest.mark.framework("crewai")


def data_parents(event: symtrace.Event) -> set[str]:
    return {edge.source for edge in event.parents if edge.kind is EdgeKind.DATA}


def result_of(events: list[symtrace.Event], call: symtrace.Event) -> symtrace.Event:
    return next(e for e in events if e.type is EventType.TOOL_RESULT
                and e.parents[0].source == call.id)


@pytest.mark.parametrize("name", SCENARIOS)
def test_record_then_strict_replay_reproduces_the_run(name, record):
    ran_before = tool_runs()
    recorded = record(name)
    assert recorded.served > 0
    ran_live = tool_runs()
    if name in ("sequential", "parallel_tools", "tool_error"):
        assert ran_live != ran_before, "the tool bodies should run while recording"

    served = recorded.stub.served
    replayed = replay_example(recorded.bundle, name)

    assert replayed.transcript == recorded.run.transcript
    assert replayed.final == recorded.run.final
    assert recorded.stub.served == served, "strict replay sent a request"
    assert tool_runs() == ran_live, "strict replay ran a tool body"
    final = symtrace.load_bundle(recorded.bundle).final_result()
    assert final is not None and final.response["value"] == recorded.run.final


@pytest.mark.parametrize("name", SCENARIOS)
def test_a_stochastic_run_replays_exactly_too(name, record, use_stub):
    """Against the sampling endpoint every run takes its own path; replay still follows it."""
    recorded = record(name, stub=use_stub(mode="stochastic"))
    served, ran = recorded.stub.served, tool_runs()
    replayed = replay_example(recorded.bundle, name)
    assert replayed.transcript == recorded.run.transcript
    assert recorded.stub.served == served and tool_runs() == ran


def test_sequential_crew_attributes_calls_tools_and_the_hand_over(record):
    events = record("sequential").events()
    researcher_1, researcher_2, writer = llm_events(events)
    assert [e.agent for e in (researcher_1, researcher_2, writer)] == [
        "Researcher", "Researcher", "Writer"]
    assert (researcher_1.lane, writer.lane) == ("Researcher", "Writer")
    assert all(e.reason is None for e in (researcher_1, researcher_2, writer))

    weather, fx = tool_calls(events, "lookup_weather"), tool_calls(events, "convert_currency")
    assert len(weather) == len(fx) == 1, "@tool (Tool.run) and BaseTool.run are both boundaries"
    weather, fx = weather[0], fx[0]
    assert (weather.lane, fx.lane) == ("Researcher/tool#0", "Researcher/tool#1")
    assert weather.request == {"tool": "lookup_weather", "arguments": {"city": "Lisbon"}}
    response_ids = [c["id"] for c in researcher_1.response["body"]["choices"][0]["message"]
                    ["tool_calls"]]
    assert [weather.meta["call_id"], fx.meta["call_id"]] == response_ids
    assert researcher_1.id in data_parents(weather) and researcher_1.id in data_parents(fx)
    for call in (weather, fx):  # observation -> next decision
        assert result_of(events, call).id in data_parents(researcher_2)
    assert researcher_2.id in data_parents(writer), "the writer's context quotes the research"
    (final,) = [e for e in events if e.type is EventType.FINAL_RESULT]
    assert writer.id in data_parents(final)


def test_injected_date_is_a_recorded_side_channel(record):
    events = record("sequential").events()
    dates = tool_calls(events, "crewai.current_date")
    assert dates and all(e.agent == "Researcher" and e.reason == "inject_date" for e in dates)
    rendered = {result_of(events, e).response["value"] for e in dates}
    (block,) = rendered
    assert block.startswith("\n\nCurrent Date: ")
    researcher_1 = llm_events(events)[0]
    assert block.strip() in researcher_1.request["body"]["messages"][0]["content"]
    assert not any(e.agent == "Writer" for e in dates), "inject_date is off for the writer"


def test_hierarchical_manager_hands_off_to_coworkers_on_their_own_lanes(record):
    events = record("hierarchical").events()
    manager = [e for e in llm_events(events) if e.agent == "Crew Manager"]
    assert len(manager) == 2 and all(e.reason == "manager" for e in manager)
    handoffs = [e for e in tool_calls(events) if e.meta.get("handoff")]
    assert sorted(e.meta["tool"] for e in handoffs) == [
        "ask_question_to_coworker", "delegate_work_to_coworker"]
    assert sorted(e.lane for e in handoffs) == ["Crew Manager/tool#0", "Crew Manager/tool#1"]
    for handoff in handoffs:
        assert manager[0].id in data_parents(handoff)
        (coworker,) = [e for e in llm_events(events) if e.lane == handoff.lane]
        assert coworker.agent == handoff.request["arguments"]["coworker"]
        assert coworker.reason is None
        assert [p.source for p in coworker.parents] == [handoff.id], "hand-off -> coworker"
        assert {coworker.id, result_of(events, handoff).id} & data_parents(manager[1])


def test_parallel_native_tool_calls_each_get_a_lane(record):
    events = record("parallel_tools").events()
    first = llm_events(events)[0]
    calls = tool_calls(events)
    assert sorted(e.lane for e in calls) == [f"Planner/tool#{i}" for i in range(4)]
    assert all(first.id in data_parents(e) for e in calls)
    last = llm_events(events)[-1]
    assert {result_of(events, e).id for e in calls} <= data_parents(last)


def test_a_raising_tool_is_recorded_and_replayed_as_its_exception(record):
    recorded = record("tool_error")
    events = recorded.events()
    jpy, usd = tool_calls(events, "exchange_rate")
    error = result_of(events, jpy).response
    assert error["ok"] is False
    assert error["error"]["type"] == "RateUnavailable"
    assert error["error"]["message"] == "no EUR rate for 'JPY'"
    assert result_of(events, usd).response == {"ok": True, "value": "1 EUR = 1.08 USD"}
    assert "  tool: Error executing tool: no EUR rate for 'JPY'" in recorded.run.transcript

    module = load_example("tool_error")
    seen: list[BaseException] = []
    original = module.RateUnavailable.__init__

    def spy(self, *args):  # the replayed exception is the tool's own class, rebuilt
        seen.append(self)
        original(self, *args)

    module.RateUnavailable.__init__ = spy
    try:
        replayed = replay_example(recorded.bundle, "tool_error")
    finally:
        module.RateUnavailable.__init__ = original
    assert replayed.transcript == recorded.run.transcript
    assert len(seen) == 1 and str(seen[0]) == "no EUR rate for 'JPY'"


def test_structured_output_replays_as_the_same_model(record):
    recorded = record("structured_output")
    plan_request = llm_events(recorded.events())[-1].request["body"]
    assert plan_request["response_format"]["json_schema"]["name"] == "TripPlan"
    replayed = replay_example(recorded.bundle, "structured_output")
    trip_plan = load_example("structured_output").TripPlan
    assert isinstance(replayed.output.pydantic, trip_plan)
    assert replayed.output.pydantic == recorded.run.output.pydantic


def test_async_kickoff_is_attributed_and_replays(use_stub, tmp_path):
    module = load_example("sequential")
    stub = use_stub("sequential")
    with symtrace.record(tmp_path / "b", adapters=ADAPTER):
        recorded = asyncio.run(module.build_crew().akickoff())
    events = list(symtrace.load_bundle(tmp_path / "b").events)
    assert [e.agent for e in llm_events(events)] == ["Researcher", "Researcher", "Writer"]
    assert len(tool_calls(events, "lookup_weather")) == 1
    served = stub.served
    with symtrace.replay(tmp_path / "b"):
        replayed = asyncio.run(module.build_crew().akickoff())
    assert replayed.raw == recorded.raw and stub.served == served


REACT_SCRIPT = {"rules": [
    {"match": {"call_index": 0}, "reply": {"content":
        'Thought: look it up\nAction: lookup_weather\nAction Input: {"city": "Porto"}'}},
    {"match": {}, "reply": {"content": "Thought: I now know the final answer\n"
                                       "Final Answer: Porto is mild today."}},
]}


def test_text_tool_calling_path_is_a_boundary_too(use_stub, stub_llm_factory, monkeypatch,
                                                  tmp_path):
    """Models without native function calling use ReAct text; CrewAI calls
    CrewStructuredTool.invoke, whose func is the tool's _run (not run)."""
    stub = stub_llm_factory(mode="scripted", script=REACT_SCRIPT)
    monkeypatch.setenv("OPENAI_BASE_URL", stub.url)
    sequential = load_example("sequential")
    from crewai import LLM, Agent, Crew, Task

    def crew() -> Crew:
        agent = Agent(role="Scout", goal="Report weather", backstory="Terse.",
                      llm=LLM(model="o1-mini", max_retries=0), tools=[sequential.lookup_weather])
        task = Task(description="Weather in Porto?", expected_output="One line.", agent=agent)
        return Crew(agents=[agent], tasks=[task])

    with symtrace.record(tmp_path / "b", adapters=ADAPTER):
        recorded = crew().kickoff()
    (call,) = tool_calls(list(symtrace.load_bundle(tmp_path / "b").events))
    assert call.request == {"tool": "lookup_weather", "arguments": {"city": "Porto"}}
    assert call.agent == "Scout" and call.lane == "Scout"
    ran, served = tool_runs(), stub.served
    with symtrace.replay(tmp_path / "b"):
        replayed = crew().kickoff()
    assert replayed.raw == recorded.raw == "Porto is mild today."
    assert tool_runs() == ran and stub.served == served


def test_llm_calls_no_hook_attributes_are_still_captured_and_replayed(use_stub, tmp_path):
    """A CrewAI LLM called outside any agent (user code, on a worker thread) has no
    attribution, lands on a pooled lane, and is still served on replay, never sent."""
    from concurrent.futures import ThreadPoolExecutor

    stub = use_stub("sequential")
    llm = load_example("crewai_common").llm

    def ask() -> str:
        with ThreadPoolExecutor(1) as pool:
            return pool.submit(llm().call, "You are Writer. Say hi.").result()

    with symtrace.record(tmp_path / "b", adapters=ADAPTER):
        recorded = ask()
    (event,) = llm_events(list(symtrace.load_bundle(tmp_path / "b").events))
    assert event.agent is None and event.lane.startswith("thread:")
    served = stub.served
    with symtrace.replay(tmp_path / "b"):
        assert ask() == recorded
    assert stub.served == served


def test_framework_internal_calls_say_why_they_are_made(use_stub, tmp_path):
    """Crew planning, the output converter and an LLM guardrail are CrewAI's own calls."""
    from crewai import Agent, Crew, Task
    from pydantic import BaseModel

    class Answer(BaseModel):
        city: str
        temperature: float

    stub = use_stub(mode="stochastic", seed=7)
    sequential, common = load_example("sequential"), load_example("crewai_common")

    def crew() -> Crew:
        llm = common.llm()
        agent = Agent(role="Researcher", goal="Weather facts", backstory="Terse.", llm=llm,
                      tools=[sequential.lookup_weather], max_iter=3)
        task = Task(description="Weather in Lisbon?", expected_output="City and temperature.",
                    agent=agent, output_pydantic=Answer, guardrail="Mentions a city.",
                    guardrail_max_retries=1)
        return Crew(agents=[agent], tasks=[task], planning=True, planning_llm=llm)

    def outcome() -> tuple[str, str]:
        try:
            return "done", crew().kickoff().raw
        except Exception as exc:  # CrewAI raises a bare Exception when the guardrail rejects
            if not str(exc).startswith("Task failed guardrail validation after 1 retries"):
                raise  # anything else is a real failure of the test
            return "guardrail rejected", str(exc)

    with symtrace.record(tmp_path / "b", adapters=ADAPTER):
        recorded = outcome()
    events = llm_events(list(symtrace.load_bundle(tmp_path / "b").events))
    reasons = {e.reason for e in events}
    assert {"planning", "output_conversion", "guardrail"} <= reasons, reasons
    assert events[0].reason == "planning"
    assert {e.agent for e in events if e.reason == "output_conversion"} == {"Researcher"}
    served = stub.served
    with symtrace.replay(tmp_path / "b"):
        assert outcome() == recorded  # the same answer, or the same rejection
    assert stub.served == served
