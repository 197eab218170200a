"""Mechanism-level failure equivalence (paper App. D.1, eq. 9–13): does an attempt reproduce
the source failure, not merely fail again?

The source failure's mechanism is read from its diagnosis: the gated symptom node of the
suspicious policy (the first eligible node in O) gives the category c_i, the mechanism m_i
(the rules that fired for that category), the role ρ_i (node type and agent) and the evidence
E_i. An attempt reproduces it when the evaluator rejects it **and** its own diagnosis has an
event ê that

* has the same category (eq. 9), fired by an equivalent rule (eq. 10: the same detector, i.e.
  the same mechanism, not just any rule of the category),
* plays the corresponding role (eq. 11: same node type and, when the source names one, the same
  agent),
* carries grounded evidence (eq. 13): its quote occurs verbatim in the attempt's own events at
  the ids it names, and the event is *live* in the attempt — for an RQ1 selective replay the
  prefix is the source's own record, so a match there would be reproduction by construction.

A source on which no rule fired has no mechanism to compare with; for those cases (listed in
the report) the attempt must fail with the very same evaluator reason.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from symtrace.bundle.reader import Bundle
from symtrace.diagnosis import diagnose
from symtrace.diagnosis.symptoms import Evidence
from symtrace.diagnosis.view import NodeView, TraceContext

MIN_PIECE = 6  # quote fragments shorter than this are too generic to ground anything


@dataclass(frozen=True)
class Signature:
    """The source failure's mechanism for one category: (c_i, m_i, ρ_i, E_i)."""

    category: str
    rules: tuple[str, ...]
    node_type: str
    agent: str | None
    evidence: tuple[str, ...]
    event: str

    def to_json(self) -> dict[str, Any]:
        return {"category": self.category, "rules": list(self.rules),
                "role": {"type": self.node_type, "agent": self.agent},
                "evidence": list(self.evidence), "event": self.event}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Signature:
        return cls(data["category"], tuple(data["rules"]), data["role"]["type"],
                   data["role"]["agent"], tuple(data["evidence"]), data["event"])


def source_signatures(bundle: Bundle, judge: Any = None) -> list[Signature]:
    """The mechanism of the source failure, one signature per confirmed category of its
    gated symptom node; [] when the diagnosis found no eligible node."""
    diagnosis = diagnose(bundle, judge=judge)
    choice = diagnosis.anchor
    if choice is None or choice.symptom is None:
        return []
    node = diagnosis.node(choice.symptom)
    out = []
    for category in node.confirmed:
        items = [e for e in node.confirmed_evidence if e.category == category]
        out.append(Signature(category.value, tuple(sorted({e.rule for e in items})),
                             node.view.type.value, node.view.agent,
                             tuple(e.quote for e in items), node.view.id))
    return out


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
               judge: Any = None) -> Match | None:
    """The first event of *attempt* (in O) satisfying eq. 12 with grounded evidence (eq. 13)."""
    wanted = list(signatures)
    if not wanted:
        return None
    diagnosis = diagnose(attempt, judge=judge)
    ctx = diagnosis.context
    for node in diagnosis.nodes:
        view = node.view
        if view.id not in live:
            continue
        for evidence in node.confirmed_evidence:
            for sig in wanted:
                if (evidence.category is not None and evidence.category.value == sig.category
                        and evidence.rule in sig.rules and _same_role(view, sig)
                        and grounded(evidence, ctx, attempt, live)):
                    return Match(view.id, sig.category, evidence.rule, evidence.quote)
    return None


def _same_role(view: NodeView, sig: Signature) -> bool:
    return view.type.value == sig.node_type and (sig.agent is None or view.agent == sig.agent)


def grounded(evidence: Evidence, ctx: TraceContext, bundle: Bundle, live: set[str]) -> bool:
    """The quote is really in the attempt: every long fragment of it (quotes elide with "…")
    occurs in the text of the events it names, and the event it is attached to is live."""
    if not evidence.event_ids or evidence.event_ids[0] not in live:
        return False
    pieces = [p.strip() for p in evidence.quote.split("…")]
    pieces = [_norm(p) for p in pieces if len(p.strip()) >= MIN_PIECE]
    if not pieces:
        return False
    corpus = " ".join(_event_text(ctx, bundle, event_id) for event_id in evidence.event_ids)
    return all(p in corpus for p in pieces)


def _event_text(ctx: TraceContext, bundle: Bundle, event_id: str) -> str:
    parts: list[str] = []
    view = ctx.by_id.get(event_id)
    if view is not None:
        parts.append(view.text)
        if view.error is not None:
            parts.append(view.error.render())
    try:
        event = bundle.event(event_id)
    except Exception:  # noqa: BLE001 -- an id the bundle lacks grounds nothing
        return _norm(" ".join(parts))
    _strings(event.request, parts)
    _strings(event.response, parts)
    return _norm(" ".join(parts))


def _strings(value: Any, out: list[str]) -> None:
    """Every string leaf (JSON-decoded, so escapes do not hide a quote) and, for a string
    holding JSON, the leaves of that too."""
    if isinstance(value, str):
        out.append(value)
    elif isinstance(value, dict):
        for key, item in value.items():
            out.append(str(key))
            _strings(item, out)
    elif isinstance(value, list):
        for item in value:
            _strings(item, out)
    elif value is not None:
        out.append(str(value))


def _norm(text: str) -> str:
    return " ".join(text.split()).casefold()
