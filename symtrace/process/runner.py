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
import sys
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import orjson

from symtrace.boundaries.egress import HostPort
from symtrace.bundle.manifest import child_manifest
from symtrace.bundle.output import OutputSlot, check_target
from symtrace.bundle.reader import Bundle, load_bundle
from symtrace.bundle.writer import BundleWriter
from symtrace.errors import (
    EXIT_DIVERGED,
    BundleFormatError,
    BundleWriteError,
    SymtraceError,
    UsageError,
)
from symtrace.frameworks.refusals import refusal_error
from symtrace.frameworks.registry import resolve as resolve_adapters
from symtrace.model.divergence import DivergenceReport
from symtrace.model.intervention import validate_placement
from symtrace.model.redaction import REDACTED, SECRET_ENV_NAME, Redactor
from symtrace.model.runtime_info import version_warnings
from symtrace.process.consent import ENDPOINT_ENV, LaunchPlan, bundle_env, require_consent
from symtrace.process.isolation import choose_isolation
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
    network_isolated: bool = False  # the program ran in a private network namespace


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
    trust: bool = False,
    endpoint: str | None = None,
) -> ReplayOutcome:
    """Restart the recorded program and replay it (strict, or selective with *anchor*).

    The program restarts with the recorded argv, cwd and the allow-listed part of the
    recorded environment (symtrace.process.consent: never loader paths, proxies, endpoints or
    files inside the bundle); *command* replaces the argv, *set_env* overrides variables. A
    command this user neither recorded nor approved on this machine runs only with *trust*
    or a confirmation at a terminal (ReplayNotApproved, exit 97, otherwise). Live calls (a
    selective replay's suffix) go to the endpoint of this process's environment, or
    *endpoint* (it sets OPENAI_BASE_URL), never to one the bundle names.

    No network connection leaves the replayed program except to *allow_hosts*: a strict
    replay runs in a private network namespace where the OS allows it (isolation.py), and
    under the Python-level guard always. A strict replay that matched every call must also
    end as the recording did (exit code, final result, stdout modulo *volatile_stdout*
    lines), or it diverges. The program runs in *cwd*; by default the recorded command in the
    recorded working directory when it exists on this machine, *command* (or a recorded
    command whose directory is not here) in the current one.
    *hold_tools*: in the live suffix, a tool call identical to a recorded one gets the
    recorded outcome instead of running (replay/held_tools.py).
    """
    if cwd is not None and not Path(cwd).is_dir():
        raise UsageError(f"--cwd {cwd}: not a directory")
    allowed = [str(HostPort.parse(host)) for host in allow_hosts]  # bad input fails first
    volatile = compile_volatile(volatile_stdout)
    if endpoint is not None and not endpoint.startswith(("http://", "https://")):
        raise UsageError(f"--endpoint {endpoint!r}: give an http:// or https:// URL")
    bundle = load_bundle(bundle_path)
    validate_placement(placement)
    resolved = resolve_anchor(bundle, anchor) if anchor else None
    if anchor and out is None:
        out = f"{Path(bundle_path).as_posix().rstrip('/')}-{resolved.event_id}"  # type: ignore[union-attr]
    if resolved is not None and out is not None:
        check_target(out, force)  # before anything runs (claimed below, once consented)
    if report_json is not None:
        _check_writable(Path(report_json))
    recorded_cmd = _recorded_command(bundle)
    recorded_argv = list(recorded_cmd.get("argv") or [])
    argv = list(command) if command else recorded_argv
    if not argv:
        raise SymtraceError(
            f"{bundle_path} was recorded in-process (no command); give the command after --"
        )
    # your command (after --) runs in your directory; the bundle's where it was recorded
    recorded_cwd = None if command else recorded_cmd.get("cwd")
    run_in = str(cwd) if cwd is not None else recorded_cwd or os.getcwd()
    if not Path(run_in).is_dir():
        run_in = os.getcwd()
    run_in = os.path.abspath(run_in)
    applied = bundle_env(recorded_cmd.get("env"), kept=recorded_cmd.get("env_keep") or (),
                         bundle_dir=Path(bundle_path))
    plan = LaunchPlan(argv, run_in, applied, argv_from_user=bool(command),
                      cwd_from_user=cwd is not None or _same_dir(run_in, os.getcwd()))
    require_consent(plan, trust=trust)
    names = adapters if adapters is not None else bundle.config.get("adapters", [])
    armed = resolve_adapters(list(names))
    secret_names = list(recorded_cmd.get("secret_env") or [])
    redactor = Redactor.from_environment(names=secret_names)
    argv = redactor.restore(argv)  # [REDACTED:NAME] in the recorded argv: this process's NAME
    env = _replay_env(bundle, applied.for_run(live=resolved is not None))
    if endpoint is not None:
        env[ENDPOINT_ENV] = endpoint
    env.update(set_env or {})
    slot: OutputSlot | None = None
    if resolved is not None and out is not None:
        slot = OutputSlot(out, force=force).claim()
        manifest = child_manifest(bundle, [a.name for a in armed])
        try:
            BundleWriter(slot.staged, manifest, redactor=redactor).open().close()
        except BaseException:
            slot.discard()
            raise
    isolation = choose_isolation(strict=resolved is None, allow_hosts=allowed)
    if isolation.note:
        term_note(isolation.note)
    launch = Launch(
        mode=Mode.REPLAY,
        bundle=str(Path(bundle_path).resolve()),
        adapters=tuple(a.name for a in armed),
        secret_envs=tuple(secret_names),
        anchor=resolved.event_id if resolved else None,
        guidance=guidance or None,
        placement=placement,
        allow_hosts=tuple(allowed),
        child_bundle=str(slot.staged.resolve()) if slot is not None else None,
        hold_tools=hold_tools and resolved is not None,
    )
    try:
        ended, hand_back = run_instrumented(argv, run_in, env, launch, quiet=quiet,
                                            isolate=isolation.isolate)
    except BaseException:
        if slot is not None:
            slot.discard()
        raise
    _raise_refusal(hand_back, slot)
    code, stdout = ended.code, ended.stdout
    recorded_final = bundle.final_result()
    recorded_code = (recorded_final.response or {}).get("exit_code") if recorded_final else None
    if isinstance(hand_back, Replayed) and resolved is None and bundle.complete:
        # compared as recorded: with the same redaction (a restored secret prints again)
        mismatch = verify_outcome(bundle, hand_back, redactor.scrub(hand_back.final_value),
                                  code, redactor.scrub_bytes(stdout), volatile)
        hand_back = mismatch or hand_back
    if isinstance(hand_back, Diverged) and command and argv != recorded_argv:
        # the likely cause: the report says it first
        hand_back = replace(hand_back, report=replace(
            hand_back.report, recorded_command=tuple(recorded_argv), replayed_command=tuple(argv)))
    verdict = replay_report(bundle, hand_back, code, ended.received)
    diverged = verdict["status"] != ReplayStatus.REPLAYED
    # an interrupted replay keeps the divergence it had met; an unfinished recording's
    # replay reports only SYM-R108
    keep_report = bundle.complete or ended.received is not None
    report = hand_back.report if isinstance(hand_back, Diverged) and keep_report else None
    child_bundle = None
    if ended.stderr_left_out:
        verdict["stderr_left_out"] = ended.stderr_left_out
    if slot is not None:
        if not diverged and resolved is not None and isinstance(hand_back, Replayed):
            child_bundle = _complete_child(slot, hand_back, resolved, code, stdout, redactor)
        else:
            slot.discard()
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
        network_isolated=isolation.isolate,
    )


def _raise_refusal(hand_back: object, slot: OutputSlot | None) -> None:
    """An adapter refused a construct in the replayed program (the program may have caught
    it): the replay fails with the refusal (exit 94), not as a divergence, and keeps no child."""
    refused = getattr(hand_back, "refused", None)
    if refused:
        if slot is not None:
            slot.discard()
        raise refusal_error(refused)


def _complete_child(
    slot: OutputSlot,
    hand_back: Replayed,
    resolved: ResolvedAnchor,
    code: int,
    stdout: bytes,
    redactor: Redactor,
) -> Path:
    """Append the final result to the staged child bundle and move it into place."""
    try:
        writer = BundleWriter.reopen(slot.staged, redactor=redactor)
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
    except BaseException:
        slot.discard()
        raise
    return slot.commit()


# -- helpers ---------------------------------------------------------------------------------
def _recorded_command(bundle: Bundle) -> dict[str, Any]:
    """The manifest's `config.command`, its fields of the types a replay uses (a crafted
    bundle's argv of another type is refused, never coerced into a command)."""
    command = bundle.config.get("command") or {}
    if not isinstance(command, dict):
        raise BundleFormatError("manifest.config.command is not an object")
    argv = command.get("argv")
    if argv is not None and not (isinstance(argv, list) and all(isinstance(a, str) for a in argv)):
        raise BundleFormatError("manifest.config.command.argv is not a list of strings")
    for key in ("cwd",):
        if command.get(key) is not None and not isinstance(command[key], str):
            raise BundleFormatError(f"manifest.config.command.{key} is not a string")
    for key in ("secret_env", "env_keep"):
        value = command.get(key)
        if value is not None and not (isinstance(value, list)
                                      and all(isinstance(a, str) for a in value)):
            raise BundleFormatError(f"manifest.config.command.{key} is not a list of strings")
    return command


def _replay_env(bundle: Bundle, applied: dict[str, str]) -> dict[str, str]:
    """This process's environment with the bundle's allow-listed variables applied (a
    redacted secret keeps this process's value, or gets a placeholder)."""
    env = dict(os.environ)
    for key, value in applied.items():
        if value == REDACTED or SECRET_ENV_NAME.search(key):
            env.setdefault(key, PLACEHOLDER_SECRET)  # a live suffix needs the real key
        elif "[REDACTED" in value and key in env:
            pass  # this process's own value works live
        else:
            env[key] = value
    hash_seed = bundle.initial_state.get("hash_seed")
    if hash_seed:
        if not str(hash_seed).isdigit():
            raise BundleFormatError(f"initial_state.hash_seed {hash_seed!r} is not a number")
        env["PYTHONHASHSEED"] = str(hash_seed)
    return env


def _same_dir(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def term_note(text: str) -> None:
    sys.stderr.write(f"symtrace: note: {text}\n")
    sys.stderr.flush()


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
