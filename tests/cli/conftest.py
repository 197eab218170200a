"""The CLI as a person sees it: a real `symtrace` process, output captured as a pipe (not a
TTY), `NO_COLOR` set, at a given terminal width (`COLUMNS`)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

PROGRAMS = Path(__file__).parent / "programs"
PROMPTED = str(PROGRAMS / "prompted.py")
ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def run_cli(*args: str, columns: int = 80, env: dict[str, str] | None = None,
            cwd: Path | None = None, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    """`symtrace ARGS` in a child process: not a TTY, NO_COLOR, COLUMNS=*columns*."""
    full = {**os.environ, "NO_COLOR": "1", "COLUMNS": str(columns), "TERM": "dumb",
            **(env or {})}
    full.pop("FORCE_COLOR", None)
    return subprocess.run([sys.executable, "-m", "symtrace", *args], capture_output=True,
                          text=True, env=full, cwd=cwd, timeout=timeout)


def too_wide(text: str, width: int) -> list[str]:
    return [line for line in text.splitlines() if len(line) > width]


@pytest.fixture(scope="session")
def endpoint() -> Iterator[dict[str, str]]:
    """A seeded stochastic stub for the whole session (recordings and live suffixes)."""
    from symtrace.stub import StubLLM

    with StubLLM(mode="stochastic", seed=11) as stub:
        yield {"OPENAI_BASE_URL": stub.url, "OPENAI_API_KEY": "sk-test"}


@pytest.fixture(scope="session")
def prompted_bundle(tmp_path_factory: pytest.TempPathFactory,
                    endpoint: dict[str, str]) -> Path:
    """prompted.py recorded once: two LLM calls, a failed tool call, a final answer."""
    path = tmp_path_factory.mktemp("cli") / "prompted"
    done = run_cli("record", "-o", str(path), "--task", "Convert 300 EUR for a customer",
                   "--", "python", PROMPTED, env=endpoint)
    assert done.returncode == 0, done.stderr
    return path
