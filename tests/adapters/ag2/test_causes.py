"""A turn caused by a live message goes live, even when the message carries no content.

Issue 19: the graph linked a later request to a live reply only through content the request
quotes. A tool-call reply has `content: null`; a nested chat's message function quotes it as
"Review this draft: None", and a `last_msg` / reflection summary of it is empty. Anchored
upstream, a selective replay then served the downstream call from the bundle, whose record the
recorded data edge had already superseded, and stopped with SYM-R102. The scripts below make
the live answer at the anchor content-less (or the summary it leads to), deterministically.
"""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

import symtrace
from symtrace import load_bundle

from ._support import Runner

pytestmark = pytest.mark.framework("ag2")

GUIDANCE = "Prefer the indoor option."


def _selective(runner: Runner, name: str, tmp_path: Path, anchor_of) -> tuple[object, object]:
    runner.record(tmp_path / "parent", name)
    anchor = anchor_of([e for e in load_bundle(tmp_path / "parent").events if e.is_llm])
    module, _ = runner.example(name)
    with symtrace.replay(tmp_path / "parent", anchor=anchor.id, guidance=GUIDANCE,
                         out=tmp_path / "child", adapters=["ag2"]) as handle:
        runner.call(module.main)
    return anchor, handle


def _strict_child(runner: Runner, name: str, tmp_path: Path, stub) -> None:
    served = stub.served
    runner.replay(tmp_path / "child", name)
    assert stub.served == served


def test_a_nested_chat_opened_by_a_tool_call_reply_goes_live(
    runner: Runner, stub_llm_factory, scripts, monkeypatch, tmp_path: Path
) -> None:
    """The writer's live answer is a tool call: the reviewer reads "Review this draft: None"."""
    script = copy.deepcopy(scripts["nested_chats"])
    script["rules"].insert(0, {"match": {"agent": "You are the writer",
                                         "any_message_contains": GUIDANCE},
                               "reply": {"tool_calls": [{"name": "lookup_weather",
                                                         "arguments": {"city": "Porto"}}]}})
    stub = stub_llm_factory(script=script)
    monkeypatch.setenv("OPENAI_BASE_URL", stub.url)

    anchor, handle = _selective(runner, "nested_chats", tmp_path,
                                lambda llm: next(e for e in llm if e.agent == "writer"))

    child = load_bundle(tmp_path / "child")
    assert child.lineage["anchor"] == anchor.id
    live = [e for e in child.events if e.id in handle.session.live_ids and e.is_llm]
    writer, reviewer = live[0], next(e for e in live if e.agent == "reviewer")
    assert writer.agent == "writer" and GUIDANCE in str(writer.request)
    opening = reviewer.request["body"]["messages"][-1]["content"]
    assert opening == "Review this draft:\n\nNone"  # nothing of the live reply to quote
    assert writer.id in reviewer.parent_ids  # the cause edge, content aside
    reasons = child.lineage["live_reasons"]
    assert "caused by lane writer" in reasons[reviewer.id]
    assert all(e.id in reasons for e in live)
    _strict_child(runner, "nested_chats", tmp_path, stub)


def test_a_prerequisite_chat_with_an_empty_summary_still_makes_the_next_chat_live(
    runner: Runner, stub_llm_factory, scripts, monkeypatch, tmp_path: Path
) -> None:
    """a_initiate_chats: the Porto chat's live summary is a tool call, so the writer chat's
    carryover quotes nothing of it; the writer chat still reads it, so it goes live."""
    script = copy.deepcopy(scripts["chats_async"])
    script["rules"][:0] = [
        {"match": {"agent": "You are the Porto researcher", "any_message_contains": GUIDANCE},
         "reply": {"content": "Drizzle."}},
        {"match": {"agent": "Summarise the facts", "any_message_contains": "Drizzle."},
         "reply": {"tool_calls": [{"name": "lookup_weather", "arguments": {"city": "Porto"}}]}},
    ]
    stub = stub_llm_factory(script=script)
    monkeypatch.setenv("OPENAI_BASE_URL", stub.url)

    def porto_answer(llm):
        return next(e for e in llm if "Porto researcher" in str(e.request)
                    and "tool" in str(e.request["body"]["messages"][-1].get("role")))

    anchor, handle = _selective(runner, "chats_async", tmp_path, porto_answer)

    child = load_bundle(tmp_path / "child")
    assert child.lineage["anchor"] == anchor.id
    live = [e for e in child.events if e.id in handle.session.live_ids and e.is_llm]
    writer = next(e for e in live if e.agent == "writer")
    assert "Porto" not in str(writer.request["body"]["messages"][-1])  # nothing carried
    reasons = child.lineage["live_reasons"]
    assert "caused by lane" in reasons[writer.id], reasons[writer.id]
    lisbon = [e for e in child.events if "Lisbon researcher" in str(e.request)]
    assert lisbon and not any(e.id in handle.session.live_ids for e in lisbon)
    _strict_child(runner, "chats_async", tmp_path, stub)


def test_a_random_speaker_draw_after_a_live_turn_is_live(
    runner: Runner, stub_llm_factory, monkeypatch, tmp_path: Path
) -> None:
    """Recorded, the first speaker ends the chat; live (with guidance) it goes on, so the chat
    needs draws the recording never made: they are caused by the live turn and go live."""
    stub = stub_llm_factory(script={
        "rules": [{"match": {"any_message_contains": GUIDANCE},
                   "reply": {"content": "Call it Nata Lua, the moon of custard."}}],
        "default": {"content": "TERMINATE"}})
    monkeypatch.setenv("OPENAI_BASE_URL", stub.url)

    anchor, handle = _selective(runner, "groupchat_random", tmp_path,
                                lambda llm: next(e for e in llm if e.reason is None))

    child = load_bundle(tmp_path / "child")
    assert child.lineage["anchor"] == anchor.id
    live = [e for e in child.events if e.id in handle.session.live_ids]
    draws = [e for e in live if e.type.value == "tool_call"
             and e.request.get("tool") == "ag2.random_select_speaker"]
    assert draws, "no draw after the live turn"
    assert "caused by lane" in child.lineage["live_reasons"][draws[0].id]
    _strict_child(runner, "groupchat_random", tmp_path, stub)
