"""repair(): diagnose a bundle, pick the anchor, build Δ, and run one selective replay.

The suspicious policy anchors at the first eligible node (Algorithm 4) with symptom-conditioned
Δ; the random and last controls anchor at an agent decision with the generic template. Each
gets exactly one selective-replay intervention. The replay itself belongs to the core harness
(`symtrace.process.runner.replay_bundle`), imported when a repair actually runs.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from symtrace.bundle.reader import Bundle
from symtrace.diagnosis.anchors import AnchorChoice, AnchorPolicy
from symtrace.diagnosis.errors import NoEligibleAnchor, RepairUnavailable
from symtrace.diagnosis.guidance_text import build_guidance
from symtrace.diagnosis.importers import load_source
from symtrace.diagnosis.judge import Judge
from symtrace.diagnosis.pipeline import Diagnosis, diagnose, select_anchor
from symtrace.diagnosis.rules import DEFAULT_RULES, Rule
from symtrace.diagnosis.scoring import ScoringConfig
from symtrace.diagnosis.summary import summarize_diagnosis
from symtrace.diagnosis.templates import Templates
from symtrace.errors import UnreplayableEvent


@dataclass(frozen=True)
class RepairPlan:
    """What a repair will do: the anchor and Δ, decided before anything runs."""

    diagnosis: Diagnosis
    choice: AnchorChoice
    guidance: str

    def to_json(self) -> dict[str, Any]:
        return {"anchor": self.choice.to_json(), "guidance": self.guidance}


@dataclass(frozen=True)
class RepairResult:
    plan: RepairPlan
    outcome: Any  # symtrace.process.runner.ReplayOutcome, or None for a dry run

    def to_json(self) -> dict[str, Any]:
        data = self.plan.to_json()
        outcome = self.outcome
        if outcome is not None:
            data["replay"] = {
                "exit_code": outcome.exit_code,
                "diverged": outcome.diverged,
                "child_bundle": None if outcome.child_bundle is None else str(outcome.child_bundle),
                "resolved_anchor": outcome.resolved_anchor,
                "anchor_note": getattr(outcome, "anchor_note", None),
            }
        return data


def plan_repair(
    bundle: Bundle,
    *,
    policy: AnchorPolicy | str = AnchorPolicy.SUSPICIOUS,
    seed: int = 0,
    judge: Judge | None = None,
    config: ScoringConfig | None = None,
    rules: Iterable[Rule] = DEFAULT_RULES,
    templates: Templates | None = None,
    trace_back: bool = True,
) -> RepairPlan:
    """Diagnose *bundle* and decide anchor and Δ under *policy* (the judge only for suspicious)."""
    policy = AnchorPolicy(policy)
    if not bundle.manifest.get("replayable", True):
        where = (bundle.manifest.get("config") or {}).get("imported_from") or bundle.path
        raise UnreplayableEvent(
            f"{where} is an analysis-only trace (imported, not recorded): it can be "
            "diagnosed but not replayed; record the run with symtrace to repair it"
        )
    use_judge = judge if policy is AnchorPolicy.SUSPICIOUS else None
    diagnosis = diagnose(bundle, rules=rules, config=config, judge=use_judge, trace_back=trace_back)
    choice = select_anchor(diagnosis, policy, seed=seed)
    if choice is None:
        raise NoEligibleAnchor(_no_anchor_message(diagnosis, policy))
    return RepairPlan(diagnosis, choice, build_guidance(choice, templates))


def _no_anchor_message(diagnosis: Diagnosis, policy: AnchorPolicy) -> str:
    if policy is not AnchorPolicy.SUSPICIOUS:
        return f"{diagnosis.source}: no agent LLM call to anchor the {policy.value} control at"
    # the sentence `symtrace diagnose` prints: no symptom, or why none is strong enough
    return f"{diagnosis.source}: {summarize_diagnosis(diagnosis).headline} Nothing was replayed."


def repair(
    bundle_path: str | os.PathLike[str],
    *,
    out: str | None = None,
    policy: AnchorPolicy | str = AnchorPolicy.SUSPICIOUS,
    seed: int = 0,
    judge: Judge | None = None,
    config: ScoringConfig | None = None,
    rules: Iterable[Rule] = DEFAULT_RULES,
    templates: Templates | None = None,
    placement: str = "user",
    command: list[str] | None = None,
    report_json: str | None = None,
    quiet: bool = False,
    dry_run: bool = False,
    trace_back: bool = True,
) -> RepairResult:
    """Plan the repair of the bundle at *bundle_path* and run it as one selective replay."""
    bundle = load_source(bundle_path)  # a log file imports as analysis-only and is refused
    plan = plan_repair(
        bundle,
        policy=policy,
        seed=seed,
        judge=judge,
        config=config,
        rules=rules,
        templates=templates,
        trace_back=trace_back,
    )
    if dry_run:
        return RepairResult(plan, None)
    return run_plan(
        plan, bundle_path, out=out, placement=placement, command=command,
        report_json=report_json, quiet=quiet,
    )


def run_plan(
    plan: RepairPlan,
    bundle_path: str | os.PathLike[str],
    *,
    out: str | None = None,
    placement: str = "user",
    command: list[str] | None = None,
    report_json: str | None = None,
    quiet: bool = False,
    trust: bool = False,
    endpoint: str | None = None,
) -> RepairResult:
    """Run a planned repair as one selective replay (the CLI prints the plan first; *trust*
    and *endpoint* as for replay_bundle)."""
    try:
        from symtrace.process.runner import replay_bundle
    except ImportError as exc:
        raise RepairUnavailable(
            "selective replay (symtrace.process.runner.replay_bundle) is not available in this "
            "build"
        ) from exc
    outcome = replay_bundle(
        os.fspath(bundle_path),
        anchor=plan.choice.anchor,
        guidance=plan.guidance,
        placement=placement,
        out=out,
        command=command,
        report_json=report_json,
        quiet=quiet,
        trust=trust,
        endpoint=endpoint,
    )
    return RepairResult(plan, outcome)
