"""Rule-first symptom detection (paper App. F.1, equations 18–19, Algorithm 3 lines 2–11).

A rule is a named, categorised detector. The rule sets R_1..R_4 are the entries of a rule
table; b_k(v) is "some rule of category k matched v", and L^r_v is the set of categories
with b_k(v) = 1. Adding a rule is adding an entry:

    def lorem_ipsum(view, ctx):
        if "lorem ipsum" in view.text.lower():
            return [evidence_at(view, view.text, "filler text instead of an answer")]
        return []

    rules = (*DEFAULT_RULES, Rule("c1_lorem_ipsum", Category.C1, lorem_ipsum, "filler text"))
    diagnosis = diagnose(bundle, rules=rules)

A rule's confidence (how strongly one match supports its category) is a scoring weight, so it
lives in `ScoringConfig.rule_confidence`, not here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import Any

from symtrace.bundle.reader import Bundle
from symtrace.diagnosis import detectors as d1
from symtrace.diagnosis import detectors_runtime as d2
from symtrace.diagnosis.symptoms import Category, Evidence, categories_of
from symtrace.diagnosis.view import NodeView, TraceContext, build_context

Detector = Callable[[NodeView, TraceContext], list[Evidence]]
"""A deterministic candidate condition r(v, τ<v, T): the evidence it matched, or []."""


@dataclass(frozen=True)
class Rule:
    """One entry of R_k: an id (stable, used in evidence and config), its category, the
    detector, and a one-line description of the Table 10 condition it implements."""

    id: str
    category: Category
    detect: Detector
    description: str

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "category": self.category.value, "description": self.description}


DEFAULT_RULES: tuple[Rule, ...] = (
    Rule("c1_unresolved_request", Category.C1, d1.unresolved_request,
         "returns an unresolved action request instead of the required result"),
    Rule("c1_output_format", Category.C1, d1.output_format,
         "produces an output incompatible with the stated output format"),
    Rule("c1_placeholder", Category.C1, d1.placeholder_or_skipped,
         "an action or output contains a placeholder, or the action is skipped"),
    Rule("c1_constraint", Category.C1, d1.constraint_violation,
         "violates an explicit task constraint"),
    Rule("c2_repeated_action", Category.C2, d1.repeated_action,
         "the normalized action fingerprint or tool URL matches a preceding node"),
    Rule("c2_retry_without_change", Category.C2, d1.retry_without_change,
         "retries without new parameters or evidence"),
    Rule("c2_repeated_final", Category.C2, d1.repeated_final,
         "another final-style output follows without an advancing action"),
    Rule("c3_error_recorded", Category.C3, d2.error_recorded,
         "records an error, timeout or failed tool result"),
    Rule("c3_inaccessible", Category.C3, d2.inaccessible_evidence,
         "reports inaccessible required evidence"),
    Rule("c3_continues_from_failure", Category.C3, d2.continues_from_failure,
         "continues from a failed upstream node (propagated)"),
    Rule("c3_final_despite_error", Category.C3, d2.final_despite_error,
         "proceeds to a final answer while an error remains in the preceding trace (propagated)"),
    Rule("c4_browser_url", Category.C4, d2.browser_url,
         "a browser action lacks a URL or uses an invalid view-source: URL"),
    Rule("c4_structured_vs_html", Category.C4, d2.structured_vs_html,
         "structured data is requested but HTML is returned"),
    Rule("c4_completion_after_failure", Category.C4, d2.completion_after_failure,
         "completion follows an unsuccessful action (propagated)"),
    Rule("c4_no_tool_evidence", Category.C4, d2.answer_without_tool_evidence,
         "a tool-dependent task is answered without successful tool evidence"),
    Rule("c4_claim_contradicts_plan", Category.C4, d2.claim_contradicts_plan,
         "claims a final answer while stating that further action is still needed"),
    Rule("c4_plan_action_mismatch", Category.C4, d2.plan_action_mismatch,
         "the stated plan names a different tool than the one called"),
)  # fmt: skip


@dataclass(frozen=True)
class NodeSymptoms:
    """(L^r_v, E^r_v) for one node: the evidence every rule matched, in rule-table order."""

    view: NodeView
    evidence: tuple[Evidence, ...]

    @property
    def categories(self) -> tuple[Category, ...]:
        return categories_of(self.evidence)

    @property
    def triggered(self) -> bool:
        return bool(self.evidence)


def check_rules(rules: Iterable[Rule]) -> tuple[Rule, ...]:
    """Validate a rule table: unique ids, a Category each, a callable detector."""
    table = tuple(rules)
    seen: set[str] = set()
    for rule in table:
        if not isinstance(rule, Rule):
            raise TypeError(f"expected a Rule, got {type(rule).__name__}: {rule!r}")
        if not isinstance(rule.category, Category):
            raise TypeError(f"rule {rule.id!r}: category must be a Category, got {rule.category!r}")
        if not callable(rule.detect):
            raise TypeError(f"rule {rule.id!r}: detect must be callable")
        if rule.id in seen:
            raise ValueError(f"duplicate rule id {rule.id!r}")
        seen.add(rule.id)
    return table


def without(rules: Iterable[Rule], ids: Iterable[str]) -> tuple[Rule, ...]:
    """*rules* minus the rules named in *ids*; an unknown id is an error, not a no-op."""
    table = tuple(rules)
    drop = list(ids)
    unknown = [i for i in drop if i not in {r.id for r in table}]
    if unknown:
        known = ", ".join(r.id for r in table)
        raise ValueError(f"unknown rule id(s) {', '.join(unknown)} (rules: {known})")
    return tuple(r for r in table if r.id not in drop)


def run_rules(view: NodeView, ctx: TraceContext, rules: tuple[Rule, ...]) -> NodeSymptoms:
    """Algorithm 3 lines 4–11 for one node: every rule of C1, then C2, C3, C4."""
    found: list[Evidence] = []
    for category in Category:
        for rule in rules:
            if rule.category is not category:
                continue
            for item in rule.detect(view, ctx):
                if not isinstance(item, Evidence):
                    raise TypeError(
                        f"rule {rule.id!r} returned {type(item).__name__}, expected Evidence"
                    )
                found.append(replace(item, rule=rule.id, category=rule.category))
    return NodeSymptoms(view, tuple(found))


def detect_symptoms(
    source: Bundle | TraceContext, rules: Iterable[Rule] = DEFAULT_RULES
) -> tuple[NodeSymptoms, ...]:
    """L^r and E^r for every completed node, in observed order (deterministic)."""
    ctx = source if isinstance(source, TraceContext) else build_context(source)
    table = check_rules(rules)
    return tuple(run_rules(view, ctx, table) for view in ctx.views)
