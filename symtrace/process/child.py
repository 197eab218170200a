"""The session inside a program started by `symtrace record/replay -- CMD`.

The parent process (runner.py) prepares the bundle and writes a `protocol.Launch`; its path
is the one variable `SYMTRACE_CHILD`. Here the session is started before the program runs
and, at exit, the child hands back what only it knows (`protocol.Recorded`, `Replayed` or
`Diverged`): the declared final value and, for replays, the first divergence or the lineage
of a child bundle. The parent finalizes; the child never completes a bundle itself.

Only the first Python process is instrumented: SYMTRACE_CHILD is cleared once the session
starts, so a grandchild process does not write into the same bundle.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib
import os
import random
import signal
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

import orjson

from symtrace.boundaries import http as http_boundary
from symtrace.boundaries.egress import EgressGuard, EgressRecorder, HostPort, guard_for
from symtrace.bundle.format import EVENTS, MANIFEST
from symtrace.errors import EXIT_ADAPTER, BundleWriteError, RedactionError, ReplayDivergence
from symtrace.frameworks import refusals as unsupported_frameworks
from symtrace.frameworks import registry as adapter_registry
from symtrace.frameworks.registry import Armed, Declaration
from symtrace.model.canonical import to_json_value
from symtrace.model.redaction import Redactor
from symtrace.model.runtime_info import version_warnings
from symtrace.patching import after_import, cancel_after_import
from symtrace.process.held_stderr import held_path, hold
from symtrace.process.protocol import (
    Diverged,
    HandBack,
    Launch,
    Mode,
    Recorded,
    Replayed,
    Started,
    take_launch,
    write_hand_back,
)

if TYPE_CHECKING:
    from symtrace.bundle.writer import BundleWriter
    from symtrace.replay.replayer import Replayer
    from symtrace.session.core import Session

bundle_dir: str | None = None  # the launch's bundle: the bootstrap imports nothing from it


def start() -> None:
    """Start the session this process was launched for (the bootstrap calls this only when
    SYMTRACE_CHILD is set); a launch file that cannot be read raises HandBackError.

    Only what must precede the program's first line happens here: hooks armed, seams and the
    egress guard waiting for their libraries, `random` seeded. The session (and the session
    machinery: the writer or the bundle and replayer, the graph, the scheduler, asyncio)
    starts when something imports symtrace.session.core, which every boundary hook does
    before its first call: a program that makes none never pays for it (fast start). A strict
    replay of such a program still ends with the replayer's check when its bundle holds
    calls; a selective replay starts at once."""
    global bundle_dir
    launch = take_launch()
    if launch is None:
        raise RuntimeError("symtrace.process.child.start() outside `symtrace record/replay`")
    bundle_dir = launch.bundle
    redactor = Redactor.from_environment(names=list(launch.secret_envs))
    armed = _arm(launch)
    session: Deferred
    egress: EgressGuard | EgressRecorder
    # only the mode's own machinery is imported: a recording never loads the replayer
    if launch.mode is Mode.RECORD:
        session = Deferred(lambda: _recorder(launch, redactor))
        seed = orjson.loads(Path(launch.bundle, MANIFEST).read_bytes())[
            "initial_state"]["random_seed"]
        egress = EgressRecorder()
        hand_back = _record_hand_back(session, egress)
    else:
        # the parent prints the whole report last; the program's traceback gets its headline
        ReplayDivergence.full_message = False
        replay = _Replay(launch, redactor)
        session = replay.session
        seed = replay.manifest["initial_state"].get("random_seed")
        egress = guard_for(replay, tuple(HostPort.parse(h) for h in launch.allow_hosts))
        hand_back = _replay_hand_back(replay, egress, launch)
    session.start()
    if launch.anchor or launch.child_bundle:  # a selective replay starts at once, as it did
        session.force()
    egress.install()
    http_boundary.install()
    for adapter in armed:
        adapter.install()
    random.seed(seed)

    def at_exit() -> None:
        # The program is ending: a second Ctrl-C (the terminal's and the one symtrace
        # forwards) must not cut the hand-back short with a traceback of ours.
        with contextlib.suppress(ValueError):  # not the main thread: nothing to ignore
            signal.signal(signal.SIGINT, signal.SIG_IGN)
        session.adapters_used(sorted(a.name for a in armed if a.installed))
        _warn_unarmed(_imported_unarmed(armed, launch), launch.mode)
        for adapter in reversed(armed):
            adapter.uninstall()
        http_boundary.finish_open_streams()
        http_boundary.uninstall()
        egress.uninstall()
        session.stop()
        write_hand_back(Path(launch.hand_back), hand_back())

    atexit.register(at_exit)
    write_hand_back(Path(launch.hand_back), Started())


class Deferred:
    """The session, made and activated when symtrace.session.core is first imported (at once
    if it is already): by a seam or an adapter loading, before any boundary call. Made with
    `random`'s state kept, so the program's stream is the one an eager start gave it."""

    def __init__(self, make: Callable[[], Session]) -> None:
        self._make = make
        self.started: Session | None = None
        self.used: list[str] = []

    def start(self) -> None:
        if CORE in sys.modules:
            self._activate(sys.modules[CORE])
        else:
            after_import(CORE, self._activate)

    def force(self) -> Session:
        """The session now: activated through the import hook, or (the program is ending, the
        hook is gone) only made."""
        if self.started is None:
            importlib.import_module(CORE)
        if self.started is None:
            self.started = self._made()
        return self.started

    def _made(self) -> Session:
        state = random.getstate()
        try:
            return self._make()
        finally:
            random.setstate(state)

    def _activate(self, core: ModuleType) -> None:
        cancel_after_import(CORE, self._activate)
        try:
            self.started = self._made()
        except BaseException as exc:  # noqa: BLE001 - as the bootstrap: the program must not
            # go on uninstrumented (a replay would make live calls)
            sys.stderr.write("symtrace: cannot instrument this process: "
                             f"{type(exc).__name__}: {exc}\n")
            sys.stderr.flush()
            os._exit(EXIT_ADAPTER)
        # activate() numbers top-level turns from 0 again; turns the program opened before
        # this late start keep theirs, numbered as an eager start numbered them
        context = sys.modules.get("symtrace.session.context")
        kept = None if context is None else (context._root, context._activations)
        core.activate(self.started)
        if context is not None and kept is not None:
            context._root, context._activations = kept

    def adapters_used(self, names: list[str]) -> None:
        """Kept before the adapters are uninstalled, for the hand-back."""
        self.used = names
        if self.started is not None:
            self.started.adapters_used = names

    def stop(self) -> None:
        cancel_after_import(CORE, self._activate)
        if self.started is not None:
            sys.modules[CORE].deactivate(self.started)


CORE = "symtrace.session.core"


def _recorder(launch: Launch, redactor: Redactor) -> Session:
    from symtrace.record.recorder import Recorder
    from symtrace.record.recording import continued_recording

    # the parent reopens the bundle once this process ended; this process holds the
    # bundle's lock from its session's start until it ends
    return Recorder(None, redactor, sink=continued_recording(launch.bundle, redactor=redactor))


def _arm(launch: Launch) -> Sequence[Armed]:
    """The adapters to arm: from the parent's declarations (nothing scanned or imported until
    the program imports a framework), or resolved here when the launch declares none."""
    if not launch.declared:
        return adapter_registry.resolve(None if launch.adapters is None
                                        else list(launch.adapters))
    declared = [Declaration(*d) for d in launch.declared]
    names = launch.adapters if launch.adapters is not None else [d.name for d in declared]
    return adapter_registry.arm_declared(names, declared)


def _imported_unarmed(armed: Sequence[Armed], launch: Launch
                      ) -> list[tuple[str, str]]:
    if not launch.declared:
        return adapter_registry.imported_unarmed([a for a in armed if isinstance(a, Armed)])
    declared = [Declaration(*d) for d in launch.declared]
    return adapter_registry.imported_unarmed_declared(armed, declared)


def _warn_unarmed(unarmed: list[tuple[str, str]], mode: str) -> None:
    """Say so when the program imported a framework whose adapter was not armed: its agents,
    lanes and tools went unseen (and tool bodies run live on replay). A warning, not a
    refusal: `--adapter` arms exactly what was asked, and a program may import a framework it
    runs no agents with."""
    if not unarmed:
        return
    import shutil
    import textwrap

    columns = shutil.get_terminal_size((80, 24)).columns
    for name, module in unarmed:
        if mode == "record":
            fix = (f"Record with --adapter {name} (or without --adapter, which arms every "
                   "installed framework).")
        else:
            fix = f"Replay with --adapter {name}, or re-record the run with it armed."
        text = (
            f"symtrace: warning: the program imported {module}, but adapter {name} was not "
            f"armed: its agents, lanes and tools were not {mode}ed (only its HTTP calls "
            f"were), so tool bodies run live on replay. {fix}"
        )
        sys.stderr.write("\n".join(textwrap.wrap(text, columns, break_on_hyphens=False)) + "\n")
    sys.stderr.flush()


def _record_hand_back(session: Deferred, egress: EgressRecorder) -> Callable[[], HandBack]:
    def hand_back() -> HandBack:
        failed = None
        recorder = session.started  # None: the program made no boundary call
        if recorder is not None:
            try:  # every event was written before its call returned
                recorder.guarded(recorder.sink.close)
            except RedactionError:
                pass  # session.refusal: the parent keeps nothing
            except BundleWriteError as exc:  # the parent seals what was written, incomplete,
                failed = str(exc)  # and fails with it
        return Recorded(
            adapters_used=tuple(session.used),
            has_final_value=recorder is not None and recorder.has_final_value,
            final_value=None if recorder is None else to_json_value(recorder.final_value),
            # the program may have caught the refusal: the parent must not keep the bundle
            refused=unsupported_frameworks.refused(),
            redaction_refused=None if recorder is None else recorder.refusal,
            # connections outside every seam, and LLM requests sent around them
            unrecorded_egress=tuple(egress.to_json()),
            egress_refused=egress.refused[0] if egress.refused else None,
            writer_failed=failed,
        )

    return hand_back


class _Replay:
    """A replay's session, made when first needed (Deferred), and what the egress guard asks
    of it (egress.GuardedSession) before then."""

    def __init__(self, launch: Launch, redactor: Redactor) -> None:
        self.launch = launch
        self.redactor = redactor
        self.manifest = orjson.loads(Path(launch.bundle, MANIFEST).read_bytes())
        self.writer: BundleWriter | None = None
        self.on_live: list[Callable[[], None]] = []
        self.session = Deferred(self._make)

    def _make(self) -> Replayer:
        from symtrace.bundle.reader import load_bundle
        from symtrace.bundle.writer import BundleWriter
        from symtrace.replay.replayer import Replayer
        from symtrace.session.scheduling_options import SchedulingOptions

        launch = self.launch
        bundle = load_bundle(launch.bundle)
        if launch.child_bundle:
            self.writer = BundleWriter.reopen(launch.child_bundle, redactor=self.redactor)
        replayer = Replayer(
            bundle,
            self.redactor,
            anchor=launch.anchor,
            guidance=launch.guidance,
            placement=launch.placement,
            writer=self.writer,
            warnings=version_warnings(bundle.config.get("versions", {})),
            hold_tools=launch.hold_tools,
            scheduling=SchedulingOptions(launch.order_timeout,
                                         infer_from_state=launch.infer_from_state),
        )
        # from the first divergence on, stderr is the program's reaction to it (retries of
        # the refused call): held for the parent, which shows the last traceback and a summary
        held = held_path(launch.hand_back)
        replayer.on_divergence.append(lambda: hold(held))
        replayer.on_live.extend(self.on_live)
        return replayer

    def replayer(self) -> Replayer:
        return self.session.force()  # type: ignore[return-value]

    def endpoints(self) -> set[tuple[str, int]]:
        return self.replayer().endpoints()

    def egress_blocked(self, attempt: dict[str, Any]) -> ReplayDivergence:
        return self.replayer().egress_blocked(attempt)

    def expects_calls(self) -> bool:
        """Whether the bundle holds a boundary call (every event but the final result): a
        program that made none still needs the session's end check then (MissingCall)."""
        from symtrace.model.events import EventType

        lines = Path(self.launch.bundle, EVENTS).read_bytes().splitlines()
        return any(orjson.loads(line).get("type") != EventType.FINAL_RESULT.value
                   for line in lines if line.strip())


def _replay_hand_back(replay: _Replay, egress: EgressGuard,
                      launch: Launch) -> Callable[[], HandBack]:
    def hand_back() -> HandBack:
        if replay.session.started is None and not replay.expects_calls():
            # nothing was called and nothing is expected: the program matched the recording
            return Replayed(has_final_value=False, final_value=None, served=0, live=0,
                            allowed_connections=egress.allowed_connections,
                            refused=unsupported_frameworks.refused(), lineage=None)
        session = replay.replayer()
        counts = {
            "has_final_value": session.has_final_value,
            "final_value": to_json_value(session.final_value),
            "served": session.served_count,
            "live": session.live_count,
            "allowed_connections": egress.allowed_connections,
            # a refusal is not a divergence: the construct would not replay from any bundle
            "refused": unsupported_frameworks.refused(),
        }
        try:
            try:
                session.close()
            except ReplayDivergence as divergence:
                return Diverged(**counts, kind=type(divergence).__name__,
                                report=divergence.report)
            lineage = None
            if session.live_intervention is not None:
                lineage = session.lineage(launch.bundle)
            return Replayed(**counts, lineage=lineage)
        finally:
            if replay.writer is not None:
                replay.writer.close()

    return hand_back
