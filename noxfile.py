"""The second test environment: today's provider stack (openai 3 over httpx2, anthropic 2,
AG2 1.x, AgentChat on openai 3), which cannot share a venv with the main one (crewai pins
`openai<3`).

    nox -s next                 # what `make test` runs after the main suite
    nox -s next -- -k ag2v1     # arguments after `--` go to pytest
    nox -s lock_next            # re-resolve the stack and rewrite constraints-next.txt
    nox -s versions             # the version-sensitive suites on Python 3.12 and 3.13
    nox -s versions-3.13 -- -x  # one of them

The `versions` sessions prove the other Pythons `requires-python` claims (3.11 is the main
environment's): the main stack (constraints.txt) and the second one (constraints-next.txt),
each in its own `.nox/versions-3-1X` / `.nox/versions_next-3-1X` venv, run the suites where a
Python version can change behaviour (frame inspection, asyncio internals, the garbage
collector, the bootstrap, the HTTP patches, framework hooks): tests/unit, tests/transport,
tests/integrity, tests/adapters and tests/next_stack, without the slow subprocess-heavy
tests, which run on 3.11 only (`make test-versions`, part of `make test`, so of CI).
Interpreters are looked up as `python3.12` / `python3.13` on PATH (the Makefile puts
pyenv's there), never downloaded: a missing one fails.

Why nox: the sessions are plain Python (no ini dialect), it is the PyPA's own tool for this,
and its default backend creates the venv with `venv` and installs with **pip**, so the
machine's pip configuration (local wheel directories, index mirrors, version caps) applies
exactly as it does to `make`'s venv. uv would be faster but reads none of pip's configuration,
and tox would add a second configuration format for one extra environment.

The environment lives in `.nox/next` and is reused between runs (pip only installs what
changed); `constraints-next.txt` pins every package, so a run from a clean clone resolves the
same versions as the developer's. The tests it collects are `tests/next_stack/` only; the
main environment never collects that directory (tests/conftest.py).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import nox

ROOT = Path(__file__).parent
CONSTRAINTS = ROOT / "constraints-next.txt"
# The project's extras that make the stack: AG2 1.x, AgentChat (resolves onto openai 3 without
# crewai's cap), and the test tools with the openai 3 / anthropic 2 / httpx2 SDKs.
EXTRAS = "ag2v1,autogen,test-next"
TESTS = "tests/next_stack"

nox.options.sessions = ["next"]
nox.options.reuse_venv = "yes"
nox.options.error_on_missing_interpreters = True
nox.options.download_python = "never"  # no interpreter from the network: a missing one fails

OTHER_PYTHONS = ("3.12", "3.13")
VERSION_SUITES = ("tests/unit", "tests/transport", "tests/integrity", "tests/adapters")
# pytest processes per session (pytest-xdist, whole files per process); `make` passes its
# TEST_WORKERS, 0 runs in one process.
WORKERS = ("-n", os.environ.get("TEST_WORKERS", "2"), "--dist", "loadfile")
# Warnings nobody reads are errors in the versions sessions: an unclosed resource, an exception
# a thread ended with. (Not yet in the main suite: made errors there, with the unraisable
# warnings finalizers raise, 42 of its tests fail on files, sockets and scandir iterators left
# open; issue 41.)
STRICT_WARNINGS = ("-W", "error::ResourceWarning",
                   "-W", "error::pytest.PytestUnhandledThreadExceptionWarning")


@nox.session(name="next", venv_backend="venv")
def next_stack(session: nox.Session) -> None:
    """Run tests/next_stack on the pinned openai-3 stack."""
    session.install("-q", "-c", str(CONSTRAINTS), "-e", f".[{EXTRAS}]")
    session.run("python", "-m", "pip", "check", silent=True)
    session.run(
        "python", "-m", "pytest", "-q", "-p", "no:cacheprovider", *WORKERS, TESTS,
        *session.posargs,
    )


@nox.session(python=OTHER_PYTHONS, venv_backend="venv")
def versions(session: nox.Session) -> None:
    """The version-sensitive suites of the main stack on another Python (not the slow ones)."""
    session.install("-q", "-c", str(ROOT / "constraints.txt"), "-e", ".[frameworks,test]")
    session.run("python", "-m", "pip", "check", silent=True)
    session.run("python", "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "not slow",
                *WORKERS, *STRICT_WARNINGS, *VERSION_SUITES, *session.posargs)


@nox.session(python=OTHER_PYTHONS, venv_backend="venv")
def versions_next(session: nox.Session) -> None:
    """tests/next_stack on another Python (not the slow ones)."""
    session.install("-q", "-c", str(CONSTRAINTS), "-e", f".[{EXTRAS}]")
    session.run("python", "-m", "pip", "check", silent=True)
    session.run("python", "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "not slow",
                *WORKERS, *STRICT_WARNINGS, TESTS, *session.posargs)


@nox.session(venv_backend="venv", reuse_venv=False)
def lock_next(session: nox.Session) -> None:
    """Resolve the stack from the extras alone (no constraints) and pin it."""
    session.install("-q", "-e", f".[{EXTRAS}]")
    session.run("python", "-m", "pip", "check")
    frozen = session.run(
        "python", "-m", "pip", "freeze", "--exclude-editable", silent=True,
    )
    assert isinstance(frozen, str)
    pins = sorted(
        (line for line in frozen.splitlines() if line and not line.startswith("#")),
        key=str.lower,
    )
    header = (
        "# Pins of the second test environment (`nox -s next`): openai 3 over httpx2, AG2 1.x,\n"
        "# AgentChat on openai 3. Generated by `nox -s lock_next`; do not edit by hand.\n"
    )
    with tempfile.NamedTemporaryFile("w", dir=ROOT, delete=False, suffix=".tmp") as tmp:
        tmp.write(header + "\n".join(pins) + "\n")
    Path(tmp.name).replace(CONSTRAINTS)  # whole or nothing
    session.log(f"wrote {len(pins)} pins to {CONSTRAINTS.name}")
