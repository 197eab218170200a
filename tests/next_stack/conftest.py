"""The second environment's suite: openai 3 over httpx2, anthropic 2, AG2 1.x, AgentChat on
openai 3, pinned by constraints-next.txt and run by `nox -s next` (see noxfile.py).

Collected only there: tests/conftest.py leaves this directory out of the main environment.
Asked for explicitly on the wrong stack, the run stops with a usage error (exit 4) instead of
reporting these tests as passed or skipped.
"""

from __future__ import annotations

from importlib import metadata

import pytest

# distribution -> the major version this suite is about
STACK = {"openai": 3, "httpx2": 2, "anthropic": 2, "ag2": 1, "autogen-agentchat": 0}


def installed_major(distribution: str) -> int | None:
    try:
        return int(metadata.version(distribution).split(".", 1)[0])
    except (metadata.PackageNotFoundError, ValueError):
        return None


def _wrong_stack() -> list[str]:
    return [f"{name} {metadata.version(name) if installed_major(name) is not None else '-'}"
            f" (needs {major}.x)" for name, major in STACK.items()
            if installed_major(name) != major]


def pytest_configure(config: pytest.Config) -> None:
    wrong = _wrong_stack()
    if wrong:
        raise pytest.UsageError(
            "tests/next_stack runs in the second test environment only (`nox -s next`); "
            "this environment has " + ", ".join(wrong))
