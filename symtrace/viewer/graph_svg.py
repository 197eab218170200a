"""A picture of the event-dependency graph: one column per lane, one row per position in O.

Plain SVG with no dependency, deterministic (same bundle, same bytes), so it can be diffed and
pinned. Data edges are solid, control (lane-order) edges dashed; live events of a child
bundle are outlined. An `Overlay` (a counterfactual attribution, symtrace attribute) adds a
repair-value bar under each tested LLM call and draws the validated error edges.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from html import escape as _escape_markup

from symtrace.bundle.reader import Bundle
from symtrace.model.events import EdgeKind, Event, EventType, event_summary
from symtrace.model.inert import inert

COLORS = {
    EventType.AGENT_ACTION: "#cfe2ff",
    EventType.TOOL_CALL: "#fff3cd",
    EventType.TOOL_RESULT: "#d1e7dd",
    EventType.FINAL_RESULT: "#e2d9f3",
}
COL_W, ROW_H, BOX_W, BOX_H, MARGIN, HEADER, LEGEND = 250, 54, 210, 40, 20, 40, 60
GUTTER = 80  # room on the left for same-lane edges bowing out
VALIDATED = "#fd7e14"  # validated error edges (attribution overlay)


def _xml(text: str) -> str:
    """*text* as XML character data: control characters (which XML 1.0 forbids even as
    references) made visible escapes first, then markup escaped."""
    return _escape_markup(inert(text, keep_lines=False))


@dataclass(frozen=True)
class Overlay:
    """What an attribution adds to the graph."""

    values: dict[str, tuple[float, bool]] = field(default_factory=dict)  # node: (value, sig.)
    edges: tuple[tuple[str, str], ...] = ()  # validated error edges, symptom → symptom
    critical: str | None = None


def render_svg(bundle: Bundle, overlay: Overlay | None = None) -> str:
    lanes: list[str] = []
    for event in bundle.events:
        if event.lane not in lanes:
            lanes.append(event.lane)
    live = set((bundle.lineage or {}).get("live_events", []))
    anchor = (bundle.lineage or {}).get("anchor")
    pos: dict[str, tuple[float, float]] = {}
    for row, event in enumerate(bundle.events):
        x = MARGIN + GUTTER + lanes.index(event.lane) * COL_W
        y = MARGIN + HEADER + row * ROW_H
        pos[event.id] = (x, y)
    width = MARGIN * 2 + GUTTER + max(2, len(lanes)) * COL_W
    height = MARGIN * 2 + HEADER + max(1, len(bundle.events)) * ROW_H + LEGEND
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'font-family="DejaVu Sans, Arial, sans-serif" font-size="11">',
        '<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" '
        'markerHeight="7" orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z" '
        'fill="#555"/></marker></defs>',
        f'<rect width="{width}" height="{height}" fill="white"/>',
    ]
    for index, lane in enumerate(lanes):
        x = MARGIN + GUTTER + index * COL_W
        out.append(
            f'<text x="{x + BOX_W / 2}" y="{MARGIN + 14}" text-anchor="middle" '
            f'font-weight="bold">{_xml(lane)}</text>'
        )
    for event in bundle.events:
        x2, y2 = pos[event.id]
        for edge in event.parents:
            if edge.source not in pos:
                continue
            x1, y1 = pos[edge.source]
            dash = ' stroke-dasharray="4 3"' if edge.kind is EdgeKind.CONTROL else ""
            color = "#999" if edge.kind is EdgeKind.CONTROL else "#2b5797"
            if x1 == x2:  # same lane: bow out to the left so long edges do not hide boxes
                sx, sy, ex, ey = x1, y1 + BOX_H / 2, x2, y2 + BOX_H / 2
                bend = 18 + min(60, (ey - sy) / 8)
                path = f"M {sx} {sy} C {sx - bend} {sy}, {ex - bend} {ey}, {ex} {ey}"
            else:  # across lanes: leave from the side facing the target
                sx = x1 + (BOX_W if x2 > x1 else 0)
                ex = x2 + (0 if x2 > x1 else BOX_W)
                sy, ey = y1 + BOX_H / 2, y2 + BOX_H / 2
                mid = (sx + ex) / 2
                path = f"M {sx} {sy} C {mid} {sy}, {mid} {ey}, {ex} {ey}"
            out.append(
                f'<path d="{path}" fill="none" stroke="{color}"{dash} '
                f'marker-end="url(#arrow)"/>'
            )
    for event in bundle.events:
        x, y = pos[event.id]
        stroke = "#d63384" if event.id in live else "#333"
        width_px = 3 if event.id in live or event.id == anchor else 1
        label = event.id + (f" · {event.agent}" if event.agent else "")
        detail = _detail(event)
        out.append(
            f'<rect x="{x}" y="{y}" width="{BOX_W}" height="{BOX_H}" rx="6" '
            f'fill="{COLORS[event.type]}" stroke="{stroke}" stroke-width="{width_px}"/>'
        )
        out.append(f'<text x="{x + 8}" y="{y + 16}" font-weight="bold">{_xml(label[:34])}'
                   "</text>")
        out.append(f'<text x="{x + 8}" y="{y + 31}" fill="#444">{_xml(detail)}</text>')
        if overlay is not None and event.id in overlay.values:
            out.extend(_value_bar(x, y, *overlay.values[event.id], event.id == overlay.critical))
    if overlay is not None:
        for source, target in overlay.edges:
            if source in pos and target in pos:
                (x1, y1), (x2, y2) = pos[source], pos[target]
                out.append(
                    f'<path d="M {x1 + BOX_W} {y1 + BOX_H / 2} C {x1 + BOX_W + 40} '
                    f'{y1 + BOX_H / 2}, {x2 + BOX_W + 40} {y2 + BOX_H / 2}, {x2 + BOX_W} '
                    f'{y2 + BOX_H / 2}" fill="none" stroke="{VALIDATED}" stroke-width="3" '
                    'marker-end="url(#arrow)"><title>validated error edge</title></path>')
    legend_y = height - LEGEND + 10
    for i, (event_type, color) in enumerate(COLORS.items()):
        lx = MARGIN + i * 120
        out.append(f'<rect x="{lx}" y="{legend_y}" width="14" height="14" fill="{color}" '
                   'stroke="#333"/>')
        out.append(f'<text x="{lx + 20}" y="{legend_y + 11}">{event_type.value}</text>')
    ly = legend_y + 30
    out.append(f'<line x1="{MARGIN}" y1="{ly}" x2="{MARGIN + 30}" y2="{ly}" stroke="#2b5797"/>')
    out.append(f'<text x="{MARGIN + 36}" y="{ly + 4}">data edge</text>')
    out.append(f'<line x1="{MARGIN + 120}" y1="{ly}" x2="{MARGIN + 150}" y2="{ly}" '
               'stroke="#999" stroke-dasharray="4 3"/>')
    out.append(f'<text x="{MARGIN + 156}" y="{ly + 4}">lane order</text>')
    if live:
        out.append(f'<rect x="{MARGIN + 240}" y="{ly - 7}" width="14" height="14" fill="white" '
                   'stroke="#d63384" stroke-width="3"/>')
        out.append(f'<text x="{MARGIN + 260}" y="{ly + 4}">live (after the anchor)</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def _value_bar(x: float, y: float, value: float, significant: bool,
               critical: bool) -> list[str]:
    """A bar under the box: repair value (repair − resample success rate), -1 … +1."""
    half = (BOX_W - 16) / 2
    mid = x + 8 + half
    length = half * max(-1.0, min(1.0, value))
    color = "#198754" if significant else "#6c757d"
    note = f"repair value {value:+.2f}{', significant' if significant else ''}"
    note += ", critical step" if critical else ""
    return [
        f'<line x1="{x + 8}" y1="{y + BOX_H - 4}" x2="{x + BOX_W - 8}" y2="{y + BOX_H - 4}" '
        'stroke="#ddd" stroke-width="5"/>',
        f'<line x1="{mid}" y1="{y + BOX_H - 4}" x2="{mid + length}" y2="{y + BOX_H - 4}" '
        f'stroke="{color}" stroke-width="5"><title>{_xml(note)}</title></line>',
        *([f'<rect x="{x - 3}" y="{y - 3}" width="{BOX_W + 6}" height="{BOX_H + 6}" rx="8" '
           f'fill="none" stroke="{color}" stroke-width="2"/>'] if critical else []),
    ]


def _detail(event: Event) -> str:
    return event_summary(event, 32)
