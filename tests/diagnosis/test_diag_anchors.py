"""Algorithm 4 (first eligible node in observed order), LLM-boundary resolution, and the
random/last controls."""

from __future__ import annotations

from dataclasses import replace

import pytest

from symtrace.diagnosis import (
    AnchorPolicy,
    NoEligibleAnchor,
    ScoringConfig,
    build_context,
    diagnose,
    plan_repair,
    select_anchor,
)
from symtrace.diagnosis.anchors import decisions, resolve_boundary
from symtrace.errors import UnknownEvent, UnreplayableEvent

from ._support import TraceBuilder, gold_c2, gold_c3


def boundary(bundle, node_id):
    ctx = build_context(bundle)
    return resolve_boundary(ctx.by_id[node_id], ctx)


class TestBoundary:
    def test_agent_action_is_its_own_boundary(self):
        b = gold_c3()
        assert boundary(b, "agent_action_0001").relation == "self"

    def test_tool_result_resumes_at_the_call_that_reads_it(self):
        got = boundary(gold_c3(), "tool_result_0000")
        assert (got.event_id, got.relation) == ("agent_action_0001", "downstream")

    def test_final_result_falls_back_to_its_producer(self):
        got = boundary(gold_c3(), "final_result_0000")
        assert (got.event_id, got.relation) == ("agent_action_0002", "producer")

    def test_framework_internal_calls_are_not_anchors(self):
        """A speaker-selection call is skipped; the next agent decision is used."""
        b = TraceBuilder()
        b.agent(None, calls=[("fetch", {"id": 1})])
        b.tool("fetch", {"id": 1}, error={"type": "Timeout", "message": "t"})
        internal = b.agent("coder", reason="speaker_selection")
        decision = b.agent("Retrying.", agent="coder")
        bundle = b.bundle()
        assert [v.id for v in decisions(build_context(bundle))] == ["agent_action_0000", decision]
        assert boundary(bundle, "tool_result_0000").event_id == decision
        assert boundary(bundle, internal).event_id != internal

    def test_no_llm_call_means_no_boundary(self):
        b = TraceBuilder()
        b.tool("fetch", {"id": 1}, error={"type": "Timeout", "message": "t"})
        d = diagnose(b.bundle())
        node = d.node("tool_result_0000")
        assert node.scores is not None and node.boundary is None and not node.eligible
        assert d.anchor is None


class TestSuspiciousPolicy:
    def test_first_eligible_in_observed_order_not_the_highest_score(self):
        d = diagnose(gold_c2())
        eligible = [n for n in d.nodes if n.eligible]
        assert d.anchor.target == eligible[0].view.id
        assert d.ranking()[0].c_f >= eligible[0].c_f
        assert select_anchor(d) is d.anchor

    def test_theta_gates_eligibility(self):
        d = diagnose(gold_c2(), config=ScoringConfig(theta=0.99))
        assert d.anchor is None and not d.ranking()
        with pytest.raises(NoEligibleAnchor, match="not strong enough to repair from"):
            plan_repair(gold_c2(), config=ScoringConfig(theta=0.99))

    def test_no_rule_no_intervention(self):
        b = TraceBuilder("What is 2 + 2?")
        b.agent("Final answer: 4")
        b.final("4")
        with pytest.raises(NoEligibleAnchor, match="No symptom found"):
            plan_repair(b.bundle())

    def test_analysis_only_trace_is_diagnosed_but_not_repaired(self):
        b = TraceBuilder()
        b.agent(None, calls=[("browse", {"url": "__SHOP__"})])
        bundle = b.bundle(replayable=False)
        d = diagnose(bundle)
        assert d.anchor is not None and not d.anchor.replayable
        with pytest.raises(UnreplayableEvent, match="analysis-only"):
            plan_repair(bundle)

    def test_unknown_node(self):
        with pytest.raises(UnknownEvent):
            diagnose(gold_c2()).node("agent_action_0099")


class TestControls:
    def test_last_is_the_last_agent_decision(self):
        d = diagnose(gold_c2())
        choice = select_anchor(d, "last")
        assert choice.anchor == choice.target == "agent_action_0003"
        assert choice.categories == () and choice.evidence == ()

    def test_random_is_seeded_and_uniform_over_decisions(self):
        d = diagnose(gold_c2())
        ids = {v.id for v in decisions(d.context)}
        picks = [select_anchor(d, AnchorPolicy.RANDOM, seed=s).anchor for s in range(40)]
        assert set(picks) <= ids and len(set(picks)) > 1
        assert picks == [select_anchor(d, "random", seed=s).anchor for s in range(40)]
        assert select_anchor(d, "random", seed=7).seed == 7

    def test_controls_ignore_the_judge_and_get_no_symptoms(self):
        calls = []

        def judge(request):
            calls.append(request)
            raise AssertionError("the controls must not consult the judge")

        plan = plan_repair(gold_c3(), policy="last", judge=judge)
        assert not calls
        assert "C1" not in plan.guidance and "C3" not in plan.guidance

    def test_unknown_policy(self):
        with pytest.raises(ValueError):
            select_anchor(diagnose(gold_c2()), "best")

    def test_same_budget_one_anchor_each(self):
        for policy in AnchorPolicy:
            plan = plan_repair(gold_c2(), policy=policy, config=replace(ScoringConfig()))
            assert isinstance(plan.choice.anchor, str) and plan.guidance
