"""The on-disk format: version, file names, manifest fields. Specified in docs/bundle-format.md."""

from __future__ import annotations

from typing import Any

from symtrace.errors import BundleFormatError, UnsupportedBundleVersion
from symtrace.model.events import Event
from symtrace.model.hashing import digest

FORMAT_VERSION = 2
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
    if version != FORMAT_VERSION:
        raise UnsupportedBundleVersion(version, FORMAT_VERSION)
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
    """One digest over the whole trajectory: content hashes and parents, in observed order."""
    ordered = sorted(events, key=lambda e: e.position)
    return digest([[e.id, e.content_hash, list(e.parent_ids)] for e in ordered])


def counts_of(events: list[Event]) -> dict[str, int]:
    """The manifest's `counts`: events in all, and per type."""
    counts: dict[str, int] = {"events": len(events)}
    for event in events:
        counts[event.type.value] = counts.get(event.type.value, 0) + 1
    return dict(sorted(counts.items()))
