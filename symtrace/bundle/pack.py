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
import re
from bisect import bisect_right
from itertools import accumulate, compress, repeat
from operator import ge, itemgetter
from re import Match
from typing import Any

import orjson

from symtrace.bundle.files import canonical_line
from symtrace.errors import BundleFormatError, BundleIntegrityError

REF_PREFIX = b"sha256:"
REF_LEN = len(REF_PREFIX) + 64


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
        if type(value) in _CONTAINERS and not canonical_line(raw, value):
            raise BundleFormatError(  # a key twice, or nested deeper than can be hashed
                f"blobs.jsonl line {number}: not canonical JSON (a key twice, unsorted keys, "
                "spaces, or nested too deep)")
        self._cache[ref] = value
        return value

    def check_order(self) -> None:
        """Raise BundleFormatError unless every blob names only blobs on earlier lines.

        The writer stores a value's parts before the value, and a chain's previous node
        before the next (blobs.split), so a pack it wrote is in that order; a pack that is
        not could hold a cycle (a crafted blob naming itself, through any number of others),
        which joining would follow forever. Two C-level searches of the pack find the refs
        the blobs name: in canonical JSON `{"$blob":"`, `{"$chain":"` and `"$p":"` cannot occur
        inside a string (its quotes are escaped), so every match is a reference."""
        index = self.index
        lines = self._lines
        assert lines is not None
        # a chain node's line ends `,"$p":"sha256:<hex>"}`: its previous node, found by slicing
        tails = list(map(itemgetter(slice(-_NODE_TAIL, None)), lines))
        marks = list(map(bytes.startswith, tails, repeat(_PREVIOUS_MARK)))
        numbers = list(compress(range(len(lines)), marks))
        refs = list(map(itemgetter(_PREVIOUS_REF), compress(tails, marks)))
        _check_before(index, numbers, refs)
        # every other reference, by a search of the whole pack: a match at byte b is on line
        # bisect_right(ends, b) (ends: where each line ends, after its newline)
        matches = list(_NAMED_BLOB.finditer(self.data))
        if matches:
            ends = list(accumulate(map((1).__add__, map(len, lines))))
            numbers = list(map(bisect_right, repeat(ends), map(Match.start, matches)))
            _check_before(index, numbers, list(map(Match.group, matches, repeat(1))))

    def check_all(self) -> None:
        """Verify every blob's bytes against its ref (verify reads every blob)."""
        for ref, (number, start, end) in scan(self.data).items():
            if "sha256:" + hashlib.sha256(self.data[start:end]).hexdigest() != ref:
                raise BundleIntegrityError(
                    f"blob {ref} does not match its content", where=f"blobs.jsonl line {number}"
                )


PACK_WHERE = "blobs.jsonl"
# `{"$blob":"`, `{"$chain":"`, `"$p":"` cannot occur inside a canonical JSON string
_NAMED_BLOB = re.compile(rb'\{"\$(?:blob|chain)":"(sha256:[0-9a-f]{64})"\}')
_PREVIOUS_MARK = b',"$p":"sha256:'
_NODE_TAIL = len(_PREVIOUS_MARK) + 64 + 2
_PREVIOUS_REF = slice(len(_PREVIOUS_MARK) - len(REF_PREFIX), -2)


def _check_before(index: dict[bytes, int], numbers: list[int], refs: list[bytes]) -> None:
    """Raise unless each of *refs*, named on line *numbers* (0-based), is on an earlier line
    (a ref missing from the pack is left to the blob's reading to name)."""
    found = list(map(index.get, refs, repeat(-1)))
    if any(map(ge, found, numbers)):
        number, ref = next((n, r) for n, r, f in zip(numbers, refs, found, strict=True)
                           if f >= n)
        raise BundleFormatError(
            f"blobs.jsonl line {number + 1}: names blob {ref.decode()} at or after its own "
            "line (a blob names only blobs written before it)")
_CONTAINERS = (dict, list)  # a scalar's parse is its canonical form unless a number is odd
_MISSING = object()
