"""Fixtures of generated-program checks, shared by both test environments.

`tests/generated/conftest.py` (main environment) and `tests/next_stack/generated/conftest.py`
(the second one, AG2 1.x) import them: one unseeded stochastic stub per test module (it is
stateless: unseeded, each request samples afresh), and an isolated framework home
(`tests/_support.py`: CrewAI writes under $HOME and $TMPDIR and has network side channels).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests._support import inside_home, isolated_home


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
