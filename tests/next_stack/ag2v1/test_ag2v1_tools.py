"""Who makes each call, and AG2 1.x tool calls as boundaries: lanes per agent object and per
concurrent tool call, sub-task agents named by their parent, tool errors replayed as the exact
text AG2 showed the model, delegations left to the agents they run."""

from __future__ import annotations

from pathlib import Path

import pytest

import symtrace
from symtrace import load_bundle
from tests.next_stack.ag2v1._support import Runner


def _events(path: Path) -> list:
    return list(load_bundle(path).events)


def test_each_agent_and_each_concurrent_tool_call_has_its_lane(
        runner: Runner, endpoint, tmp_path: Path) -> None:
    endpoint("delegation")
    runner.record(tmp_path / "b", "delegation")
    events = _events(tmp_path / "b")
    assert [(e.agent, e.lane) for e in events if e.is_llm] == [
        ("writer", "writer"), ("researcher", "researcher"), ("researcher", "researcher"),
        ("writer", "writer")]
    tools = [(e.agent, e.lane, e.request["tool"]) for e in events
             if e.type.value == "tool_call"]
    # the delegation to the researcher is not a boundary: its agent's calls are recorded
    assert sorted(tools) == [("researcher", "researcher/tool#0", "lookup_weather"),
                             ("researcher", "researcher/tool#1", "lookup_weather")]


def test_a_tool_error_replays_as_the_text_ag2_showed_the_model(
        runner: Runner, endpoint, tmp_path: Path) -> None:
    stub = endpoint("delegation")
    recorded = runner.record(tmp_path / "b", "delegation")
    assert recorded.tool_body_runs == 2
    shown = stub.requests[2]["messages"]  # the researcher's request after its tool calls
    errors = [m["content"] for m in shown if m["role"] == "tool" and "Traceback" in m["content"]]
    assert len(errors) == 1 and errors[0].rstrip().endswith(
        "StationClosed: the Porto station is closed")
    failed = [e for e in _events(tmp_path / "b")
              if e.type.value == "tool_result" and not e.response["ok"]]
    assert len(failed) == 1
    error = failed[0].response["error"]
    assert (error["type"], error["message"]) == ("StationClosed", "the Porto station is closed")
    assert error["detail"] == errors[0]

    replayed = runner.replay(tmp_path / "b", "delegation")  # strict: any other text diverges
    assert replayed.stdout == recorded.stdout and replayed.tool_body_runs == 0


def test_sub_task_agents_get_lanes_named_by_the_agent_that_spawned_them(
        runner: Runner, endpoint, tmp_path: Path) -> None:
    """AG2 names sub-task agents `subtask-<random hex>`: the lane and the agent recorded are
    named after the spawning agent instead, numbered in spawn order."""
    endpoint("subtasks")
    runner.record(tmp_path / "b", "subtasks")
    lanes = [(e.agent, e.lane) for e in _events(tmp_path / "b") if e.is_llm]
    assert lanes[0] == ("planner", "planner") and lanes[-1] == ("planner", "planner")
    assert sorted(set(lanes[1:-1])) == [("planner/subtask", "planner/subtask"),
                                        ("planner/subtask@2", "planner/subtask@2")]
    tools = sorted(e.lane for e in _events(tmp_path / "b") if e.type.value == "tool_call")
    assert tools == ["planner/subtask/tool#0", "planner/subtask@2/tool#0"]


def test_the_hub_starts_the_reviewers_turn_on_the_reviewers_lane(
        runner: Runner, endpoint, tmp_path: Path) -> None:
    endpoint("hub_consulting")
    recorded = runner.record(tmp_path / "b", "hub_consulting")
    assert [(e.agent, e.lane) for e in _events(tmp_path / "b") if e.is_llm] == [
        ("reviewer", "reviewer")]
    assert recorded.final == "Lead with the Sun: everything else orbits it."


def test_a_live_rerun_against_a_stochastic_endpoint_differs(
        runner: Runner, endpoint, tmp_path: Path) -> None:
    """The replays' sameness is the bundle's doing: unrecorded runs differ."""
    stub = endpoint(stochastic=True)
    first = runner.record(tmp_path / "one", "hub_consulting", seed=None)
    second = runner.record(tmp_path / "two", "hub_consulting", seed=None)
    assert stub.served >= 2
    assert first.stdout != second.stdout
    assert runner.replay(tmp_path / "one", "hub_consulting").stdout == first.stdout


def test_a_program_without_the_adapter_still_records_every_llm_call(
        runner: Runner, endpoint, tmp_path: Path) -> None:
    """Values come from the httpx2 boundary; the adapter only attributes them."""
    stub = endpoint("hub_consulting")
    module, _ = runner.example("hub_consulting")
    with symtrace.record(tmp_path / "b", adapters=[]):
        runner.call(module.main)
    assert len([e for e in _events(tmp_path / "b") if e.is_llm]) == stub.served == 1


@pytest.mark.parametrize("scenario", ["delegation"])
def test_a_streamed_reply_is_printed_chunk_by_chunk_on_replay_too(
        scenario: str, runner: Runner, endpoint, tmp_path: Path) -> None:
    stub = endpoint(scenario)
    recorded = runner.record(tmp_path / "b", scenario)
    writer_calls = [r for r in stub.requests if r.get("stream")]
    assert len(writer_calls) == 2, "the writer streams"
    replayed = runner.replay(tmp_path / "b", scenario)
    assert replayed.stdout.splitlines()[0] == recorded.stdout.splitlines()[0]
    assert "no comparison is possible" in replayed.stdout.splitlines()[0]


def test_diagnosis_reads_the_bundle_like_the_others(
        runner: Runner, endpoint, tmp_path: Path) -> None:
    """The tool error is the symptom (C3), traced back to the researcher's call that asked for
    Porto: an anchor a selective replay can start from."""
    from symtrace.diagnosis import diagnose

    endpoint("delegation")
    runner.record(tmp_path / "b", "delegation")
    diagnosis = diagnose(load_bundle(tmp_path / "b"))
    assert diagnosis.replayable
    anchor = diagnosis.anchor
    assert anchor is not None
    node = diagnosis.node(anchor.anchor)
    assert (node.view.agent, node.view.lane) == ("researcher", "researcher")
    assert any("StationClosed" in evidence.quote for evidence in anchor.evidence)


def test_the_hubs_delegate_tool_is_not_a_boundary_the_consulted_agent_is_recorded(
        runner: Runner, endpoint, tmp_path: Path) -> None:
    endpoint("hub_delegate")
    recorded = runner.record(tmp_path / "b", "hub_delegate")
    events = _events(tmp_path / "b")
    assert [(e.agent, e.lane) for e in events if e.is_llm] == [
        ("planner", "planner"), ("reviewer", "reviewer"), ("planner", "planner")]
    # ...only its wait for the reply: whether it came in time (test_ag2v1_delegate.py)
    calls = [e for e in events if e.type.value == "tool_call"]
    assert [(e.lane, e.request["tool"]) for e in calls] == [
        ("planner/tool#0", "ag2.network:wait_for_reply")]
    results = [e.response for e in events if e.type.value == "tool_result"]
    assert results == [{"ok": True, "value": {"timed_out": False}}]
    assert recorded.final == "Opener (reviewed): what would you take on a trip to Mars?"
