"""One way to patch module and class attributes and to put them back.

Every seam that replaces a global (the HTTP boundary, the egress guard, the pytest network
block, framework adapters' hook tables) describes its patches as data and lets a `PatchSet`
apply them:

* `install()` resolves every target *before* changing anything: a missing attribute raises
  `PatchTargetMissing` and nothing is patched. It then applies the patches in order; if one
  fails half-way, the ones already applied are restored before the error propagates.
* `uninstall()` restores in reverse order, so patch sets nest (last in, first out).
* A class attribute is read from the class's own `__dict__`, so a classmethod or
  staticmethod is handed over as such. An attribute the class only inherits (e.g.
  `socket.socket.connect`, defined on `_socket.socket`) is shadowed on install and the shadow
  deleted on uninstall: the class is left exactly as it was.
* While installed, `original(owner, attribute)` returns the replaced value: replacements call
  through it instead of keeping process-global lookups of their own.

`after_import(module, callback)` runs a callback right after a module is first imported, so a
seam or an adapter is installed only if the program uses its library (the one post-import hook
on sys.meta_path; `cancel_after_import` undoes it). Finders go on and off sys.meta_path only
through `install_finder` / `remove_finder`, and ask the finders after them through
`find_elsewhere`.

Thread safety is the caller's: a seam that installs from several threads holds its own lock.
"""

from __future__ import annotations

import random
import sys
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any

from symtrace.errors import AlreadyPatched, PatchTargetMissing

if TYPE_CHECKING:  # no importlib.abc bases: it imports importlib.resources and tempfile
    import importlib.machinery

_ABSENT = object()  # the class had no attribute of its own: uninstall deletes the shadow


@dataclass(frozen=True, slots=True)
class Patch:
    owner: Any  # a module, a class, or any object with attributes
    attribute: str
    wrap: Callable[[Any], Any]  # the current value -> its replacement


@dataclass(slots=True)
class _Applied:
    owner: Any
    attribute: str
    original: Any  # what callers get from original()
    restore: Any  # what uninstall puts back (_ABSENT: delete the shadow)


class PatchSet:
    """Patches applied together and restored together (see the module docstring)."""

    def __init__(self, patches: Iterable[Patch] = ()) -> None:
        self.patches: tuple[Patch, ...] = tuple(patches)
        self._applied: list[_Applied] = []

    @property
    def installed(self) -> bool:
        return bool(self._applied)

    def install(self) -> None:
        if self._applied:
            raise AlreadyPatched("this patch set is already installed")
        resolved = [(patch, *_current(patch.owner, patch.attribute)) for patch in self.patches]
        try:
            for patch, original, restore in resolved:
                replacement = patch.wrap(original)
                self._applied.append(_Applied(patch.owner, patch.attribute, original, restore))
                setattr(patch.owner, patch.attribute, replacement)
        except BaseException:
            self.uninstall()
            raise

    def uninstall(self) -> None:
        while self._applied:
            applied = self._applied.pop()
            if applied.restore is _ABSENT:
                if applied.attribute in vars(applied.owner):
                    delattr(applied.owner, applied.attribute)
            else:
                setattr(applied.owner, applied.attribute, applied.restore)

    def original(self, owner: Any, attribute: str) -> Any:
        """The value *attribute* of *owner* had before this set was installed."""
        for applied in self._applied:
            if applied.owner is owner and applied.attribute == attribute:
                return applied.original
        raise PatchTargetMissing(f"{_name(owner)}.{attribute} is not patched by this set")


def _current(owner: Any, attribute: str) -> tuple[Any, Any]:
    """(value replacements wrap, value uninstall restores) of owner.attribute."""
    if isinstance(owner, type):
        own = vars(owner)
        if attribute in own:
            return own[attribute], own[attribute]
        if hasattr(owner, attribute):
            return getattr(owner, attribute), _ABSENT
    elif hasattr(owner, attribute):
        value = getattr(owner, attribute)
        return value, value
    raise PatchTargetMissing(f"cannot patch {_name(owner)}.{attribute}: it does not exist")


def _name(owner: Any) -> str:
    return str(getattr(owner, "__qualname__", None) or getattr(owner, "__name__", owner))


# -- finders on sys.meta_path -------------------------------------------------------------------
# sys.meta_path is a list other code edits too (pytester resets it, coverage and import-hook
# libraries insert into it): a finder is inserted once, at the front, and only that finder is
# removed, never the list replaced or restored wholesale. Used by the after-import hook below
# and by the refusal of unsupported frameworks (symtrace.frameworks.refusals).
def install_finder(finder: Any) -> None:  # a meta path finder: find_spec(name, path, target)
    """Put *finder* first on sys.meta_path unless it is there already (idempotent)."""
    if finder not in sys.meta_path:
        sys.meta_path.insert(0, finder)


def remove_finder(finder: Any) -> None:
    """Take *finder* off sys.meta_path if it is there; leave every other finder alone."""
    if finder in sys.meta_path:
        sys.meta_path.remove(finder)


# -- after-import hooks ------------------------------------------------------------------------
ImportCallback = Callable[[ModuleType], None]


class _ImportWatcher:  # a meta path finder (find_spec) and a loader below, by protocol
    """Runs callbacks right after a watched top-level module has been executed (a post-import
    hook on sys.meta_path, present only while something is watched)."""

    def __init__(self) -> None:
        self.watchers: dict[str, list[ImportCallback]] = {}
        self.random_neutral: set[str] = set()
        self.lock = threading.RLock()

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if fullname not in self.watchers and fullname not in self.random_neutral:
            return None
        spec = find_elsewhere(self, fullname, path, target)
        if spec is not None and spec.loader is not None:
            spec.loader = _NotifyingLoader(spec.loader, fullname)
            return spec
        return None


_searching = threading.local()


def find_elsewhere(me: Any, fullname: str, path: Any, target: Any = None) -> Any:
    """The spec the other finders on sys.meta_path give for *fullname*.

    For finders that watch a module by asking the others (the after-import hook here, the
    refusal of unsupported frameworks). Two of them watching one module would ask each other
    forever, so a finder already searching *fullname* in this thread answers None when asked
    again."""
    searches: set[tuple[int, str]] = _searching.__dict__.setdefault("keys", set())
    key = (id(me), fullname)
    if key in searches:
        return None
    searches.add(key)
    try:
        for finder in sys.meta_path:
            if finder is me or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                return spec
        return None
    finally:
        searches.discard(key)


class _NotifyingLoader:
    def __init__(self, inner: Any, fullname: str) -> None:
        self._inner = inner
        self._fullname = fullname

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self._inner.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        if self._fullname in _watcher.random_neutral:
            state = random.getstate()
            try:
                self._inner.exec_module(module)
            finally:
                random.setstate(state)
        else:
            self._inner.exec_module(module)
        for callback in list(_watcher.watchers.get(self._fullname, [])):
            callback(module)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


_watcher = _ImportWatcher()


def after_import(module: str, callback: ImportCallback) -> None:
    """Call *callback(module)* right after top-level *module* is first imported."""
    with _watcher.lock:
        _watcher.watchers.setdefault(module, []).append(callback)
        install_finder(_watcher)


def cancel_after_import(module: str, callback: ImportCallback) -> None:
    """Undo after_import(); the hook leaves sys.meta_path when nothing is watched."""
    with _watcher.lock:
        callbacks = _watcher.watchers.get(module, [])
        if callback in callbacks:
            callbacks.remove(callback)
        if not callbacks:
            _watcher.watchers.pop(module, None)
        if not _watcher.watchers and not _watcher.random_neutral:
            remove_finder(_watcher)


def random_neutral_import(module: str, neutral: bool = True) -> None:
    """While set, the first import of top-level *module* leaves `random`'s global state as it
    found it: whatever that import draws (rich.style draws 24 bits when httpx imports it) does
    not shift the stream the program sees. For a module that used to be imported before a
    session seeded `random` and now is imported only when the program asks for it."""
    with _watcher.lock:
        if neutral:
            _watcher.random_neutral.add(module)
            install_finder(_watcher)
        else:
            _watcher.random_neutral.discard(module)
            if not _watcher.watchers and not _watcher.random_neutral:
                remove_finder(_watcher)
