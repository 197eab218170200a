"""Fixtures for the AgentChat adapter tests: scenarios, scripted and stochastic stubs.

Everything runs the real framework with real HTTP to `StubLLM` on loopback; helpers shared
with the test modules live in _support.py.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

pytest.importorskip("autogen_agentchat")
pytest.importorskip("autogen_ext.models.openai")

from ._support import SCRIPTS, Scenario


@pytest.fixture
def scenario() -> Callable[[str], Scenario]:
    return Scenario


@pytest.fixture
def use_stub(monkeypatch: pytest.MonkeyPatch) -> Callable[[Any], Any]:
    """Point the OpenAI client at *stub* for the rest of the test."""

    def point(stub: Any) -> Any:
        monkeypatch.setenv("OPENAI_BASE_URL", stub.url)
        return stub

    return point


@pytest.fixture
def scripted(stub_llm_factory: Callable[..., Any], use_stub: Callable[[Any], Any]
             ) -> Callable[[str], Any]:
    """A running scripted stub for a scenario (examples/autogen_agentchat/scripts/)."""

    def start(name: str) -> Any:
        return use_stub(stub_llm_factory(script=SCRIPTS / f"{name}.json"))

    return start


@pytest.fixture
def stochastic(stub_llm_factory: Callable[..., Any], use_stub: Callable[[Any], Any]) -> Any:
    """A running unseeded stochastic stub: every live run samples afresh."""
    return use_stub(stub_llm_factory(mode="stochastic"))


@pytest.fixture(autouse=True)
def _offline_tiktoken(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
                      ) -> Iterator[None]:
    """An empty tiktoken cache: no test may depend on a file a previous run downloaded."""
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path_factory.mktemp("tiktoken")))
    yield
