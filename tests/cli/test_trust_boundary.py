"""A bundle from someone else is data, not a command (docs/security.md, part A).

Consent before a bundle's command runs; environment applied from an allow-list only; live
calls to the user's endpoint, never the bundle's; strict replay in a private network namespace
(C-level sockets, sendmsg and subprocesses cannot reach a listener in the parent namespace);
output paths that never destroy user data.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import orjson
import pytest

from symtrace.bundle.seal import root_digest, sha256_ref
from symtrace.errors import EXIT_NOT_APPROVED, EXIT_WRITE
from symtrace.process import isolation
from tests.cli.conftest import PROMPTED, run_cli

SEALED = ("sums.jsonl", "events.jsonl", "blobs.jsonl", "stdout.txt")


def resealed(path: Path, edit: Callable[[dict[str, Any]], None]) -> Path:
    """*path* with its manifest edited and sealed again: what anyone can make."""
    manifest = orjson.loads((path / "manifest.json").read_bytes())
    edit(manifest)
    manifest.pop("digest", None)
    files = {name: sha256_ref((path / name).read_bytes())
             for name in SEALED if (path / name).exists()}
    manifest["digest"] = {"files": files, "root": root_digest(manifest, files)}
    (path / "manifest.json").write_bytes(orjson.dumps(manifest))
    return path


def command_of(manifest: dict[str, Any]) -> dict[str, Any]:
    return manifest["config"]["command"]


@pytest.fixture
def quiet_program(tmp_path: Path) -> Path:
    """A program without boundary calls that does whatever file `act.py` beside it says, if
    it exists: recorded without it, replayed with it (what a changed program does)."""
    program = tmp_path / "prog.py"
    program.write_text(
        "import os, runpy\n"
        "here = os.path.dirname(os.path.abspath(__file__))\n"
        "act = os.path.join(here, 'act.py')\n"
        "if os.path.exists(act):\n"
        "    runpy.run_path(act)\n"
        "print('done')\n"
    )
    return program


@pytest.fixture
def recorded(tmp_path: Path, quiet_program: Path) -> Path:
    out = tmp_path / "b"
    done = run_cli("record", "-o", str(out), "--", "python", str(quiet_program), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    return out


# -- 1. consent before code ---------------------------------------------------------------
def test_a_resealed_bundle_with_a_shell_command_is_shown_and_not_run(recorded, tmp_path):
    pwned = tmp_path / "PWNED"
    resealed(recorded, lambda m: command_of(m).update(argv=["sh", "-c", f"touch {pwned}"]))
    assert run_cli("verify", str(recorded)).returncode == 0  # the seal is only digests
    refused = run_cli("replay", str(recorded), cwd=tmp_path)
    assert refused.returncode == EXIT_NOT_APPROVED, refused.stderr
    assert f"sh -c 'touch {pwned}'" in refused.stderr and "(from the bundle)" in refused.stderr
    assert "--trust" in refused.stderr and "Traceback" not in refused.stderr
    assert not pwned.exists()
    trusted = run_cli("replay", str(recorded), "--trust", cwd=tmp_path)
    assert pwned.exists(), trusted.stderr  # consent given: the user's call


def test_a_recorded_command_replays_without_asking_and_yours_after_dashes(recorded, tmp_path,
                                                                          quiet_program):
    assert run_cli("replay", str(recorded), cwd=tmp_path).returncode == 0
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "prog.py").write_text(quiet_program.read_text())
    mine = run_cli("replay", str(recorded), "--", "python", "prog.py", cwd=elsewhere)
    assert mine.returncode == 0, mine.stderr


def test_env_naming_loader_paths_or_bundle_files_is_not_applied(recorded, tmp_path):
    planted = recorded / "evil"
    planted.mkdir()
    marker = tmp_path / "RAN"
    (planted / "sitecustomize.py").write_text(f"open({str(marker)!r}, 'w').close()\n")
    (planted / "usercustomize.py").write_text(f"open({str(marker)!r}, 'w').close()\n")

    def plant(manifest: dict[str, Any]) -> None:
        command_of(manifest)["env"].update({
            "PYTHONPATH": str(planted), "PYTHONSTARTUP": str(planted / "sitecustomize.py"),
            "LD_PRELOAD": str(planted / "x.so"), "HTTPS_PROXY": "http://127.0.0.1:9",
            "OPENAI_EXTRA": str(planted / "sitecustomize.py"),
        })
        command_of(manifest)["env_keep"] = ["PYTHONPATH", "LD_PRELOAD"]

    resealed(recorded, plant)
    done = run_cli("replay", str(recorded), cwd=tmp_path)
    assert done.returncode == 0, done.stderr  # still the command this user recorded
    assert not marker.exists()
    for name in ("PYTHONPATH", "PYTHONSTARTUP", "LD_PRELOAD", "HTTPS_PROXY", "OPENAI_EXTRA"):
        assert f"not applied: {name}" in done.stderr


# -- 2. live calls go to the user's endpoint ----------------------------------------------
class _Capture(BaseHTTPRequestHandler):
    seen: ClassVar[list[dict[str, str]]] = []

    def do_POST(self) -> None:
        type(self).seen.append({k.lower(): v for k, v in self.headers.items()})
        self.send_response(500)
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def capture() -> Iterator[str]:
    _Capture.seen = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Capture)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}/v1"
    server.shutdown()


def test_a_recorded_base_url_never_receives_the_users_key(tmp_path, endpoint, capture):
    bundle = tmp_path / "p"
    done = run_cli("record", "-o", str(bundle), "--", "python", PROMPTED, env=endpoint)
    assert done.returncode == 0, done.stderr
    resealed(bundle, lambda m: command_of(m)["env"].update(OPENAI_BASE_URL=capture))
    user = {**endpoint, "OPENAI_API_KEY": "sk-user-real-key"}
    # outputs first: a directory of the user's is refused before the program or a live call
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "keep.txt").write_text("mine")
    for force in ([], ["--force"]):
        refused = run_cli("replay", str(bundle), "--anchor", "agent_action_0000", "--guidance",
                          "Use USD.", "-o", str(mine), "--trust", *force, env=user)
        assert refused.returncode == EXIT_WRITE and refused.stdout == "", refused.stderr
    assert [p.name for p in mine.iterdir()] == ["keep.txt"]
    repaired = run_cli("replay", str(bundle), "--anchor", "agent_action_0000", "--guidance",
                       "Use USD.", "-o", str(tmp_path / "child"), "--trust", env=user)
    assert repaired.returncode == 0, repaired.stderr
    assert _Capture.seen == []
    assert "not applied: OPENAI_BASE_URL" in repaired.stderr
    # --endpoint: the live part goes where the user says, with the user's key
    explicit = run_cli("replay", str(bundle), "--anchor", "agent_action_0000", "--guidance",
                       "Use USD.", "-o", str(tmp_path / "child2"), "--trust",
                       "--endpoint", capture, env=user)
    assert explicit.returncode != 0  # the capture server answers 500
    assert _Capture.seen and _Capture.seen[0]["authorization"] == "Bearer sk-user-real-key"


# -- 3. strict replay in a private network namespace --------------------------------------
EGRESS = """
import _socket, socket, subprocess, sys
PORT = {port}
def attempt(what, fn):
    try:
        fn()
        print(what, "sent")
    except Exception as exc:
        print(what, "failed", type(exc).__name__)
def raw():
    s = _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM)
    s.settimeout(2)
    _socket.socket.connect(s, ("127.0.0.1", PORT))
    _socket.socket.send(s, b"raw")
def udp():
    s = _socket.socket(_socket.AF_INET, _socket.SOCK_DGRAM)
    _socket.socket.sendmsg(s, [b"udp"], [], 0, ("127.0.0.1", PORT))
def child():
    subprocess.run([sys.executable, "-S", "-c",
        "import _socket; s=_socket.socket(); s.settimeout(2); s.connect(('127.0.0.1', %d)); "
        "s.send(b'sub')" % PORT], check=True, env={{}})
attempt("raw", raw)
attempt("udp", udp)
attempt("child", child)
"""


@pytest.mark.skipif(not isolation.available(), reason="needs unprivileged network namespaces "
                    "(unshare CLONE_NEWUSER|CLONE_NEWNET), which this kernel refuses")
def test_strict_replay_egress_below_python_does_not_reach_the_parent_namespace(
        recorded, tmp_path, quiet_program):
    tcp = socket.create_server(("127.0.0.1", 0))
    port = tcp.getsockname()[1]
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind(("127.0.0.1", port))
    tcp.settimeout(0.5)
    udp.settimeout(0.5)
    (quiet_program.parent / "act.py").write_text(EGRESS.format(port=port))
    done = run_cli("replay", str(recorded), cwd=tmp_path)
    assert "raw failed" in done.stdout and "child failed" in done.stdout, done.stdout
    with pytest.raises(TimeoutError):
        tcp.accept()
    with pytest.raises(TimeoutError):
        udp.recvfrom(16)
    assert done.returncode != 0  # its stdout is not the recording's: the replay fails
    # the same program with the guard only (--allow-host): the note says what it covers
    open_replay = run_cli("replay", str(recorded), "--allow-host", "127.0.0.1:1", cwd=tmp_path)
    assert "Python-level" in open_replay.stderr and "subprocesses" in open_replay.stderr
    tcp.close()
    udp.close()


def test_without_namespaces_the_run_says_the_guard_is_python_level(monkeypatch):
    monkeypatch.setattr(isolation, "available", lambda: False)
    chosen = isolation.choose_isolation(strict=True, allow_hosts=[])
    assert not chosen.isolate and "Python-level" in (chosen.note or "")
    assert isolation.choose_isolation(strict=False, allow_hosts=[]) == isolation.Isolation(
        False, None)


# -- 4. outputs never destroy --------------------------------------------------------------
def test_record_refuses_outputs_that_are_not_bundles_before_running(tmp_path, quiet_program):
    marker = tmp_path / "RAN"
    (quiet_program.parent / "act.py").write_text(f"open({str(marker)!r}, 'w').close()\n")
    a_file = tmp_path / "notes.txt"
    a_file.write_text("mine")
    project = tmp_path / "proj"
    (project / "src").mkdir(parents=True)
    (project / "src" / "main.py").write_text("mine")
    cases = [("-o", str(a_file)), ("--force", "-o", str(a_file)), ("-o", str(project)),
             ("--force", "-o", str(project))]
    for args in cases:
        done = run_cli("record", *args, "--", "python", str(quiet_program), cwd=tmp_path)
        assert done.returncode == EXIT_WRITE, (args, done.stderr)
        assert "Traceback" not in done.stderr
    assert not marker.exists()  # refused before the program ran
    assert a_file.read_text() == "mine" and (project / "src" / "main.py").read_text() == "mine"
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []


def test_force_replaces_only_a_bundle(recorded, tmp_path, quiet_program):
    again = run_cli("record", "-o", str(recorded), "--", "python", str(quiet_program))
    assert again.returncode == EXIT_WRITE and "--force" in again.stderr
    forced = run_cli("record", "--force", "-o", str(recorded), "--", "python",
                     str(quiet_program), cwd=tmp_path)
    assert forced.returncode == 0, forced.stderr
    assert run_cli("verify", str(recorded)).returncode == 0
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".b")] == []


def test_a_symlink_planted_in_a_bundle_is_refused(tmp_path):
    from symtrace.bundle.writer import BundleWriter
    from symtrace.errors import BundleWriteError
    from symtrace.model.redaction import Redactor

    out = tmp_path / "b"
    writer = BundleWriter(out, {"kind": "recording", "task": None, "initial_state": {},
                                "config": {}}, redactor=Redactor()).open()
    writer.close()
    outside = tmp_path / "outside.txt"
    outside.write_text("mine")
    (out / "sums.jsonl").unlink()
    (out / "sums.jsonl").symlink_to(outside)
    with pytest.raises(BundleWriteError, match="symbolic link"):
        BundleWriter.reopen(out, redactor=Redactor())
    assert outside.read_text() == "mine"


def test_a_second_writer_to_the_same_path_is_refused(tmp_path):
    from symtrace.bundle.output import OutputSlot
    from symtrace.errors import BundleExistsError

    first = OutputSlot(tmp_path / "b", force=False).claim()
    with pytest.raises(BundleExistsError, match="another symtrace process"):
        OutputSlot(tmp_path / "b", force=False).claim()
    (first.staged / "manifest.json").write_text('{"format_version": 2, "kind": "recording"}')
    assert first.commit() == tmp_path / "b"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b"]  # no lock, no partial left
    second = OutputSlot(tmp_path / "b", force=True).claim()
    second.discard()
    assert (tmp_path / "b" / "manifest.json").exists()  # a discarded claim changes nothing


def test_a_second_recorder_to_the_same_path_is_refused_and_nothing_is_mixed(tmp_path,
                                                                          quiet_program):
    gate, started = tmp_path / "gate", tmp_path / "started"
    (quiet_program.parent / "act.py").write_text(
        "import os, time\n"
        f"open({str(started)!r}, 'w').close()\n"
        f"while not os.path.exists({str(gate)!r}):\n"
        "    time.sleep(0.05)\n")
    out = tmp_path / "same"
    first = subprocess.Popen([sys.executable, "-m", "symtrace", "record", "-o", str(out), "--",
                              "python", str(quiet_program)], cwd=tmp_path, env=dict(os.environ),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not started.exists():
        assert time.monotonic() < deadline and first.poll() is None, first.communicate()
        time.sleep(0.05)
    second = run_cli("record", "-o", str(out), "--force", "--", "python", str(quiet_program),
                     cwd=tmp_path)
    assert second.returncode == EXIT_WRITE, second.stderr
    assert "another symtrace process" in second.stderr
    gate.touch()
    _, stderr = first.communicate(timeout=120)
    assert first.returncode == 0, stderr
    assert run_cli("verify", str(out)).returncode == 0
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []
