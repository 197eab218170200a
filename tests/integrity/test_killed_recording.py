"""A killed program loses nothing it received: each event is written before its call returns
(docs/recording-process.md), and the bundle is locked from the recording's start."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest

import symtrace
from symtrace.bundle import load_bundle, verify_bundle
from symtrace.bundle.writer import wait_unlocked
from symtrace.errors import BundleWriteError

FLOOD = str(Path(__file__).parent / "programs" / "flood.py")
STEPS = 400  # tool calls, two events each, then SIGKILL


def test_a_killed_program_leaves_every_event_it_received(tmp_path):
    out = tmp_path / "b"
    done = subprocess.run([sys.executable, FLOOD, str(out), str(STEPS)], capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == -signal.SIGKILL, done.stderr
    assert done.stdout.strip() == str(STEPS)  # every tool result reached the program
    wait_unlocked(out, timeout=0)  # the killed process held the lock; nothing else does
    bundle = load_bundle(out)
    assert not bundle.sealed and not bundle.complete
    assert len(bundle.events) == 2 * STEPS
    assert [e.id for e in bundle.events][-1] == f"tool_result_{STEPS - 1:04d}"


def test_a_recording_holds_its_bundle_from_its_start(tmp_path):
    """A reader (`symtrace record`'s parent, wait_unlocked) must not take a bundle a
    recording is still writing."""
    with symtrace.record(tmp_path / "b"), pytest.raises(BundleWriteError):
        wait_unlocked(tmp_path / "b", timeout=0.2)


def test_a_killed_cli_program_is_sealed_with_every_event_it_received(tmp_path):
    out = tmp_path / "b"
    done = subprocess.run(
        [sys.executable, "-m", "symtrace", "record", "-o", str(out), "--", sys.executable,
         FLOOD, "-", str(STEPS)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 128 + signal.SIGKILL, done.stderr
    bundle = verify_bundle(out)
    assert bundle.sealed and not bundle.complete
    assert bundle.manifest["outcome"]["status"] == "killed"
    assert len(bundle.events) == 2 * STEPS
