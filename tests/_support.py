"""Helpers shared by several test areas (each area's own live in tests/<area>/_support.py):
loading the repository's example programs as modules, counting the runs of their tool bodies,
the isolated home the frameworks run in, and the checks that AG2 classic and AG2 1.x (one
adapter each, two environments) share.

Imported relatively (`from ..._support import ...`) by areas in packages, and as
`tests._support` by the generated-program helpers, which are imported as top-level modules.
"""

from __future__ import annotations

import contextlib
import importlib.util
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples"


def load_example(folder: Path, module_name: str, name: str, *, fresh: bool = False) -> ModuleType:
    """examples/<framework>/<name>.py as module *module_name* (each framework's examples have
    helper modules of the same names, so never under its own name), with *folder* on sys.path
    for the helpers it imports. *fresh*: a new copy even if one was loaded before."""
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))
    if not fresh and module_name in sys.modules:
        return sys.modules[module_name]
    spec = importlib.util.spec_from_file_location(module_name, folder / f"{name}.py")
    if spec is None or spec.loader is None:
        raise ImportError(f"no example {folder / name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module  # as an import would: its exception classes re-import
    spec.loader.exec_module(module)
    return module


def with_counted_tool_bodies(
    module: ModuleType, helper: str | None, overrides: dict[str, Any]
) -> tuple[ModuleType, Counter[str]]:
    """*module* with *overrides* set, and its module-level *helper* (what its tool bodies call)
    wrapped to count its runs in `["tool_body"]`: on replay a tool body must not run."""
    for attribute, value in overrides.items():
        setattr(module, attribute, value)
    runs: Counter[str] = Counter()
    if helper:
        original: Callable[..., Any] = getattr(module, helper)

        def counted(*args: Any, **kwargs: Any) -> Any:
            runs["tool_body"] += 1
            return original(*args, **kwargs)

        setattr(module, helper, counted)
    return module, runs


# What CrewAI needs to stay off the network (telemetry, tracing, its version check).
CREWAI_QUIET_ENV = {
    "CREWAI_DISABLE_TELEMETRY": "true",
    "OTEL_SDK_DISABLED": "true",
    "CREWAI_DISABLE_VERSION_CHECK": "true",
    "CREWAI_TRACING_ENABLED": "false",
}


def isolated_home(home: Path) -> dict[str, str]:
    """Environment that keeps the frameworks inside *home*: HOME, the XDG directories, TMPDIR
    (CrewAI's lock files) and CrewAI's storage, with its network side channels off."""
    (home / "tmp").mkdir(exist_ok=True)
    return {
        "HOME": str(home),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "TMPDIR": str(home / "tmp"),
        "CREWAI_STORAGE_DIR": str(home / "storage"),
        **CREWAI_QUIET_ENV,
    }


PROXY_VARIABLES = ("HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY",
                   "all_proxy")


@contextlib.contextmanager
def inside_home(env: dict[str, str]) -> Iterator[None]:
    """*env* (an `isolated_home`, maybe with more) set for the block, proxies unset, and
    Python's own temporary directory in its TMPDIR (CrewAI's lock files go there)."""
    with pytest.MonkeyPatch.context() as patch:
        for name, value in env.items():
            patch.setenv(name, value)
        for name in PROXY_VARIABLES:
            patch.delenv(name, raising=False)
        patch.setattr(tempfile, "tempdir", env["TMPDIR"])
        yield


# -- checks the AG2 adapters share --------------------------------------------------------------
def subclasses_in(owner: type, package: str, *, with_owner: bool = False) -> Iterator[type]:
    """Every subclass of *owner* (at any depth; *owner* too if *with_owner*) defined in
    *package*: a patch on a method does not reach the calls a subclass overriding it gets."""
    stack, seen = [owner] if with_owner else list(owner.__subclasses__()), set()
    while stack:
        cls = stack.pop()
        if cls in seen:
            continue
        seen.add(cls)
        stack.extend(cls.__subclasses__())
        if cls.__module__.startswith(package):
            yield cls


def overriding_subclasses(owner: type, attribute: str, package: str) -> Iterator[type]:
    """The subclasses of *owner* in *package* that define *attribute* themselves."""
    return (cls for cls in subclasses_in(owner, package) if attribute in vars(cls))


def check_selective_replay_and_strict_child(
    runner: Any, name: str, parent: Path, child_path: Path, anchor: Any, stub: Any,
    guidance: str, adapter: str,
) -> Any:
    """Selective replay of the recording at *parent* from *anchor* with *guidance* (live from
    there against *stub*), then a strict replay of the child it wrote that sends nothing.
    *runner* is the area's example Runner; returns the strict replay's run."""
    import symtrace

    parent_events = list(symtrace.load_bundle(parent).events)
    module, _ = runner.example(name)
    with symtrace.replay(parent, anchor=anchor.id, guidance=guidance, out=child_path,
                         adapters=[adapter]) as handle:
        runner.call(module.main)
    child = symtrace.load_bundle(child_path)
    assert stub.requests[0]["messages"][-1] == {"role": "user", "content": guidance}
    live = [e for e in child.events if e.is_llm and e.id in handle.session.live_ids]
    assert stub.served == len(live)
    assert {e.id for e in parent_events if e.position < anchor.position and e.is_llm} <= set(
        child.lineage["replayed_events"])
    assert anchor.id in child.lineage["superseded_events"]

    served = stub.served
    again = runner.replay(child_path, name)
    assert stub.served == served, "the child's strict replay sent a request"
    assert again.final == child.final_result().response["value"]
    return again


def python_ok(code: str) -> None:
    """Run *code* in a fresh interpreter (what `sys.modules` holds at its start matters) and
    fail with its stderr unless it exits 0."""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
