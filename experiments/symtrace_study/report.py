"""`python -m symtrace_study report OUTDIR`: summary.json, report.md and a self-contained
report.html (inline SVG charts) from a study's rows.

The Markdown is the report; the HTML is the same text rendered (markdown_html.py) with each
family's charts in place of its `<!-- chart:... -->` markers, so the two never disagree.
"""

from __future__ import annotations

import html
import time
from pathlib import Path
from typing import Any

import orjson

from symtrace_study.analysis import ALL, summarise
from symtrace_study.charts import bar_chart
from symtrace_study.errors import StudyStateError
from symtrace_study.markdown_html import render_markdown
from symtrace_study.results import ResultLog, write_json

STUB_BANNER = ("stub backend: numbers say nothing about methods. The replies come from a "
               "simulated policy whose mistake and repair rates are parameters (the "
               "benchmark's stub_responder); the study checks the pipeline and the statistics.")
MIN_N_FOR_CI = 10  # below this a bootstrap interval is printed as "n too small"
MARK = "<!-- chart:{family}:{kind} -->"


def fmt_p(p: float | None) -> str:
    """A p-value as a reader expects it: never `0.000`."""
    if p is None:
        return "–"
    if p < 0.001:
        return "<0.001"
    return f"{p:.3f}"


def _pct(x: float | None) -> str:
    return "–" if x is None else f"{100 * x:.1f}%"


def _ci(ci: list[float] | None) -> str:
    """A Wilson interval: honest at any n (wide when n is small), so always printed."""
    return "–" if not ci else f"{100 * ci[0]:.1f}–{100 * ci[1]:.1f}%"


def _delta_ci(c: dict[str, Any]) -> str:
    """The paired bootstrap CI, unless it would look precise without being so."""
    if not c["ci95"]:
        return "–"
    if c["n"] < MIN_N_FOR_CI:
        return f"n too small ({c['n']})"
    if c["n10"] + c["n01"] == 0:
        return "no discordant pairs"
    return f"{c['ci95'][0]:+.1f} … {c['ci95'][1]:+.1f}"


def load_study(outdir: Path) -> tuple[dict[str, Any], dict[str, Any], list[dict[str, Any]]]:
    try:
        study = orjson.loads((outdir / "study.json").read_bytes())
        frozen = orjson.loads((outdir / "cases.json").read_bytes())
    except (OSError, orjson.JSONDecodeError) as exc:
        raise StudyStateError(f"{outdir} is not a finished collect phase of a study ({exc})"
                              ) from exc
    rows = list(ResultLog(outdir / "results.jsonl").load().values())
    return study, frozen, rows


def run_info(outdir: Path, rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Wall time of the invocations (runs.jsonl) and the attempts' own time."""
    runs = []
    path = outdir / "runs.jsonl"
    if path.exists():
        runs = [orjson.loads(x) for x in path.read_bytes().splitlines() if x.strip()]
    collect = outdir / "collect.jsonl"
    sources = list(ResultLog(collect).load().values()) if collect.exists() else []
    seconds = sum((r.get("timing") or {}).get("seconds", 0) for r in [*rows, *sources])
    return {"runs": runs, "wall_seconds": sum(r["finished"] - r["started"] for r in runs),
            "attempt_seconds": seconds, "attempts": len(rows) + len(sources)}


def _versions(rows: list[dict[str, Any]]) -> dict[str, str]:
    out: dict[str, set[str]] = {}
    for r in rows:
        for name, version in (r.get("versions") or {}).items():
            out.setdefault(name, set()).add(str(version))
    return {k: ", ".join(sorted(v)) for k, v in sorted(out.items())}


def _duration(seconds: float) -> str:
    minutes, sec = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min" if hours else f"{minutes} min {sec:02d} s"


def configuration(summary: dict[str, Any], info: dict[str, Any],
                  versions: dict[str, str]) -> list[str]:
    config = summary["config"]
    backend = config["backend"]
    kind = backend["kind"]
    llm = {"stub": f"stub policy (skill {backend.get('skill')}, seed offset "
                   f"{backend.get('seed')})",
           "local": f"local model `{backend.get('model') or backend.get('model_path')}`",
           "openai": f"`{backend.get('model')}` at `{backend.get('base_url')}`"}[kind]
    judge = config.get("judge")
    crashes = ("counted as **non-repairs** (App. F.4)" if config.get("crashes", "non_repair")
               == "non_repair" else "reported apart as **system errors**")
    rq1 = config.get("rq1_k", 0)
    equivalence = config.get("equivalence", "verdict")
    eq_text = {"mechanism": "mechanism-level (App. D.1: same C-category, same detector "
                            "rule, same role, and the source's case-specific evidence — the "
                            "failing call, claimed output, URL or fault, in canonical form — "
                            "found in the attempt's own live events)",
               "verdict": "verdict only (the evaluator rejects the attempt again)",
               "answer": "same final answer", "reason": "same evaluator reason"}[equivalence]
    runs = info["runs"]
    rerun_prompt = ("the unguided-rerun template (App. E.1)"
                    if config.get("rq1_prompt", "unguided") == "unguided" else
                    "the original task prompt")
    extra = summary.get("extra") or {}
    settings = extra.get("rq1_settings") or {}
    served = ", ".join(f"`{m}`" for m in settings.get("models_served", [])) or "–"
    sampling = "; ".join(", ".join(f"{k}={v}" for k, v in sorted(p.items())) or "defaults"
                         for p in settings.get("sampling", [])) or "–"
    rq1_model = f"{served} / {sampling}"
    labels = extra.get("labels") or {}
    labels_text = (f"human labels from `{labels['path']}` for {len(labels['cases'])} case(s); "
                   "the automatic diagnosis for the rest" if labels.get("path")
                   else "the automatic diagnosis (no labels file)")
    mas = ", ".join(f"`{m['name']}`" for m in config["mas"])
    rq1_text = (f"k = {rq1} replays to the failure target and k live reruns" if rq1
                else "off")
    judge_text = f"`{judge['model']}` at `{judge['base_url']}`" if judge else "none (rules only)"
    templates = (f"`{config['templates_path']}`" if config.get("templates_path")
                 else "symtrace defaults")
    lines = ["## Configuration", "",
             "| setting | value |", "|---|---|",
             f"| benchmark | `{config.get('benchmark', 'symtrace_suite.benchmark:BENCHMARK')}` |",
             f"| LLM backend | {llm} |",
             f"| MAS | {mas} |",
             f"| tasks | {len(config['tasks'])} |",
             f"| seeds | {', '.join(str(s) for s in config['seeds'])} |",
             f"| reference arm | `{config['reference']}` |",
             f"| task-arm budget | {config['attempts']} attempt(s); node arms: 1 intervention |",
             f"| RQ1 | {rq1_text} |",
             f"| RQ1 rerun prompt | {rerun_prompt} |",
             f"| RQ1 live model / sampling | {rq1_model} |",
             f"| reproduction test | {eq_text} |",
             f"| RQ1 targets and mechanisms | {labels_text} |",
             f"| diagnosis | trace-back {'on' if config.get('trace_back', True) else 'off'}, "
             f"θ = {config.get('theta') if config.get('theta') is not None else 'default'}; "
             "the same for collection, RQ1 and the arms |",
             f"| judge | {judge_text} |",
             f"| templates | {templates} |",
             f"| Δ placement | `{config.get('placement', 'user')}` |",
             f"| program crashes | {crashes} |",
             f"| infrastructure faults | retried up to {config.get('infra_retries', 2)} "
             "time(s), then system errors (reported apart) |",
             f"| max system-error rate | {config.get('max_error_rate')} |"]
    if runs:
        first = time.strftime("%Y-%m-%d %H:%M", time.gmtime(runs[0]["started"]))
        how = ", ".join(sorted({f"{r['backend']} ×{r['workers']}" for r in runs}))
        lines.append(f"| run | {first} UTC, {len(runs)} invocation(s), {how} workers |")
        rate = 60 * info["attempts"] / info["wall_seconds"] if info["wall_seconds"] else 0
        lines.append(f"| run time | {_duration(info['wall_seconds'])} wall for "
                     f"{info['attempts']} attempts ({rate:.1f}/min) |")
    if versions:
        lines.append("| versions | " + "; ".join(f"{k} {v}" for k, v in versions.items())
                     + " |")
    return lines


def markdown(summary: dict[str, Any], info: dict[str, Any] | None = None,
             versions: dict[str, str] | None = None, disclosure: list[str] | None = None
             ) -> str:
    info = info or {"runs": [], "wall_seconds": 0, "attempt_seconds": 0, "attempts": 0}
    lines = [f"# Repair or resample? — study `{summary['name']}`", ""]
    backend = summary["backend"]
    if backend["kind"] == "stub":
        lines += [f"> **{STUB_BANNER}**", ""]
        if disclosure:
            lines += ["**What the stub decides by construction:**", ""]
            lines += [f"- {text}" for text in disclosure]
            lines.append("")
    lines += [*configuration(summary, info, versions or {}), ""]
    crashes = summary["config"].get("crashes", "non_repair") == "non_repair"
    lines += [f"System errors (reported apart, never failed repairs): "
              f"**{summary['system_errors']}**; infrastructure retries: "
              f"{summary.get('infra_retries', 0)}. Program crashes are "
              + ("counted as non-repairs." if crashes else "system errors in this study.")]
    if summary.get("error_kinds"):
        lines += ["", "| what went wrong | rows |", "|---|---|"]
        lines += [f"| {k} | {v} |" for k, v in summary["error_kinds"].items()]
    lines.append("")
    for family, data in summary["families"].items():
        lines += family_markdown(family, data, summary)
    lines += extra_markdown(summary)
    lines += cases_markdown(summary)
    if summary["excluded"]:
        lines += ["## Excluded sources (the source run already passes)", ""]
        lines += [f"- `{e['case']}`" for e in summary["excluded"]]
        lines.append("")
    if summary["collect_errors"]:
        lines += ["## Sources that ended in a system error", ""]
        lines += [f"- `{e['case']}`: {e['error']}" for e in summary["collect_errors"]]
        lines.append("")
    return "\n".join(lines)


def family_markdown(family: str, data: dict[str, Any], summary: dict[str, Any]) -> list[str]:
    pooled = family == ALL
    title = ("All MAS pooled — a further Holm family per question, secondary to the per-MAS "
             "families" if pooled else f"MAS `{family}`")
    lines = [f"## {title}: {data['cases']} source failures", "",
             MARK.format(family=family, kind="repair"), "",
             "| method | level | budget | repaired / n | rate | Wilson 95% | system errors | "
             "crashed | no intervention | API calls | calls per repair |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for m, t in data["methods"].items():
        per = "–" if t["calls_per_repair"] is None else f"{t['calls_per_repair']:.1f}"
        lines.append(f"| {m} | {t['level']} | {t['budget']} | {t['repaired']}/{t['n']} | "
                     f"{_pct(t['rate'])} | {_ci(t['wilson95'])} | {t['errors']} | "
                     f"{t.get('crashed', 0)} | {t['abstained']} | {t['api_calls']} | {per} |")
    for label, key in (("RQ3: reference vs each other arm", "rq3"),
                       ("RQ2: feedback baselines vs unguided rerun", "rq2")):
        if not data[key]:
            continue
        n = data[key][0]["n"]
        dropped = data[key][0].get("dropped", 0)
        lines += ["", f"**{label}** — one Holm family, exact McNemar; every row on the same "
                  f"{n} cases" + (f" ({dropped} dropped: a system error in some arm)"
                                  if dropped else ""), "",
                  "| comparison | n | repaired | n10 | n01 | Δ pp | 95% CI (paired bootstrap) | "
                  "p | p (Holm) |", "|---|---|---|---|---|---|---|---|---|"]
        for c in data[key]:
            delta = "–" if c["delta_pp"] is None else f"{c['delta_pp']:+.1f}"
            lines.append(f"| {c['a']} vs {c['b']} | {c['n']} | {c['repaired_a']} vs "
                         f"{c['repaired_b']} | {c['n10']} | {c['n01']} | {delta} | "
                         f"{_delta_ci(c)} | {fmt_p(c['p'])} | {fmt_p(c['p_holm'])} |")
    lines += ["", *rq1_markdown(family, data["rq1"], summary), "",
              *category_markdown(data, summary), ""]
    return lines


def rq1_markdown(family: str, data: dict[str, Any], summary: dict[str, Any]) -> list[str]:
    if not data.get("enabled"):
        return ["**RQ1**: disabled in this study."]
    ks = [str(k) for k in range(1, data["k"] + 1)]
    notes = data.get("replay_notes", {})
    equivalence = summary["config"].get("equivalence", "verdict")
    lines = ["**RQ1: failure reproduction**", "",
             MARK.format(family=family, kind="rq1"), "",
             "*Replay* re-executes the program with the source's recorded prefix served from "
             "the bundle up to the case's failure target (the diagnosed target's LLM "
             "boundary), then regenerates live from there with no guidance; *rerun* restarts "
             "the task from scratch (unguided). An attempt counts as reproducing the failure "
             + ("when the evaluator rejects it **and** its own diagnosis shows the source's "
                "mechanism in the live part: same C-category, same detector rule, same role "
                "(node type and agent), and the source's case-specific evidence — the failing "
                "call, claimed output, URL or fault, in canonical form — found in the "
                "attempt's own live events (App. D.1; with a labels file, the label's "
                "category, agent and evidence)."
                if equivalence == "mechanism" else f"under the `{equivalence}` test.")
             + " rep_k is the share of k-subsets of a case's attempts in which every attempt "
             "reproduces (eq. 2).", "",
             "| method | n | " + " | ".join(f"rep_{k}" for k in ks) + " | system errors |",
             "|---|---|" + "---|" * len(ks) + "---|"]
    for arm, label in (("replay", "replay to target, then live"), ("rerun", "live rerun")):
        m = data["methods"][arm]
        lines.append(f"| {label} | {m['n']} | " + " | ".join(_pct(m["rep"][k]) for k in ks)
                     + f" | {data['errors'][arm]} |")
    p = data["paired"]
    lines += ["", f"Paired rep_{data['k']} (replay vs rerun): n={p['n']}, n10={p['n10']}, "
              f"n01={p['n01']}, exact McNemar p={fmt_p(p['p'])}."]
    extra = []
    if notes.get("diverged"):
        extra.append(f"{notes['diverged']} replay(s) diverged in the prefix (counted as not "
                     "reproduced)")
    if notes.get("target_from_last_decision"):
        extra.append(f"{notes['target_from_last_decision']} case(s) had no diagnosed target: "
                     "their replay goes live at the last agent decision")
    if notes.get("reason_fallback"):
        extra.append(f"{notes['reason_fallback']} case(s) had no source mechanism: there the "
                     "same evaluator reason counts")
    if notes.get("crashed"):
        extra.append(f"{notes['crashed']} attempt(s) crashed (not reproduced)")
    if extra:
        lines += ["", "Notes: " + "; ".join(extra) + "."]
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


def _mark(arm: dict[str, Any]) -> str:
    outcome = arm["outcome"]
    text = {True: "✓", False: "✗", None: "error"}[outcome]
    if arm.get("error_kind") and outcome is not None:
        text += " (crash)" if arm["error_kind"] in ("program_crash", "no_final_result") else ""
    if arm.get("bundle"):
        return f"[{text}]({arm['bundle']})"
    return text


def cases_markdown(summary: dict[str, Any]) -> list[str]:
    methods = summary["methods"]
    k = summary["config"].get("rq1_k", 0)
    lines = ["## Cases", "",
             "One row per source failure; each cell links to the bundle of the deciding "
             "attempt (the passing one, else the last): open it with `symtrace show`, compare "
             "with `symtrace diff`. ✓ repaired, ✗ not repaired.", "",
             "| case | source | categories | target | "
             + (f"RQ1 replay /{k} | RQ1 rerun /{k} | " if k else "")
             + " | ".join(methods) + " |",
             "|---|---|---|---|" + ("---|---|" if k else "") + "---|" * len(methods)]
    for c in summary.get("cases", []):
        source = f"[bundle]({c['bundle']})" if c.get("bundle") else "–"
        cats = ", ".join(c.get("categories") or []) or "none"
        target = f"`{c['target']}`" if c.get("target") else "–"
        rq1 = (f"{c['rq1']['replay'][0]} | {c['rq1']['rerun'][0]} | " if k else "")
        lines.append(f"| `{c['case']}` | {source} | {cats} | {target} | {rq1}"
                     + " | ".join(_mark(c["arms"][m]) for m in methods) + " |")
    lines.append("")
    return lines


def charts(summary: dict[str, Any]) -> dict[str, str]:
    """Marker → SVG for each family's repair and RQ1 charts."""
    out = {}
    for family, data in summary["families"].items():
        title = "all MAS pooled" if family == ALL else family
        bars = [{"label": m, "value": t["rate"], "low": (t["wilson95"] or [None])[0],
                 "high": (t["wilson95"] or [None, None])[1], "n": t["n"],
                 "text": f"{t['repaired']}/{t['n']}", "group": t["level"]}
                for m, t in data["methods"].items()]
        out[MARK.format(family=family, kind="repair")] = bar_chart(
            f"{title}: repair rate per method ({data['cases']} failures, Wilson 95% CI)", bars,
            legend={"node": "node level (1 intervention)",
                    "task": f"task level (≤{summary['attempts']} attempts)"})
        rq1 = data["rq1"]
        if rq1.get("enabled"):
            rbars = [{"label": f"{arm} rep_{k}", "value": rq1["methods"][arm]["rep"][str(k)],
                      "n": rq1["methods"][arm]["n"], "group": arm,
                      "text": _pct(rq1["methods"][arm]["rep"][str(k)])}
                     for k in range(1, rq1["k"] + 1) for arm in ("replay", "rerun")]
            out[MARK.format(family=family, kind="rq1")] = bar_chart(
                f"{title}: RQ1 failure reproduction rep_k", rbars,
                legend={"replay": "replay to target, then live", "rerun": "live rerun"})
    return out


STYLE = ("body{font-family:DejaVu Sans,Arial,sans-serif;max-width:1180px;margin:2em auto;"
         "color:#222;line-height:1.4}table{border-collapse:collapse;margin:.5em 0}"
         "td,th{border:1px solid #ccc;padding:3px 7px;font-size:13px;text-align:left}"
         "th{background:#f3f3f3}code{background:#f3f3f3;padding:0 3px;border-radius:3px;"
         "font-size:12px}blockquote{background:#b00020;color:#fff;padding:12px 16px;"
         "margin:1em 0;border-radius:4px;font-size:16px}h2{border-bottom:1px solid #ddd;"
         "padding-bottom:3px;margin-top:1.6em}svg{display:block;margin:.6em 0}")


def html_report(summary: dict[str, Any], md: str) -> str:
    body = render_markdown(md, charts(summary))
    return ("<!doctype html><html><head><meta charset='utf-8'>"
            f"<title>{html.escape(summary['name'])}: repair or resample</title>"
            f"<style>{STYLE}</style></head><body>\n{body}\n</body></html>\n")


def extra_sections(outdir: Path, study: dict[str, Any], frozen: dict[str, Any],
                   rows: list[dict[str, Any]]) -> dict[str, Any]:
    """pass@k, RQ1 by prefix length and RQ1's model settings per family; the detectors'
    flag rates on the passing sources; the labels used (analysis_extra.py)."""
    from symtrace_study import analysis_extra as extra

    config = study["config"]
    methods, attempts = list(config["methods"]), int(config["attempts"])
    out: dict[str, Any] = {"families": {}}
    for family in [*sorted({c["mas"] for c in frozen["cases"]}), ALL]:
        cases = [c for c in frozen["cases"] if family in (ALL, c["mas"])]
        ids = {c["case"] for c in cases}
        mine = [r for r in rows if r["case"] in ids]
        out["families"][family] = {"pass_at": extra.pass_at_k(cases, mine, methods, attempts),
                                   "prefix": extra.rq1_by_prefix(cases, mine)}
    out["rq1_settings"] = extra.rq1_settings(rows)
    collect = outdir / "collect.jsonl"
    sources = list(ResultLog(collect).load().values()) if collect.exists() else []
    trace_back = config.get("trace_back", True)
    out["flag_rates"] = extra.detector_flag_rates(outdir, sources, {"trace_back": trace_back})
    labelled = sorted({r["case"] for r in rows if r.get("target_from") == "label"})
    out["labels"] = {"path": config.get("labels_path"), "cases": labelled}
    if config.get("rq1_judge"):
        from symtrace_study.repro_judge import agreement, verdict_log

        out["rq1_judge"] = agreement(rows, verdict_log(outdir).load().values(),
                                     config["rq1_judge"])
    return out


def _section(title: str, intro: str, header: list[str]) -> list[str]:
    return [f"## {title}", "", intro, "", "| " + " | ".join(header) + " |",
            "|" + "---|" * len(header)]


def extra_markdown(summary: dict[str, Any]) -> list[str]:
    extra = summary.get("extra")
    if not extra:
        return []
    lines: list[str] = []
    task_arms = [m for m in summary["methods"] if m in ("rerun", "self_reflection", "critic")]
    if task_arms:
        ks = [str(k) for k in range(1, summary["attempts"] + 1)]
        lines += _section("Task arms: pass@k",
                          "A case passes at k when one of its first k attempts passed (App. E, "
                          "eq. 16–17); cases with a system error in those attempts have no "
                          "outcome.", ["MAS", "arm", *(f"pass@{k}" for k in ks)])
        for family, data in extra["families"].items():
            for arm in task_arms:
                cells = [f"{t['passed']}/{t['n']} ({_pct(t['rate'])})"
                         for t in (data["pass_at"][arm][k] for k in ks)]
                lines.append(f"| {family} | `{arm}` | " + " | ".join(cells) + " |")
        lines.append("")
    pooled = extra["families"].get(ALL, {}).get("prefix")
    if pooled:
        lines += _section("RQ1 by prefix length (App. D.3)",
                          "Prefix = the source events served from the bundle before the replay "
                          "goes live; rep_1 = reproducing attempts / attempts.",
                          ["prefix events", "cases", "replay rep_1", "rerun rep_1"])
        for bucket, data in pooled.items():
            cells = [f"{data[a][0]}/{data[a][1]} ({_pct(data[a][0] / data[a][1])})"
                     if data[a][1] else "–" for a in ("replay", "rerun")]
            lines.append(f"| {bucket} | {data['cases']} | {cells[0]} | {cells[1]} |")
        lines.append("")
    lines += judge_markdown(extra.get("rq1_judge"))
    rates = extra.get("flag_rates") or {}
    if rates:
        lines += _section("Detector flag rates on passing sources",
                          "Sources the evaluator accepted on which a detector fires (rules only, "
                          "no judge): a high rate means a detector tuned to the wrong thing.",
                          ["MAS", "passing sources", "flagged", "by rule"])
        for family, data in rates.items():
            rules = ", ".join(f"`{r}` {n}" for r, n in data["rules"].items()) or "–"
            share = _pct(data["flagged"] / data["sources"]) if data["sources"] else "–"
            unreadable = (f" ({data['unreadable']} bundle(s) unreadable)"
                          if data.get("unreadable") else "")
            lines.append(f"| {family} | {data['sources']}{unreadable} | {data['flagged']} "
                         f"({share}) | {rules} |")
        lines.append("")
    return lines


def judge_markdown(data: dict[str, Any] | None) -> list[str]:
    """RQ1's method-blinded judge beside the rule-based mechanism test (repro_judge.py)."""
    if not data:
        return []
    names = {"replay": "replay", "rerun": "rerun", "all": "pooled"}
    lines = _section(
        "RQ1: method-blinded judge vs the mechanism test",
        f"The judge `{data['judge']['model']}` saw the source failure and each rejected "
        "attempt's own live evidence, never the method; attempts the evaluator accepted and "
        "diverged replays count as no reproduction for both. κ = Cohen's kappa; unjudged = "
        "attempts still without a verdict (not counted).",
        ["method", "attempts", "both", "rule only", "judge only", "neither", "agreement", "κ",
         "rule rep_1", "judge rep_1", "unjudged"])
    for method, t in sorted(data["methods"].items(), key=lambda kv: kv[0] == "all"):
        kappa = "–" if t["kappa"] is None else f"{t['kappa']:.2f}"
        lines.append(
            f"| {names.get(method, method)} | {t['n']} | {t['both']} | {t['rule_only']} | "
            f"{t['judge_only']} | {t['neither']} | {_pct(t['agreement'])} | {kappa} | "
            f"{_pct(t.get('rule_rate'))} | {_pct(t.get('judge_rate'))} | {t['unjudged']} |")
    return [*lines, ""]


def write_report(outdir: Path) -> list[Path]:
    study, frozen, rows = load_study(outdir)
    summary = summarise(study, frozen, rows)
    info = run_info(outdir, rows)
    disclosure = None
    if summary["backend"]["kind"] == "stub":
        from symtrace_study.benchmark import DEFAULT_BENCHMARK, load_benchmark

        bench = load_benchmark(study["config"].get("benchmark") or DEFAULT_BENCHMARK)
        disclose = getattr(bench, "stub_disclosure", None)
        disclosure = disclose() if callable(disclose) else [
            f"{bench.name} gives no account of its stub policy: read its stub_responder."]
    summary["extra"] = extra_sections(outdir, study, frozen, rows)
    md = markdown(summary, info, _versions(rows), disclosure)
    summary["run"] = info
    write_json(outdir / "summary.json", summary)
    (outdir / "report.md").write_text(md + "\n", encoding="utf-8")
    (outdir / "report.html").write_text(html_report(summary, md), encoding="utf-8")
    return [outdir / "report.html", outdir / "report.md", outdir / "summary.json"]
