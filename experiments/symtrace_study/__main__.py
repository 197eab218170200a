"""`python -m symtrace_study run CONFIG [--workers N] [--backend local|ray] [--resume]`,
`python -m symtrace_study report OUTDIR` and `python -m symtrace_study mechanism-audit OUTDIR`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from symtrace.errors import SymtraceError
from symtrace_study.pool import EXECUTORS
from symtrace_study.study import terminal_console


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m symtrace_study",
                                     description="repair-or-resample studies on the suite")
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="collect, replay/rerun (RQ1) and repair (RQ2/RQ3)")
    run.add_argument("config", type=Path, help="study config (.json or .toml)")
    run.add_argument("--workers", type=int, default=1, help="parallel workers (default 1)")
    run.add_argument("--backend", choices=EXECUTORS, default="warm",
                     help="where attempts run: warm (local workers forking each attempt from "
                     "a server that imported the framework once; default), local (a fresh "
                     "interpreter per attempt) or ray (Ray actors, e.g. on a cluster)")
    run.add_argument("--resume", action="store_true",
                     help="continue the study in the config's output directory")
    run.add_argument("--out", type=Path, help="override the config's output directory")
    run.add_argument("--no-report", action="store_true", help="skip writing the report")
    report = sub.add_parser("report", help="write report.md / report.html for a study")
    report.add_argument("outdir", type=Path)
    audit = sub.add_parser("mechanism-audit", help="how specific RQ1's mechanism test is: "
                           "match rates of each source's signature on its own case's failed "
                           "attempts vs on other tasks' (false positives)")
    audit.add_argument("outdir", type=Path)
    args = parser.parse_args(argv)
    console = terminal_console()
    try:
        if args.command == "run":
            return _run(args, console)
        if args.command == "mechanism-audit":
            from symtrace_study.mechanism_audit import audit as run_audit
            from symtrace_study.mechanism_audit import render

            console.print(render(run_audit(args.outdir)), highlight=False)
            return 0
        from symtrace_study.report import write_report

        paths = write_report(args.outdir)
        console.print(f"wrote {', '.join(str(p) for p in paths)}")
        return 0
    except SymtraceError as exc:
        console.print(f"[red]error:[/red] {exc}", highlight=False)
        return exc.exit_code
    finally:
        console.file.close()  # its own duplicate of fd 2 (`main` also runs in-process)


def _run(args: argparse.Namespace, console: Any) -> int:
    from symtrace_study.config import load_config
    from symtrace_study.errors import StudyConfigError, TooManyErrors
    from symtrace_study.interrupt import install
    from symtrace_study.study import Study

    if args.workers < 1:
        raise StudyConfigError("--workers must be at least 1")
    config = load_config(args.config, out=args.out)
    install()  # SIGINT/SIGTERM: StudyInterrupted, exit 130/143, no row for attempts in flight
    failure: TooManyErrors | None = None
    try:
        Study(config, console).run(workers=args.workers, backend=args.backend,
                                   resume=args.resume)
    except TooManyErrors as exc:
        failure = exc  # still write the report: it shows the errors apart
    if not args.no_report:
        from symtrace_study.report import write_report

        paths = write_report(config.out)
        console.print(f"report: {paths[0]}")
    if failure is not None:
        raise failure
    return 0


if __name__ == "__main__":
    sys.exit(main())
