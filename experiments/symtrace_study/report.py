"""`python -m symtrace_study report OUTDIR`: summary.json, report.md and a self-contained
report.html (inline SVG charts) from a study's rows."""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

import orjson

from symtrace_study.analysis import ALL, summarise
from symtrace_study.charts import bar_chart
from symtrace_study.errors import StudyStateError
from symtrace_study.results import ResultLog, write_json

STUB_BANNER = ("stub backend: numbers say nothing about methods. The replies come from a "
               "simulated policy whose mistake and repair rates are parameters "
               "(symtrace_suite.policy); the study checks the pipeline and the statistics.")


def fmt_p(p: float | None) -> str:
    """A p-value as a reader expects it: never `0.000`."""
    if p is None:
        return "–"
    if p < 0.001:
        return "<0.001"
    return f"{p:.3f}"


def _pct(x: float | None) -> str:
    return "–" if x is None else f"{100 * x:.1f}%"


def _ci(ci: list[float] | None, scale: float = 100, unit: str = "%") -> str:
    return "–" if not ci else f"{scale * ci[0]:.1f}–{scale * ci[1]:.1f}{unit}"


def load_study(outdir: Path) -> tuple[dict[str, Any], dict[str, Any], list[dict[str, Any]]]:
    try:
        study = orjson.loads((outdir / "study.json").read_bytes())
        frozen = orjson.loads((outdir / "cases.json").read_bytes())
    except (OSError, orjson.JSONDecodeError) as exc:
        raise StudyStateError(f"{outdir} is not a finished collect phase of a study ({exc})"
                              ) from exc
    rows = list(ResultLog(outdir / "results.jsonl").load().values())
    return study, frozen, rows


def markdown(summary: dict[str, Any]) -> str:
    lines = [f"# Repair or resample? — study `{summary['name']}`", ""]
    backend = summary["backend"]
    if backend["kind"] == "stub":
        lines += [f"> **{STUB_BANNER}**", ""]
    lines += [f"Backend: `{backend['kind']}`"
              + (f" (model `{backend['model']}`)" if backend.get("model") else "")
              + f". Reference arm: `{summary['reference']}`; task arms get up to "
              f"{summary['attempts']} attempt(s), node arms one intervention.", "",
              f"System errors (reported apart, never failed repairs): "
              f"**{summary['system_errors']}**.", ""]
    for family, data in summary["families"].items():
        title = "all MAS pooled (descriptive)" if family == ALL else f"MAS `{family}`"
        lines += [f"## {title}: {data['cases']} source failures", "",
                  "| method | level | budget | repaired / n | rate | Wilson 95% | errors | "
                  "no intervention | API calls | calls per repair |",
                  "|---|---|---|---|---|---|---|---|---|---|"]
        for m, t in data["methods"].items():
            per = "–" if t["calls_per_repair"] is None else f"{t['calls_per_repair']:.1f}"
            lines.append(f"| {m} | {t['level']} | {t['budget']} | {t['repaired']}/{t['n']} | "
                         f"{_pct(t['rate'])} | {_ci(t['wilson95'])} | {t['errors']} | "
                         f"{t['abstained']} | {t['api_calls']} | {per} |")
        for label, key in (("RQ3: reference vs each arm", "rq3"),
                           ("RQ2: feedback baselines vs unguided rerun", "rq2")):
            if not data[key]:
                continue
            lines += ["", f"**{label}** (exact McNemar, Holm within this MAS)", "",
                      "| comparison | n | repaired | n10 | n01 | Δ pp | 95% CI (bootstrap) | p | "
                      "p (Holm) |", "|---|---|---|---|---|---|---|---|---|"]
            for c in data[key]:
                delta = "–" if c["delta_pp"] is None else f"{c['delta_pp']:+.1f}"
                ci = "–" if not c["ci95"] else f"{c['ci95'][0]:+.1f} … {c['ci95'][1]:+.1f}"
                lines.append(f"| {c['a']} vs {c['b']} | {c['n']} | {c['repaired_a']} vs "
                             f"{c['repaired_b']} | {c['n10']} | {c['n01']} | {delta} | {ci} | "
                             f"{fmt_p(c['p'])} | {fmt_p(c['p_holm'])} |")
        lines += ["", *rq1_markdown(data["rq1"]), "", *category_markdown(data, summary), ""]
    if summary["excluded"]:
        lines += ["## Excluded sources (the source run already passes)", ""]
        lines += [f"- `{e['case']}`" for e in summary["excluded"]]
        lines.append("")
    if summary["collect_errors"]:
        lines += ["## Sources that ended in a system error", ""]
        lines += [f"- `{e['case']}`: {e['error']}" for e in summary["collect_errors"]]
        lines.append("")
    return "\n".join(lines)


def rq1_markdown(data: dict[str, Any]) -> list[str]:
    if not data.get("enabled"):
        return ["**RQ1**: disabled in this study."]
    ks = [str(k) for k in range(1, data["k"] + 1)]
    lines = ["**RQ1: failure reproduction** (rep_k: share of k-subsets of the attempts in which "
             "every attempt reproduces the failure)", "",
             "| method | n | " + " | ".join(f"rep_{k}" for k in ks) + " | errors |",
             "|---|---|" + "---|" * len(ks) + "---|"]
    for arm, label in (("replay", "strict replay"), ("rerun", "live rerun")):
        m = data["methods"][arm]
        lines.append(f"| {label} | {m['n']} | " + " | ".join(_pct(m["rep"][k]) for k in ks)
                     + f" | {data['errors'][arm]} |")
    p = data["paired"]
    lines += ["", f"Paired rep_{data['k']} (replay vs rerun): n={p['n']}, n10={p['n10']}, "
              f"n01={p['n01']}, exact McNemar p={fmt_p(p['p'])}."]
    return lines


def category_markdown(data: dict[str, Any], summary: dict[str, Any]) -> list[str]:
    methods = summary["methods"]
    lines = ["**By symptom category of the source** (repaired / n)", "",
             "| category | cases | " + " | ".join(methods) + " |",
             "|---|---|" + "---|" * len(methods)]
    for cat, entry in data["categories"].items():
        lines.append(f"| {cat} | {entry['cases']} | "
                     + " | ".join(f"{entry[m][0]}/{entry[m][1]}" for m in methods) + " |")
    return lines


def html_report(summary: dict[str, Any], md: str) -> str:
    parts = ["<!doctype html><html><head><meta charset='utf-8'>",
             f"<title>{html.escape(summary['name'])}: repair or resample</title>",
             "<style>body{font-family:DejaVu Sans,Arial,sans-serif;max-width:1100px;margin:2em "
             "auto;color:#222}table{border-collapse:collapse;margin:.5em 0}td,th{border:1px "
             "solid #ccc;padding:3px 7px;font-size:13px}.banner{background:#b00020;color:#fff;"
             "padding:14px;font-size:18px;font-weight:bold;border-radius:4px}</style>",
             "</head><body>"]
    if summary["backend"]["kind"] == "stub":
        parts.append(f"<div class='banner'>{html.escape(STUB_BANNER)}</div>")
    for family, data in summary["families"].items():
        title = "all MAS pooled" if family == ALL else family
        bars = [{"label": m, "value": t["rate"], "low": (t["wilson95"] or [None])[0],
                 "high": (t["wilson95"] or [None, None])[1], "n": t["n"],
                 "text": f"{t['repaired']}/{t['n']}", "group": t["level"]}
                for m, t in data["methods"].items()]
        parts.append(bar_chart(f"{title}: repair rate per method ({data['cases']} failures, "
                               "Wilson 95% CI)", bars,
                               legend={"node": "node level (1 intervention)",
                                       "task": f"task level (≤{summary['attempts']} attempts)"}))
        rq1 = data["rq1"]
        if rq1.get("enabled"):
            rbars = [{"label": f"{arm} rep_{k}", "value": rq1["methods"][arm]["rep"][str(k)],
                      "n": rq1["methods"][arm]["n"], "group": arm,
                      "text": _pct(rq1["methods"][arm]["rep"][str(k)])}
                     for k in range(1, rq1["k"] + 1) for arm in ("replay", "rerun")]
            parts.append(bar_chart(f"{title}: RQ1 failure reproduction rep_k", rbars,
                                   legend={"replay": "strict replay", "rerun": "live rerun"}))
    parts.append(_markdown_to_html(md))
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def _markdown_to_html(md: str) -> str:
    """The report's own small Markdown subset (headings, tables, quotes, lists, paragraphs)."""
    out: list[str] = []
    table: list[list[str]] = []

    def flush() -> None:
        if table:
            head, *body = table
            out.append("<table><tr>" + "".join(f"<th>{c}</th>" for c in head) + "</tr>"
                       + "".join("<tr>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>"
                                 for r in body) + "</table>")
            table.clear()

    for line in md.splitlines():
        text = html.escape(line)
        if line.startswith("|"):
            cells = [c.strip() for c in text.strip("|").split("|")]
            if not all(set(c) <= {"-"} for c in cells):
                table.append(cells)
            continue
        flush()
        if line.startswith("## "):
            out.append(f"<h2>{text[3:]}</h2>")
        elif line.startswith("# "):
            out.append(f"<h1>{text[2:]}</h1>")
        elif line.startswith("> "):
            continue  # the banner is rendered on its own
        elif line.startswith("- "):
            out.append(f"<li>{text[2:]}</li>")
        elif line.strip():
            out.append(f"<p>{text}</p>")
    flush()
    return "\n".join(out)


def write_report(outdir: Path) -> list[Path]:
    study, frozen, rows = load_study(outdir)
    summary = summarise(study, frozen, rows)
    md = markdown(summary)
    write_json(outdir / "summary.json", summary)
    (outdir / "report.md").write_text(md + "\n", encoding="utf-8")
    (outdir / "report.html").write_text(html_report(summary, md), encoding="utf-8")
    return [outdir / "report.html", outdir / "report.md", outdir / "summary.json"]
