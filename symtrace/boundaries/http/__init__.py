"""The LLM/HTTP boundary: one exchange core (exchange.py), one thin seam per HTTP library.

* httpx (openai 2, litellm): `HTTPTransport.handle_request` and
  `AsyncHTTPTransport.handle_async_request` (httpx_family);
* httpx2 (openai 3, anthropic 2, openai-agents, google-genai, mistralai): the same two
  methods of httpx2's own classes (httpx_family);
* aiohttp (litellm's async path): `ClientSession._request` (aiohttp_seam);
* urllib3, and so requests: `HTTPConnectionPool.urlopen` (urllib3_seam).

Each is patched at class level while a session is active.

A seam whose library is already imported is installed at once; the others when (if ever) the
program imports them, so a program never pays for importing aiohttp just to be recorded.
Install is reference-counted (in-process sessions and the CLI child both install); each
seam's patches are one `symtrace.patching.PatchSet` (every target resolved before anything is
patched, restored in reverse order).

Connections a seam opens while sending are its own (`exchange.sending`); everything else is
the egress guard's business (symtrace.boundaries.egress).
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from types import ModuleType
from typing import Protocol

from symtrace.patching import (
    Patch,
    PatchSet,
    after_import,
    cancel_after_import,
    random_neutral_import,
)


class Seam(Protocol):
    library: str

    def patches(self) -> tuple[Patch, ...]: ...


def _httpx_family(module: ModuleType) -> Seam:
    from symtrace.boundaries.http.httpx_family import HttpxSeam

    return HttpxSeam(module)


def _aiohttp(module: ModuleType) -> Seam:
    from symtrace.boundaries.http.aiohttp_seam import AiohttpSeam

    return AiohttpSeam()


def _urllib3(module: ModuleType) -> Seam:
    from symtrace.boundaries.http.urllib3_seam import Urllib3Seam

    return Urllib3Seam()


# top-level module -> how to build its seam
SEAMS: dict[str, Callable[[ModuleType], Seam]] = {
    "httpx": _httpx_family,
    "httpx2": _httpx_family,
    "aiohttp": _aiohttp,
    "urllib3": _urllib3,
}
# Imported only when the program imports them. httpx used to be imported at once, before the
# session seeds `random`; its import draws from `random` (rich.style, through httpx._main), so
# its import is made random-neutral: the program sees the stream bundles recorded so far saw
# (bundles/ag2-cache), and a program that never imports httpx never pays ~0.1-0.3 s for it.
RANDOM_NEUTRAL = ("httpx", "httpx2")

_lock = threading.RLock()
_users = 0
_installed: dict[str, PatchSet] = {}  # module -> its seam's patches, in install order
_patched_owners: set[int] = set()  # a class patched once even under two module names


def install() -> None:
    """Install every seam (now, or when its library is imported); reference-counted."""
    global _users
    with _lock:
        _users += 1
        if _users > 1:
            return
        for name in RANDOM_NEUTRAL:
            random_neutral_import(name)
        for name in SEAMS:
            if name in sys.modules:
                _install_seam(name, sys.modules[name])
            else:
                after_import(name, _on_import)


def uninstall() -> None:
    """Undo install(); the last user restores every replaced attribute, in reverse."""
    global _users
    with _lock:
        if _users == 0:
            return
        _users -= 1
        if _users:
            return
        for name in SEAMS:
            cancel_after_import(name, _on_import)
        for name in RANDOM_NEUTRAL:
            random_neutral_import(name, neutral=False)
        for name in reversed(list(_installed)):
            patch_set = _installed.pop(name)
            patch_set.uninstall()
            for patch in patch_set.patches:
                _patched_owners.discard(id(patch.owner))


def finish_open_streams() -> None:
    """exchange.finish_open_streams, when a seam ever ran: the exchange core (and the session
    it imports) is loaded with the first seam, not before the program starts (fast start)."""
    exchange = sys.modules.get("symtrace.boundaries.http.exchange")
    if exchange is not None:
        exchange.finish_open_streams()


def is_installed() -> bool:
    return _users > 0


def installed_seams() -> tuple[str, ...]:
    """The libraries whose seam is in place now (for tests and the manifest)."""
    with _lock:
        return tuple(_installed)


def _on_import(module: ModuleType) -> None:
    cancel_after_import(module.__name__, _on_import)
    _install_seam(module.__name__, module)


def _install_seam(name: str, module: ModuleType) -> None:
    with _lock:
        if _users == 0 or name in _installed:
            return
        seam = SEAMS[name](module)
        # httpx2.alias_httpx() makes httpx *be* httpx2: a class is patched once
        patches = [p for p in seam.patches() if id(p.owner) not in _patched_owners]
        patch_set = PatchSet(patches)
        patch_set.install()  # resolves every target first; restores on a half-failed install
        _patched_owners.update(id(p.owner) for p in patches)
        _installed[name] = patch_set


__all__ = [
    "SEAMS",
    "finish_open_streams",
    "install",
    "installed_seams",
    "is_installed",
    "uninstall",
]
