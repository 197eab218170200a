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
import textwrap
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from rich.console import Console

from symtrace.cli import term
from symtrace.cli.commands import summary
from symtrace.cli.replay_output import anchor_attempts_text, print_divergence
from symtrace.cli.run import add_placement_option, add_trust_options
from symtrace.diagnosis.anchors import AnchorPolicy
from symtrace.diagnosis.errors import DiagnosisConfigError, DiagnosisError
from symtrace.diagnosis.evaluate import evaluate, load_labels, render_report
from symtrace.diagnosis.importers import ImportFormat, load_source
from symtrace.diagnosis.judge import OpenAIJudge
from symtrace.diagnosis.pipeline import diagnose
from symtrace.diagnosis.repair import RepairPlan, RepairResult, plan_repair, run_plan
from symtrace.diagnosis.report import explain, render_plain, render_table, to_json_bytes
from symtrace.diagnosis.rules import DEFAULT_RULES, Rule, without
from symtrace.diagnosis.scoring import ScoringConfig
from symtrace.diagnosis.summary import summarize_diagnosis
from symtrace.diagnosis.templates import load_templates

EXPLAIN_ALL = "*"  # `--explain` without NODE: the table of every node's coefficients


def add_parsers(subparsers: Any) -> None:
    """Register `diagnose` and `repair` on the top-level CLI's subparsers."""
    d = subparsers.add_parser(
        "diagnose",
        help=summary("diagnose"),
        description="Looks at every step of a recorded run (or of an imported chat or request "
        "log) for four kinds of symptoms: a requirement of the task not met (C1), the run "
        "repeating itself or stalling (C2), an error left unresolved (C3), and plans, actions "
        "and results that do not add up (C4). Prints what looks wrong, where it shows, where "
        "it started, why, and what to try. --explain shows the scores behind it (with NODE, "
        "the rules and formulas for that step), --json everything as JSON. Exits 0 when the "
        "diagnosis ran, whatever it found. With --eval LABELS, checks how often the place it "
        "picks is the labelled mistake, next to random/first/last picks. Details and every "
        "coefficient: docs/diagnosis.md.",
    )
    d.add_argument("bundle", metavar="BUNDLE", nargs="?",
                   help="a bundle directory, or a chat or request log to import")
    d.add_argument(
        "--eval",
        dest="eval_labels",
        metavar="LABELS",
        help="JSON/JSONL of {trace, mistake_step|mistake_event, mistake_agent}: score the anchor",
    )
    d.add_argument(
        "--seed", type=int, default=0, help="seed of the random baseline draw (--eval; default 0)"
    )
    d.add_argument("--json", action="store_true", help="print the whole diagnosis as JSON")
    d.add_argument(
        "--explain",
        metavar="NODE",
        nargs="?",
        const=EXPLAIN_ALL,
        help="the scores behind the diagnosis: a table of every step's coefficients, or for "
        "NODE its rules, scores and formulas",
    )
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
        help=summary("repair"),
        description="Diagnoses the run, then replays it up to the LLM call where the problem "
        "started, adds repair guidance to that call's request and lets the rest of the run "
        "go live, writing a new bundle (-o). The plan is printed first (on stderr, so the "
        "program's own output stays on stdout). --anchor-policy random or last are controls "
        "for comparison: same single repair, generic guidance. --dry-run prints the plan "
        "only. Exits with the replayed program's exit code; 92 when there is nothing to "
        "repair.",
    )
    r.add_argument("bundle", metavar="BUNDLE", help="the recorded bundle to repair")
    r.add_argument("-o", "--out", help="directory for the child bundle")
    r.add_argument(
        "--anchor-policy", default="suspicious", choices=[p.value for p in AnchorPolicy],
        help="where to repair: suspicious (from the diagnosis, the default), or the random or "
        "last LLM call (controls)",
    )
    r.add_argument("--seed", type=int, default=0, help="seed of the random control (default 0)")
    r.add_argument("--templates", metavar="FILE", help="JSON file overriding prompt templates")
    add_placement_option(r, "the request's messages")
    r.add_argument("--dry-run", action="store_true", help="print the plan, do not replay")
    r.add_argument("--json", action="store_true", help="print the repair plan/result as JSON")
    r.add_argument("--report-json", metavar="FILE", help="divergence report path (replay)")
    r.add_argument("--quiet", action="store_true", help="do not echo the program's stdout")
    add_trust_options(r)
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
    p.add_argument(
        "--config", metavar="FILE",
        help="JSON object overriding scoring coefficients (docs/diagnosis.md)",
    )
    p.add_argument(
        "--theta", type=float,
        help="how strong a symptom must be to repair from, 0 to 1 (default 0.50)",
    )
    p.add_argument(
        "--no-trace-back",
        dest="trace_back",
        action="store_false",
        help="repair at the first step that shows a symptom, not where it started",
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
    return Console(file=sys.stdout, width=term.width())


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
    if not args.bundle and args.explain not in (None, EXPLAIN_ALL) and Path(args.explain).exists():
        args.bundle, args.explain = args.explain, EXPLAIN_ALL  # `diagnose --explain BUNDLE`
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
    node = args.explain if args.explain not in (None, EXPLAIN_ALL) else None
    if args.json:
        data = result.node(node).to_json() if node else result.to_json()
        sys.stdout.write(to_json_bytes(data).decode())
    elif node:
        _console().print(explain(result, node))
    elif args.explain == EXPLAIN_ALL:
        render_table(result, _console())
    else:
        summary = summarize_diagnosis(result)
        sys.stdout.write(render_plain(summary, term.width(), color=term.color()))
    # Exit 0 whatever the diagnosis found: finding nothing to repair is a result, not an
    # error (`repair` is the command that fails, 92, when there is nothing to repair).
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
        plan = plan_repair(
            load_source(args.bundle),  # a log file imports as analysis-only and is refused
            policy=args.anchor_policy,
            seed=args.seed,
            judge=judge,
            config=_config(args),
            rules=_rules(args),
            templates=templates,
            trace_back=args.trace_back,
        )
    # The plan goes to stderr before the program runs (stdout is the program's); with
    # --dry-run it is the whole output, so it goes to stdout.
    stream = sys.stdout if args.dry_run else sys.stderr
    if not args.json:
        stream.write(plan_text(plan, args.placement, term.width(stream),
                               dry_run=args.dry_run, color=term.color(stream)))
        stream.flush()
    result = RepairResult(plan, None) if args.dry_run else run_plan(
        plan,
        args.bundle,
        out=args.out,
        placement=args.placement,
        command=command or None,
        report_json=args.report_json,
        quiet=args.quiet or args.json,  # --json: stdout carries only the JSON
        trust=args.trust,
        endpoint=args.endpoint,
    )
    if args.json:
        sys.stdout.write(to_json_bytes(result.to_json()).decode())
    elif result.outcome is not None:
        _print_outcome(result.outcome)
    return 0 if result.outcome is None else int(result.outcome.exit_code or 0)


def plan_text(plan: RepairPlan, placement: str, columns: int, *, dry_run: bool = False,
              color: bool = False) -> str:
    """The repair plan as a block with a header: where, why, and the guidance verbatim."""
    choice = plan.choice
    where = {"user": "as a new user message", "system": "appended to the system message",
             "last": "appended to the last message"}.get(placement, placement)
    lines = [term.bold(term.rule("symtrace: repair plan", columns), color)]
    anchor = f"Repair at {choice.anchor} ({choice.policy.value} policy)"
    if choice.policy is AnchorPolicy.SUSPICIOUS:
        if choice.symptom and choice.symptom != choice.anchor:
            anchor += f": the symptom shows at {choice.symptom}"
            if choice.target not in (choice.symptom, choice.anchor):
                anchor += f" and started at {choice.target}"
        anchor += "."
    else:
        anchor += ": a control, chosen without the diagnosis."
    lines += textwrap.wrap(anchor, columns)
    lines += textwrap.wrap(f"Guidance, added to the request of {choice.anchor} {where}:", columns)
    for paragraph in plan.guidance.splitlines() or [""]:
        lines += textwrap.wrap(paragraph, columns - 4, initial_indent="    ",
                               subsequent_indent="    ", break_on_hyphens=False) or [""]
    if not dry_run:
        lines.append(term.rule(
            f"running the program: replayed up to {choice.anchor}, live from there", columns))
    return "\n".join(lines) + "\n"


def _print_outcome(outcome: Any) -> None:
    """After the program's output: the divergence report, or what the repair wrote."""
    if outcome.diverged:
        print_divergence(outcome)
        return
    lineage = (outcome.report_json or {}).get("lineage") or {}
    text = (
        f"symtrace: repair wrote a new bundle: "
        f"{len(lineage.get('replayed_events', []))} events replayed, "
        f"{len(lineage.get('live_events', []))} live from {outcome.resolved_anchor} "
        f"({anchor_attempts_text(lineage)}; program exit code {outcome.exit_code}):"
    )
    lines = textwrap.wrap(text, term.width(sys.stderr))
    lines.append(f"  {outcome.child_bundle}")  # on its own line: a path is never broken
    sys.stderr.write("\n".join(lines) + "\n")
    sys.stderr.flush()
