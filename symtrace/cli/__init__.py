"""`symtrace` command line: a thin shell over the Python API.

Exit codes are listed in `EXIT_CODES` (printed by `symtrace --help`) and in the README.
Output fits the terminal and honours NO_COLOR (symtrace/cli/term.py).
"""

from __future__ import annotations

import argparse
import sys
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson

from symtrace.cli import term
from symtrace.cli.replay_output import print_divergence
from symtrace.errors import EXIT_USAGE, SymtraceError, UsageError


def _command(values: list[str]) -> list[str]:
    return list(values)


def _json_file(path: str | None) -> Any:
    if path is None:
        return None
    try:
        return orjson.loads(Path(path).read_bytes())
    except (OSError, orjson.JSONDecodeError) as exc:
        raise SymtraceError(f"cannot read JSON from {path}: {exc}") from exc


def _pair(item: str) -> tuple[str, str]:
    name, sep, value = item.partition("=")
    if not sep or not name:
        raise ValueError(f"--set-env needs NAME=VALUE, got {item!r}")
    return name, value


def _task(args: argparse.Namespace) -> Any:
    if args.task_file:
        return _json_file(args.task_file)
    return args.task


# -- record ------------------------------------------------------------------------------------
def cmd_record(args: argparse.Namespace) -> int:
    from symtrace.process.runner import record_command

    outcome = record_command(
        args.out,
        _command(args.command),
        task=_task(args),
        state=_json_file(args.state_file),
        config=_json_file(args.config_file),
        seed=args.seed,
        secret_envs=args.secret_env,
        adapters=args.adapter or None,
        env_keep=args.env,
        force=args.force,
        quiet=args.quiet,
    )
    if outcome.complete:
        _err(
            f"symtrace: recorded {outcome.events} events into {outcome.bundle} "
            f"(program exit code {outcome.exit_code})"
        )
    else:
        stopped = {
            "interrupted": f"interrupted ({outcome.signal})",
            "terminated": f"terminated ({outcome.signal})",
            "killed": f"the program was killed by {outcome.signal}",
        }.get(outcome.status, "the program ended without finishing its recording")
        _err(
            f"symtrace: {stopped}: {outcome.events} events recorded into {outcome.bundle}, "
            f"which is marked incomplete (exit code {outcome.exit_code})"
        )
    for egress in outcome.unrecorded_egress:
        _err(
            f"symtrace: note: unrecorded egress to {egress['host']}:{egress['port']} "
            f"({egress['count']}x, by {egress['library']}): outside every HTTP seam, so a strict "
            "replay will refuse it unless allowed with --allow-host"
        )
    return outcome.exit_code


# -- replay ------------------------------------------------------------------------------------
def cmd_replay(args: argparse.Namespace) -> int:
    from symtrace.process.runner import replay_bundle

    guidance = _guidance(args)
    outcome = replay_bundle(
        args.bundle,
        anchor=args.anchor,
        guidance=guidance,
        placement=args.placement,
        out=args.out,
        command=_command(args.command) or None,
        report_json=args.report_json,
        quiet=args.quiet,
        force=args.force,
        adapters=args.adapter or None,
        set_env=dict(_pair(item) for item in args.set_env),
        allow_hosts=args.allow_host,
        volatile_stdout=args.volatile_stdout,
    )
    if outcome.anchor_note:
        _err(f"symtrace: {outcome.anchor_note}")
    if outcome.diverged:
        print_divergence(outcome)
        return outcome.exit_code
    if outcome.child_bundle is not None:
        lineage = (outcome.report_json or {}).get("lineage") or {}
        _err(
            f"symtrace: selective replay wrote {outcome.child_bundle}: "
            f"{len(lineage.get('replayed_events', []))} events replayed, "
            f"{len(lineage.get('live_events', []))} live from {outcome.resolved_anchor}"
        )
    else:
        served = int((outcome.report_json or {}).get("served") or 0)
        live = int((outcome.report_json or {}).get("live") or 0)
        calls = "call" if served == 1 else "calls"
        _err("symtrace: replay matched every recorded boundary call")
        _err("\n".join(textwrap.wrap(
            f"served {served} boundary {calls} from the bundle, {live} live requests; exit "
            "code, final result and stdout match the recording",
            term.width(sys.stderr), initial_indent="  ", subsequent_indent="  ",
        )))
    if outcome.recorded_exit_code is not None and outcome.recorded_exit_code != outcome.exit_code:
        _err(
            f"symtrace: note: the program exited {outcome.exit_code}; the recorded run exited "
            f"{outcome.recorded_exit_code}"
        )
    return outcome.exit_code


def _guidance(args: argparse.Namespace) -> str | None:
    """Δ from --guidance or --guidance-file; both need --anchor and --anchor needs one (a usage
    error, exit 2, before anything runs)."""
    guidance = args.guidance
    if args.guidance_file:
        try:
            guidance = Path(args.guidance_file).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise UsageError(
                f"--guidance-file {args.guidance_file}: cannot read it ({exc})"
            ) from exc
    if args.anchor and not guidance:
        raise UsageError("replay --anchor needs --guidance TEXT or --guidance-file FILE: the "
                         "guidance is what the anchor's request gets before going live")
    if guidance and not args.anchor:
        raise UsageError("replay --guidance needs --anchor EVENT_ID: where to add it")
    return guidance


# -- inspect -------------------------------------------------------------------------------------
def cmd_show(args: argparse.Namespace) -> int:
    from rich.console import Console

    from symtrace.bundle import load_bundle
    from symtrace.bundle.inspect import show_json, show_table

    bundle = load_bundle(args.bundle)
    if args.graph:
        from symtrace.viewer.graph_svg import render_svg

        Path(args.graph).write_text(render_svg(bundle))
        _err(f"symtrace: wrote event graph picture {args.graph}")
    if args.json:
        sys.stdout.buffer.write(
            orjson.dumps(show_json(bundle), option=orjson.OPT_SORT_KEYS | orjson.OPT_INDENT_2)
            + b"\n"
        )
    else:
        show_table(bundle, Console(width=args.width) if args.width else Console())
    return 0


def cmd_verify(args: argparse.Namespace) -> int:
    from symtrace.bundle import verify_bundle

    bundle = verify_bundle(args.bundle)
    outcome = bundle.manifest.get("outcome") or {}
    state = "complete" if bundle.complete else f"INCOMPLETE ({outcome.get('status', 'unsealed')})"
    seal = f"sealed, root {bundle.root_digest}" if bundle.sealed else "UNSEALED"
    print(
        f"ok: {bundle.path} format v{bundle.manifest['format_version']}, {state}, {seal}, "
        f"{len(bundle.events)} events, every digest verified"
    )
    for warning in bundle.warnings:
        print(f"warning: {warning}")
    return 0


def cmd_diff(args: argparse.Namespace) -> int:
    from symtrace.bundle import load_bundle
    from symtrace.bundle.inspect import diff_bundles, render_diff

    a, b = load_bundle(args.a), load_bundle(args.b)
    result = diff_bundles(a, b)
    if args.json:
        print(orjson.dumps(result.to_json(), option=orjson.OPT_SORT_KEYS).decode())
    else:
        print(render_diff(result, a, b, term.width()))
    return 0 if result.identical else 1


def cmd_adapters(args: argparse.Namespace) -> int:
    from symtrace.frameworks.registry import load, registered

    rows = []
    for name in registered():
        adapter = load(name)
        state = "available" if adapter.is_available() else "framework not installed"
        rows.append((name, state, adapter.requires))
    # the requirement last: it is the long column, and may run past a narrow terminal
    width = max((len(name) for name, _, _ in rows), default=0) + 2
    for name, state, requires in rows:
        print(f"{name:{width}}{state:25}{requires}")
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    from symtrace.cli.demo import run_demo

    return run_demo(Path(args.workdir), keep=args.keep)


# -- parser ------------------------------------------------------------------------------------
# Pre-formatted (RawDescriptionHelpFormatter) in lines that fit 80 columns.
DESCRIPTION = """\
Record an LLM multi-agent run, replay it fail-closed, diagnose it and repair it
from the step where it went wrong. The program to run goes after --:

  symtrace record -o runs/r1 -- python app.py ARGS
  symtrace replay runs/r1
  symtrace diagnose runs/r1"""
EXIT_CODES = """\
exit codes:
  the program's   record or replay succeeded: the program's own code
  2               usage error
  90              replay diverged, or could not be verified
  91              bad bundle: missing, corrupt, truncated, tampered, wrong version
  92              bad anchor, or nothing to repair (repair)
  93              output exists (use --force) or is not writable
  94              adapter or instrumentation problem
  95              a secret would have been written; nothing was
  96              export: the OTLP collector failed"""
def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="symtrace",
        description=DESCRIPTION,
        epilog=EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(
        dest="subcommand", required=True, metavar="COMMAND", title="commands"
    )

    rec = sub.add_parser(
        "record", help="run a program and record its boundary calls",
        epilog="The program goes after --: symtrace record -o B -- python app.py ARGS",
    )
    rec.add_argument("-o", "--out", required=True, help="bundle directory to create")
    rec.add_argument("--task", help="the task T (text)")
    rec.add_argument("--task-file", help="the task T as a JSON file")
    rec.add_argument("--state-file", help="represented initial state s0 (JSON file)")
    rec.add_argument("--config-file", help="extra runtime configuration c (JSON file)")
    rec.add_argument("--seed", type=int, help="seed for Python's random (default: fresh)")
    rec.add_argument(
        "--secret-env",
        action="append",
        default=[],
        metavar="NAME",
        help="environment variable whose value must be redacted (repeatable)",
    )
    rec.add_argument(
        "--adapter",
        action="append",
        default=[],
        metavar="NAME",
        help="arm exactly these adapters (default: every installed framework)",
    )
    rec.add_argument(
        "--env",
        action="append",
        default=[],
        metavar="NAME",
        help="also capture this environment variable for replay (repeatable)",
    )
    rec.add_argument("--force", action="store_true", help="overwrite an existing bundle")
    rec.add_argument("--quiet", action="store_true", help="do not echo the program's stdout")
    rec.set_defaults(func=cmd_record)

    rep = sub.add_parser(
        "replay", help="restart the recorded program and replay it",
        epilog="To run another command than the recorded one: symtrace replay B -- CMD ARGS",
    )
    rep.add_argument("bundle", help="the bundle directory to replay")
    rep.add_argument("--anchor", metavar="EVENT_ID",
                     help="replay up to this LLM call, add the guidance to it, go live from it")
    rep.add_argument("--guidance", metavar="TEXT", help="the repair guidance to add at --anchor")
    rep.add_argument("--guidance-file", metavar="FILE", help="read the guidance from FILE")
    rep.add_argument(
        "--placement",
        default="user",
        choices=("user", "system", "last"),
        help="where the guidance goes in the anchor's messages (default: a new user message)",
    )
    rep.add_argument("-o", "--out", help="child bundle directory (selective replay; default "
                     "BUNDLE-<anchor id>)")
    rep.add_argument("--report-json", metavar="FILE",
                     help="also write the replay or divergence report as JSON")
    rep.add_argument("--adapter", action="append", default=[], metavar="NAME",
                     help="arm exactly these adapters (default: the ones recorded)")
    rep.add_argument("--force", action="store_true", help="overwrite an existing child bundle")
    rep.add_argument("--set-env", action="append", default=[], metavar="NAME=VALUE",
                     help="override a recorded environment variable (repeatable)")
    rep.add_argument("--quiet", action="store_true", help="do not echo the program's stdout")
    rep.add_argument(
        "--allow-host", action="append", default=[], metavar="HOST[:PORT]",
        help="let the replayed program connect to this host (a local database, say); "
        "repeatable. Every other connection fails the replay (SYM-R106)")
    rep.add_argument(
        "--volatile-stdout", action="append", default=[], metavar="REGEX",
        help="leave stdout lines matching REGEX out of the outcome comparison; repeatable")
    rep.set_defaults(func=cmd_replay)

    show = sub.add_parser("show", help="print a bundle as a table (or JSON)")
    show.add_argument("bundle")
    show.add_argument("--json", action="store_true", help="machine-readable output")
    show.add_argument("--graph", metavar="FILE.svg", help="also draw the event graph")
    show.add_argument("--width", type=int, help="table width in columns")
    show.set_defaults(func=cmd_show)

    ver = sub.add_parser("verify", help="recompute every digest and check the format")
    ver.add_argument("bundle")
    ver.set_defaults(func=cmd_verify)

    dif = sub.add_parser("diff", help="first point where two bundles part")
    dif.add_argument("a")
    dif.add_argument("b")
    dif.add_argument("--json", action="store_true")
    dif.set_defaults(func=cmd_diff)

    ada = sub.add_parser("adapters", help="list framework adapters")
    ada.set_defaults(func=cmd_adapters)

    demo = sub.add_parser("demo", help="record, show, replay and repair the bundled example")
    demo.add_argument("--workdir", default="out/demo")
    demo.add_argument("--keep", action="store_true", help="keep bundles from an earlier run")
    demo.set_defaults(func=cmd_demo)

    _optional_parsers(sub)
    return parser


def _optional_parsers(sub: Any) -> None:
    """Subcommands of the other packages, one module each in symtrace.cli (shipped with the
    core: a failed import is a bug to see, not a subcommand to hide)."""
    from symtrace.cli import diagnose as diagnosis_cli
    from symtrace.cli import export as export_cli
    from symtrace.cli import local_llm as local_llm_cli
    from symtrace.cli import stub as stub_cli
    from symtrace.cli import view as viewer_cli

    stub_cli.add_parser(sub)
    local_llm_cli.add_parser(sub)
    diagnosis_cli.add_parsers(sub)
    export_cli.add_parser(sub)
    viewer_cli.add_parser(sub)


def _err(text: str) -> None:
    sys.stderr.write(text + "\n")
    sys.stderr.flush()


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    # Everything after the first "--" is the program to run, options included.
    command: list[str] = []
    if "--" in argv:
        split = argv.index("--")
        argv, command = argv[:split], argv[split + 1 :]
    args = parser.parse_args(argv)
    args.command = command
    if args.subcommand == "record" and not command:
        parser.error("record needs the program to run after --, e.g. -- python app.py")
    try:
        return int(args.func(args) or 0)
    except SymtraceError as exc:
        _err(f"symtrace: error: {exc}")
        return exc.exit_code
    except ValueError as exc:
        _err(f"symtrace: error: {exc}")
        return EXIT_USAGE
    except KeyboardInterrupt:
        _err("symtrace: interrupted (SIGINT)")
        return 130


if __name__ == "__main__":
    sys.exit(main())
