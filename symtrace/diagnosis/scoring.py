"""Repairability-aware scoring (paper App. F.2, equations 21–34, coefficients 36–38).

All weights live in one frozen `ScoringConfig`. The paper is explicit that they are manually
specified heuristic design weights, not fitted or calibrated values, and that the scores are
ordinal evidence scores, not probabilities. The defaults are the paper's values; the per-rule
confidences (which the paper does not list) are ours and documented in docs/diagnosis.md.

    B_r = β0 + η(v) + βl·c_l                                   (21)
    G_r = βm·1[|L|>1] + βC4·1[C4∈L] + βC2·1[C2∈L]              (22–24)
    P_r = βp·I_p + βπ·ρ                                         (25)
    S_r = clip01(B_r + G_r − P_r)                               (26)
    B_s = αr·S_r + αl·c_l + αu·c_r                              (27)
    G_s = αn·min(2,|L|) + αa·I_a                                (28)
    P_s = αp·I_p + αf·I_f + απ·ρ                                (29)
    S_s = clip01(B_s + G_s − P_s)                               (30)
    c_mix = 0.55·c_LLM + 0.45·S_s                               (31)
    c_f = clip01(c_mix + 0.04·1[|L|>1])                         (32–33)
    eligible ⇔ L ≠ ∅ and c_f ≥ θ = 0.50                          (34)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from types import MappingProxyType
from typing import Any

from symtrace.diagnosis.symptoms import Category
from symtrace.model.events import EventType

DEFAULT_RULE_CONFIDENCE: Mapping[str, float] = MappingProxyType(
    {
        "c1_unresolved_request": 0.85,
        "c1_output_format": 0.75,
        "c1_placeholder": 0.80,
        "c1_constraint": 0.80,
        "c2_repeated_action": 0.70,
        "c2_retry_without_change": 0.75,
        "c2_repeated_final": 0.60,
        "c3_error_recorded": 0.90,
        "c3_inaccessible": 0.70,
        "c3_continues_from_failure": 0.60,
        "c3_final_despite_error": 0.65,
        "c4_browser_url": 0.80,
        "c4_structured_vs_html": 0.70,
        "c4_completion_after_failure": 0.65,
        "c4_no_tool_evidence": 0.75,
        "c4_claim_contradicts_plan": 0.85,
        "c4_plan_action_mismatch": 0.60,
    }
)


@dataclass(frozen=True)
class ScoringConfig:
    """Every coefficient of equations 21–38 plus the rule confidences, in one place."""

    # Selection coefficients, eq. 36 (order α_r, α_l, α_u, α_n, α_a, α_p, α_f, α_π).
    alpha_r: float = 0.48
    """Weight of repairability S_r in the selection score (eq. 27)."""
    alpha_l: float = 0.32
    """Weight of the local confidence c_l (eq. 27)."""
    alpha_u: float = 0.12
    """Weight of the raw confidence c_r, which may include propagated evidence (eq. 27)."""
    alpha_n: float = 0.04
    """Per-category bonus, multiplied by min(alpha_n_cap, |L|): at most 0.08 (eq. 28)."""
    alpha_n_cap: int = 2
    """The cap on |L| in eq. 28."""
    alpha_a: float = 0.08
    """Bonus for an actionable agent_action or tool_call boundary, I_a (eq. 28)."""
    alpha_p: float = 0.28
    """Selection penalty for propagation-only evidence, I_p (eq. 29)."""
    alpha_f: float = 0.18
    """Selection penalty for a final_result node, I_f (eq. 29)."""
    alpha_pi: float = 0.12
    """Selection penalty for late graph position ρ (eq. 29)."""

    # Repairability coefficients, eq. 37 (order β_0, β_l, β_m, β_C2, β_C4, β_p, β_π).
    beta_0: float = 0.20
    """Base repairability (eq. 21)."""
    beta_l: float = 0.26
    """Weight of the local confidence c_l in repairability (eq. 21)."""
    beta_m: float = 0.08
    """Bonus for more than one confirmed category (eq. 22)."""
    beta_c2: float = 0.05
    """Bonus when C2 is confirmed (eq. 23)."""
    beta_c4: float = 0.07
    """Bonus when C4 is confirmed (eq. 23)."""
    beta_p: float = 0.30
    """Repairability penalty for propagation-only evidence (eq. 25)."""
    beta_pi: float = 0.18
    """Repairability penalty for late graph position ρ (eq. 25)."""

    # Node-type prior η(v), eq. 38.
    eta_agent_action: float = 0.42
    """η for regenerable agent actions (highest prior)."""
    eta_tool_call: float = 0.36
    """η for tool calls."""
    eta_tool_result: float = 0.24
    """η for tool results."""
    eta_final_result: float = -0.18
    """η for final results (lowest: little suffix left to repair)."""
    eta_other: float = 0.0
    """η for any other node type."""

    # Fusion, eq. 31–34 (exact in the paper).
    w_llm: float = 0.55
    """Weight of the semantic-judge confidence c_LLM in c_mix (eq. 31)."""
    w_struct: float = 0.45
    """Weight of the structured selection score S_s in c_mix (eq. 31)."""
    multi_bonus: float = 0.04
    """Bonus for more than one confirmed category (eq. 32)."""
    theta: float = 0.50
    """Eligibility threshold on c_f: a minimum evidence gate, not an optimum (eq. 34)."""

    # Ours: how c_LLM is set without a judge, and what one rule match is worth.
    no_judge_c_llm: float | None = None
    """c_LLM when no judge is configured: None means "use c_r", the rule-derived raw
    confidence, so c_mix = 0.55·c_r + 0.45·S_s; a number fixes c_LLM to that value."""
    rule_confidence: Mapping[str, float] = field(
        default_factory=lambda: MappingProxyType(dict(DEFAULT_RULE_CONFIDENCE))
    )
    """Confidence of one match of each rule, by rule id (in [0, 1])."""
    default_rule_confidence: float = 0.60
    """Confidence of a match of a rule not listed in rule_confidence (user-added rules)."""

    def eta(self, node_type: EventType | str) -> float:
        key = node_type.value if isinstance(node_type, EventType) else str(node_type)
        return float(getattr(self, f"eta_{key}", self.eta_other))

    def confidence(self, rule_id: str) -> float:
        return float(self.rule_confidence.get(rule_id, self.default_rule_confidence))

    def to_json(self) -> dict[str, Any]:
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        data["rule_confidence"] = dict(sorted(self.rule_confidence.items()))
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ScoringConfig:
        """A config from a JSON object of overrides; unknown keys are an error."""
        names = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - names)
        if unknown:
            raise ValueError(f"unknown scoring coefficient(s): {', '.join(unknown)}")
        values = dict(data)
        rules = values.pop("rule_confidence", {})
        if not isinstance(rules, Mapping):
            raise ValueError("rule_confidence must be an object of rule id → number")
        for name, value in [*values.items(), *rules.items()]:
            if value is None and name == "no_judge_c_llm":
                continue
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise ValueError(f"{name} must be a number, got {value!r}")
        merged = MappingProxyType({**DEFAULT_RULE_CONFIDENCE, **rules})
        return cls(**values, rule_confidence=merged)


@dataclass(frozen=True)
class Features:
    """The inputs of equations 21–33 for one node (Algorithm 4, line 2)."""

    node_type: EventType
    categories: tuple[Category, ...]  # L_v, confirmed
    c_local: float  # c_l: strongest locally supported confidence
    c_raw: float  # c_r: strongest confidence including propagated evidence
    propagation_only: bool  # I_p
    rho: float  # ρ: normalized position in [0, 1]
    c_llm: float  # c̃_LLM

    @property
    def actionable(self) -> bool:  # I_a
        return self.node_type in (EventType.AGENT_ACTION, EventType.TOOL_CALL)

    @property
    def final(self) -> bool:  # I_f
        return self.node_type is EventType.FINAL_RESULT


@dataclass(frozen=True)
class Scores:
    """Every intermediate term, so --explain can show the arithmetic."""

    eta: float
    b_r: float
    g_multi: float
    g_cat: float
    g_r: float
    p_r: float
    s_r: float
    b_s: float
    g_s: float
    p_s: float
    s_s: float
    c_mix: float
    b_multi: float
    c_f: float

    def to_json(self) -> dict[str, float]:
        return {f.name: round(getattr(self, f.name), 6) for f in fields(self)}


def clip01(x: float) -> float:
    return min(1.0, max(0.0, x))


def score(features: Features, config: ScoringConfig) -> Scores:
    """Equations 21–33 for one node."""
    f, k = features, config
    n = len(f.categories)
    multi = 1.0 if n > 1 else 0.0
    i_p = 1.0 if f.propagation_only else 0.0
    eta = k.eta(f.node_type)
    b_r = k.beta_0 + eta + k.beta_l * f.c_local
    g_multi = k.beta_m * multi
    g_cat = (k.beta_c4 if Category.C4 in f.categories else 0.0) + (
        k.beta_c2 if Category.C2 in f.categories else 0.0
    )
    g_r = g_multi + g_cat
    p_r = k.beta_p * i_p + k.beta_pi * f.rho
    s_r = clip01(b_r + g_r - p_r)
    b_s = k.alpha_r * s_r + k.alpha_l * f.c_local + k.alpha_u * f.c_raw
    g_s = k.alpha_n * min(k.alpha_n_cap, n) + k.alpha_a * (1.0 if f.actionable else 0.0)
    p_s = k.alpha_p * i_p + k.alpha_f * (1.0 if f.final else 0.0) + k.alpha_pi * f.rho
    s_s = clip01(b_s + g_s - p_s)
    c_mix = k.w_llm * f.c_llm + k.w_struct * s_s
    b_multi = k.multi_bonus * multi
    c_f = clip01(c_mix + b_multi)
    return Scores(eta, b_r, g_multi, g_cat, g_r, p_r, s_r, b_s, g_s, p_s, s_s, c_mix, b_multi, c_f)


def position(index: int, count: int) -> float:
    """ρ(v): the node's index in O scaled to [0, 1] (0 for a single-node trace)."""
    return index / (count - 1) if count > 1 else 0.0
