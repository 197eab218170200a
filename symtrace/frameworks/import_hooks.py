"""Import hooks: the one way symtrace puts finders on `sys.meta_path` and takes them off.

Two finders watch imports: the adapter registry's (arms an adapter right after its framework
was executed) and the refusal of unsupported frameworks (raises before such a module runs).
Neither finds modules itself: each asks the finders after it what they would find, and acts
on that spec. `sys.meta_path` is a list other code edits too (pytester resets it, coverage and
import-hook libraries insert into it), so a finder is inserted once, at the front, and only
that finder is removed — never the list replaced or restored wholesale (which is why this is
not a `symtrace.patching.PatchSet`).
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
from typing import Any


def install_finder(finder: importlib.abc.MetaPathFinder) -> None:
    """Put *finder* first on sys.meta_path unless it is there already (idempotent)."""
    if finder not in sys.meta_path:
        sys.meta_path.insert(0, finder)


def remove_finder(finder: importlib.abc.MetaPathFinder) -> None:
    """Take *finder* off sys.meta_path if it is there; leave every other finder alone."""
    if finder in sys.meta_path:
        sys.meta_path.remove(finder)


def spec_elsewhere(
    finder: importlib.abc.MetaPathFinder,
    fullname: str,
    path: Any,
    target: Any = None,
    *,
    with_loader: bool = False,
) -> importlib.machinery.ModuleSpec | None:
    """The first spec the *other* finders on sys.meta_path give for *fullname* (None: not
    found); with *with_loader*, the first one that has a loader to wrap."""
    for other in sys.meta_path:
        if other is finder or not hasattr(other, "find_spec"):
            continue
        spec = other.find_spec(fullname, path, target)
        if spec is not None and (spec.loader is not None or not with_loader):
            return spec
    return None
