"""The diagnosis in plain words: one summary that `symtrace diagnose` prints and the viewer shows.

A `Summary` is built from a Diagnosis and holds sentences, not notation: what looks wrong,
where it shows, where it started, where a repair resumes, the evidence, and what to try. The
CLI wraps the sentences to the terminal and the page prints them as they are, so the two say
the same thing (the coefficients stay behind `--explain` and `--json`).
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from symtrace.diagnosis.pipeline import Diagnosis, NodeDiagnosis
from symtrace.diagnosis.symptoms import Category
from symtrace.model.events import EventType

MAX_REASONS = 5  # evidence lines before "and N more"

# What each symptom category means, in words a user of the framework would use.
PLAIN_CATEGORY: dict[Category, str] = {
    Category.C1: "a requirement of the task was not met",
    Category.C2: "the run repeated itself or stopped making progress",
    Category.C3: "an error was left unresolved",
    Category.C4: "what the agents planned, did and got does not add up",
}
PLAIN_TYPE: dict[EventType, str] = {
    EventType.AGENT_ACTION: "LLM call",
    EventType.TOOL_CALL: "tool call",
    EventType.TOOL_RESULT: "tool result",
    EventType.FINAL_RESULT: "final result",
}
# How the LLM call a repair resumes at relates to the node it repairs (anchors.Boundary).
RELATION: dict[str, str] = {
    "self": "that LLM call itself",
    "downstream": "the first LLM call that reads it",
    "lane": "the next LLM call of the same agent",
    "producer": "the LLM call that produced it",
}


class Verdict(StrEnum):
    NO_SYMPTOM = "no_symptom"  # no rule fired on any node
    NOT_ACTIONABLE = "not_actionable"  # symptoms, none strong enough or none with an LLM call
    REPAIRABLE = "repairable"  # an anchor: where a repair would resume


@dataclass(frozen=True)
class Suggestion:
    argv: tuple[str, ...]
    purpose: str

    @property
    def command(self) -> str:
        return shlex.join(self.argv)


@dataclass(frozen=True)
class Summary:
    source: str
    verdict: Verdict
    headline: str  # what looks wrong, in one or two sentences
    where: tuple[str, ...]  # where it shows, where it started, where a repair resumes
    reasons: tuple[str, ...]  # the evidence, one sentence per rule match
    more_reasons: int  # evidence left out of `reasons`
    suggestions: tuple[Suggestion, ...]
    symptom: str | None = None
    origin: str | None = None
    anchor: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "verdict": self.verdict.value,
            "headline": self.headline,
            "where": list(self.where),
            "reasons": list(self.reasons),
            "more_reasons": self.more_reasons,
            "suggestions": [{"command": s.command, "purpose": s.purpose}
                            for s in self.suggestions],
            "symptom": self.symptom,
            "origin": self.origin,
            "anchor": self.anchor,
        }


def summarize_diagnosis(diagnosis: Diagnosis) -> Summary:
    flagged = [n for n in diagnosis.nodes if n.confirmed]
    count = len(diagnosis.nodes)
    source = diagnosis.source
    if not flagged:
        return Summary(
            source, Verdict.NO_SYMPTOM,
            f"No symptom found: no rule flagged any of the {count} steps.",
            (), (), 0, (),
        )
    anchor = diagnosis.anchor
    if anchor is None:
        best = max(flagged, key=lambda n: (n.c_f, -n.view.index))
        why_not = (
            "there is no LLM call to resume at"
            if best.boundary is None
            else f"the strongest scores {best.c_f:.2f}, below the threshold of "
            f"{diagnosis.config.theta:.2f} (--theta)"
        )
        headline = (
            f"Symptoms found, but not strong enough to repair from: {why_not}. "
            f"{_what(best)}."
        )
        reasons, more = _reasons(diagnosis, best)
        suggestions = (
            Suggestion(("symtrace", "diagnose", source, "--explain", best.view.id),
                       "the rules and scores behind this"),
        )
        return Summary(source, Verdict.NOT_ACTIONABLE, headline, (_shows(best, count),),
                       reasons, more, suggestions, symptom=best.view.id)
    symptom = diagnosis.node(anchor.symptom or anchor.target)
    others = len(flagged) - 1
    headline = _what(symptom) + "." + (
        f" {others} other step{'s' if others != 1 else ''} show{'' if others != 1 else 's'} "
        "symptoms too." if others else ""
    )
    where = [_shows(symptom, count)]
    if anchor.target != symptom.view.id:
        origin = diagnosis.node(anchor.target).view
        because = "; ".join(step.detail for step in anchor.trace) or "traced back in the graph"
        where.append(
            f"It started at {origin.id} ({_who(origin)}, {PLAIN_TYPE[origin.type]}): {because}."
        )
    resume = RELATION.get(anchor.relation, anchor.relation)
    if anchor.anchor == anchor.target != symptom.view.id:
        resume = "the LLM call where it started"
    where.append(f"A repair resumes at {anchor.anchor}, {resume}.")
    reasons, more = _reasons(diagnosis, symptom)
    if anchor.replayable:
        repair = Suggestion(
            ("symtrace", "repair", source),
            f"replay up to {anchor.anchor}, add guidance there and go live from it",
        )
    else:
        repair = Suggestion(
            ("symtrace", "record", "-o", "BUNDLE", "--", "python", "app.py"),
            "this is an analysis-only trace (imported from a log), which cannot be replayed: "
            "record the run with symtrace to repair it",
        )
    suggestions = (
        repair,
        Suggestion(("symtrace", "diagnose", source, "--explain", symptom.view.id),
                   "the rules and scores behind this"),
    )
    return Summary(source, Verdict.REPAIRABLE, headline, tuple(where), reasons, more,
                   suggestions, symptom=symptom.view.id, origin=anchor.target,
                   anchor=anchor.anchor)


def _what(node: NodeDiagnosis) -> str:
    category = node.confirmed[0]
    first = next(e for e in node.confirmed_evidence if e.category is category)
    meaning = PLAIN_CATEGORY[category]
    return f"{meaning[0].upper()}{meaning[1:]} ({category.value}) at {node.view.id}: {first.note}"


def _who(view: Any) -> str:
    return view.agent or view.lane


def _shows(node: NodeDiagnosis, count: int) -> str:
    v = node.view
    return f"It shows at {v.id} ({_who(v)}, {PLAIN_TYPE[v.type]}, step {v.index + 1} of {count})."


def _reasons(diagnosis: Diagnosis, first: NodeDiagnosis) -> tuple[tuple[str, ...], int]:
    """One sentence per confirmed rule match, the symptom's first; a quote already shown is
    not repeated (propagated evidence quotes the failure it continues from)."""
    ordered = [first] + [n for n in diagnosis.nodes if n.confirmed and n is not first]
    lines, quoted = [], set()
    for node in ordered:
        for item in node.confirmed_evidence:
            quote = f': "{item.quote}"' if item.quote and item.quote not in quoted else ""
            quoted.add(item.quote)
            lines.append(f"{node.view.id}: {item.note}{quote}")
    if diagnosis.judge:
        lines.append(f"The symptoms above were confirmed by the judge {diagnosis.judge}.")
    return tuple(lines[:MAX_REASONS]), max(0, len(lines) - MAX_REASONS)

