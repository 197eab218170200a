"""`symtrace` command line: a thin shell over the Python API.

Exit codes are listed in `EXIT_CODES` (printed by `symtrace --help`) and in the README.
Output fits the terminal and honours NO_COLOR (symtrace/cli/term.py).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from symtrace.cli import term
from symtrace.cli.commands import LAZY_COMMANDS
from symtrace.cli.run import add_placement_option, add_trust_options
from symtrace.errors import EXIT_USAGE, SymtraceError


def cmd_demo(args: argparse.Namespace) -> int:
    from symtrace.cli.demo import run_demo

    return run_demo(Path(args.workdir), keep=args.keep)


def _deferred(module: str, name: str) -> Callable[[argparse.Namespace], int]:
    """A subcommand's function, its module imported only when that subcommand is run."""

    def dispatch(args: argparse.Namespace) -> int:
        return int(getattr(importlib.import_module(module), name)(args) or 0)

    return dispatch


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
  0               success (show, verify, export, view, ...; diff: identical)
  1               diff: the two bundles differ
  the program's   record or replay succeeded: the program's own code
  2               usage error
  3               local-llm: extra or weights missing, or its server failed
  90              replay diverged, or could not be verified
  91              bad bundle: missing, corrupt, tampered, or of another version
  92              bad anchor, or nothing to repair (repair)
  93              output exists (--force replaces only a bundle) or not writable
  94              adapter or instrumentation problem
  95              a secret would have been written; nothing was
  96              export: the OTLP collector failed
  97              replay not run: the bundle's command is not approved (--trust)
  130 / 143       record or replay interrupted (SIGINT / SIGTERM)
  141             the reader of the output went away (a closed pipe)"""
def build_parser(dispatched: str | None = None) -> argparse.ArgumentParser:
    """The parser with every subcommand's arguments (None), or only *dispatched*'s ("" for
    none: `symtrace --help` lists the subcommands without importing their modules)."""
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
        description="Run the program after -- with symtrace's bootstrap on its path and "
        "record every LLM and tool call into a bundle directory (-o). Exits with the "
        "program's own exit code.",
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
    rec.set_defaults(func=_deferred("symtrace.cli.run", "cmd_record"))

    rep = sub.add_parser(
        "replay", help="restart the recorded program and replay it",
        description="Restart the recorded program and serve every LLM and tool call from "
        "the bundle: no call is sent live, and the first request that differs stops the "
        "replay with a divergence report (exit 90). With --anchor and --guidance, replay up "
        "to that LLM call, add the guidance to it and go live from there, writing a child "
        "bundle (-o).",
        epilog="To run another command than the recorded one: symtrace replay B -- CMD ARGS",
    )
    rep.add_argument("bundle", help="the bundle directory to replay")
    rep.add_argument("--anchor", metavar="EVENT_ID",
                     help="replay up to this LLM call, add the guidance to it, go live from it")
    rep.add_argument("--guidance", metavar="TEXT", help="the repair guidance to add at --anchor")
    rep.add_argument("--guidance-file", metavar="FILE", help="read the guidance from FILE")
    add_placement_option(rep, "the anchor's messages")
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
        "--cwd", metavar="DIR",
        help="run the program in DIR (default: the recorded working directory if it exists "
        "here, else the current one)")
    rep.add_argument(
        "--volatile-stdout", action="append", default=[], metavar="REGEX",
        help="leave stdout lines matching REGEX out of the outcome comparison; repeatable")
    rep.add_argument(
        "--order-timeout", metavar="SECONDS",
        help="how long a call held for the recorded completion order waits without any "
        "boundary progress before the replay stops with SYM-R105 (default 20)")
    rep.add_argument(
        "--no-state-inference", action="store_true",
        help="hand the next result out only once the previous one's caller was seen done "
        "(its next boundary call, a declared consumption point, its task or thread ended), "
        "never judged from its stack, CPU clock or a quiescent loop")
    add_trust_options(rep)
    rep.set_defaults(func=_deferred("symtrace.cli.run", "cmd_replay"))

    show = sub.add_parser(
        "show", help="print a bundle as a table (or JSON)",
        description="Print a bundle: a header (path, events digest, root digest, outcome) "
        "and one line per event, fitting the terminal. The events digest names the "
        "recorded trajectory; the root digest seals every file and is what verify checks.",
    )
    show.add_argument("bundle", help="the bundle directory")
    show.add_argument("--json", action="store_true", help="machine-readable output")
    show.add_argument("--graph", metavar="FILE.svg", help="also draw the event graph")
    show.add_argument("--width", type=int, help="table width in columns")
    show.set_defaults(func=_deferred("symtrace.cli.inspect", "cmd_show"))

    ver = sub.add_parser(
        "verify", help="recompute every digest and check the format",
        description="Load the bundle with every check: the root digest over the manifest "
        "and files, every blob and event hash, the events digest, the format version. "
        "Exits 0 when all hold, 91 naming the first field that differs.",
    )
    ver.add_argument("bundle", help="the bundle directory")
    ver.set_defaults(func=_deferred("symtrace.cli.inspect", "cmd_verify"))

    dif = sub.add_parser(
        "diff", help="first point where two bundles part",
        description="Align two trajectories by event identity (lane, turn, ordinal within "
        "the turn; tool results by their call, unattributed calls by request hash) and name "
        "the first event whose request, response or parents differ, or that only one has; "
        "for a selective replay's child that is its anchor. Equal events that only ran in "
        "another order (concurrent work) are listed, not reported as a divergence. Exit 0 "
        "when identical, 1 when they differ.")
    dif.add_argument("a", help="the first bundle directory")
    dif.add_argument("b", help="the second bundle directory")
    dif.add_argument("--json", action="store_true", help="machine-readable output")
    dif.set_defaults(func=_deferred("symtrace.cli.inspect", "cmd_diff"))

    ada = sub.add_parser(
        "adapters", help="list framework adapters",
        description="List the framework adapters, whether their framework is installed "
        "here, and the versions each supports.",
    )
    ada.set_defaults(func=_deferred("symtrace.cli.inspect", "cmd_adapters"))

    demo = sub.add_parser(
        "demo", help="record, show, replay and repair the bundled example",
        description="Start the stub endpoint, record examples/trip_planner.py, show it, "
        "rerun it live, replay it strictly (0 endpoint requests) and replay it from an "
        "anchor. Bundles and pictures go to --workdir.",
    )
    demo.add_argument("--workdir", default="out/demo",
                      help="where the bundles go (default out/demo)")
    demo.add_argument("--keep", action="store_true", help="keep bundles from an earlier run")
    demo.set_defaults(func=cmd_demo)

    _lazy_parsers(sub, dispatched)
    return parser


def _lazy_parsers(sub: Any, dispatched: str | None) -> None:
    """The subcommands in their own modules (symtrace.cli.commands): only the dispatched one's
    module is imported, to define its arguments; the others are listed by name and help.
    They ship with the core: a failed import is a bug to see, not a subcommand to hide."""
    defined: set[str] = set()
    for name, (module_name, help_text) in LAZY_COMMANDS.items():
        if name in defined:
            continue
        if dispatched is None or LAZY_COMMANDS.get(dispatched, ("",))[0] == module_name:
            module = importlib.import_module(module_name)
            add = getattr(module, "add_parsers", None) or module.add_parser
            add(sub)
            defined.update(n for n, (m, _) in LAZY_COMMANDS.items() if m == module_name)
        else:
            sub.add_parser(name, help=help_text, add_help=False)


def _subcommand(argv: Sequence[str]) -> str | None:
    # the top-level parser takes no option but -h, so the first word is the subcommand
    return next((word for word in argv if not word.startswith("-")), None)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    # Everything after the first "--" is the program to run, options included.
    command: list[str] = []
    if "--" in argv:
        split = argv.index("--")
        argv, command = argv[:split], argv[split + 1 :]
    parser = build_parser(_subcommand(argv) or "")
    args = parser.parse_args(argv)
    args.command = command
    if args.subcommand == "record" and not command:
        parser.error("record needs the program to run after --, e.g. -- python app.py")
    try:
        return int(args.func(args) or 0)
    except SymtraceError as exc:
        term.err(f"symtrace: error: {exc}")
        return exc.exit_code
    except ValueError as exc:
        term.err(f"symtrace: error: {exc}")
        return EXIT_USAGE
    except KeyboardInterrupt:
        term.err("symtrace: interrupted (SIGINT)")
        return 130
    except BrokenPipeError:
        # `symtrace show B | head`: the reader left; no traceback, and none at exit either
        # (stdout is pointed at /dev/null so the interpreter's final flush cannot fail again)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141  # 128 + SIGPIPE, as a shell reports a command killed by it


if __name__ == "__main__":
    sys.exit(main())
