"""Fixtures of the integrity tests."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from ._deterministic import deterministic_stub


@pytest.fixture
def stub(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """A deterministic stub endpoint; `stub.restart_ids()` pins the next ids from 0 again."""
    yield from deterministic_stub(monkeypatch)
