"""Fixtures for the AG2 adapter tests: an isolated environment, the example programs, and
runs of them under symtrace against the embedded endpoint (real AG2, real HTTP).

The examples in examples/ag2 are the programs under test. They are loaded under unique
module names (other frameworks' examples live in the same pytest process) and run in-process
with `symtrace.record` / `symtrace.replay`; the slow tests run them through the CLI.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest

pytest.importorskip("autogen")


from ._support import EXAMPLES, Runner


@pytest.fixture(autouse=True)
def isolated_env(tmp_path_factory: pytest.TempPathFactory,
                 monkeypatch: pytest.MonkeyPatch) -> None:
    """No test reads the developer's HOME, caches or API keys."""
    home = tmp_path_factory.mktemp("home")
    for name in ("HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME", "TMPDIR"):
        monkeypatch.setenv(name, str(home))
    for name in ("OPENAI_BASE_URL", "OPENAI_API_BASE", "OPENAI_ORG_ID", "AG2_EXAMPLE_MODEL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("AUTOGEN_USE_DOCKER", "False")
    monkeypatch.chdir(home)  # AG2's legacy disk cache would write ./.cache


@pytest.fixture(scope="session")
def scripts() -> dict[str, Any]:
    """The scripted (deterministic) endpoint behaviour per scenario."""
    return json.loads((EXAMPLES / "stub_scripts.json").read_text())


@pytest.fixture
def runner(monkeypatch: pytest.MonkeyPatch) -> Runner:
    return Runner(monkeypatch)


@pytest.fixture
def endpoint(stub_llm_factory: Callable[..., Any], scripts: dict[str, Any],
             monkeypatch: pytest.MonkeyPatch) -> Callable[..., Any]:
    """`endpoint("two_agent")` starts the scenario's scripted stub and points AG2 at it;
    `endpoint(stochastic=True)` an unseeded stochastic one."""

    def start(name: str | None = None, *, stochastic: bool = False) -> Any:
        stub = (stub_llm_factory(mode="stochastic") if stochastic
                else stub_llm_factory(script=scripts[name]))
        monkeypatch.setenv("OPENAI_BASE_URL", stub.url)
        return stub

    return start


@pytest.fixture
def no_endpoint(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A base URL nothing listens on: any live call would fail."""
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    yield
