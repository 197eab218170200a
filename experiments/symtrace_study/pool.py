"""Where jobs run: in this process (`--workers 1`), a local process pool, or Ray.

Each executor yields result rows as jobs finish (any order); the caller writes them to the
log as they arrive. Every worker owns a `Worker` (environment + endpoint + launcher), created
once. Backends: `local` starts a fresh interpreter per attempt (cold), `warm` forks each
attempt from a per-worker server that imported the framework once (launch.py), `ray` runs
cold workers as Ray actors (a cluster when $RAY_ADDRESS is set).
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Iterator, Sequence
from typing import Any, Protocol

from symtrace_study.config import StudyConfig
from symtrace_study.endpoints import check_backend
from symtrace_study.errors import BackendUnavailable, StudyInterrupted
from symtrace_study.jobs import Job
from symtrace_study.worker import Worker

EXECUTORS = ("local", "warm", "ray")


class Executor(Protocol):
    def map(self, jobs: Sequence[Job]) -> Iterator[dict[str, Any]]: ...

    def close(self) -> None: ...

    def abort(self) -> None:
        """After SIGINT/SIGTERM: stop now; attempts in flight are dropped (never rows)."""


class InProcess:
    def __init__(self, config: StudyConfig, warm: bool = False) -> None:
        self._worker = Worker(config, warm=warm)

    def map(self, jobs: Sequence[Job]) -> Iterator[dict[str, Any]]:
        for job in jobs:
            yield self._worker.run(job)

    def close(self) -> None:
        self._worker.close()

    def abort(self) -> None:
        self._worker.close()


_WORKER: Worker | None = None


def _init(config: StudyConfig, warm: bool) -> None:
    global _WORKER
    from multiprocessing import util

    from symtrace_study.interrupt import install

    install()  # a signal ends the worker's attempt without a row, as in the parent
    _WORKER = Worker(config, warm=warm)
    # pool processes end with os._exit (no atexit); a Finalize with a priority still runs
    util.Finalize(_WORKER, _WORKER.close, exitpriority=10)


def _run(job: Job) -> dict[str, Any]:
    assert _WORKER is not None
    try:
        return _WORKER.run(job)
    except StudyInterrupted as exc:
        # the pool would hand an Exception back as the task's result and wait for the next
        # task: a worker that Pool.terminate() signalled mid-attempt would then never exit
        # and the runner would hang in join(). SystemExit ends the process (Finalize runs).
        raise SystemExit(exc.exit_code) from exc


class LocalPool:
    """N spawned processes (fork is unsafe with the parent's threads), one Worker each."""

    def __init__(self, config: StudyConfig, workers: int, warm: bool = False) -> None:
        ctx = multiprocessing.get_context("spawn")
        self._pool = ctx.Pool(workers, initializer=_init, initargs=(config, warm))

    def map(self, jobs: Sequence[Job]) -> Iterator[dict[str, Any]]:
        yield from self._pool.imap_unordered(_run, jobs)

    def close(self) -> None:
        self._pool.close()  # workers exit and run their Finalize cleanup
        self._pool.join()

    def abort(self) -> None:
        self._pool.terminate()  # SIGTERM to the workers: each stops its attempt, no rows
        self._pool.join()


class RayPool:
    """N Ray actors, one Worker each. `ray.init()` joins $RAY_ADDRESS if set (a cluster),
    else starts a local Ray with *workers* CPUs. *worker* and *args* give another actor class
    with `run(job)` and `close()` (`symtrace attribute --backend ray` runs its rollouts so);
    by default the study's `Worker(config)`."""

    def __init__(self, config: StudyConfig | None, workers: int, *,
                 worker: type[Any] = Worker, args: tuple[Any, ...] | None = None) -> None:
        try:
            import ray
            from ray.util import ActorPool
        except ImportError as exc:
            raise BackendUnavailable(
                "the ray backend needs the `ray` extra: pip install 'symtrace[ray]'") from exc
        self._ray = ray
        self._started = not ray.is_initialized()
        if self._started and os.environ.get("RAY_ADDRESS"):
            # joining a cluster: its nodes own their CPUs (Ray refuses num_cpus here)
            ray.init(log_to_driver=False)
        elif self._started:
            ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False,
                     ignore_reinit_error=True)
        actor = ray.remote(num_cpus=1)(worker)
        self._actors = [actor.remote(*(args if args is not None else (config,)))
                        for _ in range(workers)]
        self._pool = ActorPool(self._actors)

    def map(self, jobs: Sequence[Any]) -> Iterator[Any]:
        yield from self._pool.map_unordered(lambda a, job: a.run.remote(job), list(jobs))

    def close(self) -> None:
        self._ray.get([a.close.remote() for a in self._actors])
        for a in self._actors:
            self._ray.kill(a)
        if self._started:
            self._ray.shutdown()

    def abort(self) -> None:
        for a in self._actors:
            self._ray.kill(a)
        if self._started:
            self._ray.shutdown()


def open_executor(config: StudyConfig, workers: int, backend: str) -> Executor:
    check_backend(config.backend)
    if backend == "ray":
        return RayPool(config, workers)
    warm = backend == "warm"
    if workers <= 1:
        return InProcess(config, warm)
    return LocalPool(config, workers, warm)
