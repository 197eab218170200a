"""How a worker starts the MAS program of an attempt: cold (a fresh interpreter per attempt,
today's way) or warm (a fork of a server that imported the framework once).

A launcher rewrites the MAS argv before `record_command` / `replay_bundle` run it, and adds
environment variables. The warm one wraps `python -m MODULE ...` as
`python -S warm_client.py python -m MODULE ...`; the client asks MODULE's fork server
(started on first use, one per module and worker) for a forked run and falls back to running
the program itself. Anything else (a script, another interpreter) runs cold.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

CLIENT = Path(__file__).with_name("warm_client.py")
ENV_DIR = "SYMTRACE_WARM_DIR"
READY_TIMEOUT = 180.0  # importing CrewAI on a loaded 2-core machine takes a while


class Launcher(Protocol):
    def wrap(self, argv: Sequence[str]) -> list[str]: ...

    def env(self) -> dict[str, str]: ...

    def close(self) -> None: ...

    @staticmethod
    def unwrap(argv: Sequence[str]) -> list[str]: ...


def unwrap(argv: Sequence[str]) -> list[str]:
    """The program a (possibly warm-wrapped) recorded argv stands for."""
    argv = list(argv)
    if len(argv) >= 3 and argv[1] == "-S" and Path(argv[2]).name == CLIENT.name:
        return argv[3:]
    return argv


class ColdLauncher:
    unwrap = staticmethod(unwrap)

    def wrap(self, argv: Sequence[str]) -> list[str]:
        return unwrap(argv)

    def env(self) -> dict[str, str]:
        return {}

    def close(self) -> None:
        pass


def cold_launcher() -> ColdLauncher:
    return ColdLauncher()


class WarmLauncher:
    """Fork servers in a private directory, started lazily, one per MAS module."""

    unwrap = staticmethod(unwrap)

    def __init__(self, env: dict[str, str]) -> None:
        self._dir = Path(tempfile.mkdtemp(prefix="symtrace-warm-"))
        self._env = env  # what the servers import under (telemetry off, hash seed)
        self._servers: dict[str, subprocess.Popen[bytes]] = {}
        self.refusals: dict[str, str] = {}

    def wrap(self, argv: Sequence[str]) -> list[str]:
        argv = unwrap(argv)
        if len(argv) < 3 or argv[0] not in ("python", "python3", sys.executable) or argv[1] != "-m":
            return argv
        self._ensure(argv[2])
        return ["python", "-S", str(CLIENT), *argv]

    def env(self) -> dict[str, str]:
        return {ENV_DIR: str(self._dir)}

    def _ensure(self, module: str) -> None:
        proc = self._servers.get(module)
        if proc is not None and proc.poll() is None:
            return
        from symtrace.process.runner import BOOTSTRAP_DIR, PACKAGE_ROOT

        ready = self._dir / f"{module}.ready"
        sock = self._dir / f"{module}.sock"
        ready.unlink(missing_ok=True)
        sock.unlink(missing_ok=True)
        paths = [str(BOOTSTRAP_DIR), str(PACKAGE_ROOT)]
        if os.environ.get("PYTHONPATH"):
            paths.append(os.environ["PYTHONPATH"])
        env = {k: v for k, v in os.environ.items() if not k.startswith("SYMTRACE_")}
        env.update(self._env, PYTHONPATH=os.pathsep.join(paths))
        log = (self._dir / f"{module}.log").open("ab")
        proc = subprocess.Popen(
            [sys.executable, "-m", "symtrace_study.warm_server", "--module", module,
             "--socket", str(sock), "--ready-file", str(ready)],
            stdin=subprocess.DEVNULL, stdout=log, stderr=log, env=env)
        log.close()
        deadline = time.monotonic() + READY_TIMEOUT
        while not ready.exists():
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                self.refusals[module] = "the fork server did not start: attempts run cold"
                return  # the client finds no socket and runs the program itself
            time.sleep(0.05)
        import json

        refusal = json.loads(ready.read_text()).get("refusal")
        if refusal:
            self.refusals[module] = refusal
        self._servers[module] = proc

    def close(self) -> None:
        for proc in self._servers.values():
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(10)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
        self._servers.clear()
        shutil.rmtree(self._dir, ignore_errors=True)
