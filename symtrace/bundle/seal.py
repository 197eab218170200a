"""The seal: one root digest over everything a bundle holds, and the locator that names a field.

A sealed bundle's manifest carries `digest = {"root", "files"}`:

- `files`: the sha256 of every data file's bytes (sums.jsonl, events.jsonl, blobs.jsonl,
  stdout.txt when present);
- `root`: the digest of `{"manifest": <the whole manifest minus "digest">, "files": files}`.

So the root covers every manifest field (whatever fields the manifest has: new ones are
covered without a change here), every byte of every event line (every field, parents with
their edge kinds, positions), every blob and the captured stdout.

One digest says *that* something changed; to say *where*, sums.jsonl keeps short sums (the
first 8 hex digits of a sha256) of every top-level field of every event, one line per event
line, plus a trailer written at sealing time with the sums of every manifest leaf and of every
line of stdout.txt. The sums only locate; integrity rests on the full digests.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from typing import Any

import orjson

SUM_HEX = 8
# Top-level fields of an event line (sorted: the order of the positional sums in sums.jsonl).
EVENT_FIELDS = (
    "agent",
    "content_hash",
    "id",
    "lane",
    "meta",
    "parents",
    "position",
    "reason",
    "request",
    "request_hash",
    "response",
    "response_hash",
    "type",
)


def canon(value: Any) -> bytes:
    """Canonical bytes of plain JSON data (sorted keys, no whitespace)."""
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)


def sha256_ref(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def short_sum(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:SUM_HEX]


def event_sums(record: dict[str, Any]) -> list[str]:
    """Positional sums of an event line's fields (EVENT_FIELDS order; absent fields: "-")."""
    return [short_sum(canon(record[key])) if key in record else "-" for key in EVENT_FIELDS]


def event_line_of(values: Iterable[Any]) -> tuple[bytes, bytes]:
    """The canonical line of the event record whose fields are EVENT_FIELDS with *values*, in
    that order, and its sums line (both without newline): `canon(record)` and
    `canon(event_sums(record))`, byte for byte (the writer passes an event's fields without
    building the record).

    Each field is serialised once and the line is assembled from those bytes (a sorted-keys
    object is `{"key":<canonical value>,...}`), so the sums need no second serialisation."""
    parts: list[bytes] = []
    sums: list[str] = []
    dumps, sha256, cache = orjson.dumps, hashlib.sha256, _FIELD_CACHE  # locals: 13 per event
    for (prefix, repeated), value in zip(_FIELD_PREFIXES, values, strict=True):
        known = cache.get(value) if value is None or (repeated and type(value) is str) else None
        if known is None:
            data = dumps(value, option=_SORT_KEYS)
            total = sha256(data).hexdigest()[:SUM_HEX]
            if repeated and len(data) <= 256 and len(cache) < 4096:
                cache[value] = (data, total)
        else:
            data, total = known
        parts += (prefix, data)
        sums.append(total)
    parts.append(b"}")
    return b"".join(parts), dumps(sums)


_SORT_KEYS = orjson.OPT_SORT_KEYS
# Fields whose values recur on every event of a run (a lane, an agent, an event type): their
# bytes and sums are kept by value (a str or None) instead of serialised and hashed again;
# bounded by entries and by the size of each (a sum depends on the value alone). The others
# (ids, hashes, positions, parents...) differ per event: not looked up, unless null.
_REPEATED_FIELDS = frozenset(("agent", "lane", "reason", "type"))
_FIELD_CACHE: dict[str | None, tuple[bytes, str]] = {}
# `{"agent":` then `,"content_hash":`...: what precedes each field's value in the line (in
# EVENT_FIELDS order), and whether the field is one of _REPEATED_FIELDS.
_FIELD_PREFIXES = tuple(
    ((b"{" if index == 0 else b",") + canon(key) + b":", key in _REPEATED_FIELDS)
    for index, key in enumerate(EVENT_FIELDS)
)


def manifest_leaves(manifest: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Every leaf of the manifest by dotted path (objects are descended; lists are leaves)."""
    leaves: dict[str, Any] = {}
    for key, value in manifest.items():
        path = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            leaves.update(manifest_leaves(value, path + "."))
        else:
            leaves[path] = value
    return leaves


def manifest_sums(manifest: dict[str, Any]) -> dict[str, str]:
    return {path: short_sum(canon(value)) for path, value in manifest_leaves(manifest).items()}


def stdout_lines(data: bytes) -> list[bytes]:
    """The lines of stdout.txt as the locator counts them (line 1 is the first)."""
    return data.split(b"\n")


def stdout_sums(data: bytes | None) -> list[str] | None:
    return None if data is None else [short_sum(line) for line in stdout_lines(data)]


def unsealed(manifest: dict[str, Any]) -> dict[str, Any]:
    """The manifest minus its seal: what the root digest covers."""
    return {key: value for key, value in manifest.items() if key != "digest"}


def root_digest(manifest: dict[str, Any], files: dict[str, str]) -> str:
    return sha256_ref(canon({"files": files, "manifest": unsealed(manifest)}))


def trailer(manifest: dict[str, Any], stdout: bytes | None) -> dict[str, Any]:
    """The last line of sums.jsonl: sums of every manifest leaf and every stdout line."""
    return {"manifest": manifest_sums(unsealed(manifest)), "stdout": stdout_sums(stdout)}
