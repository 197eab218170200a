"""The real local model for the ``localmodel`` tests: one server per module (start ≈ 1 s).

Skipped, with the reason, only when llama-cpp-python[server] or the SmolLM2 weights are not
installed; any other failure to start is an error.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from symtrace.localllm import LocalLLM, LocalLLMUnavailable, default_model_path
from symtrace.localllm.weights import require_runtime

PROGRAMS = Path(__file__).parent / "programs"


def local_model_missing() -> str | None:
    try:
        require_runtime()
        default_model_path()
    except LocalLLMUnavailable as exc:
        return str(exc)
    return None


@pytest.fixture
def local_model_installed() -> None:
    missing = local_model_missing()
    if missing:
        pytest.skip(f"local model not installed: {missing}")


@pytest.fixture(scope="module")
def local_llm() -> Iterator[LocalLLM]:
    missing = local_model_missing()
    if missing:
        pytest.skip(f"local model not installed: {missing}")
    with LocalLLM() as llm:
        yield llm


@pytest.fixture
def programs_on_path(monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.syspath_prepend(str(PROGRAMS))
    monkeypatch.delitem(sys.modules, "local_common", raising=False)
    return PROGRAMS
