"""A picture of the event-dependency graph: one column per lane, one row per position in O.

Plain SVG with no dependency, deterministic (same bundle, same bytes), so it can be diffed and
pinned. Data edges are solid, control (lane-order) edges dashed; live events of a child
bundle are outlined.
"""

from __future__ import annotations

from html import escape

from symtrace.bundle.reader import Bundle
from symtrace.events import EdgeKind, EventType

COLORS = {
    EventType.AGENT_ACTION: "#cfe2ff",
    EventType.TOOL_CALL: "#fff3cd",
    EventType.TOOL_RESULT: "#d1e7dd",
    EventType.FINAL_RESULT: "#e2d9f3",
}
COL_W, ROW_H, BOX_W, BOX_H, MARGIN, HEADER = 210, 46, 180, 32, 20, 40


def render_svg(bundle: Bundle) -> str:
    lanes: list[str] = []
    for event in bundle.events:
        if event.lane not in lanes:
            lanes.append(event.lane)
    live = set((bundle.lineage or {}).get("live_events", []))
    anchor = (bundle.lineage or {}).get("anchor")
    pos: dict[str, tuple[float, float]] = {}
    for row, event in enumerate(bundle.events):
        x = MARGIN + lanes.index(event.lane) * COL_W
        y = MARGIN + HEADER + row * ROW_H
        pos[event.id] = (x, y)
    width = MARGIN * 2 + max(1, len(lanes)) * COL_W
    height = MARGIN * 2 + HEADER + max(1, len(bundle.events)) * ROW_H
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'font-family="DejaVu Sans, Arial, sans-serif" font-size="11">',
        '<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" '
        'markerHeight="7" orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z" '
        'fill="#555"/></marker></defs>',
        f'<rect width="{width}" height="{height}" fill="white"/>',
    ]
    for index, lane in enumerate(lanes):
        x = MARGIN + index * COL_W
        out.append(
            f'<text x="{x + BOX_W / 2}" y="{MARGIN + 14}" text-anchor="middle" '
            f'font-weight="bold">{escape(lane)}</text>'
        )
    for event in bundle.events:
        x2, y2 = pos[event.id]
        for edge in event.parents:
            if edge.source not in pos:
                continue
            x1, y1 = pos[edge.source]
            dash = ' stroke-dasharray="4 3"' if edge.kind is EdgeKind.CONTROL else ""
            out.append(
                f'<line x1="{x1 + BOX_W / 2}" y1="{y1 + BOX_H}" x2="{x2 + BOX_W / 2}" y2="{y2}" '
                f'stroke="#555"{dash} marker-end="url(#arrow)"/>'
            )
    for event in bundle.events:
        x, y = pos[event.id]
        stroke = "#d63384" if event.id in live else "#333"
        width_px = 3 if event.id in live or event.id == anchor else 1
        label = event.id + (f" · {event.agent}" if event.agent else "")
        out.append(
            f'<rect x="{x}" y="{y}" width="{BOX_W}" height="{BOX_H}" rx="6" '
            f'fill="{COLORS[event.type]}" stroke="{stroke}" stroke-width="{width_px}"/>'
        )
        out.append(f'<text x="{x + 8}" y="{y + 20}">{escape(label[:30])}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"
