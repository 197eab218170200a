"""Names of a package loaded on first use (PEP 562), for `symtrace` and `symtrace.bundle`.

Importing any submodule runs its package's `__init__`, so a package whose `__init__` imported
everything it exports would make the lightest submodule pay for the heaviest (fast start).
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Iterable, Mapping
from typing import Any


def lazy_exports(package: str, where: Mapping[str, str], listed: Iterable[str]
                 ) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """`__getattr__` and `__dir__` for *package*: each name of *where* is imported from its
    module on first access and kept in the package's namespace; `dir()` lists *listed*."""
    names = sorted(set(listed))

    def __getattr__(name: str) -> Any:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return list(names)

    return __getattr__, __dir__
