"""diagnose(): rules, optional judge, scores and the first eligible anchor for a bundle.

This is Algorithm 3 (rule-gated detection, judge confirmation with L^f ⊆ L^r) followed by
the scoring and gate of Algorithm 4, over every completed node in observed order. Untriggered
nodes get zero suspiciousness and never reach the judge.
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from symtrace.bundle.reader import Bundle
from symtrace.diagnosis.anchors import (
    AnchorChoice,
    AnchorPolicy,
    Boundary,
    decisions,
    resolve_boundary,
)
from symtrace.diagnosis.judge import Judge, JudgeVerdict, build_request
from symtrace.diagnosis.origin import trace_origin
from symtrace.diagnosis.rules import DEFAULT_RULES, Rule, check_rules, run_rules
from symtrace.diagnosis.scoring import Features, Scores, ScoringConfig, position, score
from symtrace.diagnosis.symptoms import Category, Evidence, Scope, categories_of
from symtrace.diagnosis.task import TaskSpec
from symtrace.diagnosis.view import NodeView, TraceContext, build_context
from symtrace.errors import UnknownEvent


@dataclass(frozen=True)
class NodeDiagnosis:
    """Everything diagnosed about one node. Scores exist only when L_v ≠ ∅."""

    view: NodeView
    evidence: tuple[Evidence, ...] = ()  # E^r
    confirmed: tuple[Category, ...] = ()  # L^f = L_v
    verdict: JudgeVerdict | None = None  # the judge's answer; its rationale is audit-only
    features: Features | None = None
    scores: Scores | None = None
    boundary: Boundary | None = None
    eligible: bool = False

    @property
    def proposed(self) -> tuple[Category, ...]:  # L^r
        return categories_of(self.evidence)

    @property
    def confirmed_evidence(self) -> tuple[Evidence, ...]:  # E^f
        return tuple(e for e in self.evidence if e.category in self.confirmed)

    @property
    def c_f(self) -> float:
        return self.scores.c_f if self.scores else 0.0

    def to_json(self) -> dict[str, Any]:
        f = self.features
        return {
            "id": self.view.id,
            "index": self.view.index,
            "type": self.view.type.value,
            "agent": self.view.agent,
            "lane": self.view.lane,
            "proposed": [c.value for c in self.proposed],
            "confirmed": [c.value for c in self.confirmed],
            "evidence": [e.to_json() for e in self.evidence],
            "judge": self.verdict.to_json() if self.verdict else None,
            "features": None
            if f is None
            else {
                "c_local": round(f.c_local, 6),
                "c_raw": round(f.c_raw, 6),
                "c_llm": round(f.c_llm, 6),
                "propagation_only": f.propagation_only,
                "rho": round(f.rho, 6),
                "actionable": f.actionable,
                "final": f.final,
            },
            "scores": self.scores.to_json() if self.scores else None,
            "boundary": self.boundary.to_json() if self.boundary else None,
            "eligible": self.eligible,
        }


@dataclass(frozen=True)
class Diagnosis:
    """The diagnosis of one trace: a NodeDiagnosis per node in O and the chosen anchor."""

    source: str
    context: TraceContext
    nodes: tuple[NodeDiagnosis, ...]
    config: ScoringConfig
    rules: tuple[Rule, ...]
    judge: str | None = None
    trace_back: bool = True  # anchor at the symptom's origin in G (origin.py), not the symptom

    @property
    def task(self) -> TaskSpec:
        return self.context.task

    @property
    def replayable(self) -> bool:
        return self.context.replayable

    @cached_property
    def anchor(self) -> AnchorChoice | None:
        return first_eligible(self.nodes, self.replayable, self.context, trace_back=self.trace_back)

    def node(self, event_id: str) -> NodeDiagnosis:
        for node in self.nodes:
            if node.view.id == event_id:
                return node
        raise UnknownEvent(event_id, [n.view.id for n in self.nodes])

    def ranking(self) -> tuple[NodeDiagnosis, ...]:
        """Eligible nodes by fused score, highest first (ties: observed order)."""
        eligible = [n for n in self.nodes if n.eligible]
        return tuple(sorted(eligible, key=lambda n: (-n.c_f, n.view.index)))

    def to_json(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "replayable": self.replayable,
            "task": {
                "text": self.task.text,
                "constraints": list(self.task.constraints),
                "output_requirement": self.task.output.statement or None,
            },
            "judge": self.judge,
            "rules": [r.to_json() for r in self.rules],
            "config": self.config.to_json(),
            "nodes": [n.to_json() for n in self.nodes],
            "ranking": [n.view.id for n in self.ranking()],
            "anchor": self.anchor.to_json() if self.anchor else None,
        }


def first_eligible(
    nodes: tuple[NodeDiagnosis, ...],
    replayable: bool,
    ctx: TraceContext | None = None,
    *,
    trace_back: bool = True,
) -> AnchorChoice | None:
    """Algorithm 4: the first node in O with a confirmed category, c_f ≥ θ and a boundary,
    traced back along G to its origin (origin.py) when *ctx* is given and *trace_back* is on.

    The categories, evidence and c_f are the gated symptom's; `target` is the origin."""
    for node in nodes:
        if node.eligible and node.boundary is not None and node.scores is not None:
            target, boundary, steps = node.view, node.boundary, ()
            if trace_back and ctx is not None:
                evidence = {n.view.id: n.confirmed_evidence for n in nodes if n.confirmed}
                origin, steps = trace_origin(node.view, ctx, evidence)
                traced = resolve_boundary(origin, ctx) if steps else None
                if traced is not None:
                    target, boundary = origin, traced
                else:
                    steps = ()
            return AnchorChoice(
                AnchorPolicy.SUSPICIOUS,
                anchor=boundary.event_id,
                target=target.id,
                relation=boundary.relation,
                categories=node.confirmed,
                evidence=node.confirmed_evidence,
                c_f=node.scores.c_f,
                replayable=replayable,
                symptom=node.view.id,
                trace=steps,
            )
    return None


def select_anchor(
    diagnosis: Diagnosis, policy: AnchorPolicy | str = AnchorPolicy.SUSPICIOUS, *, seed: int = 0
) -> AnchorChoice | None:
    """The anchor under *policy*; None when there is nowhere to intervene.

    `suspicious` is the first eligible node (Algorithm 4); `random` is a uniformly chosen
    agent decision (`random.Random(seed)`, so the same seed picks the same node); `last` is
    the last agent decision. All three have the same single-intervention budget.
    """
    policy = AnchorPolicy(policy)
    if policy is AnchorPolicy.SUSPICIOUS:
        return diagnosis.anchor
    candidates = decisions(diagnosis.context)
    if not candidates:
        return None
    if policy is AnchorPolicy.RANDOM:
        chosen = random.Random(seed).choice(candidates)
    else:
        chosen = candidates[-1]
    return AnchorChoice(
        policy,
        anchor=chosen.id,
        target=chosen.id,
        relation="self",
        replayable=diagnosis.replayable,
        seed=seed if policy is AnchorPolicy.RANDOM else None,
    )


def diagnose(
    source: Bundle | TraceContext,
    *,
    rules: Iterable[Rule] = DEFAULT_RULES,
    config: ScoringConfig | None = None,
    judge: Judge | None = None,
    judge_name: str | None = None,
    trace_back: bool = True,
) -> Diagnosis:
    """Diagnose every completed node of *source*, in observed order."""
    config = config or ScoringConfig()
    table = check_rules(rules)
    ctx = source if isinstance(source, TraceContext) else build_context(source)
    count = len(ctx.views)
    nodes = []
    for view in ctx.views:
        found = run_rules(view, ctx, table)
        if not found.triggered:
            nodes.append(NodeDiagnosis(view))
            continue
        proposed = found.categories
        verdict = None
        if judge is not None:
            verdict = judge(build_request(view, ctx, proposed, found.evidence))
            confirmed = tuple(c for c in proposed if c in verdict.confirmed)
        else:
            confirmed = proposed
        if not confirmed:
            nodes.append(NodeDiagnosis(view, found.evidence, (), verdict))
            continue
        features = _features(view, found.evidence, confirmed, verdict, count, config)
        scores = score(features, config)
        boundary = resolve_boundary(view, ctx)
        eligible = scores.c_f >= config.theta and boundary is not None
        nodes.append(
            NodeDiagnosis(
                view, found.evidence, confirmed, verdict, features, scores, boundary, eligible
            )
        )
    source_name = _source_name(source)
    name = judge_name or (getattr(judge, "describe", lambda: None)() if judge else None)
    return Diagnosis(source_name, ctx, tuple(nodes), config, table, name, trace_back)


def _source_name(source: Bundle | TraceContext) -> str:
    if not isinstance(source, Bundle):
        return "<context>"
    config = source.manifest.get("config")
    imported = config.get("imported_from") if isinstance(config, dict) else None
    return str(imported or source.path)


def _features(
    view: NodeView,
    evidence: tuple[Evidence, ...],
    confirmed: tuple[Category, ...],
    verdict: JudgeVerdict | None,
    count: int,
    config: ScoringConfig,
) -> Features:
    supporting = [e for e in evidence if e.category in confirmed]
    local = [config.confidence(e.rule) for e in supporting if e.scope is Scope.LOCAL]
    c_local = max(local, default=0.0)
    c_raw = max((config.confidence(e.rule) for e in supporting), default=0.0)
    if verdict is not None:
        c_llm = verdict.confidence
    elif config.no_judge_c_llm is not None:
        c_llm = config.no_judge_c_llm
    else:
        c_llm = c_raw
    return Features(
        node_type=view.type,
        categories=confirmed,
        c_local=c_local,
        c_raw=c_raw,
        propagation_only=not local,
        rho=position(view.index, count),
        c_llm=c_llm,
    )
