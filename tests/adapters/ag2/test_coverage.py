"""Coverage of AG2's main conversation patterns, each proven on real AG2 against the stub:
record; 20 strict replays with no request and the same console output; an edit that makes
strict replay fail at the right event; selective replay from an anchor and a strict replay of
the child bundle.

Patterns: nested chats (`register_nested_chats`, summarised by `reflection_with_llm`), a chat
sequence (`initiate_chats` with carryover and a `reflection_with_llm` summary), concurrent
chats (`a_initiate_chats`: two at once sharing the user proxy, then one with both summaries as
carryover), and the auto-selecting group chat run with `a_initiate_chat`.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

import symtrace
from symtrace import Event, load_bundle

from ..._support import check_selective_replay_and_strict_child
from ._support import Runner, assert_same_console

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
        Pattern("chats_async", "chats_async", "WRITER_QUESTION", "Which city is drier?",
                first("writer"), first("user_proxy", "summary")),
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
        assert replayed.transcript == recorded.transcript, f"replay {attempt}"
        assert_same_console(name, recorded.stdout, replayed.stdout)
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

    check_selective_replay_and_strict_child(runner, name, tmp_path / "parent",
                                            tmp_path / "child", anchor, stub, GUIDANCE, "ag2")


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


def test_concurrent_chats_sharing_agents_or_names_keep_their_calls_apart(
        runner: Runner, endpoint, tmp_path: Path) -> None:
    """The two chats a_initiate_chats runs at once both use the user proxy (tools, summary),
    and their researchers share a name: on one lane their interleaving would be a spurious
    reordering, so each chat and each agent object is its own actor."""
    endpoint("chats_async")
    runner.record(tmp_path / "b", "chats_async")
    events = list(load_bundle(tmp_path / "b").events)
    proxy = {(e.type.value, e.lane) for e in events
             if e.agent == "user_proxy" and e.type.value in ("agent_action", "tool_call")}
    assert proxy == {("tool_call", "chat#1/user_proxy/tool#0"),
                     ("tool_call", "chat#2/user_proxy/tool#0"),
                     ("agent_action", "chat#1/user_proxy"), ("agent_action", "chat#2/user_proxy")}
    researchers = {e.lane for e in llm(events) if e.agent == "researcher"}
    assert researchers == {"researcher", "researcher@2"}, "two agents, one name: two lanes"
    writer = next(e for e in llm(events) if e.agent == "writer")
    assert writer.lane == "writer"
    opening = writer.request["body"]["messages"][-1]["content"]
    assert opening.endswith("Lisbon is 19°C.\nPorto is 16°C.")  # prerequisite order


def test_concurrent_chats_with_one_recipient_are_refused_before_any_request(
        runner: Runner, endpoint, tmp_path: Path) -> None:
    """Two chats at once with the same recipient interleave in that agent's own history by
    thread timing: refused at record time with a typed error, nothing sent."""
    from autogen import UserProxyAgent
    from symtrace_ag2 import UnsupportedConstruct

    stub = endpoint("chats_async")
    module, _ = runner.example("chats_async")

    async def program() -> None:
        user = UserProxyAgent("user_proxy", human_input_mode="NEVER",
                              code_execution_config=False)
        shared = module.researcher("Lisbon", user)
        await user.a_initiate_chats([
            {"chat_id": 1, "recipient": shared, "message": "Weather in Lisbon?", "max_turns": 1},
            {"chat_id": 2, "recipient": shared, "message": "Weather in Porto?", "max_turns": 1},
            {"chat_id": 3, "recipient": shared, "message": "Again?", "max_turns": 1,
             "prerequisites": [1, 2]},  # ordered after both: not the problem
        ])

    with pytest.raises(UnsupportedConstruct, match=r"chats 1 and 2 .* 'researcher'") as caught, \
            symtrace.record(tmp_path / "b", adapters=["ag2"]):
        runner.call(program)
    assert isinstance(caught.value, symtrace.AdapterError)
    assert UnsupportedConstruct is symtrace.UnsupportedConstruct  # one class, in core
    assert stub.served == 0
    assert not (tmp_path / "b").exists()  # a refused recording keeps nothing
