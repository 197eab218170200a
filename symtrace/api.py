"""The in-process Python API: `record()` and `replay()` as context managers.

    with symtrace.record("bundles/run1", task="plan a trip") as rec:
        run_my_agents()
        rec.final_result(answer)

    with symtrace.replay("bundles/run1"):          # strict: raises ReplayDivergence
        run_my_agents()

    with symtrace.replay("bundles/run1", anchor="agent_action_0003",
                         guidance="Check the date first.", out="bundles/run1-fix"):
        run_my_agents()                            # prefix replayed, then live

The CLI (`symtrace record/replay -- CMD`) drives the same sessions inside a child process.
"""

from __future__ import annotations

import contextlib
import os
import random
import shutil
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from symtrace.boundaries import http as http_boundary
from symtrace.boundaries.egress import (
    EgressGuard,
    EgressRecorder,
    guard_for,
    network_manifest,
)
from symtrace.bundle.completion import complete_bundle
from symtrace.bundle.format import KIND_RECORDING
from symtrace.bundle.manifest import child_manifest, new_manifest, new_seed
from symtrace.bundle.reader import load_bundle
from symtrace.bundle.writer import BundleWriter
from symtrace.errors import (
    AdapterError,
    BundleWriteError,
    RedactionError,
    ReplayDivergence,
    UnrecordedLLMRequest,
)
from symtrace.frameworks import refusals as framework_refusals
from symtrace.frameworks import registry as adapter_registry
from symtrace.model.canonical import to_json_value
from symtrace.model.events import EventType
from symtrace.model.redaction import Redactor
from symtrace.model.runtime_info import version_warnings
from symtrace.options import RecordOptions, ReplayOptions, given, in_process
from symtrace.record.recorder import Recorder
from symtrace.record.recording import Recording, new_recording
from symtrace.replay.anchor_resolution import ResolvedAnchor, resolve_anchor
from symtrace.replay.replayer import Replayer
from symtrace.session.core import Session, activate, deactivate, final_result


class SymtraceWarning(UserWarning):
    """Something differs from the recording that may explain a divergence."""


class Handle:
    """What `record()` / `replay()` yield: the bundle path and the live session."""

    def __init__(self, path: Path | None, session: Session) -> None:
        self.path = path
        self.session = session

    def final_result(self, value: Any) -> None:
        """Declare the run's final output (becomes the final_result node's value)."""
        self.session.declare_final(to_json_value(value))


@contextmanager
def record(
    path: str | os.PathLike[str],
    options: RecordOptions | None = None,
    **keywords: Any,
) -> Iterator[Handle]:
    """Record every boundary call made inside the block into a bundle at *path*.

    *options* (RecordOptions), or its fields as keyword arguments: `task`, `state`, `config`
    (T, s0, c), `seed`, `secrets` (bare values to redact), `secret_envs` (variables whose
    values are redacted), `adapters` (None: every installed framework), `overwrite` (or
    `force`).

    Python's `random` is seeded from a recorded seed (s0) so programs that draw from it make
    the same draws on replay. A block that raises still produces a complete bundle whose
    outcome is "error": failing runs are the ones worth keeping. A refusal (a secret about to
    be written, an LLM request sent around every seam, a framework symtrace cannot record)
    keeps nothing and is raised, even when the program caught it.
    """
    options = given(RecordOptions, options, keywords)
    in_process(options)
    run = _start_recording(path, options)
    try:
        with _installed(run.session, run.armed, run.egress):
            random.seed(run.seed)
            try:
                yield Handle(Path(path), run.session)
            except BaseException as exc:
                _end_recording(run, raised=exc)
                raise
            _note_adapters_used(run.sink.manifest, run.armed, options.adapters)
        _end_recording(run, raised=None)
    except RedactionError:
        if run.session.refusal is not None:  # wherever it surfaced (a boundary call, the
            run.discard()  # seal): nothing is kept
        raise


@dataclass
class _InProcessRecording:
    path: str | os.PathLike[str]
    options: RecordOptions
    seed: int
    sink: Recording
    session: Recorder
    egress: EgressRecorder
    armed: list[Any]
    refusals_before: int  # framework refusals raised in this process before the block
    discarded: bool = False

    def discard(self) -> None:
        if not self.discarded:
            self.discarded = True
            with contextlib.suppress(BundleWriteError):  # a failed writer holds nothing to drop
                self.sink.abort()
            shutil.rmtree(self.path, ignore_errors=True)


def _start_recording(path: str | os.PathLike[str], options: RecordOptions
                     ) -> _InProcessRecording:
    seed = new_seed() if options.seed is None else options.seed
    redactor = Redactor.from_environment(options.secrets, names=options.secret_envs)
    armed = adapter_registry.resolve(options.adapters)
    manifest = new_manifest(
        kind=KIND_RECORDING,
        task=options.task,
        state=options.state,
        config=options.config,
        seed=seed,
        hash_seed=os.environ.get("PYTHONHASHSEED"),
        adapters=[a.name for a in armed],
    )
    sink = new_recording(path, manifest, redactor=redactor, overwrite=options.force)
    return _InProcessRecording(path, options, seed, sink, Recorder(None, redactor, sink=sink),
                               EgressRecorder(), armed, len(framework_refusals.refusals()))


def _end_recording(run: _InProcessRecording, raised: BaseException | None) -> None:
    """Seal the bundle (outcome "error" when the block raised *raised*), or keep nothing and
    raise the refusal that forbids keeping it."""
    refusal = _refusal(run, raised)
    if refusal is not None:
        run.discard()
        if refusal is raised:
            raise refusal
        raise refusal from raised
    if raised is not None:
        _note_adapters_used(run.sink.manifest, run.armed, run.options.adapters)
        run.session.abandon_open()  # calls still in flight are part of the run: before the seal
    run.sink.manifest["config"]["network"] = network_manifest(run.session.events,
                                                              run.egress.to_json())
    run.session.guarded(run.sink.complete, exit_code=None, value=run.session.final_value,
                        status="ok" if raised is None else "error",
                        error=None if raised is None else f"{type(raised).__name__}: {raised}")


def _refusal(run: _InProcessRecording, raised: BaseException | None) -> BaseException | None:
    """What forbids keeping the bundle, even when the program caught or wrapped it: a secret
    about to reach it, an LLM request sent around every seam (a bundle missing a call must
    not exist), a framework or construct symtrace cannot record."""
    if run.session.refusal is not None:
        return RedactionError(run.session.refusal)
    if run.egress.refused:
        return UnrecordedLLMRequest(run.egress.refused[0])
    later = framework_refusals.refusals()[run.refusals_before:]
    if not later:
        return None
    if isinstance(raised, AdapterError) and str(raised) == later[0]:
        return raised
    return framework_refusals.refusal_error(later[0])


@contextmanager
def replay(
    path: str | os.PathLike[str],
    options: ReplayOptions | None = None,
    **keywords: Any,
) -> Iterator[Handle]:
    """Replay the bundle at *path* inside the block: strict, or selective with an anchor.

    *options* (ReplayOptions), or its fields as keyword arguments: `anchor`, `guidance`,
    `placement`, `out`, `secrets`, `adapters`, `overwrite` (or `force`), `allow_hosts`,
    `hold_tools`, `order_timeout` (seconds a call held for the recorded completion order
    waits without boundary progress before SYM-R105; default 20).

    While the replay has not gone live, no network connection leaves the process (the
    egress guard, SYM-R106) except to `allow_hosts` (`HOST[:PORT]`, e.g. a local database).

    Strict: every boundary call must match the next expected record; the first divergence is
    raised (again at exit even if the program swallowed it), and so is a run that ends with
    records unconsumed. Selective: records are served up to the anchor, the anchor's request
    gets the guidance, and it and everything causally after it run live; with `out` the whole
    new trajectory is written as a child bundle. `hold_tools`: in the live suffix, a tool call
    identical to a recorded one gets the recorded outcome instead of running (a controlled
    rollout, replay/held_tools.py).
    """
    options = given(ReplayOptions, options, keywords)
    in_process(options)
    anchor, guidance, placement, out = (options.anchor, options.guidance, options.placement,
                                        options.out)
    bundle = load_bundle(path)
    resolved = resolve_anchor(bundle, anchor) if anchor else None
    if resolved and resolved.note:
        warnings.warn(resolved.note, SymtraceWarning, stacklevel=3)
    redactor = Redactor.from_environment(options.secrets)
    recorded_adapters = bundle.config.get("adapters", [])
    names = adapter_registry.resolve(options.adapters if options.adapters is not None
                                     else recorded_adapters)
    notes = version_warnings(bundle.config.get("versions", {}))
    for note in notes:
        warnings.warn(note, SymtraceWarning, stacklevel=3)
    writer = None
    if out is not None:
        if resolved is None:
            raise ValueError(
                "out= is only meaningful with an anchor (a strict replay adds nothing)"
            )
        manifest = child_manifest(bundle, [a.name for a in names])
        writer = BundleWriter(
            out, manifest, redactor=redactor, overwrite=options.force, staging=True
        ).open()
    session = Replayer(
        bundle,
        redactor,
        anchor=resolved.event_id if resolved else None,
        guidance=guidance,
        placement=placement,
        writer=writer,
        warnings=notes,
        hold_tools=options.hold_tools,
        scheduling=options.scheduling,
    )
    guard = guard_for(session, options.allow_hosts)
    with _installed(session, names, guard):
        random.seed(bundle.initial_state.get("random_seed"))
        handle = Handle(out, session)
        try:
            yield handle
        except ReplayDivergence:
            _abort(writer)
            raise
        except BaseException as exc:
            _close_or_abort(session, writer, cause=exc)
            session.abandon_open()  # calls still in flight belong to the child before its seal
            _complete_child(
                session,
                writer,
                resolved,
                str(path),
                status="error",
                error=f"{type(exc).__name__}: {exc}",
            )
            raise
        _close_or_abort(session, writer, cause=None)
    _complete_child(session, writer, resolved, str(path), status="ok", error=None)


def _complete_child(
    session: Replayer,
    writer: BundleWriter | None,
    resolved: ResolvedAnchor | None,
    parent: str,
    *,
    status: str,
    error: str | None,
    exit_code: int | None = None,
    stdout: bytes | None = None,
) -> None:
    if writer is None or resolved is None:
        return
    lineage = session.lineage(parent)
    lineage["requested_anchor"] = resolved.requested
    lineage["anchor_note"] = resolved.note
    complete_bundle(
        writer,
        exit_code=exit_code,
        value=session.final_value,
        stdout=stdout,
        status=status,
        error=error,
        lineage=lineage,
    )


def _note_adapters_used(manifest: dict[str, Any], armed: Sequence[Any],
                        requested: Sequence[str] | None) -> None:
    """Auto mode: a replay needs exactly the frameworks the program imported, no more."""
    if requested is None:
        manifest["config"]["adapters"] = sorted(
            a.name for a in armed if a.adapter.installed
        )


def _close_or_abort(
    session: Replayer, writer: BundleWriter | None, cause: BaseException | None
) -> None:
    try:
        session.close()
    except ReplayDivergence as divergence:
        _abort(writer)
        if cause is not None:
            raise divergence from cause
        raise


def _abort(writer: BundleWriter | None) -> None:
    if writer is not None:
        writer.abort()


@contextmanager
def _installed(session: Session, names: Sequence[Any],
               egress: EgressGuard | EgressRecorder) -> Iterator[None]:
    """Activate *session*, install the egress watch, the HTTP seams and adapters; undo in
    reverse order."""
    activate(session)
    installed: list[Any] = []
    try:
        egress.install()
        try:
            http_boundary.install()
            try:
                for adapter in names:
                    adapter.install()
                    installed.append(adapter)
                yield
            finally:
                for adapter in reversed(installed):
                    adapter.uninstall()
                http_boundary.finish_open_streams()
                http_boundary.uninstall()
        finally:
            egress.uninstall()
    finally:
        deactivate(session)


__all__ = [
    "EventType",
    "Handle",
    "ResolvedAnchor",
    "SymtraceWarning",
    "final_result",
    "record",
    "replay",
    "resolve_anchor",
]
