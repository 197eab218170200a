"""The on-disk format: version, file names, manifest fields. Specified in docs/bundle-format.md."""

from __future__ import annotations

from typing import Any

from symtrace.errors import BundleFormatError, UnsupportedBundleVersion
from symtrace.model.events import Event
from symtrace.model.hashing import digest

FORMAT_VERSION = 1
MANIFEST = "manifest.json"
EVENTS = "events.jsonl"
BLOBS = "blobs"
STDOUT = "stdout.txt"

KIND_RECORDING = "recording"
KIND_SELECTIVE = "selective_replay"

REQUIRED_MANIFEST_FIELDS = ("format_version", "kind", "complete", "task", "initial_state", "config")


def check_manifest(data: Any, where: str) -> dict[str, Any]:
    """Validate a parsed manifest; raise the specific typed error for what is wrong."""
    if not isinstance(data, dict):
        raise BundleFormatError(f"{where}: manifest is not a JSON object")
    version = data.get("format_version")
    if version != FORMAT_VERSION:
        raise UnsupportedBundleVersion(version, FORMAT_VERSION)
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
