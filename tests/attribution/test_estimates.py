"""Planning and estimating an attribution without running anything: candidates, critical
step (Holm, "none found"), rollouts without verdict, EDGE's validated edges."""

from __future__ import annotations

from pathlib import Path

import pytest

import symtrace
from symtrace.diagnosis import diagnose
from symtrace.diagnosis.attribution import (
    REPAIR,
    RESAMPLE,
    AttributionPlan,
    Candidate,
    RolloutResult,
    Symptom,
    estimate,
    plan_attribution,
)
from symtrace.diagnosis.errors import DiagnosisConfigError

REPO = Path(__file__).resolve().parents[2]
FAILED = REPO / "bundles" / "ag2-tool_error"


def test_plan_lists_the_anchor_symptom_boundaries_and_ancestors_in_trace_order():
    bundle = symtrace.load_bundle(FAILED)
    plan = plan_attribution(bundle, diagnose(bundle), k=3)
    nodes = [c.node for c in plan.candidates]
    assert nodes == sorted(nodes, key=lambda n: next(c.index for c in plan.candidates
                                                     if c.node == n))
    diagnosis = diagnose(bundle)
    assert diagnosis.anchor.anchor in nodes
    assert len(plan.rollouts) == len(nodes) * 2 * 3
    repair = [r for r in plan.rollouts if r.arm == REPAIR]
    assert all(r.guidance for r in repair)  # the symptom's template
    assert all(r.guidance == "" for r in plan.rollouts if r.arm == RESAMPLE)
    capped = plan_attribution(bundle, diagnosis, budget=1, guidance="Fix it.")
    assert [c.node for c in capped.candidates] == [diagnosis.anchor.anchor]
    assert capped.skipped and capped.candidates[0].guidance == "Fix it."
    every = plan_attribution(bundle, diagnosis, every_decision=True, budget=None)
    assert len(every.candidates) >= len(plan.candidates)


def test_control_text_goes_to_every_resample_and_into_the_plan_only_when_set():
    bundle = symtrace.load_bundle(FAILED)
    diagnosis = diagnose(bundle)
    plain = plan_attribution(bundle, diagnosis, k=2)
    neutral = plan_attribution(bundle, diagnosis, k=2, control_text="Take this step again.")
    assert "control_text" not in plain.to_json()  # an earlier attribution's plan resumes
    assert neutral.to_json()["control_text"] == "Take this step again."
    resamples = [r for r in neutral.rollouts if r.arm == RESAMPLE]
    assert resamples and all(r.guidance == "Take this step again." for r in resamples)
    assert [r.guidance for r in neutral.rollouts if r.arm == REPAIR] == [
        r.guidance for r in plain.rollouts if r.arm == REPAIR]
    with pytest.raises(DiagnosisConfigError, match="--control-text"):
        plan_attribution(bundle, diagnosis, control_text="  ")


@pytest.mark.parametrize(("k", "budget"), [(0, 3), (2, 0)])
def test_bad_sizes_are_usage_errors(k, budget):
    bundle = symtrace.load_bundle(FAILED)
    with pytest.raises(DiagnosisConfigError):
        plan_attribution(bundle, diagnose(bundle), k=k, budget=budget)


def _plan(k: int) -> AttributionPlan:
    a = Candidate("agent_action_0001", 1, "planner", "x", "fix A")
    b = Candidate("agent_action_0004", 4, "writer", "x", "fix B")
    s1 = Symptom("tool_result_0000", 2, "researcher", ("C3",), "agent_action_0001")
    s2 = Symptom("final_result_0000", 6, "writer", ("C4",), "agent_action_0004")
    return AttributionPlan("b", (a, b), (s1, s2), k, True)


def _results(node: str, repair: list, resample: list, symptoms=None) -> list[RolloutResult]:
    out = []
    for arm, values in ((REPAIR, repair), (RESAMPLE, resample)):
        for i, passed in enumerate(values):
            live = (symptoms or {}).get((arm, i), ())
            out.append(RolloutResult(node, arm, i, passed, f"c/{node}-{arm}-{i}",
                                     live_symptoms=tuple(live)))
    return out


def test_critical_step_is_the_earliest_holm_significant_node():
    plan = _plan(6)
    results = (_results("agent_action_0001", [True] * 6, [False] * 6)
               + _results("agent_action_0004", [True] * 6, [False] * 6))
    result = estimate(plan, results)
    first, second = result.nodes
    assert second.significant
    assert first.test.p_value == 1 / 64 and first.adjusted_p == 2 / 64
    assert result.critical is first  # both significant: the earlier one is critical
    assert first.repair.successes == 6 and first.resample.successes == 0


def test_none_found_when_holm_keeps_nothing_below_alpha():
    plan = _plan(5)
    results = (_results("agent_action_0001", [True] * 5, [False] * 5)
               + _results("agent_action_0004", [True] * 5, [True] * 5))
    result = estimate(plan, results)
    assert result.nodes[0].test.p_value == 1 / 32  # 0.031 raw, 0.0625 after Holm
    assert result.critical is None
    assert estimate(plan, results, alpha=0.1).critical.candidate.node == "agent_action_0001"
    assert result.to_json()["critical_step"] is None


def test_a_rollout_without_verdict_drops_its_pair_and_is_counted():
    plan = _plan(3)
    results = _results("agent_action_0001", [True, None, True], [False, False, False])
    node = estimate(plan, results).nodes[0]
    assert (node.repair.n, node.resample.n, node.errors) == (2, 2, 1)
    assert estimate(plan, results).nodes[1].repair.n == 0  # nothing ran there: no estimate


def test_validated_edge_when_repairing_a_removes_b():
    plan = _plan(4)
    a_gone_b_gone: dict = {}
    a_gone_b_stays = {(REPAIR, i): [("C4", "writer")] for i in range(4)}
    results = _results("agent_action_0001", [True] * 4, [False] * 4, a_gone_b_gone)
    (edge,) = estimate(plan, results).edges
    assert (edge.source.node, edge.target.node) == ("tool_result_0000", "final_result_0000")
    assert edge.effect.validated and edge.effect.delta == 1.0 and edge.effect.verified == 4
    results = _results("agent_action_0001", [True] * 4, [False] * 4, a_gone_b_stays)
    assert not estimate(plan, results).edges[0].effect.validated
    a_persists = {(REPAIR, i): [("C3", "researcher")] for i in range(4)}
    results = _results("agent_action_0001", [True] * 4, [False] * 4, a_persists)
    assert estimate(plan, results).edges[0].effect.verified == 0  # no verified repair of A
