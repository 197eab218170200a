"""Running a program under symtrace in a child process: `symtrace record/replay -- CMD`.

The parent prepares the bundle, starts the program with the bootstrap on its PYTHONPATH
(spawn.py), tees its standard output (kept in the bundle; the final_result node holds its
tail), waits, and finalizes from what the child handed back (protocol.py). Exit codes: the
program's own on success; the `EXIT_*` codes of symtrace.errors for symtrace's own failures
(divergence = 90).

This module is the replay run and the public entry point of process mode; the record run is
record_run.py, what a replay amounts to (outcome verification, the report) verdict.py.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import orjson

from symtrace.boundaries.egress import HostPort
from symtrace.bundle.manifest import child_manifest
from symtrace.bundle.reader import Bundle, load_bundle
from symtrace.bundle.writer import BundleWriter
from symtrace.errors import (
    EXIT_DIVERGED,
    BundleExistsError,
    BundleWriteError,
    SymtraceError,
    UsageError,
)
from symtrace.frameworks.registry import resolve as resolve_adapters
from symtrace.model.divergence import DivergenceReport
from symtrace.model.intervention import validate_placement
from symtrace.model.redaction import REDACTED, SECRET_ENV_NAME, Redactor
from symtrace.model.runtime_info import version_warnings
from symtrace.process.protocol import Diverged, Launch, Mode, Replayed
from symtrace.process.record_run import RecordOutcome, captured_env, record_command
from symtrace.process.spawn import BOOTSTRAP_DIR, PACKAGE_ROOT, run_instrumented
from symtrace.process.verdict import ReplayStatus, replay_report, verify_outcome
from symtrace.record.outcome import complete_bundle
from symtrace.replay.anchors import ResolvedAnchor, resolve_anchor
from symtrace.replay.outcome_check import compile_volatile

PLACEHOLDER_SECRET = "symtrace-redacted"


@dataclass(frozen=True)
class ReplayOutcome:
    exit_code: int
    program_exit_code: int | None
    recorded_exit_code: int | None
    diverged: bool
    report: DivergenceReport | None
    report_json: dict[str, Any] | None
    child_bundle: Path | None
    resolved_anchor: str | None
    anchor_note: str | None
    stdout: bytes
    stderr_left_out: str = ""  # after the divergence, before the last traceback (held_stderr)


def replay_bundle(
    bundle_path: str | os.PathLike[str],
    *,
    anchor: str | None = None,
    guidance: str | None = None,
    placement: str = "user",
    out: str | os.PathLike[str] | None = None,
    command: Sequence[str] | None = None,
    report_json: str | os.PathLike[str] | None = None,
    quiet: bool = False,
    force: bool = False,
    adapters: Sequence[str] | None = None,
    set_env: dict[str, str] | None = None,
    allow_hosts: Sequence[str] = (),
    volatile_stdout: Sequence[str] = (),
    cwd: str | os.PathLike[str] | None = None,
    hold_tools: bool = False,
) -> ReplayOutcome:
    """Restart the recorded program and replay it (strict, or selective with *anchor*).

    The program restarts with the recorded argv, cwd and captured environment subset;
    *command* replaces the argv, *set_env* overrides variables (e.g. the endpoint a live
    suffix should use). No network connection leaves the replayed program except to
    *allow_hosts*. A strict replay that matched every call must also end as the recording
    did (exit code, final result, stdout modulo *volatile_stdout* lines), or it diverges.
    The program runs in *cwd*; by default in the recorded working directory when it exists
    on this machine, else in the current one (a bundle replayed from another checkout wants
    *cwd*: a recorded directory that exists here may hold other files).
    *hold_tools*: in the live suffix, a tool call identical to a recorded one gets the
    recorded outcome instead of running (replay/held_tools.py).
    """
    if cwd is not None and not Path(cwd).is_dir():
        raise UsageError(f"--cwd {cwd}: not a directory")
    allowed = [str(HostPort.parse(host)) for host in allow_hosts]  # bad input fails first
    volatile = compile_volatile(volatile_stdout)
    bundle = load_bundle(bundle_path)
    validate_placement(placement)
    resolved = resolve_anchor(bundle, anchor) if anchor else None
    if anchor and out is None:
        out = f"{Path(bundle_path).as_posix().rstrip('/')}-{resolved.event_id}"  # type: ignore[union-attr]
    if out is not None and Path(out, "manifest.json").exists() and not force:
        raise BundleExistsError(f"{out} already holds a bundle; choose another path or --force")
    if report_json is not None:
        _check_writable(Path(report_json))
    recorded_cmd = bundle.config.get("command") or {}
    argv = list(command) if command else list(recorded_cmd.get("argv") or [])
    if not argv:
        raise SymtraceError(
            f"{bundle_path} was recorded in-process (no command); give the command after --"
        )
    run_in = str(cwd) if cwd is not None else recorded_cmd.get("cwd") or os.getcwd()
    if not Path(run_in).is_dir():
        run_in = os.getcwd()
    names = adapters if adapters is not None else bundle.config.get("adapters", [])
    armed = resolve_adapters(list(names))
    secret_names = list(recorded_cmd.get("secret_env") or [])
    redactor = Redactor.from_environment(names=secret_names)
    argv = redactor.restore(argv)  # [REDACTED:NAME] in the recorded argv: this process's NAME
    env = {**_replay_env(bundle, recorded_cmd.get("env") or {}), **(set_env or {})}
    staged: Path | None = None
    if resolved is not None and out is not None:
        manifest = child_manifest(bundle, [a.name for a in armed])
        writer = BundleWriter(out, manifest, redactor=redactor, overwrite=force, staging=True)
        writer.open()
        writer.close()
        staged = writer._dir
    launch = Launch(
        mode=Mode.REPLAY,
        bundle=str(Path(bundle_path).resolve()),
        adapters=tuple(a.name for a in armed),
        secret_envs=tuple(secret_names),
        anchor=resolved.event_id if resolved else None,
        guidance=guidance or None,
        placement=placement,
        allow_hosts=tuple(allowed),
        child_bundle=str(staged.resolve()) if staged is not None else None,
        hold_tools=hold_tools and resolved is not None,
    )
    try:
        ended, hand_back = run_instrumented(argv, run_in, env, launch, quiet=quiet)
    except BaseException:
        if staged is not None:
            shutil.rmtree(staged, ignore_errors=True)
        raise
    code, stdout = ended.code, ended.stdout
    recorded_final = bundle.final_result()
    recorded_code = (recorded_final.response or {}).get("exit_code") if recorded_final else None
    if isinstance(hand_back, Replayed) and resolved is None and bundle.complete:
        # compared as recorded: with the same redaction (a restored secret prints again)
        mismatch = verify_outcome(bundle, hand_back, redactor.scrub(hand_back.final_value),
                                  code, redactor.scrub_bytes(stdout), volatile)
        hand_back = mismatch or hand_back
    recorded_argv = tuple(recorded_cmd.get("argv") or ())
    if isinstance(hand_back, Diverged) and command and tuple(argv) != recorded_argv:
        # the likely cause: the report says it first
        hand_back = replace(hand_back, report=replace(
            hand_back.report, recorded_command=recorded_argv, replayed_command=tuple(argv)))
    verdict = replay_report(bundle, hand_back, code, ended.received)
    diverged = verdict["status"] != ReplayStatus.REPLAYED
    # an interrupted replay keeps the divergence it had met; an unfinished recording's
    # replay reports only SYM-R108
    keep_report = bundle.complete or ended.received is not None
    report = hand_back.report if isinstance(hand_back, Diverged) and keep_report else None
    child_bundle = None
    if diverged:
        if staged is not None:
            shutil.rmtree(staged, ignore_errors=True)
    elif staged is not None and resolved is not None and isinstance(hand_back, Replayed):
        child_bundle = _complete_child(
            staged, Path(out), hand_back, resolved, code, stdout, redactor  # type: ignore[arg-type]
        )
    if ended.stderr_left_out:
        verdict["stderr_left_out"] = ended.stderr_left_out
    if report_json is not None:
        Path(report_json).write_bytes(
            orjson.dumps(verdict, option=orjson.OPT_SORT_KEYS | orjson.OPT_INDENT_2)
        )
    exit_code = ended.exit_code if ended.received else EXIT_DIVERGED if diverged else code
    return ReplayOutcome(
        exit_code=exit_code,
        program_exit_code=code,
        recorded_exit_code=recorded_code,
        diverged=diverged,
        report=report,
        report_json=verdict,
        child_bundle=child_bundle,
        resolved_anchor=resolved.event_id if resolved else None,
        anchor_note=resolved.note if resolved else None,
        stdout=stdout,
        stderr_left_out=ended.stderr_left_out,
    )


def _complete_child(
    staged: Path,
    final: Path,
    hand_back: Replayed,
    resolved: ResolvedAnchor,
    code: int,
    stdout: bytes,
    redactor: Redactor,
) -> Path:
    """Append the final result to the staged child bundle and move it into place."""
    writer = BundleWriter.reopen(staged, redactor=redactor)
    lineage = {**(hand_back.lineage or {}), "requested_anchor": resolved.requested,
               "anchor_note": resolved.note}
    complete_bundle(
        writer,
        exit_code=code,
        value=redactor.scrub(hand_back.final_value),
        stdout=stdout,
        status="ok" if code == 0 else "error",
        lineage=lineage,
    )
    if final.exists():
        shutil.rmtree(final)
    os.replace(staged, final)
    return final


# -- helpers ---------------------------------------------------------------------------------
def _replay_env(bundle: Bundle, recorded: dict[str, str]) -> dict[str, str]:
    env = dict(os.environ)
    for key, value in recorded.items():
        if value == REDACTED or SECRET_ENV_NAME.search(key):
            env.setdefault(key, PLACEHOLDER_SECRET)  # a live suffix needs the real key
        elif "[REDACTED" in value and key in env:
            pass  # e.g. a base URL with ?key=…: this process's own value works live
        else:
            env[key] = value
    hash_seed = bundle.initial_state.get("hash_seed")
    if hash_seed:
        env["PYTHONHASHSEED"] = str(hash_seed)
    return env


def _check_writable(path: Path) -> None:
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir() or not os.access(parent, os.W_OK):
        raise BundleWriteError(f"cannot write {path}: {parent} is not a writable directory")


__all__ = [
    "BOOTSTRAP_DIR",
    "PACKAGE_ROOT",
    "RecordOutcome",
    "ReplayOutcome",
    "captured_env",
    "record_command",
    "replay_bundle",
    "version_warnings",
]
