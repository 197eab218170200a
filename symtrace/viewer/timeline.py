"""Swimlanes: one row per lane, events left to right in the order they happened.

Bundles record no wall-clock time, so the x axis is the observed order: step n is the event
at position n - 1 in O (steps count from 1 here and in the event list; `show --json` has the
0-based position). Server-side SVG,
deterministic, readable without scripts. Every event is a `<rect>` with `data-id`, so the
page's script can select it; nodes with confirmed symptoms are outlined, the node a repair
starts from is marked and the LLM call a repair resumes at gets a star. Data edges between
lanes are drawn as thin lines so hand-offs between agents are visible.
"""

from __future__ import annotations

from html import escape
from typing import Any

LABEL_W, ROW_H, BOX_H, TOP, RIGHT = 210, 38, 24, 30, 30
PLOT_W = 960  # a short run spreads over this width; a long one gets MIN_STEP per event
MIN_STEP, MAX_STEP = 14, 80
AXIS_H = 46  # tick labels and the axis title below the lanes
TICK_GAP = 36  # minimum pixels between two labelled ticks
COLORS = {
    "agent_action": "#6ea8fe",
    "tool_call": "#ffda6a",
    "tool_result": "#75b798",
    "final_result": "#a98eda",
}
LABELS = {  # the legend's words for the event types
    "agent_action": "LLM call",
    "tool_call": "tool call",
    "tool_result": "tool result",
    "final_result": "final result",
}


def tick_every(step: float) -> int:
    """Label every n-th position, n from 1, 2, 5, 10, 20, 50 …, so labels never collide."""
    n, factors = 1, (2, 2.5, 2)
    i = 0
    while n * step < TICK_GAP:
        n = int(n * factors[i % 3])
        i += 1
    return n


def render_timeline(model: dict[str, Any]) -> str:
    lanes: list[str] = model["lanes"]
    events: list[dict[str, Any]] = model["events"]
    diagnosis = model["diagnosis"]
    nodes = diagnosis.get("nodes", {})
    summary = diagnosis.get("summary") or {}
    anchor, origin, symptom = summary.get("anchor"), summary.get("origin"), summary.get("symptom")
    row = {lane: i for i, lane in enumerate(lanes)}
    count = max(1, len(events))
    step = max(MIN_STEP, min(MAX_STEP, PLOT_W / count))
    box_w = max(10.0, min(40.0, step * 0.62))
    width = int(LABEL_W + count * step + RIGHT)
    lanes_h = max(1, len(lanes)) * ROW_H
    height = TOP + lanes_h + AXIS_H
    place = {
        e["id"]: (LABEL_W + e["pos"] * step + (step - box_w) / 2,
                  TOP + row[e["lane"]] * ROW_H + (ROW_H - BOX_H) / 2)
        for e in events
    }
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="timeline" width="{width}" '
        f'height="{height}" role="img" aria-label="events per lane in the order they happened">',
    ]
    for lane, i in row.items():
        y = TOP + i * ROW_H
        shade = "#f6f8fa" if i % 2 == 0 else "#ffffff"
        out.append(f'<rect class="lane-bg" x="0" y="{y}" width="{width}" height="{ROW_H}" '
                   f'fill="{shade}"/>')
        label = lane if len(lane) <= 28 else lane[:27] + "…"
        out.append(f'<text class="lane" data-lane="{escape(lane)}" x="8" y="{y + ROW_H / 2 + 5}">'
                   f"<title>{escape(lane)}</title>{escape(label)}</text>")
    axis_y = TOP + lanes_h
    every = tick_every(step)
    out.append(f'<line class="axis" x1="{LABEL_W}" y1="{axis_y}" x2="{width - RIGHT}" '
               f'y2="{axis_y}"/>')
    for pos in range(every - 1 if every > 1 else 0, count, every):  # steps 1, 5, 10 … or each
        x = LABEL_W + pos * step + step / 2
        out.append(f'<line class="grid" x1="{x}" y1="{TOP}" x2="{x}" y2="{axis_y + 5}"/>')
        out.append(f'<text class="tick" x="{x}" y="{axis_y + 18}" '
                   f'text-anchor="middle">{pos + 1}</text>')
    out.append(f'<text class="axis-title" x="{LABEL_W}" y="{axis_y + 38}">step: the order of '
               "events (a bundle records the order, not the time)</text>")
    for event in events:
        x2, y2 = place[event["id"]]
        for source, kind in event["parents"]:
            if kind != "data" or source not in place:
                continue
            x1, y1 = place[source]
            if y1 != y2:
                out.append(f'<line class="edge" x1="{x1 + box_w}" y1="{y1 + BOX_H / 2}" '
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
        if event["id"] in (symptom, origin):
            classes.append("target")
        tip = f'{event["id"]} · {event["lane"]} · {event["summary"]}'
        out.append(
            f'<rect class="{" ".join(classes)}" data-id="{escape(event["id"])}" x="{x:.1f}" '
            f'y="{y}" width="{box_w:.1f}" height="{BOX_H}" rx="3" '
            f'fill="{COLORS[event["type"]]}"><title>{escape(tip)}</title></rect>'
        )
        if event["id"] == anchor:
            out.append(f'<text class="anchor-mark" x="{x + box_w / 2:.1f}" y="{y - 3}" '
                       'text-anchor="middle">★</text>')
    out.append("</svg>")
    return "\n".join(out)
