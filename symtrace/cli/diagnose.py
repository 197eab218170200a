"""`symtrace diagnose` and `symtrace repair`: thin argparse shells over the diagnosis API.

The top-level CLI calls `add_parsers(subparsers)`; each command's `func(args)` returns the exit
code and raises typed SymtraceErrors (which carry their own exit codes) on failure. As for
`symtrace replay`, a program to run instead of the recorded one goes after `--` (main() puts
it in `args.command`): `symtrace repair BUNDLE -o OUT -- python app.py`.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from rich.console import Console

from symtrace.diagnosis.anchors import AnchorPolicy
from symtrace.diagnosis.errors import DiagnosisConfigError, DiagnosisError, NoEligibleAnchor
from symtrace.diagnosis.evaluate import evaluate, load_labels, render_report
from symtrace.diagnosis.importers import ImportFormat, load_source
from symtrace.diagnosis.judge import OpenAIJudge
from symtrace.diagnosis.pipeline import diagnose
from symtrace.diagnosis.repair import repair
from symtrace.diagnosis.report import explain, render_table, to_json_bytes
from symtrace.diagnosis.rules import DEFAULT_RULES, Rule, without
from symtrace.diagnosis.scoring import ScoringConfig
from symtrace.diagnosis.templates import load_templates


def add_parsers(subparsers: Any) -> None:
    """Register `diagnose` and `repair` on the top-level CLI's subparsers."""
    d = subparsers.add_parser(
        "diagnose",
        help="find C1–C4 symptoms and the first eligible intervention anchor",
        description="Run the Table 10 rules over every completed node in observed order, score "
        "each triggered node (equations 21–34), gate on the first eligible node and trace it "
        "back along the event graph to where the failure was introduced (the anchor). BUNDLE "
        "is a bundle directory or a log file (chat messages, an OpenAI request/response log, "
        "or a multi-agent steps transcript), imported as an analysis-only trace. Exits 92 when "
        "no node is eligible. "
        "With --eval LABELS, diagnoses every labelled trace and reports how often the anchor "
        "finds the labelled mistake step and agent, next to random/first/last baselines.",
    )
    d.add_argument("bundle", metavar="BUNDLE", nargs="?")
    d.add_argument(
        "--eval",
        dest="eval_labels",
        metavar="LABELS",
        help="JSON/JSONL of {trace, mistake_step|mistake_event, mistake_agent}: score the anchor",
    )
    d.add_argument(
        "--seed", type=int, default=0, help="seed of the random baseline draw (--eval; default 0)"
    )
    d.add_argument("--json", action="store_true", help="print the diagnosis as JSON")
    d.add_argument("--explain", metavar="NODE", help="show the full feature breakdown of NODE")
    d.add_argument(
        "--format",
        dest="import_format",
        default="auto",
        choices=[f.value for f in ImportFormat],
        help="format of an imported log",
    )
    d.add_argument("--task", help="task text for an imported log (default: first user message)")
    _common(d)
    d.set_defaults(func=run_diagnose)

    r = subparsers.add_parser(
        "repair",
        help="diagnose, then replay to the anchor and resume live with repair guidance",
        description="Pick the anchor (suspicious: Algorithm 4; random/last: the controls, with "
        "the generic template), build Δ and run one selective replay.",
    )
    r.add_argument("bundle", metavar="BUNDLE")
    r.add_argument("-o", "--out", help="directory for the child bundle")
    r.add_argument("--anchor-policy", default="suspicious", choices=[p.value for p in AnchorPolicy])
    r.add_argument("--seed", type=int, default=0, help="seed of the random control (default 0)")
    r.add_argument("--templates", metavar="FILE", help="JSON file overriding prompt templates")
    r.add_argument(
        "--placement",
        default="user",
        choices=("user", "system", "last"),
        help="where Δ goes in the anchor's messages (default: a new user message)",
    )
    r.add_argument("--dry-run", action="store_true", help="print anchor and Δ, do not replay")
    r.add_argument("--json", action="store_true", help="print the repair plan/result as JSON")
    r.add_argument("--report-json", metavar="FILE", help="divergence report path (replay)")
    r.add_argument("--quiet", action="store_true")
    _common(r)
    r.set_defaults(func=run_repair)


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--disable-rule",
        action="append",
        default=[],
        metavar="RULE",
        help="turn off a rule by id (repeatable)",
    )
    p.add_argument("--config", metavar="FILE", help="JSON object overriding scoring coefficients")
    p.add_argument("--theta", type=float, help="eligibility threshold θ (default 0.50)")
    p.add_argument(
        "--no-trace-back",
        dest="trace_back",
        action="store_false",
        help="anchor at the first eligible symptom itself, not at its origin in the graph",
    )
    p.add_argument("--judge-url", help="base URL of an OpenAI-compatible judge (…/v1)")
    p.add_argument("--judge-model", help="model name of the judge")
    p.add_argument(
        "--judge-api-key-env",
        metavar="VAR",
        help="environment variable holding the judge's API key",
    )
    p.add_argument(
        "--judge-json-mode",
        action="store_true",
        help="ask the judge for response_format json_object",
    )
    judge_io = p.add_mutually_exclusive_group()
    judge_io.add_argument(
        "--record-judge", metavar="DIR", help="record the judge's LLM calls as a bundle in DIR"
    )
    judge_io.add_argument(
        "--replay-judge",
        metavar="DIR",
        help="serve the judge's calls from a --record-judge bundle (strict, no network)",
    )


def _console() -> Console:
    console = Console(file=sys.stdout)
    return console if console.is_terminal else Console(file=sys.stdout, width=160)


def _config(args: argparse.Namespace) -> ScoringConfig:
    data: dict[str, Any] = {}
    if args.config:
        try:
            data = json.loads(Path(args.config).read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise DiagnosisConfigError(
                f"{args.config}: cannot read scoring config ({exc})"
            ) from exc
        if not isinstance(data, dict):
            raise DiagnosisConfigError(f"{args.config}: expected a JSON object")
    if args.theta is not None:
        data["theta"] = args.theta
    try:
        return ScoringConfig.from_json(data)
    except (TypeError, ValueError) as exc:
        raise DiagnosisConfigError(str(exc)) from exc


def _rules(args: argparse.Namespace) -> tuple[Rule, ...]:
    try:
        return without(DEFAULT_RULES, args.disable_rule)
    except ValueError as exc:
        raise DiagnosisConfigError(str(exc)) from exc


def _judge(args: argparse.Namespace) -> OpenAIJudge | None:
    if not args.judge_url and not args.judge_model:
        if args.record_judge or args.replay_judge:
            flag = "--record-judge" if args.record_judge else "--replay-judge"
            raise DiagnosisConfigError(f"{flag} needs --judge-url and --judge-model")
        return None
    if not (args.judge_url and args.judge_model):
        raise DiagnosisConfigError("a judge needs both --judge-url and --judge-model")
    key = None
    if args.judge_api_key_env:
        key = os.environ.get(args.judge_api_key_env)
        if not key:
            raise DiagnosisConfigError(f"${args.judge_api_key_env} is not set")
    return OpenAIJudge(
        args.judge_url, args.judge_model, api_key=key, json_mode=args.judge_json_mode
    )


@contextmanager
def _judge_session(args: argparse.Namespace, judge: OpenAIJudge | None) -> Iterator[None]:
    """Record the judge's calls (--record-judge) or serve them from a recording
    (--replay-judge) with the core harness; the judge's httpx client is created inside, and
    the judge is closed on the way out."""
    try:
        if judge is None or not (args.record_judge or args.replay_judge):
            yield
        else:
            with _harness(args, judge):
                yield
    finally:
        if judge is not None:
            judge.close()


def _harness(args: argparse.Namespace, judge: OpenAIJudge) -> Any:
    import symtrace

    name = "record" if args.record_judge else "replay"
    session = getattr(symtrace, name, None)
    if session is None:
        raise DiagnosisError(f"--{name}-judge needs symtrace.{name}, which this build lacks")
    if args.record_judge:
        task = {
            "task": "symtrace diagnose (semantic judge)",
            "bundle": args.bundle or getattr(args, "eval_labels", None),
            "judge_model": judge.model,
        }
        return session(args.record_judge, task=task)
    return session(args.replay_judge)


def run_diagnose(args: argparse.Namespace) -> int:
    if args.eval_labels:
        return run_eval(args)
    if not args.bundle:
        raise DiagnosisConfigError("diagnose needs BUNDLE (or --eval LABELS)")
    source = load_source(args.bundle, fmt=args.import_format, task=args.task)
    judge = _judge(args)
    with _judge_session(args, judge):
        result = diagnose(
            source,
            rules=_rules(args),
            config=_config(args),
            judge=judge,
            trace_back=args.trace_back,
        )
    if args.json:
        data = result.node(args.explain).to_json() if args.explain else result.to_json()
        sys.stdout.write(to_json_bytes(data).decode())
    else:
        console = _console()
        if args.explain:
            console.print(explain(result, args.explain))
        else:
            render_table(result, console)
    if result.anchor is None and not args.explain:
        # The diagnosis is printed in full; the exit code says Algorithm 4 found nowhere to
        # intervene, as `repair` does (NoEligibleAnchor).
        sys.stderr.write(f"{result.source}: no eligible anchor: no intervention\n")
        return NoEligibleAnchor.exit_code
    return 0


def run_eval(args: argparse.Namespace) -> int:
    if args.bundle or args.explain:
        raise DiagnosisConfigError("--eval LABELS takes no BUNDLE and no --explain")
    labels = load_labels(args.eval_labels)
    rules, config, judge = _rules(args), _config(args), _judge(args)
    with _judge_session(args, judge):
        report = evaluate(
            labels,
            lambda bundle: diagnose(
                bundle, rules=rules, config=config, judge=judge, trace_back=args.trace_back
            ),
            seed=args.seed,
            name=args.eval_labels,
        )
    if args.json:
        sys.stdout.write(to_json_bytes(report.to_json()).decode())
    else:
        sys.stdout.write(render_report(report))
    return 0


def run_repair(args: argparse.Namespace) -> int:
    command = list(getattr(args, "command", None) or [])  # what main() found after "--"
    judge = _judge(args)
    templates = load_templates(args.templates) if args.templates else None
    with _judge_session(args, judge):
        result = repair(
            args.bundle,
            out=args.out,
            policy=args.anchor_policy,
            seed=args.seed,
            judge=judge,
            config=_config(args),
            rules=_rules(args),
            templates=templates,
            placement=args.placement,
            command=command or None,
            report_json=args.report_json,
            quiet=args.quiet or args.json,  # --json: stdout carries only the JSON
            dry_run=args.dry_run,
            trace_back=args.trace_back,
        )
    if args.json:
        sys.stdout.write(to_json_bytes(result.to_json()).decode())
    else:
        console = _console()
        choice = result.plan.choice
        target = "" if choice.target == choice.anchor else f" for suspicious node {choice.target}"
        if choice.symptom and choice.symptom != choice.target:
            target += f" (traced back from symptom {choice.symptom})"
        console.print(f"Anchor ({choice.policy.value}): {choice.anchor}{target}", markup=False)
        console.print("Guidance Δ:", markup=False)
        console.print(result.plan.guidance, markup=False, highlight=False)
        outcome = result.outcome
        if outcome is not None:
            child = outcome.child_bundle or "-"
            console.print(
                f"Replay: exit code {outcome.exit_code}, diverged: {outcome.diverged}, "
                f"child bundle: {child}",
                markup=False,
            )
    return 0 if result.outcome is None else int(result.outcome.exit_code or 0)
