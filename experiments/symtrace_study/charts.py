"""Plain inline SVG bar charts: a number on every bar, n under it, CI whiskers, a legend."""

from __future__ import annotations

import html
from typing import Any

PALETTE = ("#2b5797", "#9e9e9e", "#e07b39", "#3a9d5d")


def bar_chart(title: str, bars: list[dict[str, Any]], legend: dict[str, str]) -> str:
    """*bars*: label, value (0..1 or None), optional low/high (CI), n, text, group."""
    colors = {g: PALETTE[i % len(PALETTE)] for i, g in enumerate(legend)}
    bar, gap, left, top, scale = 46, 26, 56, 52, 220
    width = max(left + len(bars) * (bar + gap) + 20, 420)
    height = top + scale + 64
    base = top + scale
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           'font-family="DejaVu Sans, Arial, sans-serif" font-size="11" role="img">',
           f'<rect width="{width}" height="{height}" fill="white"/>',
           f'<text x="10" y="18" font-weight="bold" font-size="13">{html.escape(title)}</text>']
    for i, (group, text) in enumerate(legend.items()):
        x = 10 + i * 230
        out.append(f'<rect x="{x}" y="28" width="12" height="12" fill="{colors[group]}"/>'
                   f'<text x="{x + 17}" y="38">{html.escape(text)}</text>')
    for tick in (0, 0.25, 0.5, 0.75, 1.0):
        y = base - tick * scale
        out.append(f'<line x1="{left - 4}" y1="{y}" x2="{width - 10}" y2="{y}" stroke="#eee"/>'
                   f'<text x="8" y="{y + 4}">{int(tick * 100)}%</text>')
    out.append(f'<line x1="{left - 4}" y1="{base}" x2="{width - 10}" y2="{base}" '
               'stroke="#333"/>')
    for i, b in enumerate(bars):
        x = left + i * (bar + gap)
        value = b.get("value")
        h = (value or 0) * scale
        color = colors.get(b.get("group"), PALETTE[0])
        out.append(f'<rect x="{x}" y="{base - h}" width="{bar}" height="{h}" fill="{color}"/>')
        if b.get("low") is not None and b.get("high") is not None:
            cx = x + bar / 2
            lo, hi = base - b["low"] * scale, base - b["high"] * scale
            out.append(f'<line x1="{cx}" y1="{lo}" x2="{cx}" y2="{hi}" stroke="#000"/>'
                       f'<line x1="{cx - 6}" y1="{lo}" x2="{cx + 6}" y2="{lo}" stroke="#000"/>'
                       f'<line x1="{cx - 6}" y1="{hi}" x2="{cx + 6}" y2="{hi}" stroke="#000"/>')
        label = "n/a" if value is None else f"{100 * value:.0f}%"
        out.append(f'<text x="{x + bar / 2}" y="{base - h - 4}" text-anchor="middle" '
                   f'font-weight="bold">{label}</text>')
        out.append(f'<text x="{x + bar / 2}" y="{base + 14}" text-anchor="middle">'
                   f'{html.escape(str(b["label"]))}</text>')
        out.append(f'<text x="{x + bar / 2}" y="{base + 28}" text-anchor="middle" fill="#555">'
                   f'{html.escape(str(b.get("text", "")))} n={b.get("n", "?")}</text>')
    out.append("</svg>")
    return "\n".join(out)
