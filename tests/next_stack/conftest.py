"""The second environment's suite: openai 3 over httpx2, anthropic 2, AG2 1.x, AgentChat on
openai 3, pinned by constraints-next.txt and run by `nox -s next` (see noxfile.py).

Collected only there: tests/conftest.py leaves this directory out of the main environment.
Asked for explicitly on the wrong stack, the run stops with a usage error (exit 4) instead of
reporting these tests as passed or skipped.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path

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


# AG2 1.x makes a model client for every agent run (`config.create()` in ag2/agent.py: an
# AsyncOpenAI with its own connection pool) and never closes it, so the garbage collector
# reclaims its connections with a ResourceWarning, in whatever test it happens to run. That
# leak is the framework's, not the program's or symtrace's: in the tests that run AG2 1.x
# agents it is silenced and collected before the test ends, so it cannot land in a later test.
# Every other ResourceWarning stays an error (pyproject.toml).
_RUNS_AG2 = ("ag2v1", "generated", "test_published_ag2v1.py", "test_stack.py")


def _runs_ag2(item: pytest.Item) -> bool:
    parts = Path(item.path).relative_to(Path(__file__).parent).parts
    return parts[0] in _RUNS_AG2


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if _runs_ag2(item):
            item.add_marker(pytest.mark.filterwarnings("ignore::ResourceWarning"))


@pytest.fixture(autouse=True)
def _ag2_clients_collected(request: pytest.FixtureRequest) -> Iterator[None]:
    yield
    if _runs_ag2(request.node):
        gc.collect()
