"""Fixtures for the AG2 1.x adapter tests (helpers in _support.py): an isolated environment,
the scripted endpoint per scenario, a runner of the example programs."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from ._support import EXAMPLES, Runner


@pytest.fixture(autouse=True)
def isolated_env(tmp_path_factory: pytest.TempPathFactory,
                 monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path_factory.mktemp("home")
    for name in ("HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME"):
        monkeypatch.setenv(name, str(home))
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.chdir(home)


@pytest.fixture(scope="session")
def scripts() -> dict[str, Any]:
    return json.loads((EXAMPLES / "stub_scripts.json").read_text())


@pytest.fixture
def runner() -> Runner:
    return Runner()


@pytest.fixture
def endpoint(stub_llm_factory: Callable[..., Any], scripts: dict[str, Any],
             monkeypatch: pytest.MonkeyPatch) -> Callable[..., Any]:
    """`endpoint("delegation")` starts the scenario's scripted stub and points AG2 at it;
    `endpoint(stochastic=True)` an unseeded stochastic one."""

    def start(name: str | None = None, *, stochastic: bool = False) -> Any:
        # stochastic: text answers only (a random call of the hub's own tools could make the
        # hub run wait for a reply that never comes)
        stub = (stub_llm_factory(mode="stochastic", tool_probability=0.0) if stochastic
                else stub_llm_factory(script=scripts[name]))
        monkeypatch.setenv("OPENAI_BASE_URL", stub.url)
        return stub

    return start
