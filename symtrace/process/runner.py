"""Running a program under symtrace in a child process: `symtrace record/replay -- CMD`.

The parent prepares the bundle, starts the program with the bootstrap on its PYTHONPATH, tees
its standard output (kept in the bundle; the final_result node holds its tail), waits, and
finalizes from what the child handed back. Exit codes: the program's own on success; the
`EXIT_*` codes of symtrace.errors for symtrace's own failures (divergence = 90).
"""

from __future__ import annotations

import os
import re
import shutil
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import orjson

from symtrace.boundaries.egress import HostPort, network_manifest
from symtrace.bundle.format import KIND_RECORDING
from symtrace.bundle.manifest import child_manifest, new_manifest, new_seed
from symtrace.bundle.reader import Bundle, load_bundle
from symtrace.bundle.writer import BundleWriter
from symtrace.errors import (
    EXIT_DIVERGED,
    BundleExistsError,
    BundleWriteError,
    NotInstrumented,
    RedactionError,
    SymtraceError,
    UnrecordedLLMRequest,
)
from symtrace.frameworks.refusals import UnsupportedFrameworkError
from symtrace.frameworks.registry import resolve as resolve_adapters
from symtrace.model.divergence import DivergenceKind, DivergenceReport
from symtrace.model.intervention import validate_placement
from symtrace.model.redaction import REDACTED, SECRET_ENV_NAME, Redactor
from symtrace.model.runtime_info import version_warnings
from symtrace.process import child as child_env
from symtrace.process.supervise import ChildExit, run_child
from symtrace.record.outcome import complete_bundle
from symtrace.replay.anchors import resolve_anchor
from symtrace.replay.outcome_check import compare, compile_volatile
from symtrace.replay.outcome_check import to_json as outcome_json

BOOTSTRAP_DIR = Path(__file__).parent / "bootstrap"
PACKAGE_ROOT = Path(__file__).resolve().parents[2]  # the directory holding the symtrace package
ENV_PREFIXES = (
    "OPENAI_",
    "SYMTRACE_",
    "CREWAI_",
    "OTEL_",
    "AUTOGEN",
    "AG2",
    "PYTHONHASHSEED",
    "TZ",
    "LANG",
    "LC_",
    "TIKTOKEN_",
)
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


@dataclass(frozen=True)
class RecordOutcome:
    exit_code: int
    bundle: Path
    events: int
    stdout: bytes
    unrecorded_egress: tuple[dict[str, Any], ...] = ()
    status: str = "ok"  # manifest outcome.status: ok, error, killed, interrupted, ...
    signal: str | None = None  # the signal that ended the run, if one did

    @property
    def complete(self) -> bool:
        return self.status in ("ok", "error")


def captured_env(extra: Sequence[str] = ()) -> dict[str, str]:
    keep = {k: v for k, v in os.environ.items() if k.startswith(ENV_PREFIXES) or k in extra}
    keep.pop(child_env.ENV_MODE, None)
    return dict(sorted(keep.items()))


def record_command(
    out: str | os.PathLike[str],
    command: Sequence[str],
    *,
    task: Any = None,
    state: Any = None,
    config: Any = None,
    seed: int | None = None,
    secret_envs: Sequence[str] = (),
    adapters: Sequence[str] | None = None,
    env_keep: Sequence[str] = (),
    force: bool = False,
    quiet: bool = False,
) -> RecordOutcome:
    """Record one run of *command* into a new bundle at *out*."""
    if not command:
        raise ValueError("no command to record (give it after --)")
    redactor = Redactor.from_environment(names=secret_envs)
    armed = resolve_adapters(adapters)  # fail before starting anything
    seed = new_seed() if seed is None else seed
    hash_seed = os.environ.get("PYTHONHASHSEED") or str(new_seed() % 4294967295)
    env = captured_env(env_keep)
    # The argv is given back to the program on replay: a named secret in it is restored
    # then; an unnamed one is refused here, before anything runs or is written.
    argv = redactor.scrub_received(list(command), "the command line")
    cmd: dict[str, Any] = {"argv": argv, "cwd": os.getcwd(), "env": redactor.scrub_env(env)}
    if secret_envs:  # names only: replay redacts the same variables
        cmd["secret_env"] = sorted(set(secret_envs))
    manifest = new_manifest(
        kind=KIND_RECORDING,
        task=redactor.scrub(task),
        state=redactor.scrub(state),
        config=redactor.scrub(config),
        seed=seed,
        hash_seed=hash_seed,
        adapters=[a.name for a in armed],
        command=cmd,
    )
    writer = BundleWriter(out, manifest, redactor=redactor, overwrite=force).open()
    writer.close()
    child_vars = {
        child_env.ENV_MODE: "record",
        child_env.ENV_BUNDLE: str(Path(out).resolve()),
        child_env.ENV_ADAPTERS: ",".join(a.name for a in armed) if adapters is not None else "auto",
        child_env.ENV_SECRETS: ",".join(secret_envs),
        "PYTHONHASHSEED": hash_seed,
    }
    with tempfile.TemporaryDirectory(prefix="symtrace-") as tmp:
        report_path = Path(tmp) / "hand-back.json"
        child_vars[child_env.ENV_REPORT] = str(report_path)
        ended = _run(command, os.getcwd(), {**os.environ, **child_vars}, quiet)
        hand_back = _read_json(report_path)
    if hand_back.get("refused"):  # a bundle without the framework's LLM calls would mislead
        shutil.rmtree(out, ignore_errors=True)
        raise UnsupportedFrameworkError(hand_back["refused"])
    if hand_back.get("egress_refused"):  # an LLM call went around every seam: would replay live
        shutil.rmtree(out, ignore_errors=True)
        raise UnrecordedLLMRequest(hand_back["egress_refused"])
    if hand_back.get("redaction_refused"):  # nothing of a refused recording stays on disk
        shutil.rmtree(out, ignore_errors=True)
        raise RedactionError(hand_back["redaction_refused"])
    writer = BundleWriter.reopen(out, redactor=redactor)
    status = _record_status(ended, hand_back)
    ended = replace(ended, stdout=redactor.scrub_bytes(ended.stdout))
    egress = tuple(hand_back.get("unrecorded_egress") or ())
    writer.manifest["config"]["network"] = network_manifest(writer.events, list(egress))
    if status in ("ok", "error"):
        if adapters is None:  # auto: replay needs exactly the frameworks the program imported
            writer.manifest["config"]["adapters"] = hand_back.get("adapters_used", [])
        complete_bundle(
            writer,
            exit_code=ended.code,
            value=redactor.scrub(hand_back.get("final_value")),
            stdout=ended.stdout,
            status=status,
        )
        return RecordOutcome(
            ended.code, Path(out), len(writer.events), ended.stdout, egress, status
        )
    # An unfinished run: sealed as far as it got, marked incomplete, with what stopped it.
    writer.write_stdout(ended.stdout)
    writer.finalize(
        complete=False,
        outcome={
            "status": status,
            "exit_code": ended.code,
            "signal": ended.received or ended.signal,
            "error": None,
        },
    )
    if status == "not_instrumented":
        raise NotInstrumented(
            f"the program was not instrumented (exit code {ended.code}); is symtrace importable "
            "by its interpreter?"
        )
    return RecordOutcome(
        ended.exit_code, Path(out), len(writer.events), ended.stdout, egress, status,
        ended.received or ended.signal,
    )


def _record_status(ended: ChildExit, hand_back: dict[str, Any]) -> str:
    """ok / error for a finished run; otherwise what stopped it (docs/bundle-format.md)."""
    if ended.received == "SIGINT":
        return "interrupted"
    if ended.received is not None:
        return "terminated"
    if ended.signal is not None:
        return "killed"
    if hand_back.get("status") == "recorded":
        return "ok" if ended.code == 0 else "error"
    if not hand_back:  # never reached the bootstrap, and no signal ended it
        return "not_instrumented"
    return "exited_early"  # started, but ended without handing back (os._exit, a crash in C)


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
) -> ReplayOutcome:
    """Restart the recorded program and replay it (strict, or selective with *anchor*).

    The program restarts with the recorded argv, cwd and captured environment subset;
    *command* replaces the argv, *set_env* overrides variables (e.g. the endpoint a live
    suffix should use). No network connection leaves the replayed program except to
    *allow_hosts*. A strict replay that matched every call must also end as the recording
    did (exit code, final result, stdout modulo *volatile_stdout* lines), or it diverges.
    """
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
    cwd = recorded_cmd.get("cwd") or os.getcwd()
    if not Path(cwd).is_dir():
        cwd = os.getcwd()
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
    child_vars = {
        child_env.ENV_MODE: "replay",
        child_env.ENV_BUNDLE: str(Path(bundle_path).resolve()),
        child_env.ENV_ADAPTERS: ",".join(a.name for a in armed),
        child_env.ENV_ANCHOR: resolved.event_id if resolved else "",
        child_env.ENV_GUIDANCE: guidance or "",
        child_env.ENV_PLACEMENT: placement,
        child_env.ENV_ALLOW_HOSTS: ",".join(allowed),
        child_env.ENV_SECRETS: ",".join(secret_names),
    }
    if staged is not None:
        child_vars[child_env.ENV_CHILD_BUNDLE] = str(staged.resolve())
    try:
        with tempfile.TemporaryDirectory(prefix="symtrace-") as tmp:
            report_path = Path(tmp) / "hand-back.json"
            child_vars[child_env.ENV_REPORT] = str(report_path)
            ended = _run(argv, cwd, {**env, **child_vars}, quiet)
            hand_back = _read_json(report_path)
            code, stdout = ended.code, ended.stdout
    except BaseException:
        if staged is not None:
            shutil.rmtree(staged, ignore_errors=True)
        raise
    recorded_final = bundle.final_result()
    recorded_code = (recorded_final.response or {}).get("exit_code") if recorded_final else None
    if hand_back.get("status") == "replayed" and resolved is None and bundle.complete:
        # compared as recorded: with the same redaction (a restored secret prints again)
        seen = {**hand_back, "final_value": redactor.scrub(hand_back.get("final_value"))}
        _verify_outcome(bundle, seen, code, redactor.scrub_bytes(stdout), volatile)
        hand_back.update({k: v for k, v in seen.items() if k != "final_value"})
    report = None
    child_bundle = None
    if hand_back.get("status") == "diverged":
        report = DivergenceReport.from_json(hand_back["report"])
        recorded_argv = tuple(recorded_cmd.get("argv") or ())
        if command and tuple(argv) != recorded_argv:  # the likely cause: say it first
            report = replace(
                report, recorded_command=recorded_argv, replayed_command=tuple(argv)
            )
            hand_back = {**hand_back, "report": report.to_json(), "rendered": report.render()}
    if ended.received is not None:
        hand_back = {
            "status": "interrupted",
            "signal": ended.received,
            "rendered": f"interrupted ({ended.received}): the replay was stopped before it "
            "finished; nothing is verified",
        }
    elif not bundle.complete:
        hand_back = _recording_incomplete(bundle, hand_back, report)
        report = None
    elif hand_back.get("status") not in ("replayed", "diverged"):
        hand_back = {"status": "incomplete", "rendered": _UNVERIFIED.format(code=code)}
    diverged = hand_back.get("status") != "replayed"
    if diverged:
        if staged is not None:
            shutil.rmtree(staged, ignore_errors=True)
    elif staged is not None and resolved is not None:
        child_bundle = _complete_child(
            staged, Path(out), hand_back, resolved, code, stdout, redactor
        )
    if report_json is not None:
        Path(report_json).write_bytes(
            orjson.dumps(hand_back, option=orjson.OPT_SORT_KEYS | orjson.OPT_INDENT_2)
        )
    exit_code = ended.exit_code if ended.received else EXIT_DIVERGED if diverged else code
    return ReplayOutcome(
        exit_code=exit_code,
        program_exit_code=code,
        recorded_exit_code=recorded_code,
        diverged=diverged,
        report=report,
        report_json=hand_back,
        child_bundle=child_bundle,
        resolved_anchor=resolved.event_id if resolved else None,
        anchor_note=resolved.note if resolved else None,
        stdout=stdout,
    )


_UNVERIFIED = (
    "[SYM-R104] the replayed program ended without handing back a replay report (exit code "
    "{code}): it was killed, called os._exit, or was not instrumented; the replay is not "
    "verified"
)


def _verify_outcome(bundle: Bundle, hand_back: dict[str, Any], code: int, stdout: bytes,
                    volatile: Sequence[re.Pattern[str]]) -> None:
    """A strict replay that ended differently from the recording diverged (SYM-R107): marks
    *hand_back* so, with the report."""
    final = bundle.final_result()
    recorded = final.response if final is not None and isinstance(final.response, dict) else {}
    difference = compare(
        recorded_exit=recorded.get("exit_code"),
        recorded_value=recorded.get("value"),
        recorded_stdout=bundle.stdout() if recorded.get("exit_code") is not None else None,
        exit_code=code,
        value=hand_back.get("final_value"),
        stdout=stdout,
        volatile=volatile,
    )
    if difference is None:
        return
    report = DivergenceReport(
        kind=DivergenceKind.OUTCOME_MISMATCH,
        bundle=str(bundle.path),
        bundle_digest=bundle.digest,
        position=final.position if final else None,
        event_id=final.id if final else None,
        lane=final.lane if final else None,
        agent=None,
        boundary="end",
        matched_before=int(hand_back.get("served") or 0),
        actual=outcome_json(difference),
        rules=tuple(bundle.config.get("normalisation", ())),
        hint=f"every boundary call matched, but the {difference.describe()}. The program "
        "depends on something symtrace does not pin (os.urandom, uuid, the clock, files, "
        "other processes); pin it, or if the line is volatile by design pass "
        "--volatile-stdout REGEX",
    )
    hand_back.update(status="diverged", kind="OutcomeMismatch", report=report.to_json(),
                     rendered=report.render())


def _recording_incomplete(
    bundle: Bundle, hand_back: dict[str, Any], report: DivergenceReport | None
) -> dict[str, Any]:
    """The typed result of replaying an unfinished recording: never a success, and how far
    the replay matched what was recorded."""
    recorded = len(bundle.boundary_events())
    outcome = bundle.manifest.get("outcome") or {}
    why = outcome.get("status") or "unsealed"
    if outcome.get("signal"):
        why = f"{why} by {outcome['signal']}"
    if hand_back.get("status") == "replayed":
        matched: int | None = recorded
        then = "then the program ended; the recorded run had not"
    elif report is not None:
        matched = report.matched_before
        then = f"then: {report.render().splitlines()[0]}"
    else:
        matched = None
        then = "then the program ended without a replay report"
    told = "an unknown number" if matched is None else str(matched)
    return {
        "status": "recording_incomplete",
        "code": "SYM-R108",
        "recording": why,
        "recorded_events": recorded,
        "matched_events": matched,
        "rendered": f"[SYM-R108] recording incomplete: the recorded run {why} after "
        f"{recorded} boundary events; replay matched {told} of them, {then}. A replay of an "
        "unfinished recording is never a verified success.",
    }


def _complete_child(
    staged: Path,
    final: Path,
    hand_back: dict[str, Any],
    resolved: Any,
    code: int,
    stdout: bytes,
    redactor: Redactor,
) -> Path:
    """Append the final result to the staged child bundle and move it into place."""
    writer = BundleWriter.reopen(staged, redactor=redactor)
    lineage = hand_back.get("lineage") or {}
    lineage.update(requested_anchor=resolved.requested, anchor_note=resolved.note)
    complete_bundle(
        writer,
        exit_code=code,
        value=redactor.scrub(hand_back.get("final_value")),
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


def _run(argv: Sequence[str], cwd: str, env: dict[str, str], quiet: bool) -> ChildExit:
    argv = list(argv)
    if argv and argv[0] in ("python", "python3"):
        argv[0] = sys.executable  # the interpreter symtrace runs in, where it is importable
    paths = [str(BOOTSTRAP_DIR), str(PACKAGE_ROOT)]
    if env.get("PYTHONPATH"):
        paths.append(env["PYTHONPATH"])
    env = {**env, "PYTHONPATH": os.pathsep.join(paths)}
    return run_child(argv, cwd, env, quiet=quiet)


def _read_json(path: Path) -> dict[str, Any]:
    try:
        return orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return {}


def _check_writable(path: Path) -> None:
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir() or not os.access(parent, os.W_OK):
        raise BundleWriteError(f"cannot write {path}: {parent} is not a writable directory")


__all__ = ["RecordOutcome", "ReplayOutcome", "record_command", "replay_bundle", "version_warnings"]
