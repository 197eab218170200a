"""Repair or resample? Node-level interventions vs task-level reruns on the same failures.

    .venv/bin/python experiments/repair_vs_resample.py experiments/configs/demo.json

For every source failure (a bundle whose final result the evaluator rejects) it runs:

* node level, one selective-replay intervention each: `suspicious` (diagnosis anchor +
  symptom-conditioned Δ), `random` (seeded) and `last` (generic Δ) — the paper's §5.4 arms;
* task level, up to `attempts` complete live reruns, stopping at the first success:
  `rerun` (unguided), `self_reflection`, `critic` — the App. E.1 prompts, given only the task
  and the failed final answer.

Every attempt is itself recorded as a bundle, so API calls are counted from the trajectories
and any attempt can be inspected or replayed. Results: `results.jsonl` (one row per attempt),
`summary.json`, a table with Wilson intervals, paired comparisons against the reference arm
(Δ with a 10,000-resample paired bootstrap CI, exact McNemar, Holm within the family), and
`pass_rates.svg`. Uses only symtrace's public API.

Config (JSON): `cases` (bundle paths, or `{"collect": N, "command": [...], "task": "..."}` to
record N fresh runs and keep the failures), `evaluator` (`{"contains": "text"}`,
`{"not_contains": "text"}` or `{"python": "module:function"}` called with (final value,
stdout text, task) → bool), `task_command` (argv with `{prompt}`), `methods`, `attempts`,
`seed`, `reference`, `out`, and optionally `endpoint` (`{"stub": "stochastic", "seed": N}`
starts the embedded endpoint on 127.0.0.1 for the whole experiment; otherwise the
environment's OPENAI_BASE_URL is used).
"""

from __future__ import annotations

import argparse
import importlib
import os
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
from rich.console import Console
from rich.progress import Progress
from rich.table import Table

import symtrace
from symtrace.diagnosis import build_task_prompt, parse_task, repair
from symtrace.diagnosis.errors import NoEligibleAnchor
from symtrace.runner import record_command
from symtrace.stats import holm, mcnemar_exact, paired_bootstrap_difference, wilson

NODE_ARMS = {"suspicious": "suspicious", "random": "random", "last": "last"}
TASK_ARMS = {"rerun": "unguided_rerun", "self_reflection": "self_reflection",
             "critic": "critic_agent"}


class ExperimentConfigError(symtrace.SymtraceError, ValueError):
    """The experiment config is malformed."""


@dataclass(frozen=True)
class Config:
    cases: list[Any]
    evaluator: dict[str, Any]
    task_command: list[str]
    methods: list[str]
    attempts: int
    seed: int
    reference: str
    out: Path
    endpoint: dict[str, Any] | None = None

    @classmethod
    def load(cls, path: Path) -> Config:
        try:
            raw = orjson.loads(path.read_bytes())
        except (OSError, orjson.JSONDecodeError) as exc:
            raise ExperimentConfigError(f"cannot read config {path}: {exc}") from exc
        methods = raw.get("methods", [*NODE_ARMS, *TASK_ARMS])
        unknown = [m for m in methods if m not in NODE_ARMS and m not in TASK_ARMS]
        if unknown:
            raise ExperimentConfigError(f"unknown methods {unknown}; known: "
                                        f"{', '.join([*NODE_ARMS, *TASK_ARMS])}")
        for key in ("cases", "evaluator", "task_command"):
            if key not in raw:
                raise ExperimentConfigError(f"config {path} lacks {key!r}")
        if not any("{prompt}" in part for part in raw["task_command"]):
            raise ExperimentConfigError("task_command must contain {prompt}")
        reference = raw.get("reference", "suspicious")
        if reference not in methods:
            raise ExperimentConfigError(f"reference method {reference!r} is not in methods")
        return cls(raw["cases"], raw["evaluator"], list(raw["task_command"]), list(methods),
                   int(raw.get("attempts", 3)), int(raw.get("seed", 0)), reference,
                   Path(raw.get("out", "out/experiments/run")), raw.get("endpoint"))


def evaluator_from(spec: dict[str, Any]) -> Callable[[Any, str, Any], bool]:
    if "contains" in spec:
        needle = str(spec["contains"])
        return lambda value, stdout, task: needle in f"{value}"
    if "not_contains" in spec:
        needle = str(spec["not_contains"])
        return lambda value, stdout, task: needle not in f"{value}"
    if "python" in spec:
        module, _, name = str(spec["python"]).partition(":")
        try:
            return getattr(importlib.import_module(module), name)
        except (ImportError, AttributeError) as exc:
            raise ExperimentConfigError(f"cannot load evaluator {spec['python']}: {exc}") from exc
    raise ExperimentConfigError("evaluator needs 'contains', 'not_contains' or 'python'")


def final_of(bundle_path: Path) -> tuple[Any, str, int]:
    """(final value, stdout, LLM calls made live) of a recorded attempt."""
    bundle = symtrace.load_bundle(bundle_path)
    final = bundle.final_result()
    response = final.response if final else {}
    live = set((bundle.lineage or {}).get("live_events", [e.id for e in bundle.events]))
    calls = sum(1 for e in bundle.events if e.is_llm and e.id in live)
    return response.get("value"), (bundle.stdout() or b"").decode("utf-8", "replace"), calls


def collect_cases(spec: dict[str, Any], out: Path, judge: Callable[..., bool]) -> list[Path]:
    """Record fresh runs of a command and keep those the evaluator rejects."""
    kept = []
    for index in range(int(spec["collect"])):
        path = out / "sources" / f"run-{index:03d}"
        record_command(path, spec["command"], task=spec.get("task"), force=True, quiet=True)
        value, stdout, _ = final_of(path)
        if not judge(value, stdout, spec.get("task")):
            kept.append(path)
    return kept


def run_case(case: Path, config: Config, judge: Callable[..., bool], out: Path
             ) -> list[dict[str, Any]]:
    bundle = symtrace.load_bundle(case)
    task = bundle.task
    source_value, source_stdout, _ = final_of(case)
    rows = []
    base = {"case": str(case), "bundle_digest": bundle.digest, "seed": config.seed,
            "versions": bundle.config.get("versions", {})}
    if judge(source_value, source_stdout, task):
        return [{**base, "method": "source", "excluded": "the source run already passes"}]
    for method in config.methods:
        target = out / case.name / method
        shutil.rmtree(target, ignore_errors=True)
        if method in NODE_ARMS:
            rows.append({**base, **node_attempt(case, method, target, config, judge, task)})
            continue
        prompt = build_task_prompt(TASK_ARMS[method], parse_task(task),
                                   previous_final_answer=source_value)
        for attempt in range(1, config.attempts + 1):
            path = target / f"attempt-{attempt}"
            argv = [part.replace("{prompt}", prompt) for part in config.task_command]
            record_command(path, argv, task=task, seed=config.seed + attempt, force=True,
                           quiet=True)
            value, stdout, calls = final_of(path)
            ok = bool(judge(value, stdout, task))
            rows.append({**base, "method": method, "attempt": attempt, "success": ok,
                         "api_calls": calls, "bundle": str(path)})
            if ok:
                break
    return rows


def node_attempt(case: Path, method: str, target: Path, config: Config,
                 judge: Callable[..., bool], task: Any) -> dict[str, Any]:
    try:
        result = repair(case, out=str(target), policy=NODE_ARMS[method], seed=config.seed,
                        quiet=True)
    except NoEligibleAnchor as exc:
        return {"method": method, "attempt": 1, "success": False, "api_calls": 0,
                "anchor": None, "note": str(exc)}
    outcome = result.outcome
    if outcome is None or outcome.diverged or outcome.child_bundle is None:
        return {"method": method, "attempt": 1, "success": False, "api_calls": 0,
                "anchor": result.plan.choice.anchor, "note": "prefix replay diverged"}
    value, stdout, calls = final_of(outcome.child_bundle)
    return {"method": method, "attempt": 1, "success": bool(judge(value, stdout, task)),
            "api_calls": calls, "anchor": result.plan.choice.anchor,
            "bundle": str(outcome.child_bundle)}


def summarise(rows: list[dict[str, Any]], config: Config) -> dict[str, Any]:
    cases = sorted({r["case"] for r in rows if "excluded" not in r})
    outcome = {m: [any(r.get("success") for r in rows if r["case"] == c and r["method"] == m)
                   for c in cases] for m in config.methods}
    calls = {m: sum(r.get("api_calls", 0) for r in rows if r["method"] == m)
             for m in config.methods}
    methods = {}
    for m in config.methods:
        repaired = sum(outcome[m])
        interval = wilson(repaired, len(cases)) if cases else None
        methods[m] = {
            "level": "node" if m in NODE_ARMS else "task",
            "budget": 1 if m in NODE_ARMS else config.attempts,
            "repaired": repaired, "cases": len(cases),
            "rate": interval.estimate if interval else None,
            "wilson95": [interval.low, interval.high] if interval else None,
            "api_calls": calls[m],
            "repairs_per_1000_calls": 1000 * repaired / calls[m] if calls[m] else None,
        }
    others = [m for m in config.methods if m != config.reference]
    comparisons = []
    if cases:
        raw = [mcnemar_exact(outcome[config.reference], outcome[m]) for m in others]
        for m, p, p_holm in zip(others, raw, holm(raw), strict=True):
            delta = paired_bootstrap_difference(outcome[config.reference], outcome[m])
            comparisons.append({"reference": config.reference, "method": m,
                                "delta_pp": delta.estimate, "ci95": [delta.low, delta.high],
                                "mcnemar_p": p, "holm_p": p_holm, "cases": len(cases)})
    excluded = sorted({r["case"] for r in rows if "excluded" in r})
    return {"cases": cases, "excluded": excluded, "methods": methods,
            "comparisons": comparisons}


def chart_svg(summary: dict[str, Any]) -> str:
    """Pass rate per method with its Wilson 95% interval (plain SVG)."""
    methods = list(summary["methods"].items())
    width, bar, gap, top, height = 120 + 90 * len(methods), 50, 40, 30, 320
    scale = 220
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           'font-family="DejaVu Sans, Arial, sans-serif" font-size="11">',
           f'<rect width="{width}" height="{height}" fill="white"/>',
           f'<text x="10" y="18" font-weight="bold">Repair rate ({len(summary["cases"])} '
           'cases, Wilson 95% CI)</text>']
    base_y = top + scale
    out.append(f'<line x1="50" y1="{base_y}" x2="{width - 10}" y2="{base_y}" stroke="#333"/>')
    for tick in (0, 0.25, 0.5, 0.75, 1.0):
        y = base_y - tick * scale
        out.append(f'<text x="12" y="{y + 4}">{int(tick * 100)}%</text>')
        out.append(f'<line x1="48" y1="{y}" x2="{width - 10}" y2="{y}" stroke="#eee"/>')
    for i, (name, m) in enumerate(methods):
        x = 60 + i * (bar + gap)
        rate = m["rate"] or 0.0
        color = "#2b5797" if m["level"] == "node" else "#b0b0b0"
        out.append(f'<rect x="{x}" y="{base_y - rate * scale}" width="{bar}" '
                   f'height="{rate * scale}" fill="{color}"/>')
        if m["wilson95"]:
            low, high = m["wilson95"]
            cx = x + bar / 2
            out.append(f'<line x1="{cx}" y1="{base_y - low * scale}" x2="{cx}" '
                       f'y2="{base_y - high * scale}" stroke="#000"/>')
        out.append(f'<text x="{x + bar / 2}" y="{base_y + 14}" text-anchor="middle">{name}</text>')
        out.append(f'<text x="{x + bar / 2}" y="{base_y + 28}" text-anchor="middle" '
                   f'fill="#555">{m["level"]}, {m["budget"]} att.</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def run(config: Config, console: Console) -> dict[str, Any]:
    if not config.endpoint:
        return _run(config, console)
    from symtrace.stub import StubLLM

    saved = {k: os.environ.get(k) for k in ("OPENAI_BASE_URL", "OPENAI_API_KEY")}
    with StubLLM(mode=config.endpoint.get("stub", "stochastic"),
                 seed=config.endpoint.get("seed")) as stub:
        os.environ.update(OPENAI_BASE_URL=stub.url, OPENAI_API_KEY="sk-experiment")
        try:
            return _run(config, console)
        finally:
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value


def _run(config: Config, console: Console) -> dict[str, Any]:
    judge = evaluator_from(config.evaluator)
    out = config.out
    out.mkdir(parents=True, exist_ok=True)
    cases: list[Path] = []
    for spec in config.cases:
        if isinstance(spec, dict) and "collect" in spec:
            cases.extend(collect_cases(spec, out, judge))
        else:
            cases.append(Path(spec))
    rows: list[dict[str, Any]] = []
    with Progress(console=console, transient=True) as progress:
        job = progress.add_task("cases", total=len(cases))
        for case in cases:
            rows.extend(run_case(case, config, judge, out))
            progress.advance(job)
    (out / "results.jsonl").write_bytes(
        b"".join(orjson.dumps(r, option=orjson.OPT_SORT_KEYS) + b"\n" for r in rows))
    summary = summarise(rows, config)
    (out / "summary.json").write_bytes(
        orjson.dumps(summary, option=orjson.OPT_SORT_KEYS | orjson.OPT_INDENT_2))
    (out / "pass_rates.svg").write_text(chart_svg(summary))
    print_summary(summary, console)
    return summary


def print_summary(summary: dict[str, Any], console: Console) -> None:
    table = Table(title=f"repair rate on {len(summary['cases'])} source failures",
                  header_style="bold")
    for column in ("method", "level", "budget", "repaired", "rate", "Wilson 95%", "API calls"):
        table.add_column(column)
    for name, m in summary["methods"].items():
        ci = m["wilson95"]
        table.add_row(name, m["level"], str(m["budget"]), f"{m['repaired']}/{m['cases']}",
                      f"{100 * m['rate']:.1f}%" if m["rate"] is not None else "-",
                      f"{100 * ci[0]:.1f}–{100 * ci[1]:.1f}%" if ci else "-", str(m["api_calls"]))
    console.print(table)
    comparisons = Table(title="paired comparisons (Holm within the family)", header_style="bold")
    for column in ("reference vs", "Δ pp", "95% CI (bootstrap)", "McNemar p", "Holm p"):
        comparisons.add_column(column)
    for c in summary["comparisons"]:
        comparisons.add_row(f"{c['reference']} vs {c['method']}", f"{c['delta_pp']:+.1f}",
                            f"{c['ci95'][0]:+.1f} … {c['ci95'][1]:+.1f}",
                            f"{c['mcnemar_p']:.3f}", f"{c['holm_p']:.3f}")
    console.print(comparisons)
    if summary["excluded"]:
        console.print(f"excluded (source already passes): {', '.join(summary['excluded'])}")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("config", type=Path)
    parser.add_argument("--out", type=Path, help="override the config's output directory")
    args = parser.parse_args(argv)
    console = Console()
    try:
        config = Config.load(args.config)
        if args.out:
            config = Config(**{**config.__dict__, "out": args.out})
        run(config, console)
    except symtrace.SymtraceError as exc:
        console.print(f"[red]error:[/red] {exc}")
        return exc.exit_code
    return 0


if __name__ == "__main__":
    os.environ.setdefault("CREWAI_DISABLE_TELEMETRY", "true")
    sys.exit(main(sys.argv[1:]))
