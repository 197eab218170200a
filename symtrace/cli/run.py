"""`symtrace record -- CMD` and `symtrace replay BUNDLE [-- CMD]`: options to the process
runner (symtrace.process.runner) and what the user reads when it ends."""

from __future__ import annotations

import argparse
import sys
import textwrap
from pathlib import Path
from typing import Any

import orjson

from symtrace.cli import term
from symtrace.errors import SymtraceError, UsageError
from symtrace.model.intervention import DEFAULT_PLACEMENT, PLACEMENTS


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
    from symtrace.options import RecordOptions
    from symtrace.process.record_run import record_command

    options = RecordOptions.build(
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
    outcome = record_command(args.out, _command(args.command), options)
    if outcome.complete:
        term.err(
            f"symtrace: recorded {outcome.events} events into {outcome.bundle} "
            f"(program exit code {outcome.exit_code})"
        )
    else:
        stopped = {
            "interrupted": f"interrupted ({outcome.signal})",
            "terminated": f"terminated ({outcome.signal})",
            "killed": f"the program was killed by {outcome.signal}",
        }.get(outcome.status, "the program ended without finishing its recording")
        term.err(
            f"symtrace: {stopped}: {outcome.events} events recorded into {outcome.bundle}, "
            f"which is marked incomplete (exit code {outcome.exit_code})"
        )
    for egress in outcome.unrecorded_egress:
        term.err(_egress_note(egress))
    return outcome.exit_code


def _egress_note(egress: dict[str, Any]) -> str:
    """One line per unrecorded egress (symtrace.boundaries.egress kinds)."""
    kind, count, library = egress.get("kind", "connect"), egress["count"], egress["library"]
    where = f"{egress['host']}:{egress['port']}"
    if kind == "dns":
        return (f"symtrace: note: unrecorded DNS lookup of {egress['host']} ({count}x, by "
                f"{library}): a strict replay runs without network where the OS allows it")
    if kind == "subprocess":
        return (f"symtrace: note: subprocess {egress['host']} started ({count}x, by {library}): "
                "its network use is not recorded; a strict replay runs it without network "
                "where the OS allows it")
    how = {"raw_socket": " through the raw _socket module",
           "sendmsg": " with sendmsg"}.get(kind, "")
    return (f"symtrace: note: unrecorded egress to {where}{how} ({count}x, by {library}): "
            "outside every HTTP seam, so a strict replay will refuse it unless allowed with "
            "--allow-host")


# -- replay ------------------------------------------------------------------------------------
def cmd_replay(args: argparse.Namespace) -> int:
    from symtrace.options import ReplayOptions
    from symtrace.process.runner import replay_bundle

    guidance = _guidance(args)
    options = ReplayOptions.build(
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
        cwd=args.cwd,
        trust=args.trust,
        endpoint=args.endpoint,
        order_timeout=args.order_timeout,
        infer_from_state=False if args.no_state_inference else None,
    )
    outcome = replay_bundle(args.bundle, options)
    if outcome.anchor_note:
        term.err(f"symtrace: {outcome.anchor_note}")
    if outcome.diverged:  # the divergence text is imported only for a diverged run (fast start)
        from symtrace.cli.replay_output import print_divergence

        print_divergence(outcome)
        return outcome.exit_code
    if outcome.child_bundle is not None:
        from symtrace.cli.replay_output import anchor_attempts_text

        lineage = (outcome.report_json or {}).get("lineage") or {}
        term.err(
            f"symtrace: selective replay wrote {outcome.child_bundle}: "
            f"{len(lineage.get('replayed_events', []))} events replayed, "
            f"{len(lineage.get('live_events', []))} live from {outcome.resolved_anchor}; "
            f"{anchor_attempts_text(lineage)}"
        )
    else:
        served = int((outcome.report_json or {}).get("served") or 0)
        live = int((outcome.report_json or {}).get("live") or 0)
        calls = "call" if served == 1 else "calls"
        term.err("symtrace: replay matched every recorded boundary call")
        term.err("\n".join(textwrap.wrap(
            f"served {served} boundary {calls} from the bundle, {live} live requests; exit "
            "code, final result and stdout match the recording",
            term.width(sys.stderr), initial_indent="  ", subsequent_indent="  ",
        )))
    if outcome.recorded_exit_code is not None and outcome.recorded_exit_code != outcome.exit_code:
        term.err(
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


def add_placement_option(parser: argparse.ArgumentParser, where: str) -> None:
    """--placement, shared by `replay --anchor` and `repair`: where Δ goes in *where*."""
    parser.add_argument(
        "--placement",
        default=DEFAULT_PLACEMENT,
        choices=PLACEMENTS,
        help=f"where the guidance goes in {where} (default: a new user message)",
    )


def add_trust_options(parser: argparse.ArgumentParser) -> None:
    """--trust and --endpoint, shared by `replay` and `repair` (docs/security.md)."""
    parser.add_argument(
        "--trust", action="store_true",
        help="run the bundle's command without asking (scripts, CI): without it a command you "
        "did not record or approve on this machine is shown and confirmed at a terminal, and "
        "refused elsewhere (exit 97)")
    parser.add_argument(
        "--endpoint", metavar="URL",
        help="where live calls go (sets OPENAI_BASE_URL; default: your environment's). A URL "
        "named by the bundle is never used")
