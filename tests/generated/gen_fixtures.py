"""Fixtures of generated-program checks, shared by both test environments.

`tests/generated/conftest.py` (main environment) and `tests/next_stack/generated/conftest.py`
(the second one, AG2 1.x) import them: one unseeded stochastic stub per test module, an
isolated home. The stub is shared by every program of a module (it is stateless: unseeded,
each request samples afresh). CrewAI writes under $HOME and $TMPDIR and has network side
channels; the environment below keeps every framework inside a temporary home and off the
network.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture(scope="session")
def gen_home(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    home = tmp_path_factory.mktemp("gen-home")
    (home / "tmp").mkdir()
    return {
        "HOME": str(home),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "TMPDIR": str(home / "tmp"),
        "CREWAI_STORAGE_DIR": str(home / "storage"),
        "TIKTOKEN_CACHE_DIR": str(home / "tiktoken"),
        "CREWAI_DISABLE_TELEMETRY": "true",
        "OTEL_SDK_DISABLED": "true",
        "CREWAI_DISABLE_VERSION_CHECK": "true",
        "CREWAI_TRACING_ENABLED": "false",
        "AUTOGEN_USE_DOCKER": "False",
    }


@pytest.fixture(scope="module")
def stochastic_stub(gen_home: dict[str, str]) -> Iterator[Any]:
    from symtrace.stub import StubLLM

    with pytest.MonkeyPatch.context() as patch:
        for name, value in gen_home.items():
            patch.setenv(name, value)
        patch.setattr(tempfile, "tempdir", gen_home["TMPDIR"])
        with StubLLM(mode="stochastic") as stub:  # unseeded: every live run samples afresh
            yield stub


@pytest.fixture(autouse=True)
def _point_at_stub(stochastic_stub: Any, gen_home: dict[str, str],
                   monkeypatch: pytest.MonkeyPatch) -> None:
    """After the root conftest cleared OPENAI_*: the SDKs talk to the module's stub."""
    for name, value in gen_home.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("OPENAI_BASE_URL", stochastic_stub.url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
