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
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from symtrace.bundle.manifest import child_manifest
from symtrace.bundle.output import OutputSlot, check_target
from symtrace.bundle.reader import Bundle, load_bundle
from symtrace.errors import (
    EXIT_DIVERGED,
    BundleFormatError,
    BundleWriteError,
    SymtraceError,
)
from symtrace.frameworks.refusals import refusal_error
from symtrace.frameworks.registry import to_arm
from symtrace.model.redaction import REDACTED, SECRET_ENV_NAME, Redactor
from symtrace.model.runtime_info import version_warnings
from symtrace.options import ReplayOptions, given, in_child_process
from symtrace.process.consent import ENDPOINT_ENV, LaunchPlan, bundle_env, require_consent
from symtrace.process.isolation import choose_isolation
from symtrace.process.protocol import Diverged, HandBack, Launch, Mode, Replayed
from symtrace.process.record_run import RecordOutcome, captured_env, record_command
from symtrace.process.spawn import (
    BOOTSTRAP_DIR,
    PACKAGE_ROOT,
    declared_adapters,
    run_instrumented,
)
from symtrace.process.supervise import ChildExit
from symtrace.process.verdict import ReplayStatus, replay_report, verify_outcome

if TYPE_CHECKING:
    from symtrace.model.divergence import DivergenceReport
    from symtrace.replay.anchor_resolution import ResolvedAnchor

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
    options: ReplayOptions | None = None,
    **keywords: Any,
) -> ReplayOutcome:
    """Restart the recorded program and replay it (strict, or selective with an anchor), as
    *options* (ReplayOptions) say, or the same fields as keyword arguments.

    The program restarts with the recorded argv, cwd and the allow-listed part of the
    recorded environment (symtrace.process.consent: never loader paths, proxies, endpoints or
    files inside the bundle); `command` replaces the argv, `set_env` overrides variables. A
    command this user neither recorded nor approved on this machine runs only with `trust`
    or a confirmation at a terminal (ReplayNotApproved, exit 97, otherwise). Live calls (a
    selective replay's suffix) go to the endpoint of this process's environment, or
    `endpoint` (it sets OPENAI_BASE_URL), never to one the bundle names.

    No network connection leaves the replayed program except to `allow_hosts`: a strict
    replay runs in a private network namespace where the OS allows it (isolation.py), and
    under the Python-level guard always. A strict replay that matched every call must also
    end as the recording did (exit code, final result, stdout modulo `volatile_stdout`
    lines), or it diverges. The program runs in `cwd`; by default the recorded command in the
    recorded working directory when it exists on this machine, `command` (or a recorded
    command whose directory is not here) in the current one.
    `hold_tools`: in the live suffix, a tool call identical to a recorded one gets the
    recorded outcome instead of running (replay/held_tools.py). `order_timeout`: seconds a
    call held for the recorded completion order waits without boundary progress (SYM-R105).

    Four steps: prepare (everything checked, consent asked, the child bundle claimed), run
    (the instrumented program), verify (what the replay amounts to), finish (the child
    bundle completed or discarded, the report written).
    """
    options = given(ReplayOptions, options, keywords)
    in_child_process(options)
    prepared = _prepare(Path(bundle_path), options)
    try:
        ended, hand_back = run_instrumented(prepared.argv, prepared.cwd, prepared.env,
                                            prepared.launch, quiet=options.quiet,
                                            isolate=prepared.isolate)
    except BaseException:
        if prepared.slot is not None:
            prepared.slot.discard()
        raise
    _raise_refusal(hand_back, prepared.slot)
    verdict = _verify(prepared, ended, hand_back)
    return _finish(prepared, ended, verdict)


@dataclass(frozen=True)
class _Prepared:
    """A replay ready to run: checked, consented, its child bundle (if any) claimed."""

    path: Path
    options: ReplayOptions
    bundle: Bundle
    resolved: ResolvedAnchor | None
    argv: list[str]
    recorded_argv: list[str]
    cwd: str
    env: dict[str, str]
    redactor: Redactor
    slot: OutputSlot | None
    launch: Launch
    isolate: bool


@dataclass(frozen=True)
class _Verdict:
    hand_back: HandBack | None
    report: dict[str, Any]  # the replay report (docs/replay-semantics.md)
    diverged: bool


def _prepare(bundle_path: Path, options: ReplayOptions) -> _Prepared:
    """Everything that can fail before the program runs: the bundle read, the anchor
    resolved, the output paths checked, consent asked, the child bundle claimed."""
    bundle = load_bundle(bundle_path)
    resolved = None
    if options.anchor:  # the graph walk a selective replay needs (fast start: a strict one not)
        from symtrace.replay.anchor_resolution import resolve_anchor

        resolved = resolve_anchor(bundle, options.anchor)
    out = options.out
    if resolved is not None and out is None:
        out = Path(f"{bundle_path.as_posix().rstrip('/')}-{resolved.event_id}")
    if resolved is not None and out is not None:
        check_target(out, options.force)  # before anything runs (claimed below, once consented)
    if options.report_json is not None:
        _check_writable(options.report_json)
    recorded_cmd = _recorded_command(bundle)
    recorded_argv = list(recorded_cmd.get("argv") or [])
    argv = list(options.command) if options.command else recorded_argv
    if not argv:
        raise SymtraceError(
            f"{bundle_path} was recorded in-process (no command); give the command after --"
        )
    # your command (after --) runs in your directory; the bundle's where it was recorded
    recorded_cwd = None if options.command else recorded_cmd.get("cwd")
    run_in = str(options.cwd) if options.cwd is not None else recorded_cwd or os.getcwd()
    if not Path(run_in).is_dir():
        run_in = os.getcwd()
    run_in = os.path.abspath(run_in)
    applied = bundle_env(recorded_cmd.get("env"), kept=recorded_cmd.get("env_keep") or (),
                         bundle_dir=bundle_path)
    plan = LaunchPlan(argv, run_in, applied, argv_from_user=bool(options.command),
                      cwd_from_user=options.cwd is not None or _same_dir(run_in, os.getcwd()))
    require_consent(plan, trust=options.trust)
    names = options.adapters if options.adapters is not None else bundle.config.get(
        "adapters", [])
    armed = to_arm(list(names))
    secret_names = list(recorded_cmd.get("secret_env") or [])
    redactor = Redactor.from_environment(names=secret_names)
    argv = redactor.restore(argv)  # [REDACTED:NAME] in the recorded argv: this process's NAME
    env = _replay_env(bundle, applied.for_run(live=resolved is not None))
    if options.endpoint is not None:
        env[ENDPOINT_ENV] = options.endpoint
    env.update(dict(options.set_env))
    slot: OutputSlot | None = None
    if resolved is not None and out is not None:
        slot = OutputSlot(out, force=options.force).claim()
        manifest = child_manifest(bundle, [a.name for a in armed])
        from symtrace.bundle.writer import BundleWriter  # a selective replay's (fast start)

        try:
            BundleWriter(slot.staged, manifest, redactor=redactor).open().close()
        except BaseException:
            slot.discard()
            raise
    allowed = tuple(str(host) for host in options.allow_hosts)
    isolation = choose_isolation(strict=resolved is None, allow_hosts=list(allowed))
    if isolation.note:
        term_note(isolation.note)
    launch = Launch(
        mode=Mode.REPLAY,
        bundle=str(bundle_path.resolve()),
        adapters=tuple(a.name for a in armed),
        secret_envs=tuple(secret_names),
        anchor=resolved.event_id if resolved else None,
        guidance=options.guidance or None,
        placement=options.placement,
        allow_hosts=allowed,
        child_bundle=str(slot.staged.resolve()) if slot is not None else None,
        hold_tools=options.hold_tools and resolved is not None,
        order_timeout=options.scheduling.stall_timeout,
        infer_from_state=options.scheduling.infer_from_state,
        declared=declared_adapters(),
    )
    return _Prepared(bundle_path, options, bundle, resolved, argv, recorded_argv, run_in, env,
                     redactor, slot, launch, isolation.isolate)


def _verify(prepared: _Prepared, ended: ChildExit, hand_back: HandBack | None) -> _Verdict:
    """What the replay amounts to: a strict replay that matched every call must also end as
    the recording did (SYM-R107); the replay report."""
    bundle, redactor = prepared.bundle, prepared.redactor
    code, stdout = ended.code, ended.stdout
    if isinstance(hand_back, Replayed) and prepared.resolved is None and bundle.complete:
        # compared as recorded: with the same redaction (a restored secret prints again)
        mismatch = verify_outcome(bundle, hand_back, redactor.scrub(hand_back.final_value),
                                  code, redactor.scrub_bytes(stdout),
                                  prepared.options.volatile_stdout)
        hand_back = mismatch or hand_back
    if (isinstance(hand_back, Diverged) and prepared.options.command
            and prepared.argv != prepared.recorded_argv):
        # the likely cause: the report says it first
        hand_back = replace(hand_back, report=replace(
            hand_back.report, recorded_command=tuple(prepared.recorded_argv),
            replayed_command=tuple(prepared.argv)))
    report = replay_report(bundle, hand_back, code, ended.received)
    if ended.stderr_left_out:
        report["stderr_left_out"] = ended.stderr_left_out
    return _Verdict(hand_back, report, report["status"] != ReplayStatus.REPLAYED)


def _finish(prepared: _Prepared, ended: ChildExit, verdict: _Verdict) -> ReplayOutcome:
    """The child bundle completed (a selective replay that went through) or discarded; the
    report written; the outcome."""
    bundle, resolved, hand_back = prepared.bundle, prepared.resolved, verdict.hand_back
    code = ended.code
    child_bundle = None
    if prepared.slot is not None:
        if not verdict.diverged and resolved is not None and isinstance(hand_back, Replayed):
            child_bundle = _complete_child(prepared.slot, hand_back, resolved, code,
                                           ended.stdout, prepared.redactor)
        else:
            prepared.slot.discard()
    if prepared.options.report_json is not None:
        prepared.options.report_json.write_bytes(
            orjson.dumps(verdict.report, option=orjson.OPT_SORT_KEYS | orjson.OPT_INDENT_2)
        )
    recorded_final = bundle.final_result()
    recorded_code = (recorded_final.response or {}).get("exit_code") if recorded_final else None
    # an interrupted replay keeps the divergence it had met; an unfinished recording's
    # replay reports only SYM-R108
    keep_report = bundle.complete or ended.received is not None
    report = hand_back.report if isinstance(hand_back, Diverged) and keep_report else None
    exit_code = (ended.exit_code if ended.received
                 else EXIT_DIVERGED if verdict.diverged else code)
    return ReplayOutcome(
        exit_code=exit_code,
        program_exit_code=code,
        recorded_exit_code=recorded_code,
        diverged=verdict.diverged,
        report=report,
        report_json=verdict.report,
        child_bundle=child_bundle,
        resolved_anchor=resolved.event_id if resolved else None,
        anchor_note=resolved.note if resolved else None,
        stdout=ended.stdout,
        stderr_left_out=ended.stderr_left_out,
        network_isolated=prepared.isolate,
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
    from symtrace.bundle.completion import complete_bundle
    from symtrace.bundle.writer import BundleWriter

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
