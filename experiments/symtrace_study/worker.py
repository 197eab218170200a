"""A worker: its own environment (the benchmark's services), its own LLM endpoint, its own
launcher, running jobs one at a time.

The sequential runner, each process of the local pool and each Ray actor hold one Worker, so
attempts are isolated the same way everywhere (own ports, own service state, own bundles).
"""

from __future__ import annotations

from typing import Any

from symtrace_study.config import StudyConfig
from symtrace_study.errors import StudyError
from symtrace_study.jobs import Job


class Worker:
    def __init__(self, config: StudyConfig, *, warm: bool = False) -> None:
        from symtrace_study.attempts import HASH_SEED, QUIET_ENV, AttemptRunner
        from symtrace_study.endpoints import open_endpoint
        from symtrace_study.launch import ColdLauncher, WarmLauncher

        benchmark = config.load_benchmark()
        try:
            self._environment = benchmark.open_environment()
        except Exception as exc:
            raise StudyError(f"benchmark {benchmark.name}: the environment did not start: "
                             f"{type(exc).__name__}: {exc}") from exc
        try:
            self._endpoint = open_endpoint(config.backend, benchmark)
        except BaseException:
            self._environment.close()
            raise
        self._launcher = (WarmLauncher({**QUIET_ENV, "PYTHONHASHSEED": HASH_SEED}) if warm
                          else ColdLauncher())
        self._runner = AttemptRunner(config, self._endpoint, self._environment, benchmark,
                                     self._launcher)

    def run(self, job: Job) -> dict[str, Any]:
        return self._runner.run(job)

    def close(self) -> None:
        self._launcher.close()
        self._endpoint.close()
        self._runner.environment.close()
