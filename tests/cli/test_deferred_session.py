"""The instrumented process starts its session when a boundary hook first imports the session
core (symtrace.process.child.Deferred). A program that never does so is still held to the
recording: a strict replay that makes none of the recorded calls fails with MissingCall, and
a connection it opens is refused by the egress guard, reported against the recording."""

from __future__ import annotations

import socket
import sys

from tests.cli.conftest import run_cli

PROGRAM = """\
import os, sys
if os.environ.get("CONNECT"):
    import socket
    socket.create_connection(("127.0.0.1", int(os.environ["CONNECT"])), timeout=5)
elif not os.environ.get("SKIP"):
    import symtrace

    @symtrace.tool
    def lookup(city):
        return city.upper()

    print(lookup("lisbon"))
print("done")
"""


def _record(tmp_path):
    (tmp_path / "prog.py").write_text(PROGRAM)
    done = run_cli("record", "-o", str(tmp_path / "b"), "--", sys.executable, "prog.py",
                   cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "recorded 3 events" in done.stderr  # tool call, tool result, final result


def test_a_replay_that_never_starts_its_session_still_misses_the_recorded_calls(tmp_path):
    _record(tmp_path)
    assert run_cli("replay", str(tmp_path / "b"), "--trust", cwd=tmp_path).returncode == 0
    done = run_cli("replay", str(tmp_path / "b"), "--trust", "--set-env", "SKIP=1",
                   cwd=tmp_path)
    assert done.returncode == 90, done.stderr
    assert "SYM-R103" in done.stderr and "tool_call_0000" in done.stderr, done.stderr


def test_a_connection_before_the_session_starts_is_refused_as_a_divergence(tmp_path):
    _record(tmp_path)
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        done = run_cli("replay", str(tmp_path / "b"), "--trust", "--set-env",
                       f"CONNECT={port}", "--quiet", cwd=tmp_path)
    assert done.returncode == 90, done.stderr
    assert "SYM-R106" in done.stderr, done.stderr
    assert f"127.0.0.1:{port}" in done.stderr


def test_a_session_that_cannot_start_late_stops_the_program(tmp_path):
    """Made at the first boundary hook, a session that fails (here: its bundle's manifest is
    gone) ends the program at once with exit 94, as a failing bootstrap does: it never runs
    on uninstrumented."""
    (tmp_path / "prog.py").write_text(
        "import os\n"
        "from symtrace.process import child\n"
        "os.remove(os.path.join(child.bundle_dir, 'manifest.json'))\n"
        "import symtrace.session.core\n"
        "print('went on')\n")
    done = run_cli("record", "-o", str(tmp_path / "b"), "--", sys.executable, "prog.py",
                   cwd=tmp_path)
    assert "symtrace: cannot instrument this process" in done.stderr, done.stderr
    assert "went on" not in done.stdout
    assert done.returncode != 0
