"""`symtrace attribute BUNDLE`: find the decisive step of a failed run by intervention.

Prints the plan (candidates, Δ, the number of rollouts) before any live call, runs the
rollouts with a progress bar (resumable: run again to continue), then prints the per-node
table, the critical step and the validated error edges; `--json` prints the whole result.
docs/diagnosis.md ("Counterfactual attribution") describes the method.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import orjson
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from symtrace.cli.commands import summary
from symtrace.cli.run import add_placement_option, add_trust_options
from symtrace.diagnosis.attribution import (
    DEFAULT_ALPHA,
    DEFAULT_BUDGET,
    DEFAULT_K,
    Attribution,
    AttributionPlan,
    RolloutResult,
)
from symtrace.diagnosis.attribution_backends import BACKENDS
from symtrace.diagnosis.attribution_run import attribute, default_out, outcome_from
from symtrace.diagnosis.errors import DiagnosisConfigError
from symtrace.diagnosis.templates import load_templates


def add_parser(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "attribute",
        help=summary("attribute"),
        description="For each candidate LLM call of a failed run (the diagnosis' symptom "
        "nodes and their causal ancestors; --all: every agent decision), run k selective "
        "replays with repair guidance and k with the request regenerated unchanged, the "
        "prefix replayed strictly. Tool calls of the live suffix identical to recorded ones "
        "get the recorded result (--live-tools: run them). Reports per node the success "
        "rates (Wilson 95%%), the repair value with an exact one-sided paired test "
        "(Holm-adjusted), the critical step, and EDGE's validated error edges. Every "
        "rollout is kept as a child bundle under --out; running again resumes. The program "
        "to run instead of the recorded one goes after --.",
    )
    p.add_argument("bundle", metavar="BUNDLE", help="the failed run's bundle")
    p.add_argument("-o", "--out", help="where rollouts and results go "
                   "(default: BUNDLE-attribution)")
    p.add_argument("--k", type=int, default=DEFAULT_K,
                   help=f"rollouts per arm and node (default {DEFAULT_K})")
    p.add_argument("--all", dest="every_decision", action="store_true",
                   help="intervene at every agent decision, not only symptoms and ancestors")
    p.add_argument("--budget", type=int, default=DEFAULT_BUDGET,
                   help=f"at most this many candidate nodes (default {DEFAULT_BUDGET})")
    p.add_argument("--guidance", metavar="TEXT",
                   help="the repair Δ for every candidate (default: the symptom's template)")
    p.add_argument("--templates", metavar="FILE", help="template overrides (JSON)")
    p.add_argument("--control-text", metavar="TEXT",
                   help="the resample arm sends TEXT (content-free, e.g. 'Take this step "
                   "again.') where the repair puts its guidance, instead of the identical "
                   "request: for endpoints that answer an identical request identically "
                   "(temperature 0, a request-keyed stub)")
    p.add_argument("--live-tools", action="store_true",
                   help="run every tool call of the live suffix (no held tool outputs)")
    p.add_argument("--success-exit", type=int, metavar="CODE",
                   help="success = the program exits with CODE (the default, with 0)")
    p.add_argument("--success-match", metavar="REGEX",
                   help="success = the final result (else the stdout tail) matches REGEX")
    p.add_argument("--outcome", metavar="MODULE:CALLABLE",
                   help="success = CALLABLE(child bundle path) is true (an evaluator plug-in)")
    p.add_argument("--alpha", type=float, default=DEFAULT_ALPHA,
                   help=f"significance level of the critical step (default {DEFAULT_ALPHA})")
    p.add_argument("--jobs", type=int, default=1, help="rollouts run at once (default 1)")
    p.add_argument("--backend", choices=BACKENDS, default="threads",
                   help="where rollouts run: threads here (default); warm: threads whose "
                   "`python -m MODULE` program forks from a server that imported it once "
                   "(the study's warm launcher); ray: Ray actors (local, or $RAY_ADDRESS; "
                   "the `ray` extra). Results are the same on each")
    p.add_argument("--set-env", action="append", default=[], metavar="NAME=VALUE",
                   help="environment of the replayed program (repeatable)")
    p.add_argument("--cwd", metavar="DIR", help="run the program in DIR")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    add_placement_option(p, "the anchor request of a repair")
    add_trust_options(p)
    p.set_defaults(func=cmd_attribute)


def cmd_attribute(args: argparse.Namespace) -> int:
    outcome = outcome_from(args.success_exit, args.success_match, args.outcome)
    env = dict(_pair(item) for item in args.set_env)
    if args.endpoint:
        env["OPENAI_BASE_URL"] = args.endpoint
    console = Console(stderr=True)
    bar = Progress(TextColumn("rollouts"), BarColumn(), MofNCompleteColumn(),
                   TimeElapsedColumn(), TextColumn("{task.description}"), console=console,
                   transient=True)
    task = bar.add_task("", total=None)

    def on_plan(plan: AttributionPlan) -> None:
        _print_plan(console, plan, args.out or default_out(args.bundle), args.alpha)
        bar.start()

    def progress(result: RolloutResult, done: int, total: int) -> None:
        verdict = {True: "pass", False: "fail", None: "no verdict"}[result.passed]
        bar.update(task, completed=done, total=total, description=f"{result.key}: {verdict}")

    try:
        result = attribute(
            args.bundle, out=args.out, k=args.k, every_decision=args.every_decision,
            budget=args.budget, guidance=args.guidance,
            templates=load_templates(args.templates) if args.templates else None,
            hold_tools=not args.live_tools, control_text=args.control_text,
            outcome=outcome, command=args.command or None,
            set_env=env, placement=args.placement, jobs=args.jobs, alpha=args.alpha,
            cwd=args.cwd, trust=args.trust, backend=args.backend, progress=progress,
            on_plan=on_plan,
        )
    finally:
        bar.stop()
    if args.json:
        sys.stdout.buffer.write(orjson.dumps(result.to_json(), option=orjson.OPT_SORT_KEYS
                                             | orjson.OPT_INDENT_2) + b"\n")
    else:
        print_attribution(Console(), result)
    return 0


def _print_plan(console: Console, plan: AttributionPlan, out: str | Path,
                alpha: float) -> None:
    tools = "held to the recording" if plan.hold_tools else "run live (--live-tools)"
    console.print(f"[bold]Attribution plan[/] for {plan.source}: {len(plan.candidates)} "
                  f"candidate(s) × 2 arms × k={plan.k} = {len(plan.rollouts)} rollouts "
                  f"(identical tool calls {tools}); results in {out}")
    for c in plan.candidates:
        console.print(f"  {c.node}  ({c.agent or '-'}; {c.why})")
    if plan.control_text:
        console.print(f"  the resample arm sends {plan.control_text!r} in the guidance's place")
    if plan.smallest_p >= alpha:
        console.print(f"  [yellow]warning:[/] with k={plan.k} and {len(plan.candidates)} "
                      f"candidates the smallest Holm-adjusted p is {plan.smallest_p:.3g} ≥ "
                      f"α={alpha}: no step can be found significant; raise --k")
    if plan.skipped:
        console.print(f"  not tested (--budget): {', '.join(plan.skipped)}")


def print_attribution(console: Console, result: Attribution) -> None:
    table = Table(title="Repair value per candidate (repair vs resample, paired rollouts)")
    for name in ("node", "agent", "repair", "resample", "value", "b/c", "p", "Holm p", ""):
        table.add_column(name)
    for n in result.nodes:
        table.add_row(
            n.candidate.node, n.candidate.agent or "-", _rate(n.repair), _rate(n.resample),
            f"{n.repair_value:+.2f}", f"{n.test.repair_only}/{n.test.resample_only}",
            f"{n.test.p_value:.3g}", f"{n.adjusted_p:.3g}",
            "significant" if n.significant else "",
        )
    console.print(table)
    method = ("exact one-sided McNemar on paired rollouts, Holm-adjusted, "
              f"alpha={result.alpha}")
    if result.critical is not None:
        console.print(f"Critical step: [bold]{result.critical.candidate.node}[/] "
                      f"({result.critical.candidate.agent or '-'}) — {method}")
    else:
        console.print(f"Critical step: none found ({method})")
    validated = result.validated_edges
    if result.edges:
        edges = ", ".join(f"{e.source.node}→{e.target.node} (Δ={e.effect.delta:.2f}, "
                          f"n={e.effect.verified})" for e in validated) or "none"
        console.print(f"Validated error edges (EDGE, τ=0.15): {edges}")
    errors = sum(1 for r in result.results if r.passed is None)
    console.print(f"Tool calls in live suffixes: {result.held_tools} held to the recording, "
                  f"{result.live_tools} run live; rollouts without a verdict: {errors}")


def _rate(rate: Any) -> str:
    if not rate.n:
        return "-"
    return f"{rate.successes}/{rate.n} [{rate.low:.2f}, {rate.high:.2f}]"


def _pair(item: str) -> tuple[str, str]:
    name, sep, value = item.partition("=")
    if not sep or not name:
        raise DiagnosisConfigError(f"--set-env needs NAME=VALUE, got {item!r}")
    return name, value
