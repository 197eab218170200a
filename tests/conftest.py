"""Shared fixtures: no test reads real API keys or reaches beyond 127.0.0.1."""

from __future__ import annotations

import os
from importlib import metadata

import pytest


def _on_next_stack() -> bool:
    """The second test environment (`nox -s next`) is the one with openai 3 installed."""
    try:
        return int(metadata.version("openai").split(".", 1)[0]) >= 3
    except (metadata.PackageNotFoundError, ValueError):
        return False


# tests/next_stack is the second environment's suite (openai 3 over httpx2, AG2 1.x): the main
# environment does not collect it at all, so none of it can be reported as passed or skipped
# here. `make test` runs it with `nox -s next` (noxfile.py).
collect_ignore = [] if _on_next_stack() else ["next_stack"]


@pytest.fixture(autouse=True)
def _isolated_env(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory):
    for name in list(os.environ):
        if name.startswith(("OPENAI_", "SYMTRACE_")):
            monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("CREWAI_DISABLE_TELEMETRY", "true")
    monkeypatch.setenv("OTEL_SDK_DISABLED", "true")
    monkeypatch.setenv("CREWAI_DISABLE_VERSION_CHECK", "true")
