"""`symtrace record -- CMD`, parent side: prepare the bundle, run the program instrumented,
finalize the bundle from how the program ended and what the child handed back."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, replace
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any

from symtrace.boundaries.egress import network_manifest
from symtrace.bundle.format import KIND_RECORDING
from symtrace.bundle.manifest import new_manifest, new_seed
from symtrace.bundle.output import OutputSlot
from symtrace.errors import (
    BundleWriteError,
    HandBackError,
    NotInstrumented,
    RedactionError,
    UnrecordedLLMRequest,
)
from symtrace.frameworks.refusals import refusal_error
from symtrace.frameworks.registry import to_arm
from symtrace.model.redaction import Redactor
from symtrace.options import RecordOptions, given, in_child_process
from symtrace.process.consent import ENV_PREFIXES, approve_recorded
from symtrace.process.protocol import ENV_LAUNCH, HandBack, Launch, Mode, Recorded
from symtrace.process.spawn import declared_adapters, run_instrumented
from symtrace.process.supervise import ChildExit

if TYPE_CHECKING:
    from symtrace.bundle.writer import BundleWriter


class RecordStatus(StrEnum):
    """The manifest's `outcome.status` of a recording (docs/bundle-format.md)."""

    OK = "ok"  # finished, exit code 0
    ERROR = "error"  # finished, another exit code
    INTERRUPTED = "interrupted"  # symtrace got SIGINT
    TERMINATED = "terminated"  # symtrace got SIGTERM
    KILLED = "killed"  # a signal ended the program
    NOT_INSTRUMENTED = "not_instrumented"  # never reached the bootstrap
    EXITED_EARLY = "exited_early"  # started, ended without handing back (os._exit, a crash)

    @property
    def finished(self) -> bool:
        return self in (RecordStatus.OK, RecordStatus.ERROR)


@dataclass(frozen=True)
class RecordOutcome:
    exit_code: int
    bundle: Path
    events: int
    stdout: bytes
    unrecorded_egress: tuple[dict[str, Any], ...] = ()
    status: str = RecordStatus.OK  # manifest outcome.status (a RecordStatus)
    signal: str | None = None  # the signal that ended the run, if one did

    @property
    def complete(self) -> bool:
        return RecordStatus(self.status).finished


def captured_env(extra: Sequence[str] = ()) -> dict[str, str]:
    keep = {k: v for k, v in os.environ.items() if k.startswith(ENV_PREFIXES) or k in extra}
    keep.pop(ENV_LAUNCH, None)
    return dict(sorted(keep.items()))


def record_command(
    out: str | os.PathLike[str],
    command: Sequence[str],
    options: RecordOptions | None = None,
    **keywords: Any,
) -> RecordOutcome:
    """Record one run of *command* into a new bundle at *out*, as *options* (RecordOptions)
    say, or the same fields as keyword arguments (task=, seed=, adapters=, force=, ...)."""
    options = given(RecordOptions, options, keywords)
    in_child_process(options)
    if not command:
        raise ValueError("no command to record (give it after --)")
    secret_envs, env_keep = options.secret_envs, options.env_keep
    redactor = Redactor.from_environment(names=secret_envs)
    armed = to_arm(options.adapters)  # fail before starting anything
    seed = new_seed() if options.seed is None else options.seed
    hash_seed = os.environ.get("PYTHONHASHSEED") or str(new_seed() % 4294967295)
    env = captured_env(env_keep)
    # The argv is given back to the program on replay: a named secret in it is restored
    # then; an unnamed one is refused here, before anything runs or is written.
    argv = redactor.scrub_command(list(command))
    cmd: dict[str, Any] = {"argv": argv, "cwd": os.getcwd(), "env": redactor.scrub_env(env)}
    if env_keep:  # names only: replay applies these beside the ones recording always captures
        cmd["env_keep"] = sorted(set(env_keep))
    if secret_envs:  # names only: replay redacts the same variables
        cmd["secret_env"] = sorted(set(secret_envs))
    manifest = new_manifest(
        kind=KIND_RECORDING,
        task=redactor.scrub(options.task),
        state=redactor.scrub(options.state),
        config=redactor.scrub(options.config),
        seed=seed,
        hash_seed=hash_seed,
        adapters=[a.name for a in armed],
        command=cmd,
    )
    # the path is claimed before anything runs: refused (exit 93) if it holds anything but a
    # bundle (--force), locked against a second recorder, written beside it and renamed in
    slot = OutputSlot(out, force=options.force).claim()
    try:
        return _record_into(slot, manifest, redactor, command, options.adapters, armed,
                            secret_envs, hash_seed, options.quiet)
    finally:
        slot.release()  # committed or discarded already, or left unsealed at slot.staged


def _record_into(slot: OutputSlot, manifest: dict[str, Any], redactor: Redactor,
                 command: Sequence[str], adapters: Sequence[str] | None, armed: list[Any],
                 secret_envs: Sequence[str], hash_seed: str, quiet: bool) -> RecordOutcome:
    from symtrace.bundle.completion import complete_bundle  # here: a replay imports this module
    from symtrace.bundle.writer import BundleWriter

    staged, out = slot.staged, slot.path
    writer = BundleWriter(staged, manifest, redactor=redactor).open()
    writer.close()
    approve_recorded(writer.manifest, out)  # this user runs it now: its replay need not ask
    launch = Launch(
        mode=Mode.RECORD,
        bundle=str(staged.resolve()),
        adapters=tuple(a.name for a in armed),
        secret_envs=tuple(secret_envs),
        declared=declared_adapters(),
    )
    try:
        ended, hand_back = run_instrumented(
            command, os.getcwd(), {**os.environ, "PYTHONHASHSEED": hash_seed}, launch,
            quiet=quiet,
        )
    except HandBackError:  # a bundle finalized from a message nobody understood would lie
        slot.discard()
        raise
    _refuse(slot, hand_back)
    writer = BundleWriter.reopen(staged, redactor=redactor)
    status = _record_status(ended, hand_back)
    ended = replace(ended, stdout=redactor.scrub_bytes(ended.stdout))
    recorded = hand_back if isinstance(hand_back, Recorded) else None
    egress = recorded.unrecorded_egress if recorded else ()
    writer.manifest["config"]["network"] = network_manifest(writer.events, list(egress))
    if recorded is not None and recorded.writer_failed is not None:
        # the child could not write its last events: sealed incomplete, and said so
        _seal_incomplete(writer, ended.stdout, status, ended.code, None,
                         f"writing failed: {recorded.writer_failed}")
        slot.commit()
        raise BundleWriteError(
            f"{recorded.writer_failed} (the bundle at {out} is sealed incomplete)")
    if status.finished and recorded is not None:  # finished: it handed back (_record_status)
        if adapters is None:  # auto: replay needs exactly the frameworks the program imported
            writer.manifest["config"]["adapters"] = list(recorded.adapters_used)
        complete_bundle(
            writer,
            exit_code=ended.code,
            value=redactor.scrub(recorded.final_value),
            stdout=ended.stdout,
            status=status.value,
        )
        slot.commit()
        return RecordOutcome(
            ended.code, out, len(writer.events), ended.stdout, egress, status
        )
    # An unfinished run: sealed as far as it got, marked incomplete, with what stopped it.
    _seal_incomplete(writer, ended.stdout, status, ended.code, ended.received or ended.signal)
    slot.commit()
    if status is RecordStatus.NOT_INSTRUMENTED:
        raise NotInstrumented(
            f"the program was not instrumented (exit code {ended.code}); is symtrace importable "
            "by its interpreter?"
        )
    return RecordOutcome(
        ended.exit_code, out, len(writer.events), ended.stdout, egress, status,
        ended.received or ended.signal,
    )


def _seal_incomplete(writer: BundleWriter, stdout: bytes, status: RecordStatus,
                     exit_code: int | None, signal: str | None, error: str | None = None) -> None:
    """Seal what was written, marked incomplete, with what stopped the run."""
    writer.write_stdout(stdout)
    writer.finalize(complete=False, outcome={
        "status": status.value, "exit_code": exit_code, "signal": signal, "error": error})


def _refuse(slot: OutputSlot, hand_back: HandBack | None) -> None:
    """A recording the child refused leaves nothing on disk, and fails with the refusal."""
    if not isinstance(hand_back, Recorded) or hand_back.refusal is None:
        return
    slot.discard()
    if hand_back.refused:  # a framework or construct symtrace cannot record faithfully
        raise refusal_error(hand_back.refused)
    if hand_back.egress_refused:  # an LLM call went around every seam: would replay live
        raise UnrecordedLLMRequest(hand_back.egress_refused)
    raise RedactionError(hand_back.redaction_refused)


def _record_status(ended: ChildExit, hand_back: HandBack | None) -> RecordStatus:
    """ok / error for a finished run; otherwise what stopped it (docs/bundle-format.md)."""
    if ended.received == "SIGINT":
        return RecordStatus.INTERRUPTED
    if ended.received is not None:
        return RecordStatus.TERMINATED
    if ended.signal is not None:
        return RecordStatus.KILLED
    if isinstance(hand_back, Recorded):
        return RecordStatus.OK if ended.code == 0 else RecordStatus.ERROR
    if hand_back is None:  # never reached the bootstrap, and no signal ended it
        return RecordStatus.NOT_INSTRUMENTED
    return RecordStatus.EXITED_EARLY  # started, but ended without handing back
