"""Socket-level network block for a replayed test: no IPv4/IPv6 connection leaves the process.

The replayer's egress guard (symtrace.boundaries.egress) refuses the replayed program's
connections; a replayed test should reach nothing at all, so this block refuses every `connect` of
an AF_INET/AF_INET6 socket whose host is not explicitly allowed. Unix sockets (asyncio's self
pipe, local IPC) pass. Each refusal is also kept in `attempts`, so the plugin fails the test
even when the program swallowed the ConnectionRefusedError (frameworks retry and log).
"""

from __future__ import annotations

import errno
import socket
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from functools import partial
from typing import Any

from symtrace.errors import ReplayError
from symtrace.patching import Patch, PatchSet

_LOOPBACK_NAMES = {"localhost": ("127.0.0.1", "::1")}
_lock = threading.Lock()
_active = False


class NetworkBlocked(ReplayError, ConnectionRefusedError):
    """A replayed test tried to open a network connection its bundle does not serve."""


def _allowed_set(hosts: Iterable[str]) -> frozenset[str]:
    out: set[str] = set()
    for host in hosts:
        out.add(host)
        out.update(_LOOPBACK_NAMES.get(host, ()))
    return frozenset(out)


@contextmanager
def blocked_network(allow_hosts: Iterable[str] = ()) -> Iterator[list[str]]:
    """Yield the list that collects `host:port` of every refused connection."""
    global _active
    allowed = _allowed_set(allow_hosts)
    attempts: list[str] = []
    with _lock:
        if _active:
            raise RuntimeError("the symtrace network block is already active")
        _active = True
        patches = PatchSet(
            Patch(socket.socket, name, partial(_guarded, allowed=allowed, attempts=attempts,
                                               name=name))
            for name in ("connect", "connect_ex")
        )
        try:
            patches.install()
        except BaseException:
            _active = False
            raise
    try:
        yield attempts
    finally:
        with _lock:
            patches.uninstall()
            _active = False


def _guarded(
    original: Callable[..., Any], *, allowed: frozenset[str], attempts: list[str], name: str
) -> Callable[..., Any]:
    def connect(self: socket.socket, address: Any, *args: Any) -> Any:
        if self.family in (socket.AF_INET, socket.AF_INET6) and isinstance(address, tuple):
            host = str(address[0])
            if host not in allowed:
                where = f"{host}:{address[1]}"
                attempts.append(where)
                if name == "connect_ex":  # reports errors as a number, never raises
                    return errno.ECONNREFUSED
                raise NetworkBlocked(
                    f"symtrace replay blocked a network connection to {where}: a replayed "
                    "test is served from its bundle only"
                )
        return original(self, address, *args)

    return connect
