"""AG2 1.x multi-agent patterns, each proven on real AG2 1.x against the scripted stub over
httpx2: record; 20 strict replays with no endpoint request, no tool body run and the same
output; an edited prompt that makes strict replay fail at that agent's first request; a
selective replay from an anchor and a strict replay of the child bundle.

Patterns: delegation (a streaming writer asks a researcher through `as_tool`; the researcher's
two concurrent tool calls, one raising), sub-tasks (`run_subtasks` fanning out two
short-lived agents at once), a Network hub consulting channel (the reviewer's turn started
by the hub, not by the program), and an agent asking another one over the hub itself (the
Network plugin's `delegate` tool, which runs on replay: it is AG2's plumbing, not a boundary).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

import symtrace
from symtrace import Event, load_bundle
from tests._support import check_selective_replay_and_strict_child
from tests.next_stack.ag2v1._support import SCENARIOS, Runner

REPLAYS = 20
GUIDANCE = "Be specific about the numbers."


def llm(events: list[Event]) -> list[Event]:
    return [e for e in events if e.is_llm]


def first(lane: str) -> Callable[[list[Event]], Event]:
    return lambda events: next(e for e in llm(events) if e.lane == lane)


def firsts(*lanes: str) -> Callable[[list[Event]], list[Event]]:
    """The first calls of lanes that run concurrently: an edit both share diverges at
    whichever of them the replay reaches first."""
    return lambda events: [first(lane)(events) for lane in lanes]


@dataclass(frozen=True)
class Pattern:
    constant: str  # the prompt the edit changes
    edited: str
    diverges_at: Callable[[list[Event]], list[Event]]
    anchor: Callable[[list[Event]], Event]


PATTERNS = {
    "delegation": Pattern("RESEARCHER_PROMPT", "You are the researcher. Be terse.",
                          firsts("researcher"), first("researcher")),
    "subtasks": Pattern("TASK_PROMPT", "You are a task agent. Answer in French.",
                        firsts("planner/subtask", "planner/subtask@2"),
                        first("planner/subtask@2")),
    "hub_consulting": Pattern("REVIEWER_PROMPT", "You critique lesson plans harshly.",
                              firsts("reviewer"), first("reviewer")),
    "hub_delegate": Pattern("REVIEWER_PROMPT", "You review lesson plans harshly.",
                            firsts("reviewer"), first("reviewer")),
}
assert set(PATTERNS) == set(SCENARIOS)


@pytest.mark.parametrize("name", SCENARIOS)
def test_twenty_strict_replays_reproduce_the_run_without_any_request(
        name: str, runner: Runner, endpoint, tmp_path: Path) -> None:
    stub = endpoint(name)
    recorded = runner.record(tmp_path / "b", name)
    served = stub.served
    assert served == len(llm(list(load_bundle(tmp_path / "b").events))) > 0
    assert recorded.final is not None and "FINAL: " in recorded.stdout
    for attempt in range(REPLAYS):
        replayed = runner.replay(tmp_path / "b", name)
        assert replayed.stdout == recorded.stdout, f"replay {attempt}"
        assert replayed.final == recorded.final
        assert replayed.tool_body_runs == 0
    assert stub.served == served, "a strict replay sent a request"


@pytest.mark.parametrize("name", SCENARIOS)
def test_an_edit_diverges_at_the_first_request_it_changes(
        name: str, runner: Runner, endpoint, tmp_path: Path) -> None:
    pattern = PATTERNS[name]
    stub = endpoint(name)
    runner.record(tmp_path / "b", name)
    candidates = pattern.diverges_at(list(load_bundle(tmp_path / "b").events))
    served = stub.served
    with pytest.raises(symtrace.RequestMismatch) as caught:
        runner.replay(tmp_path / "b", name, **{pattern.constant: pattern.edited})
    report = caught.value.report
    assert (report.event_id, report.agent, report.lane) in {
        (e.id, e.agent, e.lane) for e in candidates}
    assert any(d.path.startswith("/body/messages/0") for d in report.differences)
    assert stub.served == served


@pytest.mark.parametrize("name", SCENARIOS)
def test_selective_replay_from_an_anchor_and_strict_replay_of_the_child(
        name: str, runner: Runner, endpoint, tmp_path: Path) -> None:
    endpoint(name)
    runner.record(tmp_path / "parent", name)
    parent = list(load_bundle(tmp_path / "parent").events)
    anchor = PATTERNS[name].anchor(parent)
    stub = endpoint(name)  # scripted: the live suffix is deterministic

    again = check_selective_replay_and_strict_child(
        runner, name, tmp_path / "parent", tmp_path / "child", anchor, stub, GUIDANCE, "ag2v1")
    assert again.tool_body_runs == 0
