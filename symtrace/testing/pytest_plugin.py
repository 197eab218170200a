"""pytest fixtures that give a test a real OpenAI-compatible endpoint on loopback.

Registered through the ``pytest11`` entry point, so this module is imported by every pytest
run in an environment where symtrace is installed: it must stay cheap and must not import the
openai SDK (or even the stub server) until a fixture is actually used.

    def test_agent(stub_llm):
        client = openai.OpenAI(base_url=stub_llm.url, api_key="x")

    def test_scripted(stub_llm_factory):
        stub = stub_llm_factory(script={"rules": [], "default": {"content": "hi"}})
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from symtrace.stub import StubLLM


@pytest.fixture
def stub_llm() -> Iterator[StubLLM]:
    """A started stochastic, unseeded stub server, stopped after the test."""
    from symtrace.stub import StubLLM

    with StubLLM(mode="stochastic") as stub:
        yield stub


@pytest.fixture
def stub_llm_factory() -> Iterator[Callable[..., StubLLM]]:
    """``factory(mode=None, script=None, seed=None, **kwargs)`` → a started StubLLM.

    Every server it started is stopped at teardown.
    """
    from symtrace.stub import StubLLM

    started: list[StubLLM] = []

    def factory(
        mode: str | None = None, script: Any = None, seed: int | None = None, **kwargs: Any
    ) -> StubLLM:
        stub = StubLLM(mode=mode, script=script, seed=seed, **kwargs)  # type: ignore[arg-type]
        stub.start()
        started.append(stub)
        return stub

    try:
        yield factory
    finally:
        for stub in reversed(started):
            stub.stop()
