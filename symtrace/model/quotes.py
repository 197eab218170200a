"""Which earlier texts a request quotes, exactly, without rescanning the whole request each call.

The graph (symtrace.model.graph) links a chat request to every earlier produced text (a reply,
a tool result) that occurs in the request's text: `text in " ".join(parts)`, where the parts
are the request's whitespace-normalised message texts. Done naively that is one scan of the
whole request per producer per call: a conversation re-sends ~10 KB and the graph keeps up
to 256 producers, milliseconds per call.

A conversation re-sends the same messages call after call, so the answer is kept per message
instead, by content: for each part, which producers occur inside it, extended only by the
producers added since the part was last seen. An occurrence inside the joined text either lies
inside one part, or it covers a joining space. The second case is decided exactly but cheaply:
a text can cover the space between part k and part k+1 only if it contains
`" <last word of k> <first word of k+1> "`, or its first word is a suffix of k's last word, or
its last word is a prefix of k+1's first word (texts and parts are whitespace-normalised).
Those junction tests are memoised the same way, by the two words; only a producer that passes
one is searched for in the joined text. So the result is exactly the naive one.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from itertools import pairwise
from typing import Any

MEMO_ENTRIES = 8192  # part and junction entries; cleared whole beyond (a new phase of the run)


class QuoteIndex:
    """Produced texts in order, and which of them a request's parts contain."""

    def __init__(self) -> None:
        self.texts: list[str] = []
        self._firsts: list[str] = []
        self._lasts: list[str] = []
        self._in_part: dict[str, tuple[int, int, frozenset[int]]] = {}
        self._junction: dict[tuple[str, str], tuple[int, int, frozenset[int]]] = {}
        self._lock = threading.Lock()

    def add(self, text: str) -> int:
        """Register a produced text (whitespace-normalised); return its index."""
        with self._lock:
            self.texts.append(text)
            self._firsts.append(text.split(" ", 1)[0])
            self._lasts.append(text.rsplit(" ", 1)[-1])
            return len(self.texts) - 1

    def __len__(self) -> int:
        return len(self.texts)

    def quoted(self, parts: Sequence[str], lo: int = 0) -> set[int]:
        """Indices i >= *lo* of the texts that occur in `" ".join(parts)` (parts non-empty,
        whitespace-normalised)."""
        with self._lock:
            found: set[int] = set()
            for part in parts:
                found |= self._hits(self._in_part, part, lo, lambda i, p=part: self.texts[i] in p)
            maybe: set[int] = set()
            for left, right in pairwise(parts):
                words = (left.rsplit(" ", 1)[-1], right.split(" ", 1)[0])
                maybe |= self._hits(self._junction, words, lo,
                                    lambda i, w=words: self._may_cover(i, *w))
            maybe -= found
            if maybe:
                haystack = " ".join(parts)
                found.update(i for i in maybe if self.texts[i] in haystack)
            return {i for i in found if i >= lo}

    def _may_cover(self, i: int, last: str, first: str) -> bool:
        """Could text i cover the space joining a part ending in *last* to one starting with
        *first*? (A necessary condition; see the module doc.)"""
        text = self.texts[i]
        if " " not in text:
            return False
        return (
            f" {last} {first} " in text
            or last.endswith(self._firsts[i])
            or first.startswith(self._lasts[i])
        )

    def _hits(
        self, memo: dict[Any, Any], key: object, lo: int, check: Callable[[int], bool]
    ) -> frozenset[int]:
        """The memoised set of texts passing *check* for *key*, extended to texts [lo, end).

        An entry covers the texts [start, end) it was checked against; a query checks only
        what lies outside (the graph's lo only grows, so usually just the newest texts)."""
        end = len(self.texts)
        entry = memo.get(key)
        start, stop, hits = entry if entry is not None else (lo, lo, frozenset())
        todo = [*range(lo, min(start, end)), *range(max(stop, lo), end)]
        if todo or entry is None:
            new = [i for i in todo if check(i)]
            if new:
                hits = hits | frozenset(new)
            if len(memo) >= MEMO_ENTRIES:
                memo.clear()
            memo[key] = (min(start, lo), end, hits)
        return hits
