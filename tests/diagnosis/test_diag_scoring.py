"""Equations 21–34 against values worked out by hand from the paper's formulas (App. F.2,
coefficients 36–38)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from symtrace.diagnosis import Category, Features, ScoringConfig, diagnose, score
from symtrace.diagnosis.scoring import position
from symtrace.model.events import EventType

from ._support import TraceBuilder, gold_c4

C1, C2, C3, C4 = Category.C1, Category.C2, Category.C3, Category.C4
K = ScoringConfig()


def feats(node_type, cats, c_l, c_r, *, prop=False, rho=0.0, c_llm=None):
    return Features(node_type, tuple(cats), c_l, c_r, prop, rho, c_r if c_llm is None else c_llm)


class TestCoefficients:
    def test_defaults_are_the_papers(self):
        """(36) α, (37) β, (38) η, fusion 0.55/0.45, +0.04, θ = 0.50."""
        assert (
            K.alpha_r,
            K.alpha_l,
            K.alpha_u,
            K.alpha_n,
            K.alpha_a,
            K.alpha_p,
            K.alpha_f,
            K.alpha_pi,
        ) == (0.48, 0.32, 0.12, 0.04, 0.08, 0.28, 0.18, 0.12)
        assert (K.beta_0, K.beta_l, K.beta_m, K.beta_c2, K.beta_c4, K.beta_p, K.beta_pi) == (
            0.20,
            0.26,
            0.08,
            0.05,
            0.07,
            0.30,
            0.18,
        )
        assert [K.eta(t) for t in EventType] == [0.42, 0.36, 0.24, -0.18]
        assert K.eta("unknown") == 0.0
        assert (K.w_llm, K.w_struct, K.multi_bonus, K.theta) == (0.55, 0.45, 0.04, 0.50)

    def test_from_json_overrides_and_rejects_unknown_keys(self):
        config = ScoringConfig.from_json({"theta": 0.7, "rule_confidence": {"c1_constraint": 1}})
        assert config.theta == 0.7 and config.confidence("c1_constraint") == 1
        assert config.confidence("c3_error_recorded") == 0.90  # merged with the defaults
        with pytest.raises(ValueError, match="unknown scoring coefficient"):
            ScoringConfig.from_json({"thetaa": 0.7})
        with pytest.raises(ValueError, match="must be a number"):
            ScoringConfig.from_json({"theta": "0.5"})
        with pytest.raises(ValueError, match="must be a number"):
            ScoringConfig.from_json({"rule_confidence": {"c1_constraint": True}})
        assert ScoringConfig.from_json({"no_judge_c_llm": None}).no_judge_c_llm is None


class TestKnownAnswers:
    def test_single_local_c4_agent_action(self):
        """B_r = .2+.42+.26·.85 = .841; G_r = .07; S_r = .911.
        B_s = .48·.911 + .32·.85 + .12·.85 = .81128; G_s = .04 + .08; S_s = .93128.
        c_mix = .55·.85 + .45·.93128 = .886576 = c_f."""
        s = score(feats(EventType.AGENT_ACTION, [C4], 0.85, 0.85), K)
        assert s.b_r == pytest.approx(0.841)
        assert s.g_r == pytest.approx(0.07) and s.g_multi == 0
        assert s.s_r == pytest.approx(0.911)
        assert s.b_s == pytest.approx(0.81128)
        assert s.g_s == pytest.approx(0.12)
        assert s.s_s == pytest.approx(0.93128)
        assert s.c_mix == pytest.approx(0.886576)
        assert s.c_f == pytest.approx(0.886576)

    def test_tool_result_with_late_position(self):
        """ρ = .25: B_r = .674, P_r = .045, S_r = .629; B_s = .69792, G_s = .04 (not
        actionable), P_s = .03, S_s = .70792; c_f = .495 + .318564 = .813564."""
        s = score(feats(EventType.TOOL_RESULT, [C3], 0.9, 0.9, rho=0.25), K)
        assert s.eta == 0.24
        assert s.b_r == pytest.approx(0.674)
        assert s.p_r == pytest.approx(0.045)
        assert s.s_r == pytest.approx(0.629)
        assert s.b_s == pytest.approx(0.69792)
        assert s.g_s == pytest.approx(0.04)
        assert s.p_s == pytest.approx(0.03)
        assert s.s_s == pytest.approx(0.70792)
        assert s.c_f == pytest.approx(0.813564)

    def test_propagation_only_final_result_clips_to_zero(self):
        """B_r = .02, G_r = .08+.07 = .15, P_r = .30+.18 = .48 → S_r = clip(−.31) = 0;
        B_s = .078, G_s = .08, P_s = .28+.18+.12 = .58 → S_s = 0;
        c_f = .55·.7 + .04 = .425 < θ."""
        s = score(
            feats(EventType.FINAL_RESULT, [C3, C4], 0.0, 0.65, prop=True, rho=1.0, c_llm=0.7), K
        )
        assert s.b_r == pytest.approx(0.02)
        assert s.g_r == pytest.approx(0.15)
        assert s.p_r == pytest.approx(0.48)
        assert s.s_r == 0.0
        assert s.b_s == pytest.approx(0.078)
        assert s.g_s == pytest.approx(0.08)
        assert s.p_s == pytest.approx(0.58)
        assert s.s_s == 0.0
        assert s.b_multi == pytest.approx(0.04)
        assert s.c_f == pytest.approx(0.425)

    def test_everything_clips_at_one(self):
        """C2 + C4 with full confidence: S_r = clip(1.08), S_s = clip(1.08), c_f = clip(1.04)."""
        s = score(feats(EventType.AGENT_ACTION, [C2, C4], 1.0, 1.0), K)
        assert s.b_r + s.g_r == pytest.approx(1.08)
        assert s.s_r == 1.0 and s.s_s == 1.0
        assert s.c_mix + s.b_multi == pytest.approx(1.04)
        assert s.c_f == 1.0

    def test_tool_call_prior_and_multiplicity_cap(self):
        """Three categories: α_n·min(2, 3) = .08; tool_call is actionable (+.08), η = .36.
        B_r = .2+.36+.26·.5 = .69; G_r = .08+.07+.05 = .20; S_r = .89.
        B_s = .48·.89 + .32·.5 + .12·.8 = .6832; G_s = .16; S_s = .8432.
        c_f = .55·.8 + .45·.8432 + .04 = .85944."""
        s = score(feats(EventType.TOOL_CALL, [C1, C2, C4], 0.5, 0.8), K)
        assert s.s_r == pytest.approx(0.89)
        assert s.g_s == pytest.approx(0.16)
        assert s.s_s == pytest.approx(0.8432)
        assert s.c_f == pytest.approx(0.85944)

    def test_threshold_is_inclusive(self):
        """Eq. 34: c_f ≥ θ is eligible, c_f just below θ is not."""
        bundle = gold_c4()
        c_f = diagnose(bundle).node("agent_action_0000").scores.c_f
        at = diagnose(bundle, config=replace(K, theta=c_f)).node("agent_action_0000")
        above = diagnose(bundle, config=replace(K, theta=c_f + 1e-9)).node("agent_action_0000")
        assert at.eligible and not above.eligible

    def test_position_is_normalised_observed_order(self):
        assert position(0, 1) == 0.0
        assert position(0, 5) == 0.0 and position(2, 5) == 0.5 and position(4, 5) == 1.0


class TestFeaturesFromEvidence:
    def test_gold_c4_node_matches_the_hand_computation(self):
        """The first gold-C4 node has one local C4 rule at .85 and ρ = 0 (node 0 of 2)."""
        node = diagnose(gold_c4()).node("agent_action_0000")
        assert node.features.c_local == 0.85 and node.features.c_raw == 0.85
        assert node.features.rho == 0.0 and not node.features.propagation_only
        assert node.scores.c_f == pytest.approx(0.886576)

    def test_local_and_propagated_evidence(self):
        """c_l counts only local evidence, c_r all of it; propagated-only sets I_p."""
        b = TraceBuilder()
        b.agent(None, calls=[("fetch", {"id": 1})])
        b.tool("fetch", {"id": 1}, error={"type": "Timeout", "message": "t"})
        nxt = b.agent("Thinking.")
        node = diagnose(b.bundle()).node(nxt)
        assert node.confirmed == (C3,)
        assert node.features.c_local == 0.0 and node.features.c_raw == 0.60
        assert node.features.propagation_only

    def test_c_llm_without_judge(self):
        """Without a judge c_LLM = c_r by default, or the configured constant."""
        bundle = gold_c4()
        default = diagnose(bundle).node("agent_action_0000")
        assert default.features.c_llm == default.features.c_raw
        fixed = diagnose(bundle, config=replace(K, no_judge_c_llm=0.0)).node("agent_action_0000")
        assert fixed.features.c_llm == 0.0
        assert fixed.scores.c_f == pytest.approx(0.45 * fixed.scores.s_s)
