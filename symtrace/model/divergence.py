"""The first-divergence report: a value, readable from its fields alone.

A ReplayDivergence wraps one of these; its message is `render()`. The same report is written
by `--report-json` (`to_json()`), so a CI job can assert on fields rather than parse text.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from symtrace.model.canonical import JSONValue
from symtrace.model.events import summarize
from symtrace.model.hashing import short

MAX_DIFFERENCES = 8


class DivergenceKind(StrEnum):
    REQUEST_MISMATCH = "request_mismatch"
    UNEXPECTED_CALL = "unexpected_call"
    MISSING_CALL = "missing_call"
    ORDER_UNREACHABLE = "order_unreachable"
    EGRESS_BLOCKED = "egress_blocked"
    OUTCOME_MISMATCH = "outcome_mismatch"


CODES = {
    DivergenceKind.REQUEST_MISMATCH: "SYM-R101",
    DivergenceKind.UNEXPECTED_CALL: "SYM-R102",
    DivergenceKind.MISSING_CALL: "SYM-R103",
    DivergenceKind.ORDER_UNREACHABLE: "SYM-R105",
    DivergenceKind.EGRESS_BLOCKED: "SYM-R106",
    DivergenceKind.OUTCOME_MISMATCH: "SYM-R107",
}


@dataclass(frozen=True, slots=True)
class Difference:
    path: str  # JSON pointer into the canonical request
    expected: JSONValue
    actual: JSONValue

    def to_json(self) -> dict[str, JSONValue]:
        return {"path": self.path, "expected": self.expected, "actual": self.actual}


@dataclass(frozen=True, slots=True)
class Candidate:
    """An unconsumed record near the divergence, for orientation."""

    id: str
    position: int
    type: str
    lane: str
    agent: str | None
    summary: str

    def to_json(self) -> dict[str, JSONValue]:
        return {
            "id": self.id,
            "position": self.position,
            "type": self.type,
            "lane": self.lane,
            "agent": self.agent,
            "summary": self.summary,
        }

    def render(self) -> str:
        agent = f" {self.agent}" if self.agent else ""
        return f"    {self.id} (pos {self.position}, {self.lane}{agent}) {self.summary}"


@dataclass(frozen=True, slots=True)
class DivergenceReport:
    kind: DivergenceKind
    bundle: str
    bundle_digest: str
    position: int | None  # expected record's position in O (None: nothing was expected)
    event_id: str | None  # expected record's id
    lane: str | None
    agent: str | None
    boundary: str  # "llm" | "tool" | "end"
    matched_before: int  # boundary calls matched before this one
    expected: JSONValue = None  # canonical request of the expected record
    actual: JSONValue = None  # canonical request of the call that arrived
    expected_hash: str | None = None
    actual_hash: str | None = None
    differences: tuple[Difference, ...] = ()
    nearest: tuple[Candidate, ...] = ()
    causal_parents: tuple[str, ...] = ()
    rules: tuple[str, ...] = ()
    warnings: tuple[str, ...] = field(default=())
    hint: str = ""
    # order_unreachable: the undelivered records the held one waits for, earliest first
    waiting_for: tuple[Candidate, ...] = ()

    @property
    def code(self) -> str:
        return CODES[self.kind]

    def to_json(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "kind": self.kind.value,
            "bundle": self.bundle,
            "bundle_digest": self.bundle_digest,
            "position": self.position,
            "event_id": self.event_id,
            "lane": self.lane,
            "agent": self.agent,
            "boundary": self.boundary,
            "matched_before": self.matched_before,
            "expected": self.expected,
            "actual": self.actual,
            "expected_hash": self.expected_hash,
            "actual_hash": self.actual_hash,
            "differences": [d.to_json() for d in self.differences],
            "nearest": [c.to_json() for c in self.nearest],
            "causal_parents": list(self.causal_parents),
            "normalisation_rules": list(self.rules),
            "warnings": list(self.warnings),
            "hint": self.hint,
            "waiting_for": [c.to_json() for c in self.waiting_for],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> DivergenceReport:
        """Inverse of to_json() (a child process hands its report back as JSON)."""
        return cls(
            kind=DivergenceKind(data["kind"]),
            bundle=data["bundle"],
            bundle_digest=data["bundle_digest"],
            position=data["position"],
            event_id=data["event_id"],
            lane=data["lane"],
            agent=data["agent"],
            boundary=data["boundary"],
            matched_before=data["matched_before"],
            expected=data["expected"],
            actual=data["actual"],
            expected_hash=data["expected_hash"],
            actual_hash=data["actual_hash"],
            differences=tuple(
                Difference(d["path"], d["expected"], d["actual"]) for d in data["differences"]
            ),
            nearest=tuple(Candidate(**c) for c in data["nearest"]),
            causal_parents=tuple(data["causal_parents"]),
            rules=tuple(data["normalisation_rules"]),
            warnings=tuple(data["warnings"]),
            hint=data["hint"],
            waiting_for=tuple(Candidate(**c) for c in data.get("waiting_for", ())),
        )

    def render(self) -> str:
        where = self.event_id or "end of recording"
        who = f"lane {self.lane}" if self.lane else "no lane"
        if self.agent:
            who += f", agent {self.agent}"
        title = {
            DivergenceKind.REQUEST_MISMATCH: "request does not match the recording",
            DivergenceKind.UNEXPECTED_CALL: "a boundary call the recording does not have",
            DivergenceKind.MISSING_CALL: "the run ended with recorded calls never made",
            DivergenceKind.ORDER_UNREACHABLE: "the recorded completion order cannot be reached",
            DivergenceKind.EGRESS_BLOCKED: "a network connection the recording does not serve",
            DivergenceKind.OUTCOME_MISMATCH: "the run ended differently from the recording",
        }[self.kind]
        lines = [
            f"[{self.code}] {title} at {where} (position {self.position}, {who})",
            f"  bundle {self.bundle} @ {short(self.bundle_digest, 12)}; "
            f"{self.matched_before} boundary calls matched before this",
        ]
        if self.expected is not None:
            lines.append(
                f"  expected {self.boundary} request {short(self.expected_hash or '')}: "
                f"{summarize(self.expected, 90)}"
            )
        if self.actual is not None:
            lines.append(
                f"  actual   {self.boundary} request {short(self.actual_hash or '')}: "
                f"{summarize(self.actual, 90)}"
            )
        if self.differences:
            lines.append("  first differences (JSON pointer into the canonical request):")
            for diff in self.differences:
                lines.append(
                    f"    {diff.path or '/'}  expected {_clip(diff.expected)}  "
                    f"actual {_clip(diff.actual)}"
                )
        if self.causal_parents:
            lines.append(
                f"  causal parents of the expected event: {', '.join(self.causal_parents)}"
            )
        if self.waiting_for:
            lines.append("  held until these recorded results are delivered (never requested):")
            lines.extend(cand.render() for cand in self.waiting_for)
        if self.nearest:
            lines.append("  nearest unconsumed records:")
            lines.extend(cand.render() for cand in self.nearest)
        for warning in self.warnings:
            lines.append(f"  warning: {warning}")
        if self.hint:
            lines.append(f"  hint: {self.hint}")
        return "\n".join(lines)


def json_differences(
    expected: JSONValue, actual: JSONValue, limit: int = MAX_DIFFERENCES
) -> tuple[Difference, ...]:
    """The first differing JSON paths between two canonical values, in document order."""
    out: list[Difference] = []
    _walk(expected, actual, "", out, limit)
    return tuple(out)


_MISSING = "<absent>"


def _walk(a: JSONValue, b: JSONValue, path: str, out: list[Difference], limit: int) -> None:
    if len(out) >= limit:
        return
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b)):
            child = f"{path}/{key.replace('~', '~0').replace('/', '~1')}"
            if key not in a:
                out.append(Difference(child, _MISSING, b[key]))
            elif key not in b:
                out.append(Difference(child, a[key], _MISSING))
            else:
                _walk(a[key], b[key], child, out, limit)
            if len(out) >= limit:
                return
    elif isinstance(a, list) and isinstance(b, list):
        for index in range(max(len(a), len(b))):
            child = f"{path}/{index}"
            if index >= len(a):
                out.append(Difference(child, _MISSING, b[index]))
            elif index >= len(b):
                out.append(Difference(child, a[index], _MISSING))
            else:
                _walk(a[index], b[index], child, out, limit)
            if len(out) >= limit:
                return
    elif a != b or type(a) is not type(b):
        out.append(Difference(path, a, b))


def _clip(value: JSONValue, limit: int = 70) -> str:
    text = summarize(value, limit) if isinstance(value, dict | list) else repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"
