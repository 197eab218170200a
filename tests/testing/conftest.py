"""The plugin tests run inner pytest sessions with pytester (in-process, so AG2 is imported
once for the whole module). `CI` is controlled per test: the default mode depends on it."""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]


@pytest.fixture(autouse=True)
def _no_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CI", raising=False)
