"""Counterfactual attribution: which step of a failed run is decisive, found by intervention.

A step holds a *decisive error* when replacing its action, the prefix unchanged and the rest
of the run unfolding anew, turns the failure into a success; the *critical step* is the
earliest decisive one (Who&When, TrajDebug §2.1). Reading a trace only guesses at it; a
selective replay measures it. Per candidate LLM call v this module plans two arms of k
rollouts each, every rollout one selective replay anchored at v:

* **repair**: v's request gets guidance Δ (q̂_v = q_v ⊕ Δ: the symptom's template, or the
  user's text);
* **resample**: v's request regenerated unchanged (Δ empty): the control that separates
  "this step was wrong" from "any redraw helps". Against an endpoint that answers an
  identical request identically (temperature 0, a request-keyed stub) that is a re-send, not
  a redraw, while any Δ redraws the whole suffix; there the control sends content-free text
  in Δ's place (`control_text`) instead.

From the outcomes (attribution_run.py runs them) it estimates, per node, both success rates
(Wilson), the repair value (their difference) with the exact one-sided paired test
(attribution_stats.py), Holm-adjusted over the nodes tested; the critical step is the
earliest node whose adjusted p < α (or none); and per pair of symptoms A ≺ B, EDGE's
validated edge (Δ risk difference of B's presence when A is repaired, τ = 0.15, minimum
support) — the validated causal error graph.

Symptoms are matched across runs by signature (category, agent): a rollout's live events
get a fresh id, so "B is still present" means a symptom of B's category at B's agent among
the rollout's live events.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from symtrace.bundle.reader import Bundle
from symtrace.diagnosis.anchors import (
    AnchorChoice,
    AnchorPolicy,
    _closure,
    decisions,
    resolve_boundary,
)
from symtrace.diagnosis.attribution_stats import (
    EDGE_MIN_SUPPORT,
    EDGE_TAU,
    EdgeEffect,
    PairedTest,
    Rate,
    edge_effect,
    holm,
    paired_sign_test,
    wilson,
)
from symtrace.diagnosis.errors import DiagnosisConfigError
from symtrace.diagnosis.guidance_text import build_guidance
from symtrace.diagnosis.pipeline import Diagnosis
from symtrace.diagnosis.templates import Templates

REPAIR, RESAMPLE = "repair", "resample"
ARMS = (REPAIR, RESAMPLE)
DEFAULT_K = 8  # 2^-8 × 4 candidates (Holm) = 0.016: a default that can reject
DEFAULT_ALPHA = 0.05
DEFAULT_BUDGET = 4  # candidate nodes at most, unless the user says otherwise

Signature = tuple[str, str]  # (category, agent) of a symptom, comparable across runs


@dataclass(frozen=True)
class Symptom:
    """A node of the failed run with confirmed symptoms, and where to intervene for it."""

    node: str
    index: int
    agent: str
    categories: tuple[str, ...]
    boundary: str  # the LLM call a repair of this symptom anchors at

    @property
    def signatures(self) -> tuple[Signature, ...]:
        return tuple((c, self.agent) for c in self.categories)

    def to_json(self) -> dict[str, Any]:
        return {"node": self.node, "index": self.index, "agent": self.agent,
                "categories": list(self.categories), "boundary": self.boundary}


@dataclass(frozen=True)
class Candidate:
    """An LLM call to intervene at, and the Δ its repair arm sends."""

    node: str
    index: int
    agent: str | None
    why: str  # "the diagnosis' anchor" | "symptom boundary" | "causal ancestor of …" | …
    guidance: str

    def to_json(self) -> dict[str, Any]:
        return {"node": self.node, "index": self.index, "agent": self.agent, "why": self.why,
                "guidance": self.guidance}


@dataclass(frozen=True)
class Rollout:
    """One planned rollout: a selective replay at *node*, arm repair or resample, number i."""

    node: str
    arm: str
    index: int
    guidance: str

    @property
    def key(self) -> str:
        return f"{self.node}-{self.arm}-{self.index}"


@dataclass(frozen=True)
class AttributionPlan:
    """Everything decided before a live call: candidates, Δ per candidate, k, the arms."""

    source: str
    candidates: tuple[Candidate, ...]
    symptoms: tuple[Symptom, ...]
    k: int
    hold_tools: bool
    skipped: tuple[str, ...] = ()  # candidates dropped by the budget cap
    # what the resample arm sends where the repair puts Δ: nothing (the identical request),
    # or content-free text, for endpoints that answer an identical request identically
    control_text: str = ""

    @property
    def smallest_p(self) -> float:
        """The smallest Holm-adjusted p any candidate can reach: all k pairs discordant in
        the repair's favour give 2^-k, multiplied by the number of candidates."""
        return min(1.0, len(self.candidates) * 0.5 ** self.k)

    @property
    def rollouts(self) -> list[Rollout]:
        return [Rollout(c.node, arm, i, c.guidance if arm == REPAIR else self.control_text)
                for c in self.candidates for arm in ARMS for i in range(self.k)]

    def to_json(self) -> dict[str, Any]:
        return {"source": self.source, "k": self.k, "hold_tools": self.hold_tools,
                "planned_rollouts": len(self.rollouts),
                "candidates": [c.to_json() for c in self.candidates],
                "symptoms": [s.to_json() for s in self.symptoms],
                "skipped_by_budget": list(self.skipped),
                # only when set: a plan of an earlier attribution still resumes
                **({"control_text": self.control_text} if self.control_text else {})}


def plan_attribution(
    bundle: Bundle,
    diagnosis: Diagnosis,
    *,
    k: int = DEFAULT_K,
    every_decision: bool = False,
    budget: int | None = DEFAULT_BUDGET,
    guidance: str | None = None,
    templates: Templates | None = None,
    hold_tools: bool = True,
    control_text: str | None = None,
) -> AttributionPlan:
    """The candidates of *bundle* (diagnosed as *diagnosis*): by default the LLM calls at the
    symptoms' boundaries and their causal ancestors; with *every_decision* every agent
    decision. *budget* keeps that many: the diagnosis' own anchor first, the symptom
    boundaries, then the ancestors nearest to a symptom; the kept ones run in trace order.
    *control_text*: the resample arm sends it where the repair puts Δ (default: nothing)."""
    if k < 1:
        raise DiagnosisConfigError(f"--k must be at least 1, got {k}")
    if budget is not None and budget < 1:
        raise DiagnosisConfigError(f"--budget must be at least 1, got {budget}")
    ctx = diagnosis.context
    symptoms = _symptoms(diagnosis)
    choices = {s.node: _choice(diagnosis, s) for s in symptoms}
    ranked: dict[str, tuple[str, AnchorChoice | None]] = {}  # node -> (why, Δ's source)
    anchor = diagnosis.anchor  # the rules-only choice first, with its own Δ
    if anchor is not None:
        ranked[anchor.anchor] = ("the diagnosis' anchor", anchor)
    for s in symptoms:  # then the symptoms' boundaries
        ranked.setdefault(s.boundary, ("symptom boundary", choices[s.node]))
    by_id = ctx.by_id
    for s in sorted(symptoms, key=lambda s: s.index):
        above = _closure(s.node, ctx.parents)
        ancestors = sorted((v for v in decisions(ctx) if v.id in above), key=lambda v: -v.index)
        for view in ancestors:
            ranked.setdefault(view.id, (f"causal ancestor of {s.node}", choices[s.node]))
    if every_decision:
        first = choices[symptoms[0].node] if symptoms else None
        for view in decisions(ctx):
            ranked.setdefault(view.id, ("every decision (--all)", first))
    kept = list(ranked)[:budget] if budget is not None else list(ranked)
    skipped = tuple(n for n in ranked if n not in kept)
    candidates = []
    for node in sorted(kept, key=lambda n: by_id[n].index):
        why, choice = ranked[node]
        delta = guidance if guidance is not None else _delta(choice, node, templates)
        view = by_id[node]
        candidates.append(Candidate(node, view.index, view.agent, why, delta))
    if control_text is not None and not control_text.strip():
        raise DiagnosisConfigError("--control-text must not be empty")
    return AttributionPlan(str(bundle.path), tuple(candidates), tuple(symptoms), k,
                           hold_tools, skipped, control_text or "")


def _symptoms(diagnosis: Diagnosis) -> list[Symptom]:
    out = []
    for node in diagnosis.nodes:
        if not node.confirmed:
            continue
        boundary = node.boundary or resolve_boundary(node.view, diagnosis.context)
        if boundary is None:
            continue
        out.append(Symptom(node.view.id, node.view.index, node.view.agent or node.view.lane,
                           tuple(c.value for c in node.confirmed), boundary.event_id))
    return out


def _choice(diagnosis: Diagnosis, symptom: Symptom) -> AnchorChoice:
    node = diagnosis.node(symptom.node)
    return AnchorChoice(AnchorPolicy.SUSPICIOUS, anchor=symptom.boundary, target=symptom.node,
                        relation="self", categories=node.confirmed,
                        evidence=node.confirmed_evidence, symptom=symptom.node)


def _delta(choice: AnchorChoice | None, node: str, templates: Templates | None) -> str:
    if choice is None:  # no symptom at all: the generic template names the node
        choice = AnchorChoice(AnchorPolicy.LAST, anchor=node, target=node, relation="self")
    return build_guidance(choice, templates)


# -- outcomes and estimates ------------------------------------------------------------------
@dataclass(frozen=True)
class RolloutResult:
    """What one rollout gave. `passed` None: no verdict (the prefix diverged, the harness
    failed): such a rollout is dropped from the estimates with its pair, and counted."""

    node: str
    arm: str
    index: int
    passed: bool | None
    child: str | None
    held_tools: int = 0
    live_tools: int = 0
    live_symptoms: tuple[Signature, ...] = ()
    error: str | None = None

    @property
    def key(self) -> str:
        return f"{self.node}-{self.arm}-{self.index}"

    def to_json(self) -> dict[str, Any]:
        return {"node": self.node, "arm": self.arm, "index": self.index, "passed": self.passed,
                "child": self.child, "held_tools": self.held_tools,
                "live_tools": self.live_tools,
                "live_symptoms": [list(s) for s in self.live_symptoms], "error": self.error}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RolloutResult:
        return cls(data["node"], data["arm"], int(data["index"]), data["passed"],
                   data.get("child"), int(data.get("held_tools", 0)),
                   int(data.get("live_tools", 0)),
                   tuple((str(c), str(a)) for c, a in data.get("live_symptoms", [])),
                   data.get("error"))


@dataclass(frozen=True)
class NodeEstimate:
    candidate: Candidate
    repair: Rate
    resample: Rate
    test: PairedTest
    adjusted_p: float
    significant: bool
    errors: int  # rollouts without a verdict (their pairs are dropped)

    @property
    def repair_value(self) -> float:
        return self.repair.estimate - self.resample.estimate

    def to_json(self) -> dict[str, Any]:
        return {**self.candidate.to_json(), "repair": self.repair.to_json(),
                "resample": self.resample.to_json(),
                "repair_value": round(self.repair_value, 6), "test": self.test.to_json(),
                "holm_p": self.adjusted_p, "significant": self.significant,
                "rollouts_without_verdict": self.errors}


@dataclass(frozen=True)
class Edge:
    source: Symptom
    target: Symptom
    effect: EdgeEffect

    def to_json(self) -> dict[str, Any]:
        return {"from": self.source.node, "to": self.target.node,
                "from_categories": list(self.source.categories),
                "to_categories": list(self.target.categories), **self.effect.to_json()}


@dataclass(frozen=True)
class Attribution:
    plan: AttributionPlan
    nodes: tuple[NodeEstimate, ...]
    critical: NodeEstimate | None
    edges: tuple[Edge, ...]
    alpha: float
    held_tools: int
    live_tools: int
    results: tuple[RolloutResult, ...] = field(default=())

    @property
    def validated_edges(self) -> tuple[Edge, ...]:
        return tuple(e for e in self.edges if e.effect.validated)

    def to_json(self) -> dict[str, Any]:
        return {
            "plan": self.plan.to_json(),
            "method": {
                "test": "exact one-sided McNemar (sign test) on paired rollouts "
                        "(repair i vs resample i), Holm-adjusted over the candidates",
                "alpha": self.alpha,
                "critical_step": "earliest candidate whose Holm-adjusted p < alpha",
                "edge_rule": f"EDGE: delta risk difference of B's presence over verified "
                             f"repairs of A > {EDGE_TAU}, support >= {EDGE_MIN_SUPPORT}",
                "tool_outputs": "held (identical tool calls get the recorded outcome)"
                if self.plan.hold_tools else "live (every tool call of the suffix runs)",
            },
            "nodes": [n.to_json() for n in self.nodes],
            "critical_step": self.critical.candidate.node if self.critical else None,
            "edges": [e.to_json() for e in self.edges],
            "validated_edges": [[e.source.node, e.target.node] for e in self.validated_edges],
            "tools": {"held": self.held_tools, "live": self.live_tools},
            "rollouts": [r.to_json() for r in self.results],
        }


def estimate(plan: AttributionPlan, results: Iterable[RolloutResult], *,
             alpha: float = DEFAULT_ALPHA, tau: float = EDGE_TAU,
             min_support: int = EDGE_MIN_SUPPORT) -> Attribution:
    """Per-node rates, repair value and paired test; the critical step; validated edges."""
    if not 0 < alpha < 1:
        raise DiagnosisConfigError(f"--alpha must be within (0, 1), got {alpha}")
    by_key = {r.key: r for r in results}
    raw: list[tuple[Candidate, list[bool], list[bool], int]] = []
    for candidate in plan.candidates:
        repair, resample, errors = [], [], 0
        for i in range(plan.k):
            a = by_key.get(f"{candidate.node}-{REPAIR}-{i}")
            b = by_key.get(f"{candidate.node}-{RESAMPLE}-{i}")
            errors += sum(1 for r in (a, b) if r is not None and r.passed is None)
            if a is None or b is None or a.passed is None or b.passed is None:
                continue
            repair.append(a.passed)
            resample.append(b.passed)
        raw.append((candidate, repair, resample, errors))
    tests = [paired_sign_test(rep, res) for _, rep, res, _ in raw]
    adjusted = holm([t.p_value for t in tests]) if tests else []
    nodes = tuple(
        NodeEstimate(c, wilson(sum(rep), len(rep)), wilson(sum(res), len(res)), test, p,
                     p < alpha, errors)
        for (c, rep, res, errors), test, p in zip(raw, tests, adjusted, strict=True)
    )
    critical = next((n for n in sorted(nodes, key=lambda n: n.candidate.index)
                     if n.significant), None)
    edges = _edges(plan, by_key, tau, min_support)
    done = list(by_key.values())
    return Attribution(plan, nodes, critical, edges, alpha,
                       sum(r.held_tools for r in done), sum(r.live_tools for r in done),
                       tuple(sorted(done, key=lambda r: r.key)))


def _edges(plan: AttributionPlan, by_key: dict[str, RolloutResult], tau: float,
           min_support: int) -> tuple[Edge, ...]:
    """EDGE's test for every ordered pair A ≺ B of symptoms whose boundary was repaired."""
    planned = {c.node for c in plan.candidates}
    edges = []
    for a in plan.symptoms:
        if a.boundary not in planned:
            continue
        repairs = [by_key.get(f"{a.boundary}-{REPAIR}-{i}") for i in range(plan.k)]
        done = [r for r in repairs if r is not None and r.passed is not None]
        for b in plan.symptoms:
            if b.index <= a.index or b.signatures == a.signatures:
                continue
            resolved = [not _present(a.signatures, r.live_symptoms) for r in done]
            present = [_present(b.signatures, r.live_symptoms) for r in done]
            edges.append(Edge(a, b, edge_effect(resolved, present, tau=tau,
                                                min_support=min_support)))
    return tuple(edges)


def _present(signatures: Sequence[Signature], live: Sequence[Signature]) -> bool:
    return any(s in live for s in signatures)
