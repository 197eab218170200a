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

The graph then takes out each text found only inside a longer one's occurrence (graph.py,
own_quotes()): that needs the joined text only for texts whose occurrences may overlap another
text's. quoted_apart() tells which, from the same entries: an occurrence lies inside a part
(the part's hits) or covers the spaces between parts k..m (a text passing each of those
junction tests), so two texts' occurrences overlap only if both are in one *zone*: a part with
the junctions before and after it. A text that shares no zone with another text found is
apart, exactly.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Sequence
from collections.abc import Set as AbstractSet
from typing import Any

MEMO_ENTRIES = 8192  # part and junction entries; cleared whole beyond (a new phase of the run)
# a part checked against more texts than this gets a set of its words (_part_entry()): building
# it costs about as much as ~100 searches of the part for a word
WORD_SET_FROM = 64
_NONE: frozenset[int] = frozenset()  # no junction before a request's first part
# QuoteIndex.scan(): (texts inside a part, texts that may cover a junction, per part its hits
# and the hits of the junction before it, whether a zone may hold two texts)
Scan = tuple[set[int], set[int], list[tuple[set[int], AbstractSet[int]]], bool]


class QuoteIndex:
    """Produced texts in order, and which of them a request's parts contain."""

    def __init__(self) -> None:
        self.texts: list[str] = []
        self.marked: set[int] = set()  # the texts holding "\x00" (graph.own_quotes())
        self._firsts: list[str | None] = []
        self._lasts: list[str] = []
        self._keys: list[str | None] = []  # its longest inner word, if it has one
        self._shortest = sys.maxsize  # the length of the shortest text (_part_entry())
        self._in_part: dict[str, list[Any]] = {}
        self._junction: dict[tuple[str, str], list[Any]] = {}
        self._lock = threading.Lock()

    def add(self, text: str) -> int:
        """Register a produced text (whitespace-normalised); return its index."""
        with self._lock:
            if "\x00" in text:
                self.marked.add(len(self.texts))
            self.texts.append(text)
            if len(text) < self._shortest:
                self._shortest = len(text)
            # a text without a space covers no junction: None tells it (_check_junction())
            self._firsts.append(text.split(" ", 1)[0] if " " in text else None)
            self._lasts.append(text.rsplit(" ", 1)[-1])
            inner = text.split(" ")[1:-1]
            self._keys.append(max(inner, key=len) if inner else None)
            return len(self.texts) - 1

    def __len__(self) -> int:
        return len(self.texts)

    def quoted(self, parts: Sequence[str], lo: int = 0) -> set[int]:
        """Indices i >= *lo* of the texts that occur in `" ".join(parts)` (parts non-empty,
        whitespace-normalised)."""
        return self.quoted_apart(parts, lo)[0]

    def quoted_apart(self, parts: Sequence[str], lo: int = 0) -> tuple[set[int], set[int]]:
        """quoted(), and which of the texts found may have an occurrence that overlaps an
        occurrence of another text found (the rest are apart: see the module docstring)."""
        return self.settle(parts, self.scan(parts, lo), lo)

    def scan(self, parts: Sequence[str], lo: int = 0) -> Scan:
        """The first half of quoted_apart(): the texts inside one part (*inside*) and those
        that may cover the space between two (*maybe*), from the memoised entries, without
        searching the joined text or telling which are apart (settle() does).

        Every text quoted_apart() finds is in one of the two sets (their indices may be below
        *lo*): a caller to whom none of them would bring anything new (the graph, when each
        one's producer is already a source) need not settle them.
        """
        with self._lock:
            texts, end = self.texts, len(self.texts)
            found: set[int] = set()
            maybe: set[int] = set()  # texts that may cover the space between two parts
            # per part: its hits, and those of the junction before it
            zones: list[tuple[set[int], AbstractSet[int]]] = []
            in_part = self._in_part
            keys, firsts, lasts = self._keys, self._firsts, self._lasts
            previous = None
            crowded = False  # a zone (module docstring) may hold two texts or more
            for part in parts:  # one pass (inlined: it runs per message per call)
                entry = in_part.get(part)
                if entry is None:
                    entry = self._part_entry(part, lo, end)
                start, stop, hits, first, last, words, before, junction = entry
                if stop < end or lo < start:  # texts added since it was last seen
                    if start <= lo <= stop:  # (usual: only texts added since, checked inline)
                        if stop == end - 1:  # (one text added since the last call: no loop)
                            key = keys[stop]
                            if (key is None or key in words) and texts[stop] in part:
                                hits.add(stop)
                        else:
                            for i in range(stop, end):
                                key = keys[i]
                                if (key is None or key in words) and texts[i] in part:
                                    hits.add(i)
                        entry[1] = end
                    else:
                        self._check_part(entry, part, lo, end)
                if hits:
                    found |= hits
                    if len(hits) > 1:
                        crowded = True
                if previous is None:
                    zones.append((hits, _NONE))
                    previous = last
                    continue
                if before != previous:  # (a conversation re-sends a message after the same one)
                    junction = entry[7] = self._junction_entry(previous, first, lo)
                    entry[6] = previous
                start, stop, junction_hits, space = junction
                if stop < end or lo < start:
                    if start <= lo <= stop:  # (as above)
                        if stop == end - 1:
                            head = firsts[stop]
                            if head is not None and (space in texts[stop] or previous.endswith(
                                    head) or first.startswith(lasts[stop])):
                                junction_hits.add(stop)
                        else:
                            for i in range(stop, end):
                                head = firsts[i]
                                if head is not None and (space in texts[i] or previous.endswith(
                                        head) or first.startswith(lasts[i])):
                                    junction_hits.add(i)
                        junction[1] = end
                    else:
                        self._check_junction(junction, previous, first, lo, end)
                if junction_hits:
                    maybe |= junction_hits
                    crowded = True
                zones.append((hits, junction_hits))
                previous = last
            return found, maybe, zones, crowded

    def settle(self, parts: Sequence[str], scan: Scan, lo: int = 0) -> tuple[set[int], set[int]]:
        """quoted_apart() of *parts* from their scan(): the texts that may cover a space
        between parts searched for in the joined parts, and which of those found are near."""
        found, maybe, zones, crowded = scan
        with self._lock:
            maybe = maybe - found
            if maybe:
                haystack, texts = " ".join(parts), self.texts
                found = found.union(i for i in maybe if texts[i] in haystack)
            if lo:
                found = {i for i in found if i >= lo}
            return found, self._near(found, zones) if crowded else set()

    def _check_junction(self, entry: list[Any], last: str, first: str, lo: int, end: int
                        ) -> None:
        """Extend a junction entry to the texts [lo, end): those that could cover the space
        between a part ending in *last* and the next one starting with *first*."""
        start, stop, hits, junction = entry
        texts, firsts, lasts = self.texts, self._firsts, self._lasts
        for i in _unchecked(start, stop, lo, end):
            head = firsts[i]
            if head is not None and (junction in texts[i] or last.endswith(head)
                                     or first.startswith(lasts[i])):
                hits.add(i)
        entry[0], entry[1] = _checked_from(start, stop, lo), end

    def _check_part(self, entry: list[Any], part: str, lo: int, end: int) -> None:
        """Extend a part entry (_part_entry()) to the texts [lo, end)."""
        start, stop, hits, _, _, words, _, _ = entry
        texts, keys = self.texts, self._keys
        for i in _unchecked(start, stop, lo, end):
            key = keys[i]
            if (key is None or key in words) and texts[i] in part:
                hits.add(i)
        entry[0], entry[1] = _checked_from(start, stop, lo), end

    def _near(self, found: set[int], zones: list[tuple[set[int], AbstractSet[int]]]) -> set[int]:
        """The texts of *found* that share a zone with another text found: a zone is a part,
        with the texts inside it (its hits) and those that may cover the space before or
        after it (the junctions' hits). Texts in no shared zone are apart."""
        near: set[int] = set()
        texts, after = self.texts, len(zones) - 1
        for k, (hits, before) in enumerate(zones):
            following = zones[k + 1][1] if k < after else _NONE
            if len(hits) + len(before) + len(following) < 2:
                continue  # (usual: one text in its own message, none across its junctions)
            zone = (hits | before | following) & found
            if len(zone) > 1 and len({texts[i] for i in zone}) > 1:
                near |= zone
        return near

    def _part_entry(self, part: str, lo: int, end: int) -> list[Any]:
        """`[start, stop, hits, first word, last word, words, before, junction]` of a new
        part, checked for the texts [lo, end) (as _junction_entry()); *junction* is the entry
        of the space after a part ending in the word *before* (the last one asked about).

        A text inside the part has each of its inner words (all but its first and last, which
        may be cut) inside it: a search for its longest inner word (short, fast to search
        for) passes over most texts without searching the part for them. With many texts to
        check, a set of the part's words (*words*: dearer to build than a few searches) makes
        that a lookup.
        """
        if len(self._in_part) >= MEMO_ENTRIES:
            self._in_part.clear()
        texts, keys = self.texts, self._keys
        words: AbstractSet[str] | str = (
            frozenset(part.split(" ")) if end - lo > WORD_SET_FROM else part)
        # (a part shorter than every text, a short question say, holds none of them)
        hits = {i for i in range(lo, end)
                if (keys[i] is None or keys[i] in words) and texts[i] in part
                } if len(part) >= self._shortest else set()
        entry = self._in_part[part] = [lo, end, hits, part.split(" ", 1)[0],
                                       part.rsplit(" ", 1)[-1], words, None, None]
        return entry

    def _junction_entry(self, last: str, first: str, lo: int) -> list[Any]:
        """`[start, stop, hits, junction]` of the space between a part ending in *last* and
        the next one starting with *first*: the texts [start, stop) were checked for it, and
        *hits* are those that may cover it; *junction* is `" <last> <first> "`."""
        memo = self._junction
        entry = memo.get((last, first))
        if entry is None:
            if len(memo) >= MEMO_ENTRIES:
                memo.clear()
            entry = memo[last, first] = [lo, lo, set(), f" {last} {first} "]
        return entry


def _checked_from(start: int, stop: int, lo: int) -> int:
    """Where the texts an entry was checked for start once [start, stop) is extended by
    _unchecked(): a gap [stop, lo) left unchecked drops what came before it."""
    return min(start, lo) if stop >= lo else lo


def _unchecked(start: int, stop: int, lo: int, end: int) -> range | list[int]:
    """The texts of [lo, end) outside [start, stop): those added since (the graph's lo only
    grows, so the other side is empty but for an entry made before lo moved back)."""
    after = range(max(stop, lo), end)
    if lo >= start:
        return after
    return [*range(lo, min(start, end)), *after]
