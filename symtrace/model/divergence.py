"""The first-divergence report: a value, readable from its fields alone.

A ReplayDivergence wraps one of these; its message is `render()` (or `headline` when the CLI
prints the report itself). The same report is written by `--report-json` (`to_json()`), so a
CI job can assert on fields rather than parse text. `render(width, color=...)` fits a terminal:
a request mismatch is shown as a word-level excerpt of both sides around the first differing
character (model/textdiff.py), the message that differs named, not the last one.
"""

from __future__ import annotations

import shlex
import textwrap
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from symtrace.model.canonical import JSONValue
from symtrace.model.events import summarize
from symtrace.model.hashing import short
from symtrace.model.inert import inert
from symtrace.model.textdiff import Excerpt, first_difference, word_excerpts

MAX_DIFFERENCES = 8


class DivergenceKind(StrEnum):
    REQUEST_MISMATCH = "request_mismatch"
    UNEXPECTED_CALL = "unexpected_call"
    MISSING_CALL = "missing_call"
    ORDER_UNREACHABLE = "order_unreachable"
    EGRESS_BLOCKED = "egress_blocked"
    OUTCOME_MISMATCH = "outcome_mismatch"
    ANCHOR_FAILED = "anchor_failed"  # no guided attempt of the anchor succeeded


CODES = {
    DivergenceKind.REQUEST_MISMATCH: "SYM-R101",
    DivergenceKind.UNEXPECTED_CALL: "SYM-R102",
    DivergenceKind.MISSING_CALL: "SYM-R103",
    DivergenceKind.ORDER_UNREACHABLE: "SYM-R105",
    DivergenceKind.EGRESS_BLOCKED: "SYM-R106",
    DivergenceKind.OUTCOME_MISMATCH: "SYM-R107",
    DivergenceKind.ANCHOR_FAILED: "SYM-R109",
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

    def render(self, width: int = 100) -> str:
        agent = f", agent {self.agent}" if self.agent and self.agent != self.lane else ""
        head = inert(f"    {self.id} (position {self.position}, lane {self.lane}{agent}) ",
                     keep_lines=False)
        room = max(12, width - len(head))
        text = inert(" ".join(self.summary.split()), keep_lines=False)
        return head + (text if len(text) <= room else text[: room - 1] + "…")


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
    # set by the process runner when the replayed command is not the recorded one
    recorded_command: tuple[str, ...] | None = None
    replayed_command: tuple[str, ...] | None = None

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
            "recorded_command": _argv_json(self.recorded_command),
            "replayed_command": _argv_json(self.replayed_command),
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
            recorded_command=_argv(data.get("recorded_command")),
            replayed_command=_argv(data.get("replayed_command")),
        )

    @property
    def headline(self) -> str:
        """The first line of the report: code, what happened and where."""
        if self.event_id:
            where = f"at {self.event_id}"
        elif self.nearest:
            where = "with no matching record"
        else:
            where = "after the last recorded call"
        return f"[{self.code}] {TITLES[self.kind]} {where}"

    def render(self, width: int = 100, *, color: bool = False) -> str:
        """The report as text lines of at most *width* columns (ANSI colours if *color*).

        A request mismatch shows the first differing field as an excerpt of each side around
        its first differing word, so a change at the end of a long prompt is on screen."""
        width = max(MIN_WIDTH, width)
        lines = _wrap(self.headline, width, indent="")
        if color:
            code = f"[{self.code}]"
            lines[0] = lines[0].replace(code, f"{_BOLD}{_RED}{code}{_RESET}", 1)
        if self.recorded_command is not None and self.replayed_command is not None:
            lines += _wrap(
                "the command differs from the recorded one: recorded "
                f"`{shlex.join(self.recorded_command)}`, replayed "
                f"`{shlex.join(self.replayed_command)}`",
                width,
            )
        lines += _wrap("; ".join(self._facts()), width)
        hashes = [short(h, 8) for h in (self.expected_hash, self.actual_hash) if h]
        request = f"; request hash {' → '.join(hashes)}" if hashes else ""
        digest = f"events digest sha256:{short(self.bundle_digest, 12)}"
        lines += _wrap(f"bundle {self.bundle} ({digest}){request}", width)
        lines += self._requests(width, color)
        if self.causal_parents:
            lines += _wrap(
                f"causal parents of the expected event: {', '.join(self.causal_parents)}", width
            )
        if self.waiting_for:
            lines += _wrap(
                "held until these recorded results are delivered (never requested):", width
            )
            lines.extend(cand.render(width) for cand in self.waiting_for)
        nearest = [cand for cand in self.nearest if cand.id != self.event_id]
        if nearest:
            lines += _wrap("recorded calls not made yet, nearest first:", width)
            lines.extend(cand.render(width) for cand in nearest)
        for warning in self.warnings:
            lines += _wrap(f"warning: {warning}", width)
        if self.hint:
            lines += _wrap(f"hint: {self.hint}", width)
        return "\n".join(lines)

    def _facts(self) -> list[str]:
        facts = [f"lane {self.lane}"] if self.lane else []
        if self.agent and self.agent != self.lane:
            facts.append(f"agent {self.agent}")
        if self.position is not None:
            facts.append(f"recorded position {self.position}")
        calls = "call" if self.matched_before == 1 else "calls"
        facts.append(f"{self.matched_before} boundary {calls} matched before it")
        if self.event_id is None and self.kind is DivergenceKind.UNEXPECTED_CALL:
            facts.append(
                "the recording still expects the calls listed below"
                if self.nearest
                else "every recorded call was already made"
            )
        return facts

    def _requests(self, width: int, color: bool) -> list[str]:
        """The expected and actual request lines: around the first difference when both
        exist, else a summary of the one there is."""
        what = "outcome" if self.boundary == "end" else f"{self.boundary} request"
        expected = f"  expected {what}: "
        actual = f"  actual   {what}: "
        budget = width - len(expected)
        if not (self.differences and self.expected is not None and self.actual is not None):
            lines = []
            if self.expected is not None:
                lines.append(expected + _fit(summarize(self.expected, budget), budget))
            if self.actual is not None:
                lines.append(actual + _fit(summarize(self.actual, budget), budget))
            return lines
        first = self.differences[0]
        path = (first.path or "/") + _message_label(self.expected, first.path)
        a, b = first.expected, first.actual
        fits = all(len(repr(v)) <= budget and "\n" not in v for v in (a, b) if isinstance(v, str))
        if isinstance(a, str) and isinstance(b, str) and _MISSING not in (a, b) and not fits:
            at = first_difference(a, b)
            lines = _wrap(f"{path} differs from character {at} of {len(a)}:", width)
            left, right = word_excerpts(a, b, budget)
            lines.append(expected + _marked(left, ("[-", "-]"), _RED if color else None))
            lines.append(actual + _marked(right, ("{+", "+}"), _GREEN if color else None))
        else:
            lines = _wrap(f"{path} differs:", width)
            lines.append(expected + _clip(a, budget))
            lines.append(actual + _clip(b, budget))
        rest = [d.path or "/" for d in self.differences[1:]]
        if rest:
            more = " …" if len(self.differences) >= MAX_DIFFERENCES else ""
            lines += _wrap(f"also differ: {', '.join(rest)}{more}", width)
        return lines


TITLES = {
    DivergenceKind.REQUEST_MISMATCH: "request does not match the recording",
    DivergenceKind.UNEXPECTED_CALL: "a boundary call the recording does not have",
    DivergenceKind.MISSING_CALL: "the run ended with recorded calls never made",
    DivergenceKind.ORDER_UNREACHABLE: "the recorded completion order cannot be reached",
    DivergenceKind.EGRESS_BLOCKED: "a network connection the recording does not serve",
    DivergenceKind.OUTCOME_MISMATCH: "the run ended differently from the recording",
    DivergenceKind.ANCHOR_FAILED: "no guided attempt of the anchor succeeded",
}
MIN_WIDTH = 60
_RED, _GREEN, _BOLD, _RESET = "\x1b[31m", "\x1b[32m", "\x1b[1m", "\x1b[0m"


def _wrap(text: str, width: int, indent: str = "  ") -> list[str]:
    """*text* (recorded content in it made inert) in lines of *width*."""
    return textwrap.wrap(
        inert(text, keep_lines=False), width, initial_indent=indent,
        subsequent_indent=indent + "    ",
        break_on_hyphens=False, break_long_words=False,  # a path longer than a line stays whole
    ) or [indent]


def _marked(excerpt: Excerpt, marks: tuple[str, str], ansi: str | None) -> str:
    """A changed word in colour on a terminal, between word-diff marks anywhere else."""
    opening, closing = (ansi, _RESET) if ansi is not None else marks
    return "".join(f"{opening}{inert(p.text, keep_lines=False)}{closing}" if p.changed
                   else inert(p.text, keep_lines=False) for p in excerpt.pieces)


def _message_label(request: JSONValue, path: str) -> str:
    """" (message 0, system)" for a path into a chat request's messages, else ""."""
    parts = path.split("/")
    if len(parts) < 4 or parts[1] != "body" or not parts[3].isdigit():
        return ""
    body = request.get("body") if isinstance(request, dict) else None
    items = body.get(parts[2]) if isinstance(body, dict) else None
    if not isinstance(items, list) or int(parts[3]) >= len(items):
        return ""
    item = items[int(parts[3])]
    role = item.get("role") if isinstance(item, dict) else None
    return f" (message {parts[3]}{f', {role}' if isinstance(role, str) else ''})"


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


def _argv_json(argv: tuple[str, ...] | None) -> list[str] | None:
    return None if argv is None else list(argv)


def _argv(value: Any) -> tuple[str, ...] | None:
    return None if value is None else tuple(str(item) for item in value)


def _clip(value: JSONValue, limit: int = 70) -> str:
    if value == _MISSING:
        return _MISSING
    text = summarize(value, limit) if isinstance(value, dict | list) else repr(value)
    return _fit(text, limit)


def _fit(text: str, limit: int) -> str:
    """*text* made inert, cut to *limit* characters (its escapes counted)."""
    text = inert(text, keep_lines=False)
    return text if len(text) <= limit else text[: limit - 1] + "…"
