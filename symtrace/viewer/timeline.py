"""Swimlanes: one row per lane, one column per position in O (bundles record no wall-clock time).

Server-side SVG, deterministic, readable without scripts. Every event is a `<rect>` with
`data-id`, so the page's script can select it; nodes with confirmed symptoms are outlined,
the diagnosis target is marked and the anchor gets a star. Data edges between lanes are
drawn as thin lines so hand-offs between agents are visible.
"""

from __future__ import annotations

from html import escape
from typing import Any

LABEL_W, ROW_H, STEP, BOX_W, BOX_H, TOP, AXIS = 190, 28, 14, 10, 16, 24, 10
COLORS = {
    "agent_action": "#6ea8fe",
    "tool_call": "#ffda6a",
    "tool_result": "#75b798",
    "final_result": "#a98eda",
}


def render_timeline(model: dict[str, Any]) -> str:
    lanes: list[str] = model["lanes"]
    events: list[dict[str, Any]] = model["events"]
    nodes = model["diagnosis"].get("nodes", {})
    anchor = model["diagnosis"].get("anchor")
    target = model["diagnosis"].get("target")
    row = {lane: i for i, lane in enumerate(lanes)}
    step = max(STEP, min(40, 1000 // max(1, len(events))))  # short runs get wider columns
    width = LABEL_W + max(1, len(events)) * step + 40
    height = TOP + max(1, len(lanes)) * ROW_H + AXIS + 14
    place = {
        e["id"]: (LABEL_W + e["pos"] * step, TOP + row[e["lane"]] * ROW_H + (ROW_H - BOX_H) / 2)
        for e in events
    }
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="timeline" width="{width}" '
        f'height="{height}" role="img" aria-label="event timeline per lane">',
    ]
    for lane, i in row.items():
        y = TOP + i * ROW_H
        shade = "#f6f8fa" if i % 2 == 0 else "#ffffff"
        out.append(f'<rect class="lane-bg" x="0" y="{y}" width="{width}" height="{ROW_H}" '
                   f'fill="{shade}"/>')
        label = lane if len(lane) <= 26 else lane[:25] + "…"
        out.append(f'<text class="lane" data-lane="{escape(lane)}" x="6" y="{y + ROW_H / 2 + 4}">'
                   f"<title>{escape(lane)}</title>{escape(label)}</text>")
    axis_y = TOP + len(lanes) * ROW_H + AXIS
    for pos in range(0, len(events), 10):
        x = LABEL_W + pos * step + BOX_W / 2
        out.append(f'<text class="tick" x="{x}" y="{axis_y}" text-anchor="middle">{pos}</text>')
    for event in events:
        x2, y2 = place[event["id"]]
        for source, kind in event["parents"]:
            if kind != "data" or source not in place:
                continue
            x1, y1 = place[source]
            if y1 != y2:
                out.append(f'<line class="edge" x1="{x1 + BOX_W}" y1="{y1 + BOX_H / 2}" '
                           f'x2="{x2}" y2="{y2 + BOX_H / 2}"/>')
    for event in events:
        x, y = place[event["id"]]
        classes = ["ev", event["type"]]
        node = nodes.get(event["id"])
        if node and node["confirmed"]:
            classes.append("symptom")
        if event["failed"]:
            classes.append("failed")
        if event["live"]:
            classes.append("live")
        if event["id"] == target:
            classes.append("target")
        tip = f'{event["id"]} · {event["lane"]} · {event["summary"]}'
        out.append(
            f'<rect class="{" ".join(classes)}" data-id="{escape(event["id"])}" x="{x}" y="{y}" '
            f'width="{BOX_W}" height="{BOX_H}" rx="2" fill="{COLORS[event["type"]]}">'
            f"<title>{escape(tip)}</title></rect>"
        )
        if event["id"] == anchor:
            out.append(f'<text class="anchor-mark" x="{x + BOX_W / 2}" y="{y - 2}" '
                       'text-anchor="middle">★</text>')
    out.append("</svg>")
    return "\n".join(out)
