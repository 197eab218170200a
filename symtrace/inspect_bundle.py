"""Looking at bundles: the `show` table and JSON, and `diff` between two bundles."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rich.console import Console
from rich.table import Table

from symtrace.bundle.reader import Bundle
from symtrace.canonical import JSONValue
from symtrace.divergence import Difference, json_differences
from symtrace.events import Event, summarize
from symtrace.hashing import short

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


def show_table(bundle: Bundle, console: Console, *, width: int = 48) -> None:
    manifest = bundle.manifest
    outcome = manifest.get("outcome") or {}
    lineage = bundle.lineage
    console.print(
        f"[bold]{bundle.path}[/bold]  {manifest['kind']}  format v{manifest['format_version']}  "
        f"{'complete' if bundle.complete else '[red]INCOMPLETE[/red]'}  "
        f"outcome {outcome.get('status', '?')} (exit {outcome.get('exit_code')})  "
        f"digest {short(bundle.digest, 12)}"
    )
    if bundle.task is not None:
        console.print(f"task: {summarize(bundle.task, 120)}")
    if lineage:
        console.print(
            f"child of {lineage.get('parent')} · anchor {lineage.get('anchor')} → live "
            f"{(lineage.get('intervention') or {}).get('event_id')} · "
            f"{len(lineage.get('replayed_events', []))} replayed, "
            f"{len(lineage.get('live_events', []))} live"
        )
        if lineage.get("anchor_note"):
            console.print(f"note: {lineage['anchor_note']}")
    live = set((lineage or {}).get("live_events", []))
    table = Table(show_lines=False, header_style="bold")
    for column in ("id", "type", "agent", "lane", "parents", "request", "response", "hashes"):
        table.add_column(column, overflow="fold")
    for event in bundle.events:
        marker = " ◆live" if event.id in live else ""
        table.add_row(
            event.id + marker,
            event.type.value + (f" ({event.reason})" if event.reason else ""),
            event.agent or "",
            event.lane,
            ", ".join(f"{e.source}{'' if e.kind.value == 'data' else '·c'}" for e in event.parents),
            summarize(event.request, width) if event.request is not None else "",
            summarize(event.response, width) if event.response is not None else "",
            " ".join(short(h, 8) for h in (event.request_hash, event.response_hash) if h),
        )
    console.print(table)
    for warning in bundle.warnings:
        console.print(f"[yellow]warning:[/yellow] {warning}")


@dataclass(frozen=True)
class BundleDiff:
    identical: bool
    index: int | None  # position in O where the two part
    left: Event | None
    right: Event | None
    field: str | None  # "id", "type", "lane", "request", "response", "parents"
    differences: tuple[Difference, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "identical": self.identical,
            "index": self.index,
            "left": self.left.id if self.left else None,
            "right": self.right.id if self.right else None,
            "field": self.field,
            "differences": [d.to_json() for d in self.differences],
        }


def diff_bundles(a: Bundle, b: Bundle) -> BundleDiff:
    """The first point in observed order where two bundles part, and what differs there."""
    left, right = list(a.events), list(b.events)
    for index in range(max(len(left), len(right))):
        ea = left[index] if index < len(left) else None
        eb = right[index] if index < len(right) else None
        if ea is None or eb is None:
            return BundleDiff(False, index, ea, eb, "missing", ())
        for name in ("type", "lane", "request", "response"):
            va: JSONValue = getattr(ea, name)
            vb: JSONValue = getattr(eb, name)
            if name == "type":
                va, vb = ea.type.value, eb.type.value
            if va != vb:
                return BundleDiff(False, index, ea, eb, name, json_differences(va, vb))
        if ea.parent_ids != eb.parent_ids:
            return BundleDiff(
                False,
                index,
                ea,
                eb,
                "parents",
                json_differences(list(ea.parent_ids), list(eb.parent_ids)),
            )
    return BundleDiff(True, None, None, None, None, ())


def render_diff(result: BundleDiff, a: Bundle, b: Bundle) -> str:
    if result.identical:
        return f"identical trajectories ({len(a.events)} events)"
    lines = [f"bundles part at position {result.index}: {result.field} differs"]
    for label, event in (("A", result.left), ("B", result.right)):
        if event is None:
            lines.append(f"  {label}: (no event: trajectory ended)")
        else:
            lines.append(
                f"  {label}: {event.id} {event.type.value} lane {event.lane} "
                f"{summarize(event.request if result.field == 'request' else event.response, 70)}"
            )
    for diff in result.differences:
        lines.append(
            f"    {diff.path or '/'}  A {summarize(diff.expected, 50)}  "
            f"B {summarize(diff.actual, 50)}"
        )
    return "\n".join(lines)
