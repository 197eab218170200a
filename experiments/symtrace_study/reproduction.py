"""Mechanism-level failure equivalence (paper App. D.1, eq. 9–13): does an attempt reproduce
the source failure, not merely fail again?

The source failure's mechanism is read from its diagnosis (or from a human label, labels.py):
the gated symptom node of the suspicious policy (the first eligible node in O) gives the
category c_i, the mechanism m_i (the rules that fired for that category), the role ρ_i (node
type and agent) and the evidence E_i. E_i is kept in two forms: the detectors' quotes (for
people) and its *facets* — the case-specific content of the events the evidence names, in
canonical form: the failing action (`call:` tool name + normalized arguments), the claimed
output (`output:`), the URL acted on (`url:`), the recorded fault (`error:`), else the text.
An attempt reproduces the source failure when the evaluator rejects it **and** some event ê of
its own diagnosis

* has the same category (eq. 9), fired by an equivalent rule (eq. 10: the same detector),
* plays the corresponding role (eq. 11: same node type and, when the source names one, the same
  agent),
* carries grounded evidence (eq. 13): ê is *live* in the attempt, and the facets of ê's
  evidence — computed from the attempt's own *live* events, never from rendered quotes — share
  the source's most specific facet kind (`FACET_ORDER`): the same failing call, the same
  claimed output, the same URL or the same fault. For an RQ1 selective replay the prefix is
  the source's own record, so its events never ground anything.

A same-kind failure of another task (another query, another answer) therefore no longer counts;
`measure_cross_case` gives the rate at which a source's signature matches failed attempts of
OTHER tasks (the check's false-positive rate) next to its own task's.

A source on which no rule fired has no mechanism to compare with; for those cases (listed in
the report) the attempt must fail with the very same evaluator reason.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from symtrace.bundle.reader import Bundle
from symtrace.diagnosis import diagnose
from symtrace.diagnosis.message_text import normalize_url, normalize_value
from symtrace.diagnosis.symptoms import Evidence
from symtrace.diagnosis.view import NodeView, TraceContext
from symtrace.model.canonical import canonical_bytes
from symtrace.model.events import EventType

# Most specific first: a signature is compared on the first kind it has.
FACET_ORDER = ("call", "output", "url", "error", "text")
TEXT_FACET = 200  # characters of normalized text kept as a `text:` facet


@dataclass(frozen=True)
class Signature:
    """The source failure's mechanism for one category: (c_i, m_i, ρ_i, E_i)."""

    category: str
    rules: tuple[str, ...]
    node_type: str
    agent: str | None
    evidence: tuple[str, ...]
    event: str
    facets: tuple[str, ...] = ()  # E_i in canonical form (see the module docstring)

    @property
    def kind(self) -> str | None:
        """The facet kind this signature is compared on."""
        kinds = {f.split(":", 1)[0] for f in self.facets}
        return next((k for k in FACET_ORDER if k in kinds), None)

    def to_json(self) -> dict[str, Any]:
        return {"category": self.category, "rules": list(self.rules),
                "role": {"type": self.node_type, "agent": self.agent},
                "evidence": list(self.evidence), "event": self.event,
                "facets": list(self.facets)}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Signature:
        return cls(data["category"], tuple(data["rules"]), data["role"]["type"],
                   data["role"]["agent"], tuple(data["evidence"]), data["event"],
                   tuple(data.get("facets", ())))


def source_signatures(bundle: Bundle, judge: Any = None, **diagnosis: Any) -> list[Signature]:
    """The mechanism of the source failure, one signature per confirmed category of its
    gated symptom node; [] when the diagnosis found no eligible node. *diagnosis* takes the
    study's θ and trace-back (judging.diagnose_kwargs), so the symptom is the one the
    collection and the suspicious arm use."""
    found = diagnose(bundle, judge=judge, **diagnosis)
    choice = found.anchor
    if choice is None or choice.symptom is None:
        return []
    node = found.node(choice.symptom)
    everything = {view.id for view in found.context.views}
    out = []
    for category in node.confirmed:
        items = [e for e in node.confirmed_evidence if e.category == category]
        keys: set[str] = set()
        for item in items:
            keys |= evidence_facets(item, found.context, everything)
        out.append(Signature(category.value, tuple(sorted({e.rule for e in items})),
                             node.view.type.value, node.view.agent,
                             tuple(e.quote for e in items), node.view.id, tuple(sorted(keys))))
    return out


def view_facets(view: NodeView) -> set[str]:
    """The case-specific content of one event, canonical (case, whitespace, URL slashes and
    key order folded): what it did, claimed, acted on or failed with."""
    out = {f"call:{call.fingerprint}" for call in view.calls}
    out |= {f"url:{normalize_url(url).lower()}" for url in view.urls}
    if view.final_style and view.output is not None:
        out.add("output:" + canonical_bytes(normalize_value(view.output)).decode())
    if view.error is not None:
        out.add("error:" + _norm(view.error.render()))
    if not out and view.text.strip():
        out.add("text:" + _norm(view.text)[:TEXT_FACET])
    return out


def evidence_facets(evidence: Evidence, ctx: TraceContext, live: set[str]) -> set[str]:
    """The facets of the events *evidence* names, counting only events in *live*."""
    out: set[str] = set()
    for event_id in evidence.event_ids:
        view = ctx.by_id.get(event_id)
        if view is not None and event_id in live:
            out |= view_facets(view)
    if not out and evidence.event_ids and evidence.event_ids[0] in live:
        out.add("text:" + _norm(evidence.quote)[:TEXT_FACET])
    return out


def evidence_text(evidence: Evidence, ctx: TraceContext, live: set[str]) -> str:
    """The normalized text of the live events *evidence* names (for `text:` facets)."""
    parts = []
    for event_id in evidence.event_ids:
        view = ctx.by_id.get(event_id)
        if view is not None and event_id in live:
            parts.append(view.text)
            if view.error is not None:
                parts.append(view.error.render())
    return _norm(" ".join(parts))


def same_mechanism(sig: Signature, attempt_facets: set[str], text: str = "") -> bool:
    """Grounded(E_ê, E_i): the attempt's own live facets share the source's most specific
    facet kind; a `text:` facet must occur in the attempt's live evidence text. A signature
    without facets (rows of older studies) cannot be grounded this way."""
    kind = sig.kind
    if kind is None:
        return False
    wanted = {f for f in sig.facets if f.startswith(kind + ":")}
    if kind == "text":
        return any(f[len("text:"):] in text for f in wanted)
    return bool(wanted & attempt_facets)


def label_signature(label: Any, bundle: Bundle) -> Signature:
    """The source mechanism as a human labelled it (labels.py): no detector rule to match,
    the role is the agent (if any), the evidence is the label's (else the target's facets)."""
    from symtrace.diagnosis.view import build_context
    from symtrace_study.labels import evidence_facet

    view = build_context(bundle).by_id[label.target]
    facets = {evidence_facet(e) for e in label.evidence} or view_facets(view)
    return Signature(label.category, (), "*", label.agent or view.agent, label.evidence,
                     view.id, tuple(sorted(facets)))


def live_events(bundle: Bundle) -> set[str]:
    """The events an attempt produced itself: every event of a fresh run; of a selective
    replay's child, the lineage's live events and its final result (the program produced it
    after the anchor, though lineage lists only boundary events: without it a source whose
    first symptom is its final result could never be reproduced by replay)."""
    lineage = bundle.lineage or {}
    if "live_events" not in lineage:
        return {e.id for e in bundle.events}
    return set(lineage["live_events"]) | {
        e.id for e in bundle.events if e.type is EventType.FINAL_RESULT}


@dataclass(frozen=True)
class Match:
    """The attempt event that reproduces the source mechanism."""

    event: str
    category: str
    rule: str
    quote: str

    def to_json(self) -> dict[str, str]:
        return {"event": self.event, "category": self.category, "rule": self.rule,
                "quote": self.quote}


def find_match(signatures: Iterable[Signature], attempt: Bundle, live: set[str],
               judge: Any = None, **diagnosis: Any) -> Match | None:
    """The first event of *attempt* (in O) satisfying eq. 12 with grounded evidence (eq. 13)."""
    wanted = list(signatures)
    if not wanted:
        return None
    return match_diagnosis(wanted, diagnose(attempt, judge=judge, **diagnosis), live)


def match_diagnosis(signatures: list[Signature], found: Any, live: set[str]) -> Match | None:
    """find_match on an attempt already diagnosed (the audit compares one attempt with many
    sources)."""
    wanted = signatures
    ctx = found.context
    for node in found.nodes:
        view = node.view
        if view.id not in live:
            continue
        for evidence in node.confirmed_evidence:
            for sig in wanted:
                if (evidence.category is not None and evidence.category.value == sig.category
                        and (not sig.rules or evidence.rule in sig.rules)
                        and _same_role(view, sig)
                        and same_mechanism(sig, evidence_facets(evidence, ctx, live),
                                           evidence_text(evidence, ctx, live))):
                    return Match(view.id, sig.category, evidence.rule, evidence.quote)
    return None


def _same_role(view: NodeView, sig: Signature) -> bool:
    """Same node type ("*" for a label: its role is the agent) and, when the source names
    one, the same agent."""
    return (sig.node_type in ("*", view.type.value)
            and (sig.agent is None or view.agent == sig.agent))


def _norm(text: str) -> str:
    return " ".join(text.split()).casefold()
