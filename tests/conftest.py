"""Shared fixtures: no test reads real API keys or reaches beyond loopback.

Every `connect` of an IPv4/IPv6 socket to a host that is not loopback raises
ConnectionRefusedError for the whole session (unix sockets pass), so a test that would quietly
reach a real provider fails instead. The block covers the pytest process; programs a test
starts as subprocesses are pointed at the loopback stub by their environment.
"""

from __future__ import annotations

import errno
import ipaddress
import logging
import os
import socket
import tempfile
from collections.abc import Callable, Iterator
from functools import partial
from importlib import metadata

import pytest

from symtrace.patching import Patch, PatchSet

# Replay approvals (symtrace.process.consent: a recording approves its own command) kept in one
# store for the whole run, apart from the user's own; set before any fixture records.
os.environ["XDG_STATE_HOME"] = tempfile.mkdtemp(prefix="symtrace-test-state-")


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


def _is_loopback(host: object) -> bool:
    text = str(host).split("%", 1)[0]  # an IPv6 scope id
    if text == "localhost":
        return True
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        return False  # a name other than localhost: resolving it may leave the machine
    return address.is_loopback or address.is_unspecified


def _loopback_only(original: Callable[..., object], *, name: str) -> Callable[..., object]:
    def connect(self: socket.socket, address: object, *args: object) -> object:
        if (self.family in (socket.AF_INET, socket.AF_INET6) and isinstance(address, tuple)
                and not _is_loopback(address[0])):
            if name == "connect_ex":  # reports errors as a number, never raises
                return errno.ECONNREFUSED
            raise ConnectionRefusedError(
                errno.ECONNREFUSED,
                f"tests reach only loopback: blocked a connection to {address[0]}:{address[1]}",
            )
        return original(self, address, *args)

    return connect


@pytest.fixture(autouse=True, scope="session")
def _loopback_only_network() -> Iterator[None]:
    patches = PatchSet(Patch(socket.socket, name, partial(_loopback_only, name=name))
                       for name in ("connect", "connect_ex"))
    patches.install()
    try:
        yield
    finally:
        patches.uninstall()


@pytest.fixture(autouse=True)
def _logging_left_as_found() -> Iterator[None]:
    """Handlers, levels and formatters a test (or a framework it imports) configures are put
    back afterwards: frameworks print through logging, and under pytest-xdist a handler one
    test's framework left behind showed up in another test's recorded console output."""
    known = logging.Logger.manager.loggerDict.values()
    loggers = [logging.getLogger(), *(lg for lg in known if isinstance(lg, logging.Logger))]
    saved = [(logger, list(logger.handlers), logger.level, logger.propagate, logger.disabled,
              [(h, h.formatter) for h in logger.handlers]) for logger in loggers]
    factory = logging.getLogRecordFactory()
    yield
    for logger, handlers, level, propagate, disabled, formatters in saved:
        logger.handlers[:] = handlers
        logger.setLevel(level)  # (clears the enabled-for caches)
        logger.propagate, logger.disabled = propagate, disabled
        for handler, formatter in formatters:
            handler.formatter = formatter
    logging.setLogRecordFactory(factory)
