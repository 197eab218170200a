"""Running an inner pytest session for the plugin tests."""

from __future__ import annotations

import pytest

# The unraisable/thread-exception plugins run gc.collect() twice per session: ~0.5 s CPU of
# every inner run's ~0.7 s, and nothing these tests look at.
FAST = ("-p", "no:cacheprovider", "-p", "no:unraisableexception", "-p", "no:threadexception")


def run_inner(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest(*FAST, *args)
