"""The on-disk format: version, file names, manifest fields. Specified in docs/bundle-format.md."""

from __future__ import annotations

from collections import Counter
from itertools import chain
from operator import attrgetter
from typing import Any

from symtrace.errors import BundleFormatError, UnsupportedBundleVersion
from symtrace.model.events import Event
from symtrace.model.hashing import digest, digest_canonical

FORMAT_VERSION = 2  # every event line carries its parents
# The graph derived at read (manifest `graph`: GRAPH_AT_READ): a call's line carries what its
# derivation reads in place of its parents (docs/bundle-format.md). A reader of version 2 only
# refuses such a bundle, typed, rather than read calls without parents.
GRAPH_AT_READ_VERSION = 3
VERSIONS = (FORMAT_VERSION, GRAPH_AT_READ_VERSION)
GRAPH = "graph"  # manifest key: when the graph is derived
GRAPH_AT_RECORD, GRAPH_AT_READ = "at-record", "at-read"
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
    if version not in VERSIONS or type(version) is not int:
        raise UnsupportedBundleVersion(version, VERSIONS)
    return data


def graph_at_read(manifest: dict[str, Any]) -> bool:
    """A bundle with *manifest* derives its graph at read (format 3)."""
    return manifest.get(GRAPH) == GRAPH_AT_READ


def format_version(manifest: dict[str, Any]) -> int:
    """The version a bundle with *manifest* is written in."""
    return GRAPH_AT_READ_VERSION if graph_at_read(manifest) else FORMAT_VERSION


def check_manifest(data: Any, where: str) -> dict[str, Any]:
    """Validate a parsed manifest; raise the specific typed error for what is wrong."""
    check_version(data, where)
    missing = [name for name in REQUIRED_MANIFEST_FIELDS if name not in data]
    if missing:
        raise BundleFormatError(f"{where}: manifest lacks {', '.join(missing)}")
    if data["kind"] not in (KIND_RECORDING, KIND_SELECTIVE):
        raise BundleFormatError(f"{where}: unknown bundle kind {data['kind']!r}")
    version = data["format_version"]
    if (version == GRAPH_AT_READ_VERSION) != graph_at_read(data):
        # (after the seal: a changed graph field is named where it changed, like any other)
        raise BundleFormatError(
            f"{where}: format_version {version} with graph {data.get(GRAPH)!r} (version "
            f"{GRAPH_AT_READ_VERSION} is the one whose graph is derived at read)")
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
    # a call whose graph is derived at read: what its line holds (its derivation's inputs)
    parents = [[edge.source for edge in e.parents] if e.derive is None else e.derive
               for e in ordered]
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
