"""Coverage of CrewAI's main features, each proven on the real framework against the stub:
record; 20 strict replays with no request, no tool body run and the same transcript; an edit
that makes strict replay fail at the right event; selective replay from an anchor and a
strict replay of the child bundle.

Features: Flows (`@start`/`@listen`, crews inside, two steps at once), `async_execution`
tasks (two overlapping, same-role agents), crew planning, guardrails (a function and an LLM
guardrail, each rejecting once). And a crew that cannot be replayed is refused at record
time with a typed error, before any request.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

import symtrace
from symtrace.errors import AdapterError, RequestMismatch

from ._support import (
    ADAPTER,
    llm_events,
    load_example,
    replay_example,
    tool_calls,
    tool_runs,
)

pytestmark = pytest.mark.framework("crewai")
REPLAYS = 20
GUIDANCE = "Double-check the facts before you answer."


@dataclass(frozen=True)
class Feature:
    name: str
    edit: Callable[[Any, pytest.MonkeyPatch], Callable[[Any], None] | None]
    diverges_at: Callable[[list[symtrace.Event]], symtrace.Event]  # the first changed request
    anchor: Callable[[list[symtrace.Event]], symtrace.Event]
    independent_lane: str | None = None  # concurrent branch the anchor does not touch


def on_lane(events: list[symtrace.Event], lane: str, index: int = 0) -> symtrace.Event:
    return [e for e in llm_events(events) if e.lane == lane][index]


def edit_porto_task(module: Any, patch: pytest.MonkeyPatch) -> Callable[[Any], None]:
    def edit(crew: Any) -> None:
        crew.tasks[1].description = "What is the weather in Porto tomorrow?"
    return edit


def edit_flow_cities(module: Any, patch: pytest.MonkeyPatch) -> None:
    patch.setattr(module, "CITIES", ("Lisbon", "Faro"))  # only the second step's input


def edit_note_expectation(module: Any, patch: pytest.MonkeyPatch) -> Callable[[Any], None]:
    def edit(crew: Any) -> None:
        crew.tasks[1].expected_output = "Two lines."
    return edit


def edit_budget_feedback(module: Any, patch: pytest.MonkeyPatch) -> None:
    patch.setattr(module, "BUDGET_FEEDBACK", "State the total budget in EUR.")


FEATURES = {
    feature.name: feature for feature in (
        # the Porto task's own agent (second Researcher) is the first to send a changed request
        Feature("async_tasks", edit_porto_task, lambda ev: on_lane(ev, "Researcher@2"),
                lambda ev: on_lane(ev, "Researcher@2", 1), "Researcher"),
        # only the research_porto step reads the second city
        Feature("trip_flow", edit_flow_cities,
                lambda ev: on_lane(ev, "TripFlow.research_porto/Researcher"),
                lambda ev: on_lane(ev, "TripFlow.research_porto/Researcher", 1),
                "TripFlow.research_lisbon/Researcher"),
        # the planner's task summary (a recorded side channel) is the first thing to change
        Feature("planning", edit_note_expectation,
                lambda ev: next(e for e in tool_calls(ev, "crewai.planning_summary")),
                lambda ev: next(e for e in llm_events(ev) if e.reason == "planning")),
        # the function guardrail's feedback is only in the writer's retry
        Feature("guardrails", edit_budget_feedback,
                lambda ev: next(e for e in llm_events(ev)
                                if e.agent == "Writer" and e.reason == "guardrail"),
                lambda ev: next(e for e in llm_events(ev) if e.agent == "Guardrail Agent")),
    )
}


@pytest.mark.parametrize("name", FEATURES)
def test_twenty_strict_replays_reproduce_the_run_without_any_request(name, record):
    ran_before = tool_runs()
    recorded = record(name)
    assert recorded.served == len(llm_events(recorded.events()))
    ran_live, served = tool_runs(), recorded.stub.served
    if name != "guardrails":  # the other three call a tool
        assert ran_live != ran_before
    for attempt in range(REPLAYS):
        replayed = replay_example(recorded.bundle, name)
        assert replayed.transcript == recorded.run.transcript, f"replay {attempt}"
    assert recorded.stub.served == served, "a strict replay sent a request"
    assert tool_runs() == ran_live, "a strict replay ran a tool body"
    final = symtrace.load_bundle(recorded.bundle).final_result()
    assert final is not None and final.response["value"] == recorded.run.final


@pytest.mark.parametrize("name", FEATURES)
def test_an_edit_diverges_at_the_first_request_it_changes(name, record, monkeypatch):
    feature = FEATURES[name]
    recorded = record(name)
    expected = feature.diverges_at(recorded.events())
    served = recorded.stub.served
    edit = feature.edit(load_example(name), monkeypatch)
    with pytest.raises(RequestMismatch) as caught:
        replay_example(recorded.bundle, name, edit=edit)
    report = caught.value.report
    assert (report.event_id, report.lane, report.agent) == (
        expected.id, expected.lane, expected.agent)
    changed = "/arguments/summary" if name == "planning" else "/body/messages/"
    assert any(d.path.startswith(changed) for d in report.differences), report.differences
    assert recorded.stub.served == served


@pytest.mark.parametrize("name", FEATURES)
def test_selective_replay_from_an_anchor_and_strict_replay_of_the_child(name, record,
                                                                       use_stub, tmp_path):
    recorded = record(name)
    events = recorded.events()
    anchor = FEATURES[name].anchor(events)
    stub = use_stub(name)  # scripted: the live suffix is deterministic too
    child_path = tmp_path / "child"
    replay_example(recorded.bundle, name, anchor=anchor.id, guidance=GUIDANCE, out=child_path)
    child = symtrace.load_bundle(child_path)

    live = set(child.lineage["live_events"])
    assert stub.requests[0]["messages"][-1] == {"role": "user", "content": GUIDANCE}
    assert stub.served == sum(1 for e in llm_events(child.events) if e.id in live)
    assert anchor.id in child.lineage["superseded_events"]
    before = {e.id for e in llm_events(events) if e.position < anchor.position}
    lane = FEATURES[name].independent_lane
    independent = {e.id for e in events if lane and (e.lane == lane
                                                     or e.lane.startswith(f"{lane}/"))}
    assert before | independent <= set(child.lineage["replayed_events"])

    served = stub.served
    strict = replay_example(child_path, name)
    assert stub.served == served, "the child's strict replay sent a request"
    assert strict.final == str(child.final_result().response["value"])


def test_parallel_flow_steps_and_async_tasks_get_lanes_of_their_own(record):
    flow = record("trip_flow").events()
    assert {e.lane for e in llm_events(flow)} == {
        "TripFlow.research_lisbon/Researcher", "TripFlow.research_porto/Researcher",
        "TripFlow.compare/Writer"}
    tasks = record("async_tasks").events()
    assert {e.lane for e in llm_events(tasks)} == {"Researcher", "Researcher@2", "Writer"}
    assert {e.agent for e in llm_events(tasks)} == {"Researcher", "Writer"}


def test_guardrail_retries_and_planning_are_attributed(record):
    guarded = llm_events(record("guardrails").events())
    assert [(e.agent, e.reason) for e in guarded] == [
        ("Scout", None), ("Guardrail Agent", "guardrail"), ("Scout", "guardrail"),
        ("Guardrail Agent", "guardrail"), ("Writer", None), ("Writer", "guardrail")]
    events = record("planning").events()
    planned = llm_events(events)
    assert (planned[0].agent, planned[0].reason) == ("Task Execution Planner", "planning")
    assert "Plan: call city_weather" in str(planned[1].request)
    (summary,) = tool_calls(events, "crewai.planning_summary")
    assert (summary.agent, summary.reason) == ("Task Execution Planner", "planning")
    assert " at 0x…" in summary.request["arguments"]["summary"], "addresses are masked"
    assert " at 0x…" not in str(planned[0].request), "the planner gets the real rendering"


def test_overlapping_async_tasks_on_one_agent_are_refused_before_any_request(
        use_stub, tmp_path):
    """CrewAI refuses to run one agent's executor twice at once and retries by timing: no
    bundle could replay that, so recording stops at kickoff with a typed error."""
    from symtrace_crewai import UnsupportedConstruct

    stub = use_stub("async_tasks")
    module = load_example("async_tasks")

    def shared_agent_crew() -> Any:
        crew = module.build_crew()
        crew.tasks[1].agent = crew.tasks[0].agent
        return crew

    with pytest.raises(UnsupportedConstruct, match="'lisbon' and 'porto'") as caught, \
            symtrace.record(tmp_path / "b", adapters=ADAPTER):
        shared_agent_crew().kickoff()
    assert isinstance(caught.value, AdapterError)
    assert UnsupportedConstruct is symtrace.UnsupportedConstruct  # one class, in core
    assert stub.served == 0
    assert not (tmp_path / "b").exists()  # a refused recording keeps nothing
