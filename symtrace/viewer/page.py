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
import re
from html import escape
from importlib.resources import files
from typing import Any

import orjson

from symtrace.bundle.reader import Bundle
from symtrace.viewer.attribution import attribution_section
from symtrace.viewer.graph_svg import render_svg
from symtrace.viewer.model import page_model
from symtrace.viewer.timeline import COLORS, LABELS, render_timeline


def _asset(name: str) -> str:
    return files("symtrace.viewer").joinpath("assets", name).read_text(encoding="utf-8")


def data_island(model: dict[str, Any]) -> str:
    raw = orjson.dumps(model, option=orjson.OPT_SORT_KEYS).decode()
    safe = raw.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")
    # U+2028/2029 are valid in JSON but not in older JS string literals; keep them escaped too.
    return safe.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def render_page(bundle: Bundle, *, other: Bundle | None = None, diagnosis: bool = True,
                attribution: dict[str, Any] | None = None) -> str:
    """*attribution*: the result of `symtrace attribute` on *bundle* (its JSON), shown as a
    section of its own (viewer/attribution.py)."""
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
        _nav(model, attribution is not None),
        '<section id="timeline"><h2>Timeline <small>one row per agent lane; events from left '
        "to right in the order they happened</small></h2>"
        f'<div class="scroll">{render_timeline(model)}</div>{_legend()}</section>',
        _diagnosis(model["diagnosis"]),
        _events_shell(model),
        f'<section id="graph"><details><summary><h2>Event graph</h2> '
        f"<small>{len(model['events'])} nodes; solid: data edge, dashed: lane order</small>"
        f'</summary><div class="scroll">{render_svg(bundle)}</div></details></section>',
    ]
    if attribution is not None:
        sections.insert(4, attribution_section(bundle, attribution))
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
    state = "complete" if info["complete"] else "INCOMPLETE"
    counts = ", ".join(
        f"{info['counts'][kind]} {LABELS[kind]}{'s' if info['counts'][kind] != 1 else ''}"
        for kind in LABELS if kind in info["counts"]
    )
    parts = [
        f"<header><h1>{escape(info['name'])}</h1><p class=\"facts\">"
        f"{escape(str(info['kind']))} · {state} · {escape(info['outcome_text'])}"
        f" · {escape(counts)}</p><p class=\"facts\">root digest "
        f"<code>{escape(str(info['root_digest'] or 'none (UNSEALED)'))}</code> · events digest "
        f"<code>{escape(info['digest'])}</code></p>"
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


def _nav(model: dict[str, Any], attribution: bool = False) -> str:
    links = (["timeline", "diagnosis"] + (["attribution"] if attribution else [])
             + ["events", "graph"] + (["diff"] if model["diff"] else []))
    return "<nav>" + " ".join(f'<a href="#{name}">{name}</a>' for name in links) + "</nav>"


def _legend() -> str:
    items = "".join(
        f'<span><i style="background:{color}"></i>{escape(LABELS[kind])}</span>'
        for kind, color in COLORS.items()
    )
    return (f'<p class="legend">{items}<span><i class="k-symptom"></i>shows a symptom</span>'
            '<span><i class="k-target"></i>where it shows / started</span>'
            '<span><i class="k-failed"></i>failed call</span>'
            '<span><i class="k-live"></i>ran live (selective replay)</span>'
            '<span>★ a repair resumes here</span></p>')


def _diagnosis(diag: dict[str, Any]) -> str:
    """The summary `symtrace diagnose` prints, sentence for sentence, then every step a rule
    flagged."""
    head = ('<section id="diagnosis"><h2>Diagnosis <small>what looks wrong and where to '
            "repair it</small></h2>")
    if diag["status"] == "off":
        return head + "<p>Diagnosis was not run (--no-diagnosis).</p></section>"
    if diag["status"] == "error":
        return (head + '<p class="error" role="alert">Diagnosis failed: '
                f"{escape(diag['error'])}</p></section>")
    summary = diag["summary"]
    parts = [f'<p class="headline">{_linked(summary["headline"])}</p>']
    if summary["where"]:
        parts.append('<h3>Where</h3><ul class="where">' + "".join(
            f"<li>{_linked(sentence)}</li>" for sentence in summary["where"]
        ) + "</ul>")
    if summary["reasons"]:
        more = summary["more_reasons"]
        parts.append('<h3>Why</h3><ul class="why">' + "".join(
            f"<li>{escape(reason)}</li>" for reason in summary["reasons"]
        ) + (f"<li>… and {more} more (the table below lists every rule)</li>" if more else "")
            + "</ul>")
    if summary["suggestions"]:
        parts.append('<h3>What to try</h3><ul class="try">' + "".join(
            f"<li><code>{escape(s['command'])}</code> {escape(s['purpose'])}</li>"
            for s in summary["suggestions"]
        ) + "</ul>")
    rows = []
    for event_id, node in diag["nodes"].items():
        notes = "; ".join(f"{e['note']} ({e['category']}, rule {e['rule']})"
                          for e in node["evidence"])
        rows.append(
            f'<tr><td><a href="#ev={escape(event_id)}">{escape(event_id)}</a></td>'
            f"<td>{escape(' '.join(node['confirmed']) or 'none')}</td>"
            f"<td>{node['score']:.2f}</td>"
            f"<td>{'yes' if node['eligible'] else 'no'}</td><td>{escape(notes)}</td></tr>"
        )
    if rows:
        opened = " open" if len(rows) <= 10 else ""  # a long table would bury the event list
        parts.append(
            f"<details{opened}><summary>{len(rows)} steps flagged by a rule</summary>"
            '<div class="scroll short"><table><thead><tr><th>step</th><th>symptoms</th>'
            "<th>score (0–1)</th><th>strong enough to repair from</th><th>what the rules "
            "saw</th></tr></thead><tbody>" + "".join(rows) + "</tbody></table></div></details>"
        )
    return head + "".join(parts) + "</section>"


EVENT_ID = re.compile(r"\b(?:agent_action|tool_call|tool_result|final_result)_\d{4,}\b")


def _linked(sentence: str) -> str:
    """*sentence* escaped, with every event id in it a link that selects the event."""
    out, last = [], 0
    for match in EVENT_ID.finditer(sentence):
        out.append(escape(sentence[last:match.start()]))
        out.append(f'<a href="#ev={match.group(0)}">{match.group(0)}</a>')
        last = match.end()
    out.append(escape(sentence[last:]))
    return "".join(out)


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
            f"{escape(diff['right'])}, aligned by event identity (lane, turn, ordinal)"
            "</small></h2>")
    if diff["identical"]:
        summary = f"<p>Identical trajectories ({len(diff['rows'])} events).</p>"
    else:
        details = "".join(
            f"<li><code>{escape(d['path'])}</code> A <q>{escape(d['left'])}</q> B "
            f"<q>{escape(d['right'])}</q></li>" for d in diff["differences"]
        )
        summary = (f'<p class="first-divergence">First difference: '
                   f'<a href="#diff-{diff["first"]}">{escape(str(diff["identity"]))}</a>, '
                   f"its {escape(str(diff['field']))}</p><ul>{details}</ul>")
    if diff["moved"]:
        moved = "".join(f"<li>{escape(m['left'])}: position {m['left_position']} in A, "
                        f"{m['right_position']} in B</li>" for m in diff["moved"])
        summary += ("<p>Equal events that ran in another order (concurrent work, not a "
                    f"divergence):</p><ul>{moved}</ul>")
    rows = []
    for row in diff["rows"]:
        cls = "same" if row["same"] else "differs"
        if row["first"]:
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
