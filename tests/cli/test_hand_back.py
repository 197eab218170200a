"""A child that hands back a message of another protocol version (symtrace.process.protocol):
`symtrace record` and `symtrace replay` stop with exit 94 and the reason, and keep nothing
of the run (no bundle, no child bundle, no report)."""

from __future__ import annotations

from pathlib import Path

from symtrace.errors import EXIT_ADAPTER

from .conftest import PROGRAMS, run_cli

PROGRAM = str(PROGRAMS / "foreign_protocol.py")


def test_a_recording_handed_back_in_another_protocol_is_not_kept(tmp_path: Path):
    bundle = tmp_path / "b"
    done = run_cli("record", "-o", str(bundle), "--", "python", PROGRAM,
                   env={"FOREIGN_PROTOCOL": "7"})
    assert done.returncode == EXIT_ADAPTER, done.stderr
    assert "protocol version 7, this symtrace speaks 1" in done.stderr
    assert "Traceback" not in done.stderr
    assert not bundle.exists()


def test_a_replay_handed_back_in_another_protocol_is_not_verified(tmp_path: Path):
    bundle = tmp_path / "b"
    done = run_cli("record", "-o", str(bundle), "--", "python", PROGRAM)
    assert done.returncode == 0, done.stderr
    report = tmp_path / "report.json"
    replayed = run_cli("replay", str(bundle), "--report-json", str(report),
                       "--set-env", "FOREIGN_PROTOCOL=0")
    assert replayed.returncode == EXIT_ADAPTER, replayed.stderr
    assert "hand-back: protocol version 0" in replayed.stderr
    assert not report.exists()
    again = run_cli("replay", str(bundle))  # the same bundle, the same symtrace: verified
    assert again.returncode == 0, again.stderr
