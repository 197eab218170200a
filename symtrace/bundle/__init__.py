"""Replay bundles on disk: format, writing, reading, verifying. See docs/bundle-format.md."""

from symtrace.bundle.format import FORMAT_VERSION, events_digest
from symtrace.bundle.reader import Bundle, load_bundle, verify_bundle
from symtrace.bundle.writer import BundleWriter

__all__ = [
    "FORMAT_VERSION",
    "Bundle",
    "BundleWriter",
    "events_digest",
    "load_bundle",
    "verify_bundle",
]
