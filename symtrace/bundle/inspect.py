"""Looking at bundles: the `show` table and JSON, and `diff` between two bundles."""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from symtrace.bundle.reader import Bundle
from symtrace.model.attempts import failure_of, wire_format_of
from symtrace.model.canonical import JSONValue
from symtrace.model.divergence import Difference, json_differences
from symtrace.model.events import (
    RETRY_OF,
    TURN,
    Event,
    EventType,
    event_summary,
    is_strict_lane,
    one_line,
    summarize,
)
from symtrace.model.hashing import PREFIX, short
from symtrace.model.inert import inert
from symtrace.model.textdiff import word_excerpts

SHOW_SCHEMA = "symtrace.show/1"


def show_json(bundle: Bundle) -> dict[str, Any]:
    """Machine-readable view with stable field names (schema `symtrace.show/1`)."""
    manifest = bundle.manifest
    return {
        "schema": SHOW_SCHEMA,
        "path": str(bundle.path),
        "format_version": manifest["format_version"],
        "kind": manifest["kind"],
        "complete": bundle.complete,
        "outcome": manifest.get("outcome"),
        "task": bundle.task,
        "initial_state": bundle.initial_state,
        "config": bundle.config,
        "lineage": bundle.lineage,
        "events_digest": bundle.digest,
        "root_digest": bundle.root_digest,
        "warnings": list(bundle.warnings),
        "events": [
            {
                "id": e.id,
                "position": e.position,
                "type": e.type.value,
                "agent": e.agent,
                "lane": e.lane,
                "reason": e.reason,
                "parents": [edge.to_json() for edge in e.parents],
                "request": e.request,
                "response": e.response,
                "request_hash": e.request_hash,
                "response_hash": e.response_hash,
                "content_hash": e.content_hash,
                "meta": e.meta,
            }
            for e in bundle.events
        ],
    }


def digests_line(bundle: Bundle) -> str:
    """The bundle's two digests, named as `verify`, the viewer and divergence reports name
    them: the root digest seals the manifest and every file (what `verify` checks); the
    events digest covers the events alone (the recorded trajectory)."""
    root = short_ref(bundle.root_digest) if bundle.root_digest else "none (UNSEALED)"
    return f"root digest {root} · events digest {short_ref(bundle.digest)}"


def short_ref(digest: str, n: int = 12) -> str:
    """`sha256:` and the first *n* hex digits: a prefix of what `verify` prints in full."""
    return f"{PREFIX}{short(digest, n)}"


def outcome_text(bundle: Bundle) -> str:
    """How the recorded run ended, in the words of what ran: a test of the pytest plugin, a
    `symtrace.record` block of the Python API (no exit code), or a program (its exit code)."""
    outcome = bundle.manifest.get("outcome")
    if not isinstance(outcome, dict):
        return "no outcome (the recording did not finish)"
    status, code = outcome.get("status", "?"), outcome.get("exit_code")
    error = str(outcome.get("error") or "")
    raised = error.split(":", 1)[0].strip()
    if pytest_nodeid(bundle) is not None and code is None:
        if status == "ok":
            return "test passed"
        return f"test failed ({raised})" if raised else f"test {status}"
    if code is None:
        how = f"raised {raised}" if raised else "ended normally" if status == "ok" else status
        return f"outcome {status} (symtrace.record block {how})"
    return f"outcome {status} (exit {code})"


def pytest_nodeid(bundle: Bundle) -> str | None:
    """The node id of the test a bundle of the pytest plugin recorded (None for any other)."""
    user = bundle.config.get("user")
    test = user.get("pytest") if isinstance(user, dict) else None
    nodeid = test.get("nodeid") if isinstance(test, dict) else None
    return nodeid if isinstance(nodeid, str) else None


# Table layouts by console width: (minimum width, columns). Every row is one line (cells are
# ellipsized, never wrapped) and event ids are never shortened, so the table stays greppable
# and fits the terminal; what a narrow layout leaves out is named below the table.
WIDE, MEDIUM = 150, 110
FULL_COLUMNS = ("id", "type", "agent", "lane", "parents", "request", "response", "hashes")
LAYOUTS: tuple[tuple[int, tuple[str, ...]], ...] = (
    (WIDE, FULL_COLUMNS),
    (MEDIUM, ("id", "kind", "who", "parents", "request", "response")),
    (0, ("id", "kind", "who", "summary")),
)
CAPS = {"type": 32, "kind": 6, "agent": 16, "lane": 20, "who": 18, "parents": 30, "hashes": 17}
FLEXIBLE = ("summary", "request", "response", "parents")
SEPARATOR = 3  # cells are padded by one space each side plus the column rule
MIN_FLEX = 8
KINDS = {
    "agent_action": "llm",
    "tool_call": "tool",
    "tool_result": "result",
    "final_result": "final",
}
SUMMARY_LIMIT = 400  # rich ellipsizes to the column; this only bounds the work


def layout_for(width: int) -> tuple[str, ...]:
    return next(columns for minimum, columns in LAYOUTS if width >= minimum)


def _cells(event: Event, *, typed: bool) -> dict[str, str]:
    """Cell texts; without the *typed* (full type) column the reason leads the text instead."""
    reason = f" ({event.reason})" if event.reason else ""
    prefix = f"({event.reason}) " if event.reason else ""
    request = summarize(event.request, SUMMARY_LIMIT) if event.request is not None else ""
    response = summarize(event.response, SUMMARY_LIMIT) if event.response is not None else ""
    if event.type.value == "final_result":  # the answer, at every width (not the raw record)
        response = event_summary(event, SUMMARY_LIMIT)
    agent = event.agent or ""
    who = event.lane if not agent or event.lane.startswith(agent) else f"{agent} @ {event.lane}"
    # One summary column at narrow widths: what a tool was asked, what anything else produced.
    main = event_summary(event, SUMMARY_LIMIT)
    cells = {
        "id": event.id,
        "type": event.type.value + reason,
        "kind": KINDS.get(event.type.value, event.type.value),
        "agent": agent,
        "lane": event.lane,
        "who": who,
        "parents": ", ".join(
            f"{e.source}{'' if e.kind.value == 'data' else '·c'}" for e in event.parents
        ),
        "request": request if typed else prefix + request,
        "response": response,
        "summary": prefix + main,
        "hashes": " ".join(short(h, 8) for h in (event.request_hash, event.response_hash) if h),
    }
    return {column: inert(text, keep_lines=False) for column, text in cells.items()}


def _widths(columns: tuple[str, ...], rows: list[dict[str, str]], total: int) -> list[int]:
    """Fixed columns get their longest cell (capped; ids never), flexible ones share the rest."""
    natural = {c: max([len(c), *(len(r[c]) for r in rows)]) for c in columns}
    fixed = {
        c: natural[c] if c == "id" else min(natural[c], CAPS.get(c, natural[c]))
        for c in columns
        if c not in FLEXIBLE
    }
    flexible = [c for c in columns if c in FLEXIBLE]
    spare = total - sum(fixed.values()) - SEPARATOR * (len(columns) - 1)
    widths = dict(fixed)
    if "parents" in flexible and len(flexible) > 1:  # parents take only what they need
        widths["parents"] = max(MIN_FLEX, min(natural["parents"], CAPS["parents"], spare // 3))
        spare -= widths["parents"]
        flexible.remove("parents")
    for index, column in enumerate(flexible):
        share = spare // (len(flexible) - index)
        widths[column] = max(MIN_FLEX, min(share, natural[column]) if index < len(flexible) - 1
                             else share)
        spare -= widths[column]
    return [widths[c] for c in columns]


def show_table(bundle: Bundle, console: Console) -> None:
    """The bundle as a one-line-per-event table that fits *console*'s width."""
    manifest = bundle.manifest
    lineage = bundle.lineage
    width = console.width
    console.print(Text(inert(str(bundle.path), keep_lines=False), "bold"))
    console.print(
        Text.assemble(
            inert(f"{manifest['kind']} · format v{manifest['format_version']} · "),
            ("complete", "") if bundle.complete else ("INCOMPLETE", "red"),
            inert(f" · {outcome_text(bundle)} · {len(bundle.events)} events", keep_lines=False),
        )
    )
    console.print(Text(digests_line(bundle)))
    if bundle.task is not None:  # a pytest bundle's task is its test's node id
        label = "test" if pytest_nodeid(bundle) is not None else "task"
        task = bundle.task
        limit = max(20, width - 6)
        text = one_line(task, limit) if isinstance(task, str) else summarize(task, limit)
        console.print(Text(inert(f"{label}: {text}", keep_lines=False)))
    if lineage:
        console.print(
            Text(inert(
                f"child of {lineage.get('parent')} · anchor {lineage.get('anchor')} → live "
                f"{(lineage.get('intervention') or {}).get('event_id')} · "
                f"{len(lineage.get('replayed_events', []))} replayed, "
                f"{len(lineage.get('live_events', []))} live", keep_lines=False
            ))
        )
        if lineage.get("anchor_note"):
            console.print(Text(inert(f"note: {lineage['anchor_note']}", keep_lines=False)))
    live = set((lineage or {}).get("live_events", []))
    columns = layout_for(width)
    rows = [_cells(event, typed="type" in columns) for event in bundle.events]
    failed = failed_attempts(bundle.events)  # "HTTP 429, retried", not their raw bodies
    for event, row in zip(bundle.events, rows, strict=True):
        if event.id in failed:
            row["response"] = failed[event.id]
            row["summary"] = (f"({event.reason}) " if event.reason else "") + failed[event.id]
    marker = ("live",) if live else ()
    widths = _widths(marker + columns, [{"live": "◆", **r} for r in rows], width)
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, header_style="bold")
    for column, column_width in zip(marker + columns, widths, strict=True):
        table.add_column(column, width=column_width, no_wrap=True, overflow="ellipsis")
    for event, cells in zip(bundle.events, rows, strict=True):
        flag = ("◆" if event.id in live else "",) if live else ()
        # Text, not str: a prompt containing "[bold]" must not be read as markup.
        table.add_row(*(Text(v) for v in flag + tuple(cells[c] for c in columns)))
    console.print(table)
    hidden = [c for c in FULL_COLUMNS if c not in columns and c != "agent" and c != "lane"]
    if hidden:
        console.print(
            Text(
                f"not shown at width {width}: {', '.join(hidden)}"
                f"{' (request/response in one summary)' if 'summary' in columns else ''}; "
                f"--width {WIDE} shows every column, --json everything"
            )
        )
    for warning in bundle.warnings:
        console.print(Text.assemble(("warning: ", "yellow"), inert(warning)))


def failed_attempts(events: list[Event]) -> dict[str, str]:
    """LLM events whose response failed as an SDK retries (model/attempts.py), summarised
    as "HTTP 429, retried": retried when the lane's next LLM call is the same request (a
    recording's) or marks itself a retry of the anchor (a selective replay's child)."""
    out: dict[str, str] = {}
    llm = [e for e in events if e.type.value == "agent_action"]
    for index, event in enumerate(llm):
        failure = failure_of(event.response, wire_format_of(event.meta))
        if failure is None:
            continue
        later = next((e for e in llm[index + 1:] if e.lane == event.lane), None)
        retried = later is not None and (
            later.request_hash == event.request_hash
            or later.meta.get(RETRY_OF) in (event.id, event.meta.get(RETRY_OF)))
        out[event.id] = f"{failure}, retried" if retried else failure
    return out


@dataclass(frozen=True)
class BundleDiff:
    """Where two trajectories part, their events aligned by identity (`event_identities`).

    `index` is the first differing event's position in A (B's when A lacks it); `moved` are
    events equal on both sides whose order relative to an earlier one changed: concurrent work
    that finished in another order, listed, not a divergence."""

    identical: bool
    index: int | None
    left: Event | None
    right: Event | None
    field: str | None  # "type", "request", "response", "parents", "missing"
    differences: tuple[Difference, ...]
    identity: str | None = None  # the first differing event's identity, readable
    moved: tuple[tuple[Event, Event], ...] = ()  # (in A, in B), in A's order

    def to_json(self) -> dict[str, Any]:
        return {
            "identical": self.identical,
            "index": self.index,
            "left": self.left.id if self.left else None,
            "right": self.right.id if self.right else None,
            "field": self.field,
            "identity": self.identity,
            "differences": [d.to_json() for d in self.differences],
            "reordered": [{"left": a.id, "right": b.id, "left_position": a.position,
                           "right_position": b.position} for a, b in self.moved],
        }


Identity = tuple[Any, ...]


def event_identities(events: list[Event]) -> dict[Identity, Event]:
    """Each event by its identity, which does not depend on when concurrent work ran:

    * a call on a strict lane: (type, lane, turn, its ordinal among the turn's calls on that
      lane) — the turn (meta `turn`, session/context.py) is named by its cause, not by time;
    * a call on a pooled lane (unattributed worker): (type, request hash, occurrence);
    * a tool result: its tool call's identity; the final result: ("final_result",).
    """
    out: dict[Identity, Event] = {}
    counts: dict[Identity, int] = {}
    by_id: dict[str, Identity] = {}
    for event in events:
        if event.type is EventType.FINAL_RESULT:
            ident: Identity = ("final_result",)
        elif event.type is EventType.TOOL_RESULT and event.parents and \
                event.parents[0].source in by_id:
            ident = ("result of", *by_id[event.parents[0].source])
        else:
            turn = event.meta.get(TURN)
            group: Identity = (
                (event.type.value, event.lane, turn.get("key") if isinstance(turn, dict) else "")
                if is_strict_lane(event.lane)
                else (event.type.value, "pooled", event.request_hash))
            ordinal = counts.get(group, 0)
            counts[group] = ordinal + 1
            ident = (*group, ordinal)
        by_id[event.id] = ident
        out.setdefault(ident, event)
    return out


def aligned(a: Bundle, b: Bundle) -> list[tuple[Event | None, Event | None]]:
    """A's events in A's order, each beside B's event of the same identity, then B's events
    A lacks (what `view --diff` lays out side by side)."""
    left, right = event_identities(list(a.events)), event_identities(list(b.events))
    return [(ea, right.get(ident)) for ident, ea in left.items()] + [
        (None, eb) for ident, eb in right.items() if ident not in left]


def describe_identity(ident: Identity) -> str:
    if ident[0] == "final_result":
        return "the final result"
    if ident[0] == "result of":
        return f"the result of {describe_identity(ident[1:])}"
    kind, lane, turn, ordinal = ident
    if lane == "pooled":
        return f"{kind} #{ordinal} with request {short(str(turn))} (unattributed)"
    where = f"turn {turn}" if turn else "its lane"
    return f"{kind} #{ordinal} of lane {lane}, {where}"


def diff_bundles(a: Bundle, b: Bundle) -> BundleDiff:
    """The first event of A (in A's order) whose counterpart in B — the event with the same
    identity — is missing or differs in type, request, response or parents; then B's events
    that A lacks. Equal events that only changed order are listed in `moved`."""
    left, right = event_identities(list(a.events)), event_identities(list(b.events))
    # parents are compared as identities: ids differ once a selective replay went live
    left_ids = {e.id: i for i, e in left.items()}
    right_ids = {e.id: i for i, e in right.items()}
    moved = _moved(left, right)

    def part(index: int, ea: Event | None, eb: Event | None, field: str,
             differences: Any, ident: Identity) -> BundleDiff:
        before = tuple((x, y) for x, y in moved if index is None or x.position < index)
        return BundleDiff(False, index, ea, eb, field, tuple(differences),
                          describe_identity(ident), before)

    for ident, ea in left.items():
        eb = right.get(ident)
        if eb is None:
            return part(ea.position, ea, None, "missing", (), ident)
        if ea.type is not eb.type:
            return part(ea.position, ea, eb, "type",
                        json_differences(ea.type.value, eb.type.value), ident)
        for name in ("request", "response"):
            va: JSONValue = getattr(ea, name)
            vb: JSONValue = getattr(eb, name)
            if va != vb:
                return part(ea.position, ea, eb, name, json_differences(va, vb), ident)
        pa = sorted(str(left_ids.get(p, p)) for p in ea.parent_ids)
        pb = sorted(str(right_ids.get(p, p)) for p in eb.parent_ids)
        if pa != pb:
            return part(ea.position, ea, eb, "parents",
                        json_differences(list(ea.parent_ids), list(eb.parent_ids)), ident)
    for ident, eb in right.items():
        if ident not in left:
            return part(eb.position, None, eb, "missing", (), ident)
    return BundleDiff(True, None, None, None, None, (), None, moved)


def _moved(left: dict[Identity, Event], right: dict[Identity, Event]
           ) -> tuple[tuple[Event, Event], ...]:
    """Events whose position in B is before that of an event preceding them in A."""
    moved: list[tuple[Event, Event]] = []
    latest = -1
    for ident, ea in left.items():
        eb = right.get(ident)
        if eb is None:
            continue
        if eb.position < latest:
            moved.append((ea, eb))
        latest = max(latest, eb.position)
    return tuple(moved)


def render_diff(result: BundleDiff, a: Bundle, b: Bundle, width: int = 100) -> str:
    """Where two trajectories part, in lines of at most *width*: both events, then each
    differing path with a word-level excerpt of both sides (as a divergence report shows)."""
    if result.identical:
        lines = [f"identical trajectories ({len(a.events)} events)"]
        lines += _moved_lines(result, width)
        return "\n".join(lines)
    what = ("is only in one of them" if result.field == "missing"
            else f"differs in its {result.field}")
    lines = textwrap.wrap(f"first difference: {result.identity} {what}", width,
                          subsequent_indent="    ")
    for label, event in (("A", result.left), ("B", result.right)):
        if event is None:
            lines.append(f"  {label}: (no such event)")
        else:
            lines.append(f"  {label}: {event.id} at position {event.position} "
                         f"({event.type.value}, lane {event.lane})")
    budget = max(20, width - 7)
    for diff in result.differences:
        where = f"at {diff.path}:" if diff.path else "the whole value:"
        lines += textwrap.wrap(f"  {where}", width, subsequent_indent="      ")
        left, right = diff.expected, diff.actual
        if isinstance(left, str) and isinstance(right, str) and ABSENT not in (left, right):
            ea, eb = word_excerpts(left, right, budget)
            lines += [f"    A: {ea.marked('[-', '-]')}", f"    B: {eb.marked('{+', '+}')}"]
        else:
            lines += [f"    A: {_side(left, budget)}", f"    B: {_side(right, budget)}"]
    return "\n".join(lines + _moved_lines(result, width))


MOVED_SHOWN = 8


def _moved_lines(result: BundleDiff, width: int) -> list[str]:
    """The reorderings of equal events (concurrent work that ran in another order)."""
    if not result.moved:
        return []
    lines = textwrap.wrap(
        f"{len(result.moved)} equal event(s) ran in another order (concurrent work; not a "
        "divergence):", width)
    for ea, eb in result.moved[:MOVED_SHOWN]:
        lines.append(f"  {ea.id} (lane {ea.lane}): position {ea.position} in A, "
                     f"{eb.position} in B")
    if len(result.moved) > MOVED_SHOWN:
        lines.append(f"  … and {len(result.moved) - MOVED_SHOWN} more (--json lists all)")
    return lines


ABSENT = "<absent>"  # json_differences' marker for a key or item one side lacks


def _side(value: JSONValue, limit: int) -> str:
    return "(absent)" if value == ABSENT else summarize(value, limit)
