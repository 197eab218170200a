"""The session inside a program started by `symtrace record/replay -- CMD`.

The parent process (runner.py) prepares the bundle and passes everything through environment
variables (see `ENV_*`). Here the session is started before the program runs and, at exit,
the child hands back what only it knows: the declared final value and, for replays, the
first divergence or the lineage of a child bundle. The parent finalizes; the child never
completes a bundle itself.

Only the first Python process is instrumented: SYMTRACE_CHILD is cleared once the session
starts, so a grandchild process does not write into the same bundle.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import random
import shutil
import signal
import sys
import textwrap
from typing import Any

import orjson

from symtrace.boundaries import http as http_boundary
from symtrace.boundaries.egress import EgressGuard, EgressRecorder, allow_from_env, guard_for
from symtrace.bundle.reader import load_bundle
from symtrace.bundle.writer import BundleWriter, atomic_write
from symtrace.errors import ReplayDivergence
from symtrace.frameworks import refusals as unsupported_frameworks
from symtrace.frameworks import registry as adapter_registry
from symtrace.model.canonical import to_json_value
from symtrace.model.redaction import Redactor
from symtrace.model.runtime_info import version_warnings
from symtrace.record.recorder import Recorder
from symtrace.replay.replayer import Replayer
from symtrace.session.core import Session, activate, deactivate

ENV_MODE = "SYMTRACE_CHILD"  # "record" | "replay"
ENV_BUNDLE = "SYMTRACE_BUNDLE"  # record: bundle to append to; replay: bundle to replay
ENV_CHILD_BUNDLE = "SYMTRACE_CHILD_BUNDLE"  # replay with anchor: staged child bundle dir
ENV_REPORT = "SYMTRACE_REPORT"  # where the child writes its hand-back JSON
ENV_ANCHOR = "SYMTRACE_ANCHOR"
ENV_GUIDANCE = "SYMTRACE_GUIDANCE"
ENV_PLACEMENT = "SYMTRACE_PLACEMENT"
ENV_ADAPTERS = "SYMTRACE_ADAPTERS"  # "auto" or comma-separated names
ENV_SECRETS = "SYMTRACE_SECRET_VALUES_FROM"  # comma-separated env var names holding secrets
ENV_ALLOW_HOSTS = "SYMTRACE_ALLOW_HOSTS"  # replay: comma-separated --allow-host HOST[:PORT]


def start() -> None:
    mode = os.environ.pop(ENV_MODE, "")
    names = [n for n in os.environ.get(ENV_SECRETS, "").split(",") if n]
    redactor = Redactor.from_environment(names=names)
    names = os.environ.get(ENV_ADAPTERS, "auto")
    armed = adapter_registry.resolve(
        None if names == "auto" else [n for n in names.split(",") if n]
    )
    session: Session
    egress: EgressGuard | EgressRecorder
    if mode == "record":
        writer = BundleWriter.reopen(os.environ[ENV_BUNDLE], redactor=redactor)
        session = Recorder(writer, redactor)
        seed = writer.manifest["initial_state"]["random_seed"]
        egress = EgressRecorder()
        hand_back = _record_hand_back(session, writer, egress)
    elif mode == "replay":
        # the parent prints the whole report last; the program's traceback gets its headline
        ReplayDivergence.full_message = False
        bundle = load_bundle(os.environ[ENV_BUNDLE])
        child_dir = os.environ.get(ENV_CHILD_BUNDLE)
        writer = BundleWriter.reopen(child_dir, redactor=redactor) if child_dir else None
        session = Replayer(
            bundle,
            redactor,
            anchor=os.environ.get(ENV_ANCHOR) or None,
            guidance=os.environ.get(ENV_GUIDANCE),
            placement=os.environ.get(ENV_PLACEMENT, "user"),
            writer=writer,
            warnings=version_warnings(bundle.config.get("versions", {})),
        )
        seed = bundle.initial_state.get("random_seed")
        egress = guard_for(session, allow_from_env(os.environ.get(ENV_ALLOW_HOSTS, "")))
        hand_back = _replay_hand_back(session, writer, egress)
    else:
        raise RuntimeError(f"unknown {ENV_MODE} mode {mode!r}")
    activate(session)
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
        session.adapters_used = sorted(a.name for a in armed if a.adapter.installed)
        _warn_unarmed(adapter_registry.imported_unarmed(armed), mode)
        for adapter in reversed(armed):
            adapter.uninstall()
        http_boundary.finish_open_streams()
        http_boundary.uninstall()
        egress.uninstall()
        deactivate(session)
        hand_back()

    atexit.register(at_exit)
    _write_report({"status": "started"})


def _warn_unarmed(unarmed: list[tuple[str, str]], mode: str) -> None:
    """Say so when the program imported a framework whose adapter was not armed: its agents,
    lanes and tools went unseen (and tool bodies run live on replay). A warning, not a
    refusal: `--adapter` arms exactly what was asked, and a program may import a framework it
    runs no agents with."""
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


def _record_hand_back(session: Session, writer: BundleWriter, egress: EgressRecorder) -> Any:
    def hand_back() -> None:
        writer.close()
        _write_report(
            {
                "status": "recorded",
                "adapters_used": session.adapters_used,
                "has_final_value": session.has_final_value,
                "final_value": to_json_value(session.final_value),
                # the program may have caught the refusal: the parent must not keep the bundle
                "refused": unsupported_frameworks.refused(),
                "redaction_refused": session.refusal,
                # connections outside every seam, and LLM requests sent around them
                "unrecorded_egress": egress.to_json(),
                "egress_refused": egress.refused[0] if egress.refused else None,
            }
        )

    return hand_back


def _replay_hand_back(session: Replayer, writer: BundleWriter | None,
                      egress: EgressGuard) -> Any:
    def hand_back() -> None:
        report: dict[str, Any] = {
            "final_value": to_json_value(session.final_value),
            "has_final_value": session.has_final_value,
            "served": session.served_count,
            "live": session.live_count,
            "allowed_connections": egress.allowed_connections,
        }
        try:
            session.close()
        except ReplayDivergence as divergence:
            report.update(
                status="diverged",
                kind=type(divergence).__name__,
                report=divergence.report.to_json(),
                rendered=divergence.report.render(),
            )
        else:
            report["status"] = "replayed"
            if session.live_intervention is not None:
                report["lineage"] = session.lineage(os.environ[ENV_BUNDLE])
        if writer is not None:
            writer.close()
        _write_report(report)

    return hand_back


def _write_report(data: dict[str, Any]) -> None:
    path = os.environ.get(ENV_REPORT)
    if path:
        from pathlib import Path

        atomic_write(Path(path), orjson.dumps(data, option=orjson.OPT_SORT_KEYS))
