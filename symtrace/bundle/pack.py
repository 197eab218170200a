"""The blob pack: every blob of a bundle in one append-only text file, blobs.jsonl.

One line per blob, `<ref> <canonical JSON>`, where ref is `sha256:<hex>` of the JSON bytes.
Each ref is written once (content dedup: a conversation's shared prefix is stored once).
The refs at the start of the lines are the pack's index: reading builds the table
ref -> byte span in one pass over the file, and a blob is parsed only when an event needs it.
Lines are appended before the event line that names them, so a killed writer never leaves an
event whose blobs are missing; at worst an unreferenced blob or a torn last line.
"""

from __future__ import annotations

import hashlib
from typing import Any

import orjson

from symtrace.errors import BundleFormatError, BundleIntegrityError

REF_PREFIX = b"sha256:"
REF_LEN = len(REF_PREFIX) + 64


def pack_line(ref: str, data: bytes) -> bytes:
    return ref.encode() + b" " + data + b"\n"


def scan(data: bytes) -> dict[str, tuple[int, int, int]]:
    """Index of a pack: ref -> (line number from 1, start, end) of its JSON bytes.

    A line that does not start with a well-formed ref raises BundleFormatError naming it.
    """
    index: dict[str, tuple[int, int, int]] = {}
    pos, number, size = 0, 0, len(data)
    while pos < size:
        number += 1
        end = data.find(b"\n", pos)
        if end < 0:
            end = size
        if data[pos + REF_LEN : pos + REF_LEN + 1] != b" " or not data.startswith(
            REF_PREFIX, pos
        ):
            raise BundleFormatError(f"blobs.jsonl line {number}: not `<sha256 ref> <json>`")
        ref = data[pos : pos + REF_LEN].decode("ascii", "replace")
        index[ref] = (number, pos + REF_LEN + 1, end)
        pos = end + 1
    return index


class PackReader:
    """Lazy, verifying access to the blobs of one pack (parsed once, on first use).

    The index is built on first use with one C-level split of the pack and a dict of
    line prefixes; a line's format is checked when its blob is read (the sealed bytes were
    checked whole, `check_all` checks each)."""

    def __init__(self, data: bytes, *, verify: bool) -> None:
        self.data = data
        self.verify = verify
        self._lines: list[bytes] | None = None
        self._index: dict[bytes, int] = {}
        self._cache: dict[str, Any] = {}

    @property
    def index(self) -> dict[bytes, int]:
        if self._lines is None:
            self._lines = self.data.split(b"\n")
            if self._lines and not self._lines[-1]:
                self._lines.pop()
            self._index = {line[:REF_LEN]: number for number, line in enumerate(self._lines)}
        return self._index

    def load(self, ref: str) -> Any:
        cached = self._cache.get(ref, _MISSING)
        if cached is not _MISSING:
            return cached
        found = self.index.get(ref.encode())
        if found is None:
            raise BundleIntegrityError(f"blob {ref} is missing from blobs.jsonl", where=PACK_WHERE)
        assert self._lines is not None
        number, line = found + 1, self._lines[found]
        if line[REF_LEN : REF_LEN + 1] != b" ":
            raise BundleFormatError(f"blobs.jsonl line {number}: not `<sha256 ref> <json>`")
        raw = line[REF_LEN + 1 :]
        if self.verify and "sha256:" + hashlib.sha256(raw).hexdigest() != ref:
            raise BundleIntegrityError(
                f"blob {ref} does not match its content", where=f"blobs.jsonl line {number}"
            )
        try:
            value = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            raise BundleFormatError(f"blobs.jsonl line {number}: not valid JSON ({exc})") from exc
        self._cache[ref] = value
        return value

    def check_all(self) -> None:
        """Verify every blob's bytes against its ref (verify reads every blob)."""
        for ref, (number, start, end) in scan(self.data).items():
            if "sha256:" + hashlib.sha256(self.data[start:end]).hexdigest() != ref:
                raise BundleIntegrityError(
                    f"blob {ref} does not match its content", where=f"blobs.jsonl line {number}"
                )


PACK_WHERE = "blobs.jsonl"
_MISSING = object()
