"""The writer process and crashes: a killed program loses nothing it sent, a killed writer is
an error at the program's next call, a refusal in the writer keeps nothing, a writer that
cannot start means inline, one writer process serves a process's recordings, forks refuse."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

import symtrace
from symtrace.bundle import load_bundle, verify_bundle
from symtrace.bundle.writer import wait_unlocked
from symtrace.errors import BundleWriteError, RedactionError, SessionError
from symtrace.model.redaction import Redactor
from symtrace.record import offload

FLOOD = str(Path(__file__).parent / "programs" / "offload_flood.py")
STEPS = 400  # tool calls sent faster than the writer applies them (two events each)


@symtrace.tool
def echo(data: object) -> str:
    return "ok"


def test_a_killed_program_leaves_every_event_it_sent(tmp_path):
    out = tmp_path / "b"
    done = subprocess.run([sys.executable, FLOOD, str(out), str(STEPS)], capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == -signal.SIGKILL, done.stderr
    assert done.stdout.strip() == str(STEPS)  # every tool result reached the program
    wait_unlocked(out)  # the writer process drains what the pipe held, then lets go
    bundle = load_bundle(out)
    assert not bundle.sealed and not bundle.complete
    assert len(bundle.events) == 2 * STEPS
    assert [e.id for e in bundle.events][-1] == f"tool_result_{STEPS - 1:04d}"


def test_a_recording_holds_its_bundle_from_its_start(tmp_path):
    """The writer process holds the bundle's lock before the session's first call: a program
    killed right after its first calls must not leave the bundle unlocked, frames still in the
    pipe, for a reader (wait_unlocked, `symtrace record`'s parent) to take before it drained."""
    with symtrace.record(tmp_path / "b"), pytest.raises(BundleWriteError):
        wait_unlocked(tmp_path / "b", timeout=0.2)


def test_a_killed_cli_program_is_sealed_after_its_writer_drained(tmp_path):
    out = tmp_path / "b"
    done = subprocess.run(
        [sys.executable, "-m", "symtrace", "record", "-o", str(out), "--", sys.executable,
         FLOOD, "-", str(STEPS)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 128 + signal.SIGKILL, done.stderr
    bundle = verify_bundle(out)
    assert bundle.sealed and not bundle.complete
    assert bundle.manifest["outcome"]["status"] == "killed"
    assert len(bundle.events) == 2 * STEPS


def test_a_killed_writer_process_fails_the_next_call_and_the_end(tmp_path):
    with pytest.raises(BundleWriteError) as ended, symtrace.record(tmp_path / "b"):
        echo(1)
        pid = offload.writer_process().pid
        os.kill(pid, signal.SIGKILL)
        with pytest.raises(BundleWriteError, match=f"pid {pid}.*exit code -9"):
            for _ in range(1000):  # the death is seen at the next send at the latest
                echo(2)
    assert f"pid {pid}" in str(ended.value)
    assert offload.writer_process().pid != pid  # the next recording gets a new one


def test_a_refusal_by_the_writers_last_check_keeps_nothing(tmp_path, monkeypatch):
    # a gap in redaction (simulated: the request side passes a secret through as it is)
    # reaches the writer, whose last check refuses it
    leak = {"data": "sk-" + "a1B2" * 8}
    for how in ("inline", "process"):
        out = tmp_path / how
        with pytest.raises(RedactionError), symtrace.record(out, writer=how):
            try:
                with monkeypatch.context() as gap:
                    gap.setattr(Redactor, "scrub", lambda self, value, strings=None: value)
                    echo(leak)
            except RedactionError:
                pass  # the program swallows it (inline: raised here; process: later)
            echo(2)
        assert not out.exists(), how


def test_a_writer_that_cannot_start_means_inline_with_a_warning(tmp_path, monkeypatch):
    offload.end_writer_processes()
    monkeypatch.setattr(offload.sys, "executable", str(tmp_path / "no-python"))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with symtrace.record(tmp_path / "b") as handle:
            echo(1)
    assert any("recording inline" in str(w.message) for w in caught)
    assert type(handle.session.sink).__name__ == "InlineRecording"
    assert len(verify_bundle(tmp_path / "b").events) == 3


def test_one_writer_process_serves_sequential_recordings(tmp_path):
    pids = []
    for name in ("a", "b"):
        with symtrace.record(tmp_path / name) as handle:
            echo(name)
            pids.append(handle.session.sink.process.pid)
    assert pids[0] == pids[1]
    assert all(verify_bundle(tmp_path / n).complete for n in ("a", "b"))
    assert offload.writer_cpu_seconds() > 0


def test_a_forked_child_refuses_to_record_into_its_parents_pipe(tmp_path):
    with symtrace.record(tmp_path / "b"):
        echo(1)
        pid = os.fork()
        if pid == 0:  # the child: its boundary call must refuse, never write
            try:
                echo(2)
            except SessionError:
                os._exit(7)
            os._exit(0)
        _, status = os.waitpid(pid, 0)
        echo(3)
    assert os.waitstatus_to_exitcode(status) == 7
    events = verify_bundle(tmp_path / "b").events
    assert [e.id for e in events if e.type.value == "tool_call"] == [
        "tool_call_0000", "tool_call_0001"]


def test_a_cli_recording_whose_writer_died_is_sealed_incomplete_and_fails(tmp_path):
    out = tmp_path / "b"
    done = subprocess.run(
        [sys.executable, "-m", "symtrace", "record", "-o", str(out), "--", sys.executable,
         str(Path(__file__).parent / "programs" / "offload_writer_killed.py")],
        capture_output=True, text=True, timeout=300)
    assert "caught: BundleWriteError" in done.stdout
    assert done.returncode == BundleWriteError.exit_code, done.stderr
    assert "writer process (pid" in done.stderr and "sealed incomplete" in done.stderr
    bundle = verify_bundle(out)
    assert bundle.sealed and not bundle.complete
    assert "writer process failed" in bundle.manifest["outcome"]["error"]
