"""Content-addressed blobs: why bundles grow linearly, not quadratically.

Every LLM request re-sends the whole conversation, so storing requests verbatim makes a bundle
grow with the square of the conversation length. Instead each sizeable string or object in a
request or response is stored once under its digest (`blobs/sha256-<hex>.json`) and replaced
in the event line by `{"$blob": "sha256:<hex>"}`; the next request re-uses the refs.

Splitting is bottom-up: a long message content becomes a blob, then the (now small) message
object is kept inline or stored as a blob of its own if still large. Lists stay inline. A user
object whose only key is "$blob" is always stored as a blob, so an inline `{"$blob": …}` is
unambiguously a reference.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from symtrace.canonical import JSONValue, canonical_bytes
from symtrace.hashing import digest_bytes

BLOB_MIN_BYTES = 128
REF_KEY = "$blob"


def is_ref(value: object) -> bool:
    return isinstance(value, dict) and len(value) == 1 and REF_KEY in value


def split(value: JSONValue, store: Callable[[str, bytes], None]) -> JSONValue:
    """Return *value* with sizeable parts replaced by refs; *store(digest, bytes)* saves them."""
    if isinstance(value, list):
        return [split(item, store) for item in value]
    if isinstance(value, dict):
        inner = {key: split(item, store) for key, item in value.items()}
        return _maybe_blob(inner, store, force=is_ref(value))
    if isinstance(value, str) and len(value) >= BLOB_MIN_BYTES:
        return _maybe_blob(value, store, force=False)
    return value


def _maybe_blob(value: JSONValue, store: Callable[[str, bytes], None], force: bool) -> JSONValue:
    data = canonical_bytes(value)
    if not force and len(data) < BLOB_MIN_BYTES:
        return value
    ref = digest_bytes(data)
    store(ref, data)
    return {REF_KEY: ref}


def join(value: Any, load: Callable[[str], JSONValue]) -> JSONValue:
    """Inverse of split(): replace refs by their (recursively joined) content."""
    if isinstance(value, list):
        return [join(item, load) for item in value]
    if isinstance(value, dict):
        if is_ref(value):
            return join(load(value[REF_KEY]), load)
        return {key: join(item, load) for key, item in value.items()}
    return value


def blob_filename(ref: str) -> str:
    return ref.replace(":", "-") + ".json"
