"""The viewer's attribution section: what `symtrace attribute` found, on the run's graph.

It reads the attribution's JSON (`OUT/attribution.json`, written by every run of
`symtrace attribute`) and shows the per-node table (both success rates with their Wilson
intervals, the repair value as a bar, the paired test), the critical step or "none found",
the validated error edges, the tool calls held, and the event graph with a repair-value bar
under each tested LLM call and the validated edges drawn in.
"""

from __future__ import annotations

from html import escape
from pathlib import Path
from typing import Any

import orjson

from symtrace.bundle.reader import Bundle
from symtrace.diagnosis.errors import DiagnosisConfigError
from symtrace.viewer.graph_svg import Overlay, render_svg

RESULT_FILE = "attribution.json"


def load_attribution(path: str | Path, bundle: Bundle) -> dict[str, Any]:
    """The attribution at *path* (its directory or its JSON file), checked to be *bundle*'s."""
    source = Path(path)
    if source.is_dir():
        source = source / RESULT_FILE
    try:
        data = orjson.loads(source.read_bytes())
        nodes = {n["node"] for n in data["nodes"]}
    except (OSError, orjson.JSONDecodeError, KeyError, TypeError) as exc:
        raise DiagnosisConfigError(
            f"--attribution {path}: not the result of symtrace attribute ({exc})") from None
    unknown = nodes - {e.id for e in bundle.events}
    if unknown:
        raise DiagnosisConfigError(
            f"--attribution {path} is about another run: {sorted(unknown)[0]} is not an event "
            f"of {bundle.path}")
    return data


def attribution_section(bundle: Bundle, data: dict[str, Any]) -> str:
    method = data.get("method") or {}
    critical = data.get("critical_step")
    head = ('<section id="attribution"><h2>Attribution <small>repair vs resample at each '
            "candidate step (symtrace attribute)</small></h2>")
    verdict = (f'<p class="headline">Critical step: <a href="#ev={escape(critical)}">'
               f"{escape(critical)}</a></p>" if critical else
               '<p class="headline">Critical step: none found</p>')
    rows = "".join(_row(node, node["node"] == critical) for node in data["nodes"])
    table = ('<div class="scroll short"><table><thead><tr><th>step</th><th>agent</th>'
             "<th>repair</th><th>resample</th><th>repair value</th><th>b / c</th><th>p</th>"
             f"<th>Holm p</th></tr></thead><tbody>{rows}</tbody></table></div>")
    validated = data.get("validated_edges") or []
    edges = ("<p>Validated error edges: " + ", ".join(
        f"<code>{escape(a)}</code> → <code>{escape(b)}</code>" for a, b in validated) + "</p>"
        if validated else "<p>Validated error edges: none.</p>")
    tools = data.get("tools") or {}
    facts = (f"<p><small>{escape(str(method.get('test', '')))}; α = "
             f"{escape(str(method.get('alpha')))}. {escape(str(method.get('edge_rule', '')))}."
             f" Tool calls in the live suffixes: {int(tools.get('held', 0))} held to the "
             f"recording, {int(tools.get('live', 0))} run live.</small></p>")
    overlay = Overlay(
        values={n["node"]: (float(n["repair_value"]), bool(n["significant"]))
                for n in data["nodes"] if n["repair"]["n"]},
        edges=tuple((str(a), str(b)) for a, b in validated),
        critical=critical,
    )
    graph = (f'<details><summary>Event graph with repair values</summary><div class="scroll">'
             f"{render_svg(bundle, overlay)}</div></details>")
    return head + verdict + table + edges + facts + graph + "</section>"


def _row(node: dict[str, Any], critical: bool) -> str:
    value = float(node["repair_value"])
    width = round(abs(value) * 50, 1)
    side = "left:50%" if value >= 0 else f"left:{50 - width}%"
    color = "#198754" if node["significant"] else "#6c757d"
    bar = (f'<span class="bar" style="display:inline-block;position:relative;width:8em;'
           f'height:.7em;background:#eee"><i style="position:absolute;{side};width:{width}%;'
           f'height:100%;background:{color}"></i></span> {value:+.2f}')
    test = node["test"]
    mark = " ★" if critical else ""
    return (f'<tr><td><a href="#ev={escape(node["node"])}">{escape(node["node"])}</a>{mark}'
            f"</td><td>{escape(str(node.get('agent') or '-'))}</td>"
            f"<td>{_rate(node['repair'])}</td><td>{_rate(node['resample'])}</td>"
            f"<td>{bar}</td><td>{test['repair_only']} / {test['resample_only']}</td>"
            f"<td>{test['p_value']:.3g}</td><td>{node['holm_p']:.3g}</td></tr>")


def _rate(rate: dict[str, Any]) -> str:
    if not rate["n"]:
        return "–"
    return (f"{rate['successes']}/{rate['n']} <small>[{rate['low']:.2f}, "
            f"{rate['high']:.2f}]</small>")
