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

import functools
import importlib
import importlib.util
import sys
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from symtrace.errors import AdapterError, AdapterNotFound
from symtrace.frameworks import refusals as unsupported_frameworks
from symtrace.model.runtime_info import entry_points
from symtrace.patching import after_import, cancel_after_import

GROUP = "symtrace.adapters"


def registered() -> dict[str, str]:
    """name -> entry point value ("package:factory"), sorted by name; duplicate names are an
    error. Read afresh each time (a directory listing per sys.path entry): a distribution
    installed while the process runs is seen by the next session."""
    out: dict[str, str] = {}
    for name, value in entry_points(GROUP):
        if name in out and out[name] != value:
            raise AdapterNotFound(f"two adapters are registered as {name!r}")
        out[name] = value
    return dict(sorted(out.items()))


def load(name: str) -> Any:
    entries = registered()
    if name not in entries:
        known = ", ".join(entries) or "none installed"
        raise AdapterNotFound(f"no symtrace adapter named {name!r} (known: {known})")
    return Declaration(name, entries[name], "").load()


class Armed:
    """An adapter waiting for its framework's import (or installed, once it happened).

    Armed with the adapter itself, or with its Declaration (in the instrumented child): then
    the adapter is loaded only when its framework is imported, and `adapter` is None before.
    """

    def __init__(self, adapter: Any = None, *, declaration: Declaration | None = None) -> None:
        if (adapter is None) == (declaration is None):
            raise TypeError("Armed: give an adapter or a declaration")
        self._adapter = adapter
        self._declaration = declaration
        self.name: str = adapter.name if adapter is not None else declaration.name  # type: ignore[union-attr]
        self.module: str = (adapter.module if adapter is not None
                            else declaration.module)  # type: ignore[union-attr]
        self._lock = threading.Lock()
        self._active = False

    @property
    def adapter(self) -> Any:
        return self._adapter

    @property
    def installed(self) -> bool:
        return self._adapter is not None and bool(self._adapter.installed)

    def install(self) -> None:
        self._active = True
        if self.module in sys.modules:
            self._install_now()
        else:
            after_import(self.module, self.on_import)

    def on_import(self, module: ModuleType | None = None) -> None:
        if self._active:
            self._install_now()

    def _install_now(self) -> None:
        with self._lock:
            if not self._active:
                return
            if self._adapter is None:
                self._adapter = self._declaration.load()  # type: ignore[union-attr]
            if not self._adapter.installed:
                self._adapter.install()

    def uninstall(self) -> None:
        with self._lock:
            self._active = False
            cancel_after_import(self.module, self.on_import)
            if self._adapter is not None and self._adapter.installed:
                self._adapter.uninstall()


@dataclass(frozen=True)
class Declaration:
    """A registered adapter as the parent process found it: its name, its entry point's value
    and its framework's top-level module. Enough for the instrumented child to arm it without
    importing it (each adapter package imports the adapter contract and its hook modules:
    a tenth of a second a run, paid only by programs that import the framework)."""

    name: str
    entry: str  # "package:factory"
    module: str  # the framework's top-level module

    def load(self) -> Any:
        """The adapter, made by its factory (importing the adapter package now)."""
        package, _, attribute = self.entry.partition(":")
        try:
            factory: Any = importlib.import_module(package.strip())
            for part in attribute.split("[")[0].strip().split("."):
                factory = getattr(factory, part)
        except Exception as exc:  # any failure to import an adapter is reported typed
            raise AdapterError(f"symtrace adapter {self.name!r} ({self.entry}) failed to load: "
                               f"{type(exc).__name__}: {exc}") from exc
        return factory()


def declarations() -> list[Declaration]:
    """Every registered adapter, declared for a child process, most without importing it:
    its framework module is read from the adapter class's source when it is a literal there
    (as setuptools reads an `attr:` version statically before importing), else the adapter
    is loaded. One that fails to load is left out (reported where it is armed)."""
    out = []
    for name, entry in registered().items():
        module = _static_module(entry)
        if module is None:
            try:
                module = load(name).module
            except AdapterError:
                continue
        out.append(Declaration(name, entry, module))
    return out


def to_arm(names: Sequence[str] | None) -> list[Declaration]:
    """What a parent process arms in its child: the named adapters (loaded and checked, as
    resolve() does: a missing or unusable one fails before anything starts), or, for None,
    every registered adapter whose framework is importable, found without importing any."""
    if names is not None:
        armed = {a.name for a in resolve(names)}
        return [d for d in declarations() if d.name in armed]
    return [d for d in declarations() if importlib.util.find_spec(d.module) is not None]


@functools.lru_cache(maxsize=64)  # a parent asks twice (to_arm, declared_adapters)
def _static_module(entry: str) -> str | None:
    """The `module = "..."` of the adapter class *entry* names, read from its source without
    importing it; None when it cannot be read that way (not a plain class in a source file,
    no literal, a class that decides its availability itself)."""
    import ast  # here: only a parent declares adapters

    package, _, attribute = entry.partition(":")
    if "." in package or "." in attribute or "[" in attribute:
        return None
    try:
        spec = importlib.util.find_spec(package.strip())
        if spec is None or not spec.origin or not spec.origin.endswith(".py"):
            return None
        tree = ast.parse(Path(spec.origin).read_text(encoding="utf-8"))
    except (ImportError, ValueError, OSError, SyntaxError):
        return None
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == attribute.strip():
            defined = {item.name for item in node.body if isinstance(item, ast.FunctionDef)}
            if "is_available" in defined:
                return None
            for item in node.body:
                if (isinstance(item, ast.Assign) and len(item.targets) == 1
                        and isinstance(item.targets[0], ast.Name)
                        and item.targets[0].id == "module"
                        and isinstance(item.value, ast.Constant)
                        and isinstance(item.value.value, str)):
                    return item.value.value
    return None


def arm_declared(names: Sequence[str], declared: Sequence[Declaration]) -> list[Armed]:
    """In the instrumented child: arm *names* (checked by the parent) from the parent's
    declarations, without scanning entry points or importing an adapter. Frameworks symtrace
    cannot see are refused here too, as resolve() does."""
    unsupported_frameworks.check_imported()
    unsupported_frameworks.arm()
    by_name = {d.name: d for d in declared}
    missing = sorted(set(names) - set(by_name))
    if missing:
        raise AdapterNotFound(f"no symtrace adapter named {missing[0]!r} was declared to this "
                              "process")
    return [Armed(declaration=by_name[name]) for name in sorted(set(names))]


def imported_unarmed_declared(armed: Sequence[Armed],
                              declared: Sequence[Declaration]) -> list[tuple[str, str]]:
    """imported_unarmed() from the parent's declarations: no entry-point scan, no import."""
    names = {a.name for a in armed}
    return [(d.name, d.module) for d in declared
            if d.name not in names and d.module in sys.modules]


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
