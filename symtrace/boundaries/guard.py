"""Egress guard during replay: the recorded endpoints are unreachable except through symtrace.

The httpx boundary serves every recorded LLM call, but a program (or a framework side path)
can reach the same endpoint another way — `requests`, `urllib`, `aiohttp`, a raw socket. In a
replay that would be a silent live call. While a replay has not gone live, connecting to any
(host, port) the bundle recorded an LLM or HTTP exchange with raises `LiveCallBlocked`, and
the session records it as an unexpected call, so the replay fails even if the program
swallows the error. Other connections (a local database, say) are left alone.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable
from typing import Any

from symtrace.errors import ReplayError
from symtrace.patching import Patch, PatchSet

_lock = threading.Lock()
_patches: PatchSet | None = None
_blocked: set[tuple[str, int]] = set()
_on_block: list[Callable[[str, int], None]] = []


class LiveCallBlocked(ReplayError, ConnectionRefusedError):
    """A replayed program tried to reach a recorded endpoint outside the boundary."""


def install(endpoints: set[tuple[str, int]], on_block: Callable[[str, int], None]) -> None:
    global _patches
    with _lock:
        if _patches is not None:
            raise RuntimeError("the egress guard is already installed")
        _blocked.clear()
        _blocked.update((_normal(host), port) for host, port in endpoints)
        _on_block[:] = [on_block]
        patches = PatchSet((
            Patch(socket.socket, "connect", _guarded_connect),
            Patch(socket.socket, "connect_ex", _guarded_connect),
            Patch(socket, "getaddrinfo", _guarded_lookup),
        ))
        patches.install()
        _patches = patches


def uninstall() -> None:
    global _patches
    with _lock:
        if _patches is not None:
            _patches.uninstall()
            _patches = None
        _blocked.clear()
        _on_block.clear()


def release() -> None:
    """Stop blocking (a selective replay went live)."""
    with _lock:
        _blocked.clear()


def _check(host: object, port: object) -> None:
    if not _blocked or port is None:
        return
    try:
        key = (_normal(str(host)), int(port))  # type: ignore[call-overload]
    except (TypeError, ValueError):
        return
    if key in _blocked:
        for callback in list(_on_block):
            callback(*key)
        raise LiveCallBlocked(
            f"replay blocked a connection to {key[0]}:{key[1]}, a recorded endpoint, made "
            "outside the httpx boundary (requests/urllib/aiohttp/raw socket)"
        )


def _guarded_connect(original: Callable[..., Any]) -> Callable[..., Any]:
    def connect(self: socket.socket, address: Any, *args: Any) -> Any:
        if isinstance(address, tuple) and len(address) >= 2:
            _check(address[0], address[1])
        return original(self, address, *args)

    return connect


def _guarded_lookup(original: Callable[..., Any]) -> Callable[..., Any]:
    def getaddrinfo(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        _check(host, port)
        return original(host, port, *args, **kwargs)

    return getaddrinfo


def _normal(host: str) -> str:
    return "127.0.0.1" if host in ("localhost", "::1") or host.startswith("127.") else host
