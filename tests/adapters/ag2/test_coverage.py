"""Coverage of AG2's main conversation patterns, each proven on real AG2 against the stub:
record; 20 strict replays with no request and the same console output; an edit that makes
strict replay fail at the right event; selective replay from an anchor and a strict replay of
the child bundle.

Patterns: nested chats (`register_nested_chats`, summarised by `reflection_with_llm`), a chat
sequence (`initiate_chats` with carryover and a `reflection_with_llm` summary), and the
auto-selecting group chat run with `a_initiate_chat`.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import Runner

import symtrace
from symtrace import Event, load_bundle

pytestmark = pytest.mark.framework("ag2")
REPLAYS = 20
GUIDANCE = "Be specific about the weather."


def llm(events: list[Event]) -> list[Event]:
    return [e for e in events if e.is_llm]


def first(agent: str, reason: str | None = None) -> Callable[[list[Event]], Event]:
    return lambda events: next(e for e in llm(events) if e.agent == agent and e.reason == reason)


@dataclass(frozen=True)
class Pattern:
    name: str
    module: str  # where the edited constant lives
    constant: str
    edited: str
    diverges_at: Callable[[list[Event]], Event]
    anchor: Callable[[list[Event]], Event]


PATTERNS = {
    pattern.name: pattern for pattern in (
        Pattern("nested_chats", "nested_chats", "REVIEWER_PROMPT",
                "You are the reviewer. Be harsh.", first("reviewer"), first("reviewer")),
        Pattern("chat_sequence", "chat_sequence", "SUMMARY_PROMPT",
                "Summarise in five words.", first("user_proxy", "summary"),
                first("user_proxy", "summary")),
        Pattern("groupchat_async", "groupchat_auto", "WRITER_PROMPT",
                "You are the writer. Write in French. TERMINATE.", first("writer"),
                first("researcher")),
    )
}


def edit_constant(runner: Runner, pattern: Pattern) -> None:
    """Edit the pattern's constant where the example reads it (a helper module, maybe)."""
    if pattern.module != pattern.name:
        runner.example(pattern.name)  # imports the helper module
        runner.monkeypatch.setattr(sys.modules[pattern.module], pattern.constant,
                                   pattern.edited)


@pytest.mark.parametrize("name", PATTERNS)
def test_twenty_strict_replays_reproduce_the_run_without_any_request(
        name: str, runner: Runner, endpoint, tmp_path: Path) -> None:
    stub = endpoint(name)
    recorded = runner.record(tmp_path / "b", name)
    served = stub.served
    assert served == len(llm(list(load_bundle(tmp_path / "b").events))) > 0
    for attempt in range(REPLAYS):
        replayed = runner.replay(tmp_path / "b", name)
        assert replayed.stdout == recorded.stdout, f"replay {attempt}"
        assert replayed.final == recorded.final
    assert stub.served == served, "a strict replay sent a request"


@pytest.mark.parametrize("name", PATTERNS)
def test_an_edit_diverges_at_the_first_request_it_changes(
        name: str, runner: Runner, endpoint, tmp_path: Path) -> None:
    pattern = PATTERNS[name]
    stub = endpoint(name)
    runner.record(tmp_path / "b", name)
    expected = pattern.diverges_at(list(load_bundle(tmp_path / "b").events))
    served = stub.served
    overrides = {}
    if pattern.module == name:
        overrides[pattern.constant] = pattern.edited
    else:
        edit_constant(runner, pattern)
    with pytest.raises(symtrace.RequestMismatch) as caught:
        runner.replay(tmp_path / "b", name, **overrides)
    report = caught.value.report
    assert (report.event_id, report.agent, report.lane) == (
        expected.id, expected.agent, expected.lane)
    assert any(d.path.startswith("/body/messages/") for d in report.differences)
    assert stub.served == served


@pytest.mark.parametrize("name", PATTERNS)
def test_selective_replay_from_an_anchor_and_strict_replay_of_the_child(
        name: str, runner: Runner, endpoint, tmp_path: Path) -> None:
    endpoint(name)
    runner.record(tmp_path / "parent", name)
    parent = list(load_bundle(tmp_path / "parent").events)
    anchor = PATTERNS[name].anchor(parent)
    stub = endpoint(name)  # scripted: the live suffix is deterministic

    module, _ = runner.example(name)
    with symtrace.replay(tmp_path / "parent", anchor=anchor.id, guidance=GUIDANCE,
                         out=tmp_path / "child", adapters=["ag2"]) as handle:
        runner.call(module.main)
    child = load_bundle(tmp_path / "child")
    assert stub.requests[0]["messages"][-1] == {"role": "user", "content": GUIDANCE}
    assert stub.served == sum(1 for e in llm(child.events) if e.id in handle.session.live_ids)
    assert {e.id for e in parent if e.position < anchor.position and e.is_llm} <= set(
        child.lineage["replayed_events"])
    assert anchor.id in child.lineage["superseded_events"]

    served = stub.served
    again = runner.replay(tmp_path / "child", name)
    assert stub.served == served, "the child's strict replay sent a request"
    assert again.final == child.final_result().response["value"]


def test_who_speaks_in_each_pattern(runner: Runner, endpoint, tmp_path: Path) -> None:
    """Nested chat calls are the nested agents'; summaries say so; async selection is the
    manager's; carryover reaches the next chat's first request."""
    expected = {
        "nested_chats": [("writer", None), ("reviewer", None), ("critic", "summary"),
                         ("writer", None)],
        "chat_sequence": [("researcher", None), ("user_proxy", "summary"), ("writer", None)],
        "groupchat_async": [("chat_manager", "speaker_selection"), ("planner", None),
                            ("chat_manager", "speaker_selection"), ("researcher", None),
                            ("chat_manager", "speaker_selection"), ("writer", None)],
    }
    for name, calls in expected.items():
        endpoint(name)
        runner.record(tmp_path / name, name)
        events = llm(list(load_bundle(tmp_path / name).events))
        assert [(e.agent, e.reason) for e in events] == calls, name
        assert all(e.lane == e.agent for e in events)
        if name == "chat_sequence":
            writer = events[-1].request["body"]["messages"]
            assert "hand luggage only" in str(writer) and "about 20°C" in str(writer)
