"""Who made each call, on which lane and why; and the shape of the event graph."""

from __future__ import annotations

import copy
import subprocess
import sys
from pathlib import Path

import pytest

import symtrace
from symtrace import EventType, load_bundle
from symtrace.model.graph import ancestors

from ._support import REPO, Runner

pytestmark = pytest.mark.framework("ag2")


def _events(path: Path) -> list[symtrace.Event]:
    return list(load_bundle(path).events)


class TestSpeakerSelection:
    def test_auto_selection_calls_belong_to_the_manager(
        self, runner: Runner, endpoint, tmp_path: Path
    ) -> None:
        endpoint("groupchat_auto")
        runner.record(tmp_path / "b", "groupchat_auto")
        actions = [e for e in _events(tmp_path / "b") if e.is_llm]
        selections = [e for e in actions if e.reason == "speaker_selection"]
        assert [e.response["body"]["choices"][0]["message"]["content"] for e in selections] \
            == ["planner", "researcher", "writer"]
        assert {(e.agent, e.lane) for e in selections} == {("chat_manager", "chat_manager")}
        others = [e for e in actions if e.reason is None]
        assert [e.agent for e in others] == ["planner", "researcher", "writer"]
        assert "speaker_selection_agent" not in {e.agent for e in actions}

    def test_async_selection_on_executor_threads_is_attributed_too(
        self, runner: Runner, endpoint, tmp_path: Path
    ) -> None:
        """a_initiate_chat runs the sync client on executor threads (no contextvars there)."""
        stub = endpoint("groupchat_auto")
        module, _ = runner.example("groupchat_auto")

        async def program() -> None:
            user, manager, group = module.build()
            await user.a_initiate_chat(manager, message=module.TASK)
            print([m.get("name") for m in group.messages])

        with symtrace.record(tmp_path / "b", adapters=["ag2"]):
            recorded = runner.call(program)
        actions = [e for e in _events(tmp_path / "b") if e.is_llm]
        assert len(actions) == stub.served == 6
        assert [(e.agent, e.reason) for e in actions if e.reason] == \
            [("chat_manager", "speaker_selection")] * 3
        assert all(e.lane == e.agent for e in actions)

        served = stub.served
        with symtrace.replay(tmp_path / "b", adapters=["ag2"]):
            assert runner.call(program) == recorded
        assert stub.served == served


class TestOtherInternalCalls:
    def test_reflection_summary_has_reason_summary(
        self, runner: Runner, stub_llm_factory, scripts, monkeypatch, tmp_path: Path
    ) -> None:
        script = copy.deepcopy(scripts["two_agent"])
        script["rules"].insert(0, {"match": {"agent": "Summarize the takeaway"},
                                   "reply": {"content": "Mild weather, about 91 USD."}})
        monkeypatch.setenv("OPENAI_BASE_URL", stub_llm_factory(script=script).url)
        module, _ = runner.example("two_agent")

        def program() -> None:
            user, assistant = module.build()
            user.initiate_chat(assistant, message=module.TASK,
                               summary_method="reflection_with_llm")

        with symtrace.record(tmp_path / "b", adapters=["ag2"]) as handle:
            runner.call(program)
        last = [e for e in _events(tmp_path / "b") if e.is_llm][-1]
        assert (last.agent, last.lane, last.reason) == ("user_proxy", "user_proxy", "summary")
        assert handle.session.final_value == "Mild weather, about 91 USD."


class TestGraph:
    def test_action_tool_call_result_next_action_chain(
        self, runner: Runner, endpoint, tmp_path: Path
    ) -> None:
        endpoint("two_agent")
        runner.record(tmp_path / "b", "two_agent")
        events = _events(tmp_path / "b")
        by_id = {e.id: e for e in events}
        for call in (e for e in events if e.type is EventType.TOOL_CALL):
            (asking,) = [p for p in call.parent_ids if by_id[p].is_llm]
            assert by_id[asking].lane == "assistant"
            assert call.lane == "user_proxy/tool#0" and call.agent == "user_proxy"
            result = next(e for e in events if e.parent_ids == (call.id,))
            assert result.type is EventType.TOOL_RESULT
            reader = next(e for e in events if e.is_llm and e.position > result.position)
            assert result.id in ancestors(events, reader.id)
        final = events[-1]
        assert final.type is EventType.FINAL_RESULT
        assert final.response["value"] == "Lisbon looks mild and your 120 EUR are about 91 USD. "

    def test_group_messages_are_edges_between_agents(
        self, runner: Runner, endpoint, tmp_path: Path
    ) -> None:
        endpoint("groupchat_auto")
        runner.record(tmp_path / "b", "groupchat_auto")
        events = _events(tmp_path / "b")
        agent = {e.agent: e for e in events if e.is_llm and e.reason is None}
        assert agent["planner"].id in ancestors(events, agent["researcher"].id)
        assert agent["researcher"].id in ancestors(events, agent["writer"].id)
        result = next(e for e in events if e.type is EventType.TOOL_RESULT)
        assert result.id in ancestors(events, agent["writer"].id)

    def test_a_raised_tool_error_is_data_and_feeds_the_next_call(
        self, runner: Runner, endpoint, tmp_path: Path
    ) -> None:
        endpoint("tool_error")
        runner.record(tmp_path / "b", "tool_error")
        events = _events(tmp_path / "b")
        result = next(e for e in events if e.type is EventType.TOOL_RESULT)
        assert result.response["ok"] is False
        assert result.response["error"]["type"] == "UnsupportedCurrency"
        assert result.response["error"]["message"] == "no exchange rate for 'BTC'"
        answer = [e for e in events if e.is_llm][-1]
        assert result.id in answer.parent_ids

    def test_symtrace_show_names_agents_lanes_and_reasons(
        self, runner: Runner, endpoint, tmp_path: Path
    ) -> None:
        endpoint("groupchat_auto")
        runner.record(tmp_path / "b", "groupchat_auto")
        shown = subprocess.run(
            [sys.executable, "-m", "symtrace", "show", str(tmp_path / "b")],
            capture_output=True, text=True, cwd=REPO, env={"COLUMNS": "250", "PATH": ""},
            check=True,
        ).stdout
        for text in ("chat_manager", "speaker_selection", "planner", "writer",
                     "user_proxy/tool#0", "lookup_weather"):
            assert text in shown
