"""Where the rollouts of an attribution run (`symtrace attribute --backend`).

* `threads` (default): `jobs` threads here, each waiting on its own replayed child process.
* `warm`: the same threads, but a program recorded as `python -m MODULE ...` starts as a fork
  of a server that imported MODULE (and its framework) once — the study's warm launcher
  (`symtrace_study.launch.WarmLauncher`), one fork server per thread, as one per study worker.
  Any other command runs cold, as the study does.
* `ray`: `jobs` Ray actors (`symtrace_study.pool.RayPool`: a local Ray, or the cluster at
  $RAY_ADDRESS), each a `RolloutWorker` running cold replays.

Every backend runs the same selective replays (`attribution_run.run_rollout`), so the results
are the same; only wall time differs. The study's machinery is imported only when its backend
is chosen (experiments/symtrace_study ships in symtrace's wheel; `ray` is the `ray` extra).
"""

from __future__ import annotations

import os
import queue
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from symtrace.diagnosis.attribution import Rollout, RolloutResult
from symtrace.diagnosis.errors import DiagnosisConfigError

if TYPE_CHECKING:
    from symtrace.diagnosis.attribution_run import RunOptions

BACKENDS = ("threads", "warm", "ray")
Runner = Callable[[str, Rollout, bool, "RunOptions"], RolloutResult]


def check_backend(backend: str) -> None:
    """Refuse, before anything is written, a backend that is unknown or not installed."""
    if backend not in BACKENDS:
        raise DiagnosisConfigError(f"--backend {backend!r}: choose one of {', '.join(BACKENDS)}")
    if backend == "ray":
        try:
            import ray  # noqa: F401 -- only whether the extra is installed
        except ImportError:
            raise DiagnosisConfigError(
                "--backend ray needs the `ray` extra: pip install 'symtrace[ray]'") from None


class RolloutWorker:
    """Runs rollouts of one bundle one at a time, with its own launcher: what a thread of the
    warm backend or a Ray actor holds (the study's worker protocol: `run`, `close`)."""

    def __init__(self, bundle_path: str, hold_tools: bool, options: RunOptions,
                 runner: Runner, warm: bool = False) -> None:
        self._runner = runner
        self._bundle = bundle_path
        self._hold = hold_tools
        self._options = options
        self._launcher: Any = None
        if warm:
            self._launcher, self._options = _warm_options(bundle_path, options)

    def run(self, rollout: Rollout) -> RolloutResult:
        return self._runner(self._bundle, rollout, self._hold, self._options)

    def close(self) -> None:
        if self._launcher is not None:
            self._launcher.close()


def run_rollouts(backend: str, bundle_path: str, rollouts: Sequence[Rollout],
                 hold_tools: bool, options: RunOptions, runner: Runner
                 ) -> Iterator[RolloutResult]:
    """Yield the results of *rollouts* as they finish (any order) on *backend*, each
    `runner(bundle_path, rollout, hold_tools, options)` (attribution_run.run_rollout; for
    Ray a module-level function, sent by reference)."""
    check_backend(backend)
    if not rollouts:
        return
    if backend == "ray":
        yield from _on_ray(bundle_path, rollouts, hold_tools, options, runner)
        return
    workers: queue.SimpleQueue[RolloutWorker] = queue.SimpleQueue()
    made: list[RolloutWorker] = []
    lock = threading.Lock()

    def run(rollout: Rollout) -> RolloutResult:
        try:
            worker = workers.get_nowait()
        except queue.Empty:  # a thread's first rollout: its own worker (a warm server)
            worker = RolloutWorker(bundle_path, hold_tools, options, runner,
                                   warm=backend == "warm")
            with lock:
                made.append(worker)
        try:
            return worker.run(rollout)
        finally:
            workers.put(worker)

    try:
        if options.jobs == 1:
            for rollout in rollouts:
                yield run(rollout)
            return
        with ThreadPoolExecutor(max_workers=options.jobs) as pool:
            futures = [pool.submit(run, r) for r in rollouts]
            for future in as_completed(futures):
                yield future.result()
    finally:
        for worker in made:
            worker.close()


def _on_ray(bundle_path: str, rollouts: Sequence[Rollout], hold_tools: bool,
            options: RunOptions, runner: Runner) -> Iterator[RolloutResult]:
    try:
        from symtrace_study.errors import BackendUnavailable
        from symtrace_study.pool import RayPool
    except ImportError as exc:  # pragma: no cover -- they ship in the same wheel
        raise DiagnosisConfigError(f"--backend ray needs symtrace_study: {exc}") from None
    # an actor runs where Ray starts it: every path absolute, the run directory resolved
    # here; the command was consented to by the caller's first rollout (or --trust)
    remote = replace(options, out=options.out.resolve(), trust=True,
                     cwd=_run_dir(bundle_path, options))
    try:
        pool = RayPool(None, min(options.jobs, len(rollouts)), worker=RolloutWorker,
                       args=(str(Path(bundle_path).resolve()), hold_tools, remote, runner))
    except BackendUnavailable as exc:
        raise DiagnosisConfigError(f"--backend ray: {exc}") from None
    try:
        yield from pool.map(rollouts)
    except BaseException:
        pool.abort()
        raise
    pool.close()


def _warm_options(bundle_path: str, options: RunOptions) -> tuple[Any, RunOptions]:
    """A warm launcher for one thread, and the options whose command it wraps.

    The wrapped command is the recorded one (or the user's), run where `replay_bundle` would
    run it; the fork server imports under the hash seed the replay gives the program (the
    recorded one), else it declines and the client runs the program cold."""
    from symtrace.bundle.reader import load_bundle

    try:
        from symtrace_study.launch import WarmLauncher
    except ImportError as exc:  # pragma: no cover -- it ships in the same wheel
        raise DiagnosisConfigError(f"--backend warm needs symtrace_study: {exc}") from None
    bundle = load_bundle(bundle_path)
    recorded = bundle.config.get("command") or {}
    argv = list(options.command or recorded.get("argv") or [])
    env = dict(options.set_env or {})
    seed = env.get("PYTHONHASHSEED") or bundle.initial_state.get("hash_seed")
    launcher = WarmLauncher({"PYTHONHASHSEED": str(seed)} if seed else {})
    wrapped = launcher.wrap(argv)
    # the wrapped argv counts as the user's own command to the consent check: the caller
    # runs the first rollout unwrapped (asking, or refusing) before any warm one
    return launcher, replace(options, command=wrapped, cwd=_run_dir(bundle_path, options),
                             set_env={**env, **launcher.env()})


def _run_dir(bundle_path: str, options: RunOptions) -> str:
    """Where `replay_bundle` runs the program (made explicit for a wrapped command or another
    process): the user's --cwd; with the user's command, here; else the recorded directory
    when it exists on this machine, else here."""
    if options.cwd is not None:
        return os.path.abspath(options.cwd)
    if not options.command:
        from symtrace.bundle.reader import load_bundle

        recorded = (load_bundle(bundle_path).config.get("command") or {}).get("cwd")
        if isinstance(recorded, str) and Path(recorded).is_dir():
            return os.path.abspath(recorded)
    return os.getcwd()

