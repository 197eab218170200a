"""Naming a class in a bundle and finding it again: `"package.module:Outer.Inner"`.

Codecs store the type of a framework value (a pydantic result, a recorded exception) this way
and rebuild it on replay. A name that no longer resolves is an UnreplayableEvent: replay must
not guess a stand-in.
"""

from __future__ import annotations

import importlib
from typing import Any

from symtrace.errors import UnreplayableEvent


def qualified(cls: type) -> str:
    return f"{cls.__module__}:{cls.__qualname__}"


def resolve(path: str, *, what: str = "recorded value") -> Any:
    """The object named by *path*, or UnreplayableEvent saying which name failed."""
    module_name, _, qualname = path.partition(":")
    try:
        owner: Any = importlib.import_module(module_name)
        for part in qualname.split("."):
            owner = getattr(owner, part)
    except (ImportError, AttributeError, ValueError) as exc:
        raise UnreplayableEvent(f"{what} of type {path} cannot be rebuilt: {exc}") from exc
    return owner
