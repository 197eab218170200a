"""Selective replay from a mid-run anchor, and repeated strict replay of concurrent tool calls."""

from __future__ import annotations

from pathlib import Path

import pytest

import symtrace
from symtrace import EventType, load_bundle

from ._support import Runner, assert_same_console

pytestmark = pytest.mark.framework("ag2")

GUIDANCE = "Check the exchange rate date before converting."


class TestSelectiveReplay:
    def test_anchor_and_later_requests_go_live_with_guidance_and_child_replays(
        self, runner: Runner, endpoint, tmp_path: Path
    ) -> None:
        stub = endpoint("two_agent")
        runner.record(tmp_path / "parent", "two_agent")
        parent = load_bundle(tmp_path / "parent")
        anchor = [e for e in parent.events if e.is_llm][1]  # the second assistant decision
        before = stub.served

        module, runs = runner.example("two_agent")
        with symtrace.replay(tmp_path / "parent", anchor=anchor.id, guidance=GUIDANCE,
                             out=tmp_path / "child", adapters=["ag2"]) as handle:
            runner.call(module.main)
        session = handle.session

        live = stub.requests[before:]
        assert live, "nothing went live"
        assert live[0]["messages"][-1] == {"role": "user", "content": GUIDANCE}
        assert all(GUIDANCE not in str(r["messages"]) for r in live[1:])
        child = load_bundle(tmp_path / "child")
        live_actions = [e for e in child.events
                        if e.is_llm and e.id in session.live_ids]
        assert len(live) == len(live_actions)  # exactly the anchor and what followed it
        replayed = [e for e in child.events if e.id in session.replayed_ids]
        assert {e.id for e in replayed} == {e.id for e in parent.events
                                            if e.position < anchor.position}
        assert runs["tool_body"] > 0  # tools after the anchor ran for real
        assert child.lineage["anchor"] == anchor.id

        served = stub.served
        again = runner.replay(tmp_path / "child", "two_agent")
        assert stub.served == served
        assert again.tool_body_runs == 0

    def test_a_tool_result_anchor_moves_to_the_call_that_reads_it(
        self, runner: Runner, endpoint, tmp_path: Path
    ) -> None:
        """Anchoring at a tool observation re-asks the LLM call that consumed it."""
        endpoint("two_agent")
        runner.record(tmp_path / "b", "two_agent")
        bundle = load_bundle(tmp_path / "b")
        result = next(e for e in bundle.events if e.type is EventType.TOOL_RESULT)
        resolved = symtrace.resolve_anchor(bundle, result.id)
        consumer = next(e for e in bundle.events if e.is_llm and result.id in e.parent_ids)
        assert resolved.event_id == consumer.id


class TestConcurrentToolCalls:
    def test_twenty_strict_replays_of_parallel_tool_calls_never_diverge(
        self, runner: Runner, endpoint, tmp_path: Path
    ) -> None:
        """Three tool calls of one message run under asyncio.gather, finishing in varying
        order; each has its own lane, so every replay matches."""
        stub = endpoint("two_agent_async")
        recorded = runner.record(tmp_path / "b", "two_agent_async")
        calls = [e for e in load_bundle(tmp_path / "b").events if e.type is EventType.TOOL_CALL]
        assert len({e.lane for e in calls}) == 3
        served = stub.served
        for _ in range(20):
            replayed = runner.replay(tmp_path / "b", "two_agent_async")
            assert_same_console("two_agent_async", recorded.stdout, replayed.stdout)
            assert replayed.tool_body_runs == 0
        assert stub.served == served
