"""Replay bundles on disk: format, writing, reading, verifying. See docs/bundle-format.md.

The names below are loaded on first use (PEP 562): a recording imports the writer only, and
importing any submodule runs this file, so it must not pull the reader and the graph in.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from symtrace.lazy_exports import lazy_exports

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


__getattr__, __dir__ = lazy_exports(__name__, _WHERE, [*__all__, "blobs"])
