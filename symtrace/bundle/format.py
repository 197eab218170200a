"""The on-disk format: version, file names, manifest fields. Specified in docs/bundle-format.md."""

from __future__ import annotations

from collections import Counter
from itertools import chain
from operator import attrgetter
from typing import TYPE_CHECKING, Any

from symtrace.errors import BundleFormatError, UnsupportedBundleVersion
from symtrace.model.hashing import digest, digest_canonical

if TYPE_CHECKING:
    from symtrace.model.events import Event

FORMAT_VERSION = 2  # every event line carries its parents
# Versions this symtrace refuses, and why (docs/bundle-format.md, "Versions"): refused typed
# (UnsupportedBundleVersion, exit 91) rather than read in a second way.
RETIRED_VERSIONS = {
    1: "the format before sealed bundles (no root digest: its content cannot be checked)",
    3: "the graph derived at read (an opt-in of earlier symtrace; event lines without parents)",
}
MANIFEST = "manifest.json"
EVENTS = "events.jsonl"
PACK = "blobs.jsonl"
SUMS = "sums.jsonl"
STDOUT = "stdout.txt"
# The files the root digest covers, in the order the locator checks them (a bundle always has
# the first three; stdout.txt only for CLI recordings).
SEALED_FILES = (SUMS, EVENTS, PACK, STDOUT)
DIGEST = "digest"  # manifest key of the seal: {"root", "files"}; absent until sealed

KIND_RECORDING = "recording"
KIND_SELECTIVE = "selective_replay"

REQUIRED_MANIFEST_FIELDS = ("format_version", "kind", "complete", "task", "initial_state", "config")


def check_version(data: Any, where: str) -> dict[str, Any]:
    """A manifest of this format version (checked before the seal: it says how to read it)."""
    if not isinstance(data, dict):
        raise BundleFormatError(f"{where}: manifest is not a JSON object")
    version = data.get("format_version")
    if version != FORMAT_VERSION or type(version) is not int:
        raise UnsupportedBundleVersion(version, FORMAT_VERSION,
                                       RETIRED_VERSIONS.get(version))  # type: ignore[arg-type]
    return data


def check_manifest(data: Any, where: str) -> dict[str, Any]:
    """Validate a parsed manifest; raise the specific typed error for what is wrong."""
    check_version(data, where)
    missing = [name for name in REQUIRED_MANIFEST_FIELDS if name not in data]
    if missing:
        raise BundleFormatError(f"{where}: manifest lacks {', '.join(missing)}")
    if data["kind"] not in (KIND_RECORDING, KIND_SELECTIVE):
        raise BundleFormatError(f"{where}: unknown bundle kind {data['kind']!r}")
    return data


def events_digest(events: list[Event]) -> str:
    """One digest over the whole trajectory: content hashes and parents, in observed order.

    Every seal computes it over all of a bundle's events: when ids, hashes and parent ids
    are all strings (always, unless a bundle on disk says otherwise) the rows are canonical
    as they are, and are serialised without the canonicalising walk (digest_canonical, the
    same bytes); anything else takes `digest`'s walk."""
    ordered = sorted(events, key=_POSITION)
    ids = [e.id for e in ordered]
    hashes = [e.content_hash for e in ordered]
    parents = [[edge.source for edge in e.parents] for e in ordered]
    rows = [list(row) for row in zip(ids, hashes, parents, strict=True)]
    if _STR.issuperset(map(type, ids)) and _STR.issuperset(map(type, hashes)) and (
            _STR.issuperset(map(type, chain.from_iterable(parents)))) and (
            _LIST.issuperset(map(type, parents))):
        return digest_canonical(rows)
    return digest(rows)


_POSITION = attrgetter("position")
_STR = frozenset((str,))
_LIST = frozenset((list,))


def counts_of(events: list[Event]) -> dict[str, int]:
    """The manifest's `counts`: events in all, and per type (an enum's `_value_` is a plain
    attribute; `value` is a property)."""
    counts: dict[str, int] = {"events": len(events)}
    for kind, count in Counter(event.type._value_ for event in events).items():
        counts[kind] = count
    return dict(sorted(counts.items()))
