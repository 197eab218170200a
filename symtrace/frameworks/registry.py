"""Finding adapters by name, and arming them without importing their framework.

Adapters register under the entry-point group `symtrace.adapters` (`ag2`, `crewai`,
`autogen_agentchat`). `resolve(None)` arms every registered adapter whose framework is
installed; `resolve(["crewai"])` arms exactly that one and fails loudly (AdapterUnavailable)
when its framework is missing. An unknown name is AdapterNotFound.

Arming is lazy: importing symtrace, or starting a recording, never imports a framework. An
armed adapter installs its hooks right after its framework's top-level module is first
imported (a post-import hook on sys.meta_path), or at once if it already is.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Sequence
from importlib import metadata
from types import ModuleType
from typing import Any

from symtrace.errors import AdapterError, AdapterNotFound
from symtrace.frameworks import refusals as unsupported_frameworks
from symtrace.patching import after_import, cancel_after_import

GROUP = "symtrace.adapters"


def registered() -> dict[str, Any]:
    """name -> entry point, sorted by name; duplicate names are an error.

    Scanning the installed distributions costs milliseconds and every session asks several
    times (resolve, load per adapter, imported_unarmed), so the scan is cached under the
    identity of what it read: the import path and the modification time of each of its
    directories. Installing or removing a distribution adds or removes a `*.dist-info`
    entry in its directory, which changes that directory's mtime, so a package installed
    while the process runs is seen by the next session.
    """
    key = _installation_key()
    with _registered_lock:
        cached = _registered_cache.get(key)
    if cached is None:
        cached = _scan()
        with _registered_lock:
            _registered_cache.clear()  # one installation state at a time
            _registered_cache[key] = cached
    return dict(cached)


def _scan() -> dict[str, Any]:
    out: dict[str, Any] = {}
    for ep in metadata.entry_points(group=GROUP):
        if ep.name in out and out[ep.name].value != ep.value:
            raise AdapterNotFound(f"two adapters are registered as {ep.name!r}")
        out[ep.name] = ep
    return dict(sorted(out.items()))


def _installation_key() -> tuple[tuple[str, tuple[int, int, int]], ...]:
    """What the entry-point scan depends on: each import-path entry with its directory's
    mtime and link count (a file system stamps times by the clock tick, so two changes within
    one tick share an mtime; adding or removing a `*.dist-info` directory also changes the
    link count). Entries that cannot be stat-ed count as missing."""
    key = []
    for entry in sys.path:
        try:
            st = os.stat(entry or ".")
            stamp = (st.st_mtime_ns, st.st_nlink, st.st_ino)
        except OSError:
            stamp = (-1, -1, -1)
        key.append((entry, stamp))
    return tuple(key)


_registered_cache: dict[tuple[tuple[str, tuple[int, int, int]], ...], dict[str, Any]] = {}
_registered_lock = threading.Lock()


def load(name: str) -> Any:
    entries = registered()
    if name not in entries:
        known = ", ".join(entries) or "none installed"
        raise AdapterNotFound(f"no symtrace adapter named {name!r} (known: {known})")
    try:
        factory = entries[name].load()
    except Exception as exc:  # any failure to import an adapter is reported typed
        raise AdapterError(
            f"symtrace adapter {name!r} ({entries[name].value}) failed to load: "
            f"{type(exc).__name__}: {exc}"
        ) from exc
    return factory()


class Armed:
    """An adapter waiting for its framework's import (or installed, once it happened)."""

    def __init__(self, adapter: Any) -> None:
        self.adapter = adapter
        self.name: str = adapter.name
        self._lock = threading.Lock()
        self._active = False

    def install(self) -> None:
        self._active = True
        if self.adapter.module in sys.modules:
            self._install_now()
        else:
            after_import(self.adapter.module, self.on_import)

    def on_import(self, module: ModuleType | None = None) -> None:
        if self._active:
            self._install_now()

    def _install_now(self) -> None:
        with self._lock:
            if self._active and not self.adapter.installed:
                self.adapter.install()

    def uninstall(self) -> None:
        with self._lock:
            self._active = False
            cancel_after_import(self.adapter.module, self.on_import)
            if self.adapter.installed:
                self.adapter.uninstall()


def resolve(names: Sequence[str] | None) -> list[Armed]:
    """Adapters to arm: the named ones (each must be available), or every available one.

    Every session starts here, so this is also where frameworks symtrace cannot see are
    refused (symtrace.frameworks.refusals): already imported, or imported later.
    """
    unsupported_frameworks.check_imported()
    unsupported_frameworks.arm()
    if names is None:
        chosen = []
        for name in registered():
            adapter = load(name)
            if adapter.is_available():
                chosen.append(adapter)
    else:
        chosen = [load(name) for name in sorted(set(names))]
        for adapter in chosen:
            adapter.check_available()
    return [Armed(adapter) for adapter in chosen]


def imported_unarmed(armed: Sequence[Armed]) -> list[tuple[str, str]]:
    """(adapter, module) for each registered adapter left unarmed whose framework the program
    imported anyway (`--adapter crewai` on an AG2 program): that framework's agents and tools
    went unseen, only its HTTP calls were recorded or replayed."""
    names = {a.name for a in armed}
    out = []
    for name in registered():
        if name in names:
            continue
        try:
            adapter = load(name)
        except AdapterError:  # a broken adapter is reported where it is armed, not here
            continue
        if adapter.module in sys.modules:
            out.append((name, adapter.module))
    return out
