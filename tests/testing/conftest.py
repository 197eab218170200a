"""The plugin tests run inner pytest sessions with pytester, in-process. pytester drops the
modules an inner run imported when it ends, so what the inner tests import (the openai SDK,
symtrace's record/replay) is imported here once, before any inner run, and stays.
`CI` is controlled per test: the default mode depends on it."""

from __future__ import annotations

import openai  # noqa: F401 - kept in sys.modules across inner runs (see above)
import pytest

import symtrace.testing.recording  # noqa: F401 - same


@pytest.fixture(autouse=True)
def _no_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CI", raising=False)
