"""A worker: its own services process, its own LLM endpoint, running jobs one at a time.

The sequential runner, each process of the local pool and each Ray actor hold one Worker, so
attempts are isolated the same way everywhere (own ports, own service state, own bundles).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson

from symtrace_study.config import StudyConfig
from symtrace_study.errors import StudyError
from symtrace_study.jobs import Job

READY_TIMEOUT = 60.0


class ServicesProcess:
    """`python -m symtrace_suite.services --ready-file F` on ephemeral loopback ports."""

    def __init__(self) -> None:
        self._dir = Path(tempfile.mkdtemp(prefix="symtrace-study-"))
        ready = self._dir / "ready.json"
        self._log = (self._dir / "services.log").open("wb")
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "symtrace_suite.services", "--ready-file", str(ready)],
            stdout=self._log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + READY_TIMEOUT
        while not ready.exists():
            if self._proc.poll() is not None or time.monotonic() > deadline:
                self.close()
                raise StudyError("the suite services did not start; see "
                                 f"{self._dir / 'services.log'}")
            time.sleep(0.05)
        self.urls: dict[str, str] = orjson.loads(ready.read_bytes())["urls"]

    def close(self) -> None:
        if self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        self._log.close()
        shutil.rmtree(self._dir, ignore_errors=True)


class Worker:
    def __init__(self, config: StudyConfig) -> None:
        from symtrace_suite.services import remote_reset, remote_state

        from symtrace_study.attempts import AttemptRunner
        from symtrace_study.endpoints import open_endpoint

        self._services = ServicesProcess()
        try:
            self._endpoint = open_endpoint(config.backend)
        except BaseException:
            self._services.close()
            raise
        self._runner = AttemptRunner(config, self._endpoint, self._services.urls,
                                     remote_reset, remote_state)

    def run(self, job: Job) -> dict[str, Any]:
        return self._runner.run(job)

    def close(self) -> None:
        self._endpoint.close()
        self._services.close()
