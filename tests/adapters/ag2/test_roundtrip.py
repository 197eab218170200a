"""Record → strict replay reproduces every AG2 scenario, and replay is what makes runs equal."""

from __future__ import annotations

from pathlib import Path

import pytest

import symtrace
from symtrace import EventType, load_bundle

from ._support import SCENARIOS, TOOL_HELPERS, Runner, assert_same_console

pytestmark = pytest.mark.framework("ag2")


class TestStrictReplay:
    @pytest.mark.parametrize("name", SCENARIOS)
    def test_replay_reproduces_output_and_transcript_without_endpoint_or_tools(
        self, name: str, runner: Runner, endpoint, tmp_path: Path
    ) -> None:
        """Same output (AG2's console transcript included), same final value, 0 requests
        served, no tool body run."""
        stub = endpoint(name)
        recorded = runner.record(tmp_path / "b", name)
        served = stub.served
        assert served > 0
        assert recorded.transcript
        if name in TOOL_HELPERS:
            assert recorded.tool_body_runs > 0

        replayed = runner.replay(tmp_path / "b", name)

        assert stub.served == served, "replay reached the endpoint"
        assert replayed.tool_body_runs == 0, "a tool body ran during replay"
        assert "TERMINATING RUN" in recorded.stdout  # AG2's own console is compared too
        assert_same_console(name, recorded.stdout, replayed.stdout)
        assert replayed.final == recorded.final
        assert isinstance(recorded.final, str) and recorded.final

    def test_every_llm_call_is_recorded_and_attributed(
        self, runner: Runner, endpoint, tmp_path: Path
    ) -> None:
        """Each request the endpoint served is one agent_action with an agent and a lane."""
        stub = endpoint("groupchat_auto")
        runner.record(tmp_path / "b", "groupchat_auto")
        actions = [e for e in load_bundle(tmp_path / "b").events if e.is_llm]
        assert len(actions) == stub.served
        assert all(e.agent and e.lane == e.agent for e in actions)


class TestLiveRerun:
    def test_a_live_rerun_differs_while_the_replay_does_not(
        self, runner: Runner, endpoint, tmp_path: Path
    ) -> None:
        """Against a sampling endpoint the same program gives another conversation; the
        recording replays to the recorded one."""
        stub = endpoint(stochastic=True)
        recorded = runner.record(tmp_path / "b", "two_agent")
        rerun = runner.live("two_agent")
        assert rerun.transcript != recorded.transcript

        served = stub.served
        replayed = runner.replay(tmp_path / "b", "two_agent")
        assert replayed.stdout == recorded.stdout
        assert stub.served == served


class TestChangedProgram:
    def test_changed_prompt_fails_at_the_first_affected_event(
        self, runner: Runner, endpoint, tmp_path: Path
    ) -> None:
        """Editing the writer's prompt leaves the earlier selections and agents matching; the
        report names the writer's call."""
        stub = endpoint("groupchat_auto")
        runner.record(tmp_path / "b", "groupchat_auto")
        bundle = load_bundle(tmp_path / "b")
        writer_call = next(e for e in bundle.events if e.is_llm and e.agent == "writer")
        served = stub.served

        with pytest.raises(symtrace.RequestMismatch) as caught:
            runner.replay(tmp_path / "b", "groupchat_auto",
                          WRITER_PROMPT="You are the writer. Write it in French. TERMINATE.")

        report = caught.value.report
        assert report.event_id == writer_call.id
        assert report.lane == "writer" and report.agent == "writer"
        assert report.matched_before == sum(1 for e in bundle.events
                                            if e.position < writer_call.position
                                            and e.type in (EventType.AGENT_ACTION,
                                                           EventType.TOOL_CALL))
        assert any("content" in d.path for d in report.differences)
        assert stub.served == served

    def test_an_extra_llm_call_fails_closed(
        self, runner: Runner, endpoint, tmp_path: Path
    ) -> None:
        """A call the recording does not have is refused, never sent."""
        stub = endpoint("two_agent")
        runner.record(tmp_path / "b", "two_agent")
        served = stub.served
        module, _ = runner.example("two_agent")

        def twice() -> None:
            module.main()
            module.main()  # one chat more than was recorded, with a new "assistant" object

        with pytest.raises(symtrace.UnexpectedCall) as caught, \
                symtrace.replay(tmp_path / "b", adapters=["ag2"]):
            runner.call(twice)
        assert caught.value.report.lane == "assistant@2"  # the second agent of that name
        assert caught.value.report.agent == "assistant"
        assert stub.served == served
