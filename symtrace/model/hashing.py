"""Content digests: `"sha256:<hex>"` over canonical bytes."""

from __future__ import annotations

import hashlib

import orjson

from symtrace.model.canonical import canonical_bytes

PREFIX = "sha256:"


def digest_bytes(data: bytes) -> str:
    return PREFIX + hashlib.sha256(data).hexdigest()


def digest(value: object) -> str:
    """Digest of *value*'s canonical JSON form."""
    return digest_bytes(canonical_bytes(value))


def digest_canonical(value: object) -> str:
    """Digest of *value* that is already canonical data: what `to_json_value` and the
    `canonical_*` builders return (exact JSON types, integral floats as ints), or such data
    with strings replaced (redaction). Equal to `digest(value)` for such data, without
    walking it a second time; anything else must go through `digest`."""
    return digest_bytes(orjson.dumps(value, option=orjson.OPT_SORT_KEYS))


def content_digest(
    event_type: str, lane: str, request_hash: str | None, response_hash: str | None
) -> str:
    """An event's `content_hash`: the digest of the fields that must agree when the event is
    materialised again (*event_type*: its value, e.g. "agent_action"; an EventType is one)."""
    return digest_bytes(orjson.dumps(
        {"type": event_type, "lane": lane, "request_hash": request_hash,
         "response_hash": response_hash},
        option=orjson.OPT_SORT_KEYS,
    ))


def short(d: str, n: int = 10) -> str:
    """A short, human-readable prefix of a digest."""
    return d[len(PREFIX) : len(PREFIX) + n] if d.startswith(PREFIX) else d[:n]
