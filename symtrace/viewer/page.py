"""The HTML report: one self-contained page (inline CSS, JS and SVG, no network at all).

Static parts (header, timeline, diagnosis, diff, graph) are rendered here with every bundle
string HTML-escaped; the event list is rendered by the page's script from a JSON data island
(`<`, `>` and `&` escaped as JSON unicode escapes, so no bundle text can close the element).
A Content-Security-Policy allows no network access and only the page's own script (by hash),
so even an escaping bug could not run injected code. Same bundle, same bytes.
"""

from __future__ import annotations

import base64
import hashlib
from html import escape
from importlib.resources import files
from typing import Any

import orjson

from symtrace.bundle.reader import Bundle
from symtrace.viewer.graph_svg import render_svg
from symtrace.viewer.model import page_model
from symtrace.viewer.timeline import COLORS, render_timeline


def _asset(name: str) -> str:
    return files("symtrace.viewer").joinpath("assets", name).read_text(encoding="utf-8")


def data_island(model: dict[str, Any]) -> str:
    raw = orjson.dumps(model, option=orjson.OPT_SORT_KEYS).decode()
    safe = raw.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")
    # U+2028/2029 are valid in JSON but not in older JS string literals; keep them escaped too.
    return safe.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def render_page(bundle: Bundle, *, other: Bundle | None = None, diagnosis: bool = True) -> str:
    model = page_model(bundle, other=other, diagnosis=diagnosis)
    script = _asset("viewer.js")
    digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
    csp = (
        "default-src 'none'; style-src 'unsafe-inline'; img-src data:; "
        f"script-src 'sha256-{digest}'"
    )
    info = model["bundle"]
    sections = [
        _header(info),
        _nav(model),
        '<section id="timeline"><h2>Timeline <small>one row per lane, one column per '
        "position in O</small></h2>"
        f'<div class="scroll">{render_timeline(model)}</div>{_legend()}</section>',
        _diagnosis(model["diagnosis"]),
        _events_shell(model),
        f'<section id="graph"><details><summary><h2>Event graph</h2> '
        f"<small>{len(model['events'])} nodes; solid: data edge, dashed: lane order</small>"
        f'</summary><div class="scroll">{render_svg(bundle)}</div></details></section>',
    ]
    if model["diff"] is not None:
        sections.append(_diff(model["diff"]))
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f'<meta http-equiv="Content-Security-Policy" content="{csp}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>symtrace · {escape(info['name'])}</title>"
        f"<style>{_asset('viewer.css')}</style></head>\n<body>\n"
        + "\n".join(sections)
        + f'\n<script type="application/json" id="symtrace-data">{data_island(model)}</script>'
        + f"\n<script>{script}</script>\n</body></html>\n"
    )


def _header(info: dict[str, Any]) -> str:
    outcome = info.get("outcome") or {}
    state = "complete" if info["complete"] else "INCOMPLETE"
    counts = ", ".join(f"{n} {t}" for t, n in sorted(info["counts"].items()))
    parts = [
        f"<header><h1>{escape(info['name'])}</h1><p class=\"facts\">"
        f"{escape(str(info['kind']))} · {state} · outcome {escape(str(outcome.get('status')))}"
        + (f" (exit {outcome['exit_code']})" if isinstance(outcome.get("exit_code"), int) else "")
        + f" · {escape(counts)} · <code>{escape(info['digest'])}</code></p>"
    ]
    if info.get("task"):
        parts.append(f'<p class="task"><b>Task</b> {escape(info["task"])}</p>')
    lineage = info.get("lineage")
    if lineage:
        parts.append(
            f"<p>child of <code>{escape(str(lineage.get('parent')))}</code> · anchor "
            f"<code>{escape(str(lineage.get('anchor')))}</code> · "
            f"{len(lineage.get('live_events') or [])} live events</p>"
        )
    parts.extend(f'<p class="warning">warning: {escape(w)}</p>' for w in info["warnings"])
    parts.append("</header>")
    return "".join(parts)


def _nav(model: dict[str, Any]) -> str:
    links = ["timeline", "diagnosis", "events", "graph"] + (["diff"] if model["diff"] else [])
    return "<nav>" + " ".join(f'<a href="#{name}">{name}</a>' for name in links) + "</nav>"


def _legend() -> str:
    items = "".join(
        f'<span><i style="background:{color}"></i>{escape(kind)}</span>'
        for kind, color in COLORS.items()
    )
    return (f'<p class="legend">{items}<span><i class="k-symptom"></i>confirmed symptom</span>'
            '<span><i class="k-failed"></i>failed call</span><span>★ anchor</span></p>')


def _diagnosis(diag: dict[str, Any]) -> str:
    head = '<section id="diagnosis"><h2>Diagnosis <small>C1–C4 symptoms, anchor</small></h2>'
    if diag["status"] == "off":
        return head + "<p>Diagnosis was not run (--no-diagnosis).</p></section>"
    if diag["status"] == "error":
        return (head + '<p class="error" role="alert">Diagnosis failed: '
                f"{escape(diag['error'])}</p></section>")
    if diag.get("anchor"):
        anchor = (f"<p>Anchor <a href=\"#ev={escape(diag['anchor'])}\" class=\"anchor\">"
                  f"★ {escape(diag['anchor'])}</a> for suspicious node <a href=\"#ev="
                  f"{escape(diag['target'])}\">{escape(diag['target'])}</a> "
                  f"({escape(str(diag['relation']))})</p>")
    else:
        anchor = "<p>No eligible anchor: no node passed the gate.</p>"
    rows = []
    for event_id, node in diag["nodes"].items():
        notes = "; ".join(
            f"{e['rule']} ({e['category']}): {e['note']}" for e in node["evidence"]
        )
        rows.append(
            f'<tr><td><a href="#ev={escape(event_id)}">{escape(event_id)}</a></td>'
            f"<td>{escape(' '.join(node['confirmed']) or '–')}</td>"
            f"<td>{escape(' '.join(node['proposed']))}</td><td>{node['score']:.3f}</td>"
            f"<td>{'yes' if node['eligible'] else 'no'}</td><td>{escape(notes)}</td></tr>"
        )
    if not rows:
        return head + anchor + "<p>No rule fired on any node.</p></section>"
    opened = " open" if len(rows) <= 10 else ""  # a long table would bury the event list
    table = (
        f"<details{opened}><summary>{len(rows)} nodes with rule evidence</summary>"
        '<div class="scroll short"><table><thead><tr><th>node</th><th>confirmed</th>'
        "<th>proposed</th><th>c_f</th><th>eligible</th><th>evidence</th></tr></thead><tbody>"
        + "".join(rows) + "</tbody></table></div></details>"
    )
    return head + anchor + table + "</section>"


def _events_shell(model: dict[str, Any]) -> str:
    lanes = "".join(f'<option value="{escape(lane)}">{escape(lane)}</option>'
                    for lane in model["lanes"])
    types = "".join(f'<option value="{t}">{t}</option>' for t in model["types"])
    return (
        '<section id="events"><h2>Events</h2><div class="filters">'
        '<label>lane <select id="f-lane"><option value="">all lanes</option>'
        f"{lanes}</select></label>"
        '<label>type <select id="f-type"><option value="">all types</option>'
        f"{types}</select></label>"
        '<label><input type="checkbox" id="f-symptom"> with symptoms</label>'
        '<input type="search" id="f-search" placeholder="search ids, agents, payloads">'
        '<span id="f-count"></span></div>'
        '<div class="split"><div><ol id="event-list"></ol><div id="pager"></div></div>'
        '<div id="detail"><p class="hint">Select an event in the timeline or the list.</p>'
        "</div></div>"
        "<noscript><p>The event list needs JavaScript; the timeline, diagnosis and graph "
        "above do not.</p></noscript></section>"
    )


def _diff(diff: dict[str, Any]) -> str:
    head = (f'<section id="diff"><h2>Diff <small>{escape(diff["left"])} ⟷ '
            f"{escape(diff['right'])}, aligned by position</small></h2>")
    if diff["identical"]:
        summary = f"<p>Identical trajectories ({len(diff['rows'])} events).</p>"
    else:
        details = "".join(
            f"<li><code>{escape(d['path'])}</code> A <q>{escape(d['left'])}</q> B "
            f"<q>{escape(d['right'])}</q></li>" for d in diff["differences"]
        )
        summary = (f'<p class="first-divergence">First divergence at position '
                   f'<a href="#diff-{diff["first"]}">{diff["first"]}</a>: '
                   f"{escape(str(diff['field']))} differs</p><ul>{details}</ul>")
    rows = []
    for row in diff["rows"]:
        cls = "same" if row["same"] else "differs"
        if row["pos"] == diff["first"]:
            cls += " first"
        rows.append(f'<tr id="diff-{row["pos"]}" class="{cls}"><td>{row["pos"]}</td>'
                    f"{_diff_side(row['left'])}{_diff_side(row['right'])}</tr>")
    return (head + summary + '<div class="scroll diff-table"><table><thead><tr><th>#</th>'
            "<th>A</th><th>A summary</th><th>B</th><th>B summary</th></tr></thead><tbody>"
            + "".join(rows) + "</tbody></table></div></section>")


def _diff_side(side: dict[str, Any] | None) -> str:
    if side is None:
        return '<td class="missing" colspan="2">(no event: trajectory ended)</td>'
    return (f"<td><code>{escape(side['id'])}</code><br><small>{escape(side['lane'])}</small>"
            f"</td><td>{escape(side['summary'])}</td>")
