"""Replay bundles on disk: format, writing, reading, verifying. See docs/bundle-format.md.

The names below are loaded on first use (PEP 562): a recording imports the writer only, and
importing any submodule runs this file, so it must not pull the reader and the graph in.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from symtrace.bundle.format import FORMAT_VERSION, events_digest
    from symtrace.bundle.reader import Bundle, load_bundle, verify_bundle
    from symtrace.bundle.writer import BundleWriter

_WHERE = {
    "FORMAT_VERSION": "symtrace.bundle.format",
    "events_digest": "symtrace.bundle.format",
    "Bundle": "symtrace.bundle.reader",
    "load_bundle": "symtrace.bundle.reader",
    "verify_bundle": "symtrace.bundle.reader",
    "BundleWriter": "symtrace.bundle.writer",
}

__all__ = [
    "FORMAT_VERSION",
    "Bundle",
    "BundleWriter",
    "events_digest",
    "load_bundle",
    "verify_bundle",
]


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'symtrace.bundle' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
