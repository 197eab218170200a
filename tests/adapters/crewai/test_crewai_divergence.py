"""Why replay matters, and that it fails closed: live reruns differ, edits diverge where they
first change a request, and CrewAI's side channels (the injected date, host-dependent
input_tokens preflights, the tool usage count) neither break nor loosen strict replay."""

from __future__ import annotations

import datetime as dt

import pytest

import symtrace
from symtrace.errors import RequestMismatch

from ._support import (
    ADAPTER,
    llm_events,
    load_example,
    replay_example,
    run_example,
    tool_calls,
)

pytestmark = pytest.mark.framework("crewai")


def test_a_live_rerun_of_the_same_task_differs(record, use_stub):
    stub = use_stub(mode="stochastic")
    recorded = record("sequential", stub=stub)
    rerun = run_example("sequential")  # same program, same task, no symtrace: live
    assert rerun.final != recorded.run.final
    assert replay_example(recorded.bundle, "sequential").final == recorded.run.final


def change_writer_goal(crew) -> None:
    crew.agents[1].goal = "Write long, detailed trip plans"


def change_tool_description(crew) -> None:
    crew.agents[0].tools[0].description = "Weather, rain and wind for a city."


@pytest.mark.parametrize(("edit", "agent", "position"), [
    (change_writer_goal, "Writer", 2),  # agent_action index: after both researcher calls
    (change_tool_description, "Researcher", 0),
])
def test_an_edited_prompt_fails_strict_replay_at_the_first_affected_event(
        record, edit, agent, position):
    recorded = record("sequential")
    expected = llm_events(recorded.events())[position]
    served = recorded.stub.served
    with pytest.raises(RequestMismatch) as caught:
        replay_example(recorded.bundle, "sequential", edit=edit)
    report = caught.value.report
    assert (report.event_id, report.agent) == (expected.id, agent)
    assert report.matched_before == sum(
        1 for e in recorded.events() if e.type.value in ("agent_action", "tool_call")
        and e.position < expected.position)
    assert any(d.path.startswith("/body/") for d in report.differences)
    assert recorded.stub.served == served


class FrozenLater(dt.datetime):
    """The clock a year and a day after the recording."""

    @classmethod
    def now(cls, tz=None):
        return dt.datetime(2031, 7, 14, 9, 30)


def test_inject_date_is_pinned_on_replay_on_another_day(record, monkeypatch):
    recorded = record("sequential")
    load_example("sequential")
    monkeypatch.setattr("crewai.utilities.prompts.datetime", FrozenLater)
    later = run_example("sequential")  # live, no symtrace: the clock change is effective
    assert any("Current Date: 2031-07-14" in line for line in later.transcript)

    replayed = replay_example(recorded.bundle, "sequential")
    assert replayed.transcript == recorded.run.transcript
    assert not any("2031-07-14" in line for line in replayed.transcript)


def test_host_dependent_input_tokens_calls_are_captured_and_replayed(record, use_stub,
                                                                     monkeypatch, tmp_path):
    """On api.openai.com CrewAI preflights completions with POST /v1/responses/input_tokens;
    the stub plays api.openai.com through a loopback HTTP proxy (nothing leaves 127.0.0.1)."""
    stub = use_stub("sequential")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://api.openai.com/v1")
    monkeypatch.setenv("HTTP_PROXY", stub.root_url)
    recorded = record("sequential", stub=stub)
    events = recorded.events()
    preflights = [e for e in tool_calls(events, "http")
                  if e.request["arguments"]["path"] == "/v1/responses/input_tokens"]
    assert len(preflights) >= len(llm_events(events)) and all(
        e.reason == "input_tokens" and e.meta["host"] == "api.openai.com" for e in preflights)

    monkeypatch.delenv("HTTP_PROXY")  # replay needs no endpoint at all
    served = stub.served
    assert replay_example(recorded.bundle, "sequential").transcript == recorded.run.transcript
    assert stub.served == served

    monkeypatch.setenv("OPENAI_BASE_URL", stub.url)  # the same program on another host
    with pytest.raises(RequestMismatch) as caught:  # a completion where a preflight was
        replay_example(recorded.bundle, "sequential")
    assert caught.value.report.event_id == preflights[0].id
    assert stub.served == served


USAGE_SCRIPT = {"rules": [
    {"match": {"any_message_contains": "usage limit"}, "reply": {"content": "Done: 21C."}},
    {"match": {}, "reply": {"tool_calls": [
        {"name": "lookup_weather", "arguments": {"city": "Lisbon"}}]}},
]}


def test_tool_usage_limits_behave_the_same_when_bodies_are_skipped(stub_llm_factory,
                                                                   monkeypatch, tmp_path):
    """A served call still counts a use, so `max_usage_count` cuts off the same call."""
    stub = stub_llm_factory(mode="scripted", script=USAGE_SCRIPT)
    monkeypatch.setenv("OPENAI_BASE_URL", stub.url)
    sequential = load_example("sequential")
    from crewai import Agent, Crew, Task
    from crewai.tools import tool

    def crew() -> Crew:
        limited = tool("lookup_weather")(sequential.lookup_weather.func)
        limited.max_usage_count = 1
        agent = Agent(role="Scout", goal="Weather", backstory="Terse.",
                      llm=load_example("crewai_common").llm(), tools=[limited])
        task = Task(description="Weather in Lisbon, twice.", expected_output="One line.",
                    agent=agent)
        return Crew(agents=[agent], tasks=[task])

    with symtrace.record(tmp_path / "b", adapters=ADAPTER):
        recorded = crew().kickoff()
    events = list(symtrace.load_bundle(tmp_path / "b").events)
    assert len(tool_calls(events, "lookup_weather")) == 1 < len(llm_events(events)) - 1
    with symtrace.replay(tmp_path / "b"):
        replayed = crew().kickoff()
    assert replayed.raw == recorded.raw == "Done: 21C."
