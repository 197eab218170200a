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
from pathlib import Path
from typing import Any

from symtrace.boundaries import http as http_boundary
from symtrace.boundaries.egress import (
    EgressGuard,
    EgressRecorder,
    HostPort,
    guard_for,
    network_manifest,
)
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
from symtrace.model.canonical import JSONValue, to_json_value
from symtrace.model.events import EventType
from symtrace.model.intervention import DEFAULT_PLACEMENT, validate_placement
from symtrace.model.redaction import Redactor
from symtrace.model.runtime_info import version_warnings
from symtrace.record.outcome import complete_bundle
from symtrace.record.recorder import Recorder
from symtrace.record.recording import Recording, new_recording
from symtrace.replay.anchors import ResolvedAnchor, resolve_anchor
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
    *,
    task: JSONValue = None,
    state: JSONValue = None,
    config: JSONValue = None,
    seed: int | None = None,
    secrets: Sequence[str] = (),
    adapters: Sequence[str] | None = None,
    overwrite: bool = False,
) -> Iterator[Handle]:
    """Record every boundary call made inside the block into a bundle at *path*.

    Python's `random` is seeded from a recorded seed (s0) so programs that draw from it make
    the same draws on replay. A block that raises still produces a complete bundle whose
    outcome is "error": failing runs are the ones worth keeping.
    """
    seed = new_seed() if seed is None else seed
    redactor = Redactor.from_environment(secrets)
    names = adapter_registry.resolve(adapters)
    manifest = new_manifest(
        kind=KIND_RECORDING,
        task=task,
        state=state,
        config=config,
        seed=seed,
        hash_seed=os.environ.get("PYTHONHASHSEED"),
        adapters=[a.name for a in names],
    )
    sink = new_recording(path, manifest, redactor=redactor, overwrite=overwrite)
    session = Recorder(None, redactor, sink=sink)
    egress = EgressRecorder()
    refusals_before = len(framework_refusals.refusals())
    try:
        with _installed(session, names, egress):
            random.seed(seed)
            handle = Handle(Path(path), session)
            try:
                yield handle
            except BaseException as exc:
                if session.refusal is not None:  # a refused recording keeps nothing
                    raise RedactionError(session.refusal) from exc
                if egress.refused:  # a bundle that misses an LLM call must not exist
                    _discard(sink, path)
                    raise UnrecordedLLMRequest(egress.refused[0]) from exc
                _refuse_if_refused(refusals_before, sink, path, exc)
                _note_adapters_used(sink.manifest, names, adapters)
                session.abandon_open()  # calls still in flight are part of the run: before the seal
                _complete(sink, session, egress, status="error",
                          error=f"{type(exc).__name__}: {exc}")
                raise
            _note_adapters_used(sink.manifest, names, adapters)
        if session.refusal is not None:  # the block caught the refusal: still keep nothing
            raise RedactionError(session.refusal)
        if egress.refused:  # raised inside the block and swallowed by the program
            _discard(sink, path)
            raise UnrecordedLLMRequest(egress.refused[0])
        _refuse_if_refused(refusals_before, sink, path, None)
        _complete(sink, session, egress, status="ok", error=None)
    except RedactionError:
        if session.refusal is not None:  # wherever it surfaced (a boundary call, the writer's
            _discard(sink, path)  # last check before a write, the seal): nothing is kept
        raise


def _complete(sink: Recording, session: Session, egress: EgressRecorder, *, status: str,
              error: str | None) -> None:
    sink.manifest["config"]["network"] = network_manifest(session.events, egress.to_json())
    session.guarded(sink.complete, exit_code=None, value=session.final_value, status=status,
                    error=error)


def _refuse_if_refused(before: int, sink: Recording, path: str | os.PathLike[str],
                       raised: BaseException | None) -> None:
    """A refusal (unsupported framework or construct) raised in the block, even one the
    program or its framework caught or wrapped: nothing is kept, and the refusal is raised."""
    later = framework_refusals.refusals()[before:]
    if not later:
        return
    _discard(sink, path)
    if isinstance(raised, AdapterError) and str(raised) == later[0]:
        raise raised
    raise framework_refusals.refusal_error(later[0]) from raised


def _discard(sink: Recording, path: str | os.PathLike[str]) -> None:
    with contextlib.suppress(BundleWriteError):  # a writer that died holds nothing to drop
        sink.abort()
    shutil.rmtree(path, ignore_errors=True)


@contextmanager
def replay(
    path: str | os.PathLike[str],
    *,
    anchor: str | None = None,
    guidance: str | None = None,
    placement: str = DEFAULT_PLACEMENT,
    out: str | os.PathLike[str] | None = None,
    secrets: Sequence[str] = (),
    adapters: Sequence[str] | None = None,
    overwrite: bool = False,
    allow_hosts: Sequence[str] = (),
    hold_tools: bool = False,
) -> Iterator[Handle]:
    """Replay the bundle at *path* inside the block: strict, or selective with *anchor*.

    While the replay has not gone live, no network connection leaves the process (the
    egress guard, SYM-R106) except to *allow_hosts* (`HOST[:PORT]`, e.g. a local database).

    Strict: every boundary call must match the next expected record; the first divergence is
    raised (again at exit even if the program swallowed it), and so is a run that ends with
    records unconsumed. Selective: records are served up to *anchor*, the anchor's request gets
    *guidance*, and it and everything causally after it run live; with *out* the whole new
    trajectory is written as a child bundle. *hold_tools*: in the live suffix, a tool call
    identical to a recorded one gets the recorded outcome instead of running (a controlled
    rollout, replay/held_tools.py).
    """
    bundle = load_bundle(path)
    validate_placement(placement)
    resolved = resolve_anchor(bundle, anchor) if anchor else None
    if resolved and resolved.note:
        warnings.warn(resolved.note, SymtraceWarning, stacklevel=3)
    redactor = Redactor.from_environment(secrets)
    recorded_adapters = bundle.config.get("adapters", [])
    names = adapter_registry.resolve(adapters if adapters is not None else recorded_adapters)
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
            out, manifest, redactor=redactor, overwrite=overwrite, staging=True
        ).open()
    session = Replayer(
        bundle,
        redactor,
        anchor=resolved.event_id if resolved else None,
        guidance=guidance,
        placement=placement,
        writer=writer,
        warnings=notes,
        hold_tools=hold_tools,
    )
    guard = guard_for(session, [HostPort.parse(h) for h in allow_hosts])
    with _installed(session, names, guard):
        random.seed(bundle.initial_state.get("random_seed"))
        handle = Handle(Path(out) if out else None, session)
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
