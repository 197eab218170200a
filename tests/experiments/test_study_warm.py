"""Issue 22, point 8: the warm backend (a fork server per MAS module and worker) only forks
from a state that is safe to fork, falls back to running the program itself, and leaves
bundles that replay without it. (Warm rows == cold rows: test_study_plugin.py, which shares
the cold toy study.)"""

from __future__ import annotations

import os
import subprocess
import sys

from symtrace_study.launch import CLIENT, ColdLauncher, WarmLauncher


def test_launchers_wrap_only_python_modules():
    cold = ColdLauncher()
    argv = ["python", "-m", "pkg.mas", "--task", "t"]
    assert cold.wrap(argv) == argv and cold.env() == {}
    warm = WarmLauncher({"PYTHONHASHSEED": "0"})
    try:
        assert warm.wrap(["./my_mas", "--task", "t"]) == ["./my_mas", "--task", "t"]
        assert cold.wrap(["python", "-S", str(CLIENT), *argv]) == argv  # replays run cold
    finally:
        warm.close()


def test_the_client_runs_the_program_itself_when_no_server_answers(tmp_path):
    env = {**os.environ, "SYMTRACE_WARM_DIR": str(tmp_path)}  # no socket there
    proc = subprocess.run([sys.executable, "-S", str(CLIENT), "python", "-c",
                           "import sys; print('cold', sys.flags.no_site); sys.exit(3)"],
                          env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 3 and proc.stdout.strip() == "cold 0"


def test_a_warm_fork_runs_the_module_and_declines_another_hash_seed(tmp_path):
    launcher = WarmLauncher({"PYTHONHASHSEED": "0"})
    try:
        argv = launcher.wrap(["python", "-m", "symtrace_study.plain_mas", "--task", "nope"])
        assert argv[:3] == ["python", "-S", str(CLIENT)] and not launcher.refusals
        argv[0] = sys.executable
        base = {**os.environ, **launcher.env(), "OPENAI_BASE_URL": "http://127.0.0.1:9",
                "SYMTRACE_SUITE_URLS": '{"shop":"a","wiki":"b","route":"c"}'}
        warm = subprocess.run(argv, env={**base, "PYTHONHASHSEED": "0"}, capture_output=True,
                              text=True, timeout=120)
        assert warm.returncode == 2 and "unknown task id 'nope'" in warm.stderr  # it ran
        other = subprocess.run(argv, env={**base, "PYTHONHASHSEED": "7"}, capture_output=True,
                               text=True, timeout=120)
        assert other.returncode == 2 and "unknown task id 'nope'" in other.stderr  # cold
        log = next(launcher._dir.glob("*.log")).read_text()
        assert "not forking" not in log
    finally:
        launcher.close()


UNSAFE_PROBE = """
import socket, threading
from symtrace_study.warm_server import unsafe_state
listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
print(unsafe_state(listener))
stop = threading.Event()
thread = threading.Thread(target=stop.wait, name="telemetry", daemon=True)
thread.start()
print(unsafe_state(listener))
stop.set(); thread.join()
other = socket.socket()
print(unsafe_state(listener))
"""


def test_the_server_refuses_to_fork_with_live_state():
    """Run in a fresh interpreter: the test process itself holds sockets of other tests."""
    proc = subprocess.run([sys.executable, "-c", UNSAFE_PROBE], capture_output=True, text=True,
                          timeout=120)
    clean, threaded, with_socket = proc.stdout.splitlines()
    assert clean == "None"
    assert "threads running" in threaded and "telemetry" in threaded
    assert "open sockets" in with_socket


def test_a_server_dying_mid_attempt_is_an_infrastructure_fault_not_a_second_run():
    """Once the fork has started, the client must not run the program again (it would write
    the same bundle twice): it exits 75 instead."""
    launcher = WarmLauncher({"PYTHONHASHSEED": "0"})
    try:
        argv = launcher.wrap(["python", "-m", "tests.experiments.warm_probe", "--kill-server"])
        argv[0] = sys.executable
        env = {**os.environ, **launcher.env(), "PYTHONHASHSEED": "0"}
        proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)
        assert proc.returncode == 75, (proc, launcher.refusals)  # the probe never kills us
        assert proc.stdout.count("ran") == 1 and "fork server died" in proc.stderr
    finally:
        launcher.close()
