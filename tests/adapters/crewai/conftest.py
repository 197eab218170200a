"""Fixtures for the CrewAI adapter tests: an isolated home, scripted stubs, recording.

CrewAI writes under $HOME / XDG dirs at import and kickoff, locks under $TMPDIR, and has
telemetry and a version check that reach the network: every test module runs with those
pointed at a temporary home and switched off. CrewAI is imported only inside tests (when an
example is loaded), after the environment is in place. Helpers live in _support.py.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

if importlib.util.find_spec("crewai") is None:  # pragma: no cover - CI installs every framework
    pytest.skip("crewai is not installed", allow_module_level=True)

import symtrace

from ..._support import inside_home, isolated_home
from ._support import ADAPTER, QUIET_ENV, Recorded, run_example, script


@pytest.fixture(scope="session")
def crewai_home(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Environment for CrewAI: a throwaway HOME/XDG/TMPDIR/storage, network side channels off."""
    return {**isolated_home(tmp_path_factory.mktemp("crewai-home")), **QUIET_ENV}


@pytest.fixture(scope="module", autouse=True)
def isolated(crewai_home: dict[str, str]) -> Iterator[None]:
    with inside_home(crewai_home):
        yield


@pytest.fixture
def use_stub(monkeypatch: pytest.MonkeyPatch, stub_llm_factory: Callable[..., Any]
             ) -> Callable[..., Any]:
    """Start a stub (scripted: the scenario's script) and point OPENAI_BASE_URL at it."""

    def start(name: str | None = None, *, mode: str = "scripted", **kwargs: Any) -> Any:
        if mode == "scripted":
            kwargs["script"] = script(name or "")
        stub = stub_llm_factory(mode=mode, **kwargs)
        monkeypatch.setenv("OPENAI_BASE_URL", stub.url)
        return stub

    return start


@pytest.fixture
def record(tmp_path: Path, use_stub: Callable[..., Any]) -> Callable[..., Recorded]:
    """Record one example against its scripted stub (or a given stub) into tmp_path."""

    def do(name: str, *, stub: Any = None, bundle: Path | None = None) -> Recorded:
        stub = stub or use_stub(name)
        bundle = bundle or tmp_path / f"crewai-{name}"
        before = stub.served
        with symtrace.record(bundle, task=f"crewai {name}", adapters=ADAPTER):
            run = run_example(name)
        return Recorded(name, bundle, run, stub, stub.served - before)

    return do
