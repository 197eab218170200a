"""The plug-in surface: what a study needs from a benchmark, as a small protocol.

A study runs a MAS command on tasks and scores each attempt. Everything specific to a
benchmark sits behind four pieces, loaded from the config's `benchmark` key:

* a **task source** — `tasks()`: the tasks, each with an `id`, `mutates` (does the task
  change the environment's state?) and `to_json()` (the task T stored in every bundle and
  shown to the task-level arms: text, ids, `tools` or `start_urls`; never evaluator data);
* an **environment** — `open_environment()`, one per worker: `env()` (variables the MAS reads
  to reach it), `reset()` (before every attempt), `state()` (snapshot after an attempt, what
  the evaluator checks), `restore_prefix(bundle, anchor)` (reset, then re-apply the writes
  the recorded run made before *anchor*: a selective replay serves that prefix from the
  bundle, so its tool bodies do not run), `close()`;
* an **evaluator** — `evaluate(task, answer, state) -> Verdict(passed, reason)`;
* **MAS commands** — `mas_commands()`: name → argv with `{task}` (config MAS names resolve
  here; a config may still give its own `{name, command}`).

Optionally `task_split(task) -> str` names the split a task belongs to (the task-level
prompts show "Benchmark: NAME / SPLIT", App. E.1); without it a task's JSON `split` key is
used, else "all". Optionally `stub_responder(seed, skill)` returns the stub LLM's responder
for the `stub` backend (an object with `respond(body, call_index) -> Reply`, `Reply` and
`ToolCall` from `symtrace.stub.reply`); without it the stub backend is refused for that
benchmark.

`benchmark` in the config is `"package.module:ATTRIBUTE"` (an object, or a class / factory
called without arguments) or `{"entry_point": NAME}` (group `symtrace_study.benchmarks`).
The default is the local suite, `symtrace_suite.benchmark:BENCHMARK`, the first user.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
from importlib import metadata
from typing import Any, Protocol, runtime_checkable

from symtrace_study.errors import StudyConfigError

DEFAULT_BENCHMARK = "symtrace_suite.benchmark:BENCHMARK"
ENTRY_POINT_GROUP = "symtrace_study.benchmarks"


class Verdict(Protocol):
    passed: bool
    reason: str


@runtime_checkable
class TaskInfo(Protocol):
    id: str
    mutates: bool

    def to_json(self) -> dict[str, Any]: ...


@runtime_checkable
class Environment(Protocol):
    def env(self) -> Mapping[str, str]: ...

    def reset(self) -> None: ...

    def state(self) -> Any: ...

    def restore_prefix(self, bundle: Any, anchor: str) -> Sequence[Any]: ...

    def close(self) -> None: ...


@runtime_checkable
class Benchmark(Protocol):
    name: str

    def tasks(self) -> Sequence[TaskInfo]: ...

    def open_environment(self) -> Environment: ...

    def evaluate(self, task: TaskInfo, answer: Any, state: Any) -> Verdict: ...

    def mas_commands(self) -> Mapping[str, Sequence[str]]: ...


_LOADED: dict[str, Benchmark] = {}


def spec_text(raw: Any) -> str:
    """The config value as one string (`module:attr` or `entry_point:NAME`)."""
    if isinstance(raw, str) and raw:
        return raw
    if isinstance(raw, dict) and set(raw) == {"entry_point"} and isinstance(
            raw["entry_point"], str):
        return f"entry_point:{raw['entry_point']}"
    raise StudyConfigError('benchmark must be "module:attribute" or {"entry_point": NAME}, '
                           f"got {raw!r}")


def load_benchmark(spec: str) -> Benchmark:
    """Import and check the benchmark named by *spec* (cached per process)."""
    if spec in _LOADED:
        return _LOADED[spec]
    if spec.startswith("entry_point:"):
        name = spec.split(":", 1)[1]
        found = [ep for ep in metadata.entry_points(group=ENTRY_POINT_GROUP) if ep.name == name]
        if not found:
            raise StudyConfigError(f"benchmark: no entry point {name!r} in group "
                                   f"{ENTRY_POINT_GROUP}")
        try:
            obj = found[0].load()
        except Exception as exc:  # a broken plug-in is the config's problem, reported typed
            raise StudyConfigError(f"benchmark: entry point {name!r} failed to load: "
                                   f"{type(exc).__name__}: {exc}") from exc
    else:
        module_name, sep, attr = spec.partition(":")
        if not sep or not module_name or not attr:
            raise StudyConfigError(f'benchmark {spec!r}: expected "package.module:ATTRIBUTE"')
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:
            raise StudyConfigError(f"benchmark {spec!r}: cannot import {module_name}: {exc}"
                                   ) from exc
        try:
            obj = getattr(module, attr)
        except AttributeError as exc:
            raise StudyConfigError(f"benchmark {spec!r}: {module_name} has no {attr!r}") from exc
    if isinstance(obj, type) or (callable(obj) and not isinstance(obj, Benchmark)):
        obj = obj()
    missing = [m for m in ("tasks", "open_environment", "evaluate", "mas_commands")
               if not callable(getattr(obj, m, None))]
    if missing or not isinstance(getattr(obj, "name", None), str):
        raise StudyConfigError(f"benchmark {spec!r} does not implement the protocol "
                               f"(symtrace_study.benchmark.Benchmark): missing "
                               f"{', '.join(missing) or 'name'}")
    _LOADED[spec] = obj
    return obj


def task_index(benchmark: Benchmark) -> dict[str, TaskInfo]:
    """id → task; duplicate ids are a broken task source."""
    out: dict[str, TaskInfo] = {}
    for task in benchmark.tasks():
        if task.id in out:
            raise StudyConfigError(f"benchmark {benchmark.name}: two tasks share id {task.id!r}")
        out[task.id] = task
    return out


def task_split(benchmark: Any, task: Any) -> str:
    """The split *task* belongs to: the benchmark's `task_split`, the task's `split`, "all"."""
    split = getattr(benchmark, "task_split", None)
    if callable(split):
        return str(split(task))
    return str(task.to_json().get("split") or "all")
