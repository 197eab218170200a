"""Fixtures of the generated-program check: one unseeded stochastic stub, an isolated home.

The stub is shared by every program of a test module (it is stateless: unseeded, each request
samples afresh). CrewAI writes under $HOME and $TMPDIR and has network side channels; the
environment below keeps all three frameworks inside a temporary home and off the network.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests._support import inside_home, isolated_home

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:  # the gen_* helper modules
    sys.path.insert(0, str(HERE))


@pytest.fixture(scope="session")
def gen_home(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    home = tmp_path_factory.mktemp("gen-home")
    return {
        **isolated_home(home),
        "TIKTOKEN_CACHE_DIR": str(home / "tiktoken"),
        "AUTOGEN_USE_DOCKER": "False",
    }


@pytest.fixture(scope="module")
def stochastic_stub(gen_home: dict[str, str]) -> Iterator[Any]:
    from symtrace.stub import StubLLM

    with inside_home(gen_home), StubLLM(mode="stochastic") as stub:
        yield stub  # unseeded: every live run samples afresh


@pytest.fixture(autouse=True)
def _point_at_stub(stochastic_stub: Any, gen_home: dict[str, str],
                   monkeypatch: pytest.MonkeyPatch) -> None:
    """After the root conftest cleared OPENAI_*: the SDKs talk to the module's stub."""
    for name, value in gen_home.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("OPENAI_BASE_URL", stochastic_stub.url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
