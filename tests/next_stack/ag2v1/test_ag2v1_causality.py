"""Defects the AG2 1.x program generator found (tests/generated/gen_ag2v1.py), each with the
smallest scripted program that shows it.

* A sub-task (or `as_tool`) turn is started by the asking agent's model: once that agent's
  call goes live in a selective replay, the turn it starts runs live too, even when its
  request carries no value the live reply produced whole (a sub-task's text is one element of
  the `run_subtasks` arguments). Before: the new sub-task's call was matched against the
  recording and the replay stopped (SYM-R101 / SYM-R102).
* Network ids (envelopes, channels, agents) reach the model through the Network plugin's
  tools, which run on replay: they are seeded per session. Before: `peers` (or `say`: "posted
  envelope <id>") answered with fresh random ids on replay and strict replay diverged
  (SYM-R101).
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import symtrace
from symtrace import load_bundle
from tests.next_stack.ag2v1._support import Runner

GUIDANCE = "GUIDANCE: check Faro only."


def _script(scripts: dict[str, Any], name: str, *first: dict[str, Any]) -> dict[str, Any]:
    script = copy.deepcopy(scripts[name])
    script["rules"][:0] = list(first)
    return script


def _start(stub_llm_factory: Callable[..., Any], monkeypatch: pytest.MonkeyPatch,
           script: dict[str, Any]) -> Any:
    stub = stub_llm_factory(script=script)
    monkeypatch.setenv("OPENAI_BASE_URL", stub.url)
    return stub


def test_a_sub_task_started_by_a_live_planner_reply_runs_live(
        runner: Runner, scripts: dict[str, Any], stub_llm_factory: Callable[..., Any],
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _start(stub_llm_factory, monkeypatch, scripts["subtasks"])
    runner.record(tmp_path / "parent", "subtasks")
    parent = list(load_bundle(tmp_path / "parent").events)
    anchor = next(e for e in parent if e.is_llm and e.lane == "planner")

    # live, the guided planner hands out one sub-task the recording never saw
    guided = {"match": {"agent": "You are the planner", "last_user_contains": "GUIDANCE",
                        "tool_result_present": False},
              "reply": {"tool_calls": [{"name": "run_subtask",
                                        "arguments": {"task": "Weather in Faro, carefully"}}]}}
    stub = _start(stub_llm_factory, monkeypatch, _script(scripts, "subtasks", guided))
    module, runs = runner.example("subtasks")
    with symtrace.replay(tmp_path / "parent", anchor=anchor.id, guidance=GUIDANCE,
                         out=tmp_path / "child", adapters=["ag2v1"]) as handle:
        out = runner.call(module.main)
    assert "FINAL: Faro (22°C) is warmer than Lisbon (19°C) today." in out
    child = load_bundle(tmp_path / "child")
    reasons = child.lineage["live_reasons"]
    sub = [e for e in child.events if e.is_llm and e.lane == "planner/subtask"]
    assert sub and all(e.id in handle.session.live_ids for e in sub)
    assert "by lane planner" in reasons[sub[0].id]  # dispatched_by the planner's lane
    assert runs["tool_body"] == 1 and stub.served == len(
        [e for e in child.events if e.is_llm and e.id in handle.session.live_ids])

    served = stub.served
    again = runner.replay(tmp_path / "child", "subtasks")
    assert again.stdout == out and again.tool_body_runs == 0 and stub.served == served


def test_network_tool_answers_with_ids_replay_strictly(
        runner: Runner, scripts: dict[str, Any], stub_llm_factory: Callable[..., Any],
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The planner looks its peers up with the Network `peers` tool, which answers with the
    hub's agent ids; the ids are in its next request."""
    finds = {"match": {"agent": "You plan school lessons", "tool_result_present": False},
             "reply": {"tool_calls": [{"name": "peers", "arguments": {"action": "find"}}]}}
    stub = _start(stub_llm_factory, monkeypatch, _script(scripts, "hub_delegate", finds))
    recorded = runner.record(tmp_path / "b", "hub_delegate")
    shown = stub.requests[-1]["messages"][-1]
    assert shown["role"] == "tool" and '"agent_id"' in shown["content"]
    served = stub.served
    for _ in range(3):
        assert runner.replay(tmp_path / "b", "hub_delegate").stdout == recorded.stdout
    assert stub.served == served


def test_network_ids_are_seeded_inside_a_session_only(tmp_path: Path) -> None:
    import asyncio

    from ag2.network import ids

    def minted(bundle: Path | None) -> tuple[list[str], list[str]]:
        async def mint() -> tuple[list[str], list[str]]:
            monotonic = ids._MonotonicIds()
            return [ids.make_id() for _ in range(3)], [monotonic() for _ in range(3)]

        if bundle is None:
            return asyncio.run(mint())
        with symtrace.record(bundle, adapters=["ag2v1"], seed=3):
            return asyncio.run(mint())

    first, second = minted(tmp_path / "one"), minted(tmp_path / "two")
    assert first == second
    envelopes = first[1]
    assert envelopes == sorted(envelopes) and len(set(envelopes)) == 3  # creation order kept
    assert all(len(i) == 32 and int(i, 16) >= 0 for i in first[0] + first[1])
    assert minted(None) != minted(None)  # outside a session: AG2's own clock + urandom ids


def test_sub_tasks_of_two_calls_in_one_message_are_named_by_call_position(
        runner: Runner, scripts: dict[str, Any], stub_llm_factory: Callable[..., Any],
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """`run_subtasks` (call #0) and `run_subtask` (call #1) in one message, one slot
    (`max_concurrency=1`): which sub-task is built first is the race for the slot. Before:
    lanes were numbered in build order, so the child of a selective replay gave the other
    task the first lane and its strict replay diverged (SYM-R101). Now each lane is the call
    that asked for it (and the slot goes to call #0 first: the next test)."""
    from ag2 import TaskConfig

    both = {"match": {"agent": "You are the planner", "tool_result_present": False},
            "reply": {"tool_calls": [
                {"name": "run_subtasks", "arguments": {"tasks": ["Weather in Lisbon"]}},
                {"name": "run_subtask", "arguments": {"task": "Weather in Faro"}}]}}
    _start(stub_llm_factory, monkeypatch, _script(scripts, "subtasks", both))
    one_slot = functools.partial(TaskConfig, max_concurrency=1)
    for attempt in range(3):
        bundle = tmp_path / f"b{attempt}"
        runner.record(bundle, "subtasks", TaskConfig=one_slot)
        lanes = {e.lane: e.request["body"]["messages"][1]["content"]
                 for e in load_bundle(bundle).events if e.is_llm and "subtask" in e.lane}
        assert lanes == {"planner/subtask": "Weather in Lisbon",
                         "planner/subtask#1": "Weather in Faro"}


# Two teams the program starts at once whose planners ask their tool the same thing (found by
# the generator: `delegation`, two teams at once, both planners calling the same tool with the
# same arguments). Team 0's tool returns only once team 1 has finished, so team 1's identical
# call and result are the latest producers when team 0's planner asks again.
TWIN_SCRIPT = {"rules": [
    {"match": {"agent": "You are the planner", "any_message_contains": "GUIDANCE",
               "tool_result_present": False},
     "reply": {"tool_calls": [{"name": "lookup", "arguments": {"city": "Faro"}}]}},
    {"match": {"agent": "You are the planner", "tool_result_present": True},
     "reply": {"content": "Porto it is."}},
    {"match": {"agent": "You are the planner"},
     "reply": {"tool_calls": [{"name": "lookup", "arguments": {"city": "Porto"}}]}},
]}
TEAM_WAIT = 10.0  # s: team 0's tool gives up waiting for team 1 (a replay must never hang)


async def _twin_planners(bodies: list[int]) -> list[str]:
    import asyncio

    from ag2 import Agent, tool
    from ag2.config import OpenAIConfig

    team1_done = asyncio.Event()

    def team(index: int) -> Agent:
        async def lookup(city: str) -> str:
            bodies[index] += 1
            if index == 0:  # bounded: on replay this body is served, never run
                await asyncio.wait_for(team1_done.wait(), TEAM_WAIT)
            return f"{city}: 19 degrees"

        return Agent("planner", "You are the planner.",
                     config=OpenAIConfig(model="gpt-4o-mini", max_retries=0),
                     tools=[tool(lookup, name="lookup", description="Weather of a city.")])

    planners = [team(0), team(1)]

    async def ask(index: int) -> str:
        reply = await planners[index].ask(f"Plan a day (request {index}).")
        if index == 1:
            team1_done.set()
        return str(reply.body)

    return list(await asyncio.gather(ask(0), ask(1)))


@pytest.mark.timeout(120)
def test_an_identical_tool_call_of_a_concurrent_team_draws_no_edge(
        stub_llm_factory: Callable[..., Any], monkeypatch: pytest.MonkeyPatch,
        tmp_path: Path) -> None:
    """Each planner's second request carries its own `lookup({"city": "Porto"})` call and
    result, which the other team's planner also made. Before: a turn the program started
    names no causes, so the graph linked them to the latest producer, team 1's; a selective
    replay anchored at team 1's planner (its live reply asks for Faro) superseded team 0's
    second request, whose request carried nothing live: nothing served it (SYM-R102).

    (An earlier version of this test made team 0's tool wait for team 1's *tool body*: when
    the replay served that body, as it must, and ran team 0's live, team 0 waited forever.
    Team 0 waits for team 1's answer now, bounded, and on replay its body is served.)"""
    import asyncio

    stub = _start(stub_llm_factory, monkeypatch, TWIN_SCRIPT)
    bodies = [0, 0]
    with symtrace.record(tmp_path / "parent", adapters=["ag2v1"]):
        recorded = asyncio.run(_twin_planners(bodies))
    assert recorded == ["Porto it is.", "Porto it is."] and bodies == [1, 1]
    events = list(load_bundle(tmp_path / "parent").events)
    lane_of = {e.id: e.lane for e in events}
    team = {"planner": 0, "planner@2": 1}
    for event in events:  # each team's events follow only its own team's
        if event.lane != "main":
            mine = team[event.lane.split("/")[0]]
            assert {team[lane_of[p].split("/")[0]] for p in event.parent_ids} <= {mine}
    results = [e.response for e in events if e.type.value == "tool_result"]
    assert len(results) == 2 and "Porto: 19 degrees" in str(results)  # not a timed-out wait
    anchor = next(e for e in events if e.is_llm and e.lane == "planner@2")

    bodies = [0, 0]
    with symtrace.replay(tmp_path / "parent", anchor=anchor.id, guidance=GUIDANCE,
                         out=tmp_path / "child", adapters=["ag2v1"]) as handle:
        replayed = asyncio.run(_twin_planners(bodies))
    assert replayed == recorded and bodies == [0, 1]  # team 0 served, team 1's Faro live
    child = {e.id: e for e in load_bundle(tmp_path / "child").events}
    live = {child[i].lane for i in handle.session.live_ids}
    assert live == {"planner@2", "planner@2/tool#0"}
    assert any("Faro" in str(child[i].request) for i in handle.session.live_ids)

    served, bodies = stub.served, [0, 0]
    with symtrace.replay(tmp_path / "child", adapters=["ag2v1"]):
        assert asyncio.run(_twin_planners(bodies)) == recorded
    assert stub.served == served and bodies == [0, 0]


BOTH_SUBTASK_CALLS = {"match": {"agent": "You are the planner", "tool_result_present": False},
                      "reply": {"tool_calls": [
                          {"name": "run_subtasks", "arguments": {"tasks": ["Weather in Lisbon"]}},
                          {"name": "run_subtask", "arguments": {"task": "Weather in Faro"}}]}}


def _slowed(tool_name: str) -> Callable[..., Any]:
    """A planner middleware that holds *tool_name*'s calls back on their way to the tool (and
    so to the sub-task slot): the scheduling of one run, made explicit."""
    import asyncio

    from ag2.middleware import BaseMiddleware

    class Slowed(BaseMiddleware):
        async def on_tool_execution(self, call_next: Any, event: Any, context: Any) -> Any:
            if event.name == tool_name:
                await asyncio.sleep(0.3)
            return await call_next(event, context)

    return Slowed


@pytest.mark.timeout(120)
def test_one_sub_task_slot_goes_to_the_calls_in_call_order_whatever_the_scheduling(
        runner: Runner, scripts: dict[str, Any], stub_llm_factory: Callable[..., Any],
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """`run_subtasks` (call #0) and `run_subtask` (call #1) in one message, one slot. The
    recording's scheduling holds call #0 back, the replay's holds call #1 back. Before: the
    slot went to whichever call reached it first, so call #1's sub-task ran first in the
    recording and call #0's in the replay, whose held results then waited for each other
    until the replay stopped with SYM-R105 (here after 3 s). Now call #0's sub-task asks for
    the slot first in both runs."""
    from ag2 import Agent, TaskConfig

    stub = _start(stub_llm_factory, monkeypatch,
                  _script(scripts, "subtasks", BOTH_SUBTASK_CALLS))
    one_slot = functools.partial(TaskConfig, max_concurrency=1)

    def slowed(tool_name: str) -> Callable[..., Any]:
        return functools.partial(Agent, middleware=[_slowed(tool_name)])

    recorded = runner.record(tmp_path / "b", "subtasks", TaskConfig=one_slot,
                             Agent=slowed("run_subtasks"))
    order = [e.lane for e in load_bundle(tmp_path / "b").events
             if e.is_llm and "subtask" in e.lane]
    assert order[0] == "planner/subtask"  # call #0's, although call #1 reached the slot first
    assert sorted(set(order)) == ["planner/subtask", "planner/subtask#1"]
    served = stub.served
    for held_back in ("run_subtask", "run_subtasks"):
        replayed = runner.replay(tmp_path / "b", "subtasks", TaskConfig=one_slot,
                                 Agent=slowed(held_back),
                                 order_timeout=3)  # a stalled replay fails fast
        assert replayed.stdout == recorded.stdout and replayed.tool_body_runs == 0
    assert stub.served == served
