"""Reading and verifying a bundle. Every failure is a typed BundleError, never "absent".

Loading verifies as it goes: each blob's bytes must hash to its name, each event's request,
response and content hashes are recomputed, and for a complete bundle the events digest in
the manifest must match. A bundle that fails any check is not half-trusted.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import orjson

from symtrace.bundle import blobs
from symtrace.bundle.format import BLOBS, EVENTS, MANIFEST, STDOUT, check_manifest, events_digest
from symtrace.errors import (
    BundleFormatError,
    BundleIntegrityError,
    BundleNotFound,
    UnknownEvent,
)
from symtrace.model.canonical import JSONValue
from symtrace.model.events import Event, EventType
from symtrace.model.hashing import digest_bytes


@dataclass(frozen=True)
class Bundle:
    """A loaded, verified bundle S = ⟨T, s0, c, G, O, R⟩.

    `events` is O (sorted by position); each event carries its parents (G) and its boundary
    record (R). `task`, `initial_state` and `config` are T, s0 and c.
    """

    path: Path
    manifest: dict[str, Any]
    events: tuple[Event, ...]
    warnings: tuple[str, ...] = field(default=())

    @property
    def task(self) -> JSONValue:
        return self.manifest["task"]

    @property
    def initial_state(self) -> dict[str, Any]:
        return self.manifest["initial_state"]

    @property
    def config(self) -> dict[str, Any]:
        return self.manifest["config"]

    @property
    def complete(self) -> bool:
        return bool(self.manifest.get("complete"))

    @property
    def lineage(self) -> dict[str, Any] | None:
        return self.manifest.get("lineage")

    @cached_property
    def by_id(self) -> dict[str, Event]:
        return {event.id: event for event in self.events}

    def event(self, event_id: str) -> Event:
        try:
            return self.by_id[event_id]
        except KeyError:
            raise UnknownEvent(event_id, [e.id for e in self.events]) from None

    def boundary_events(self) -> list[Event]:
        """Events replay must match (everything but the final result)."""
        return [e for e in self.events if e.type is not EventType.FINAL_RESULT]

    def final_result(self) -> Event | None:
        finals = [e for e in self.events if e.type is EventType.FINAL_RESULT]
        return finals[-1] if finals else None

    def stdout(self) -> bytes | None:
        path = self.path / STDOUT
        return path.read_bytes() if path.exists() else None

    @property
    def digest(self) -> str:
        return self.manifest.get("events_digest") or events_digest(list(self.events))


def load_bundle(path: str | os.PathLike[str]) -> Bundle:
    """Load and verify the bundle at *path*."""
    root = Path(path)
    manifest_path = root / MANIFEST
    if not manifest_path.is_file():
        raise BundleNotFound(f"no bundle at {root} (missing {MANIFEST})")
    try:
        manifest = orjson.loads(manifest_path.read_bytes())
    except orjson.JSONDecodeError as exc:
        raise BundleFormatError(f"{manifest_path}: not valid JSON ({exc})") from exc
    check_manifest(manifest, str(manifest_path))

    warnings: list[str] = []
    events = _read_events(root, manifest, _blob_loader(root), warnings)
    if not manifest.get("complete"):
        warnings.append("bundle is incomplete: the recorded run did not finish cleanly")
    elif manifest.get("events_digest") and manifest["events_digest"] != events_digest(events):
        raise BundleIntegrityError(f"{root}: events digest does not match the manifest")
    return Bundle(root, manifest, tuple(events), tuple(warnings))


def read_partial(root: Path, manifest: dict[str, Any]) -> list[Event]:
    """Events of a bundle still being written (no completeness or digest checks)."""
    loader = _blob_loader(root)
    return _read_events(root, {**manifest, "complete": False}, loader, [])


def _blob_loader(root: Path) -> Any:
    cache: dict[str, JSONValue] = {}

    def load_blob(ref: str) -> JSONValue:
        if ref in cache:
            return cache[ref]
        blob_path = root / BLOBS / blobs.blob_filename(ref)
        try:
            data = blob_path.read_bytes()
        except FileNotFoundError:
            raise BundleIntegrityError(f"{root}: blob {ref} is missing") from None
        if digest_bytes(data) != ref:
            raise BundleIntegrityError(f"{root}: blob {ref} does not match its digest")
        try:
            value = orjson.loads(data)
        except orjson.JSONDecodeError as exc:
            raise BundleFormatError(f"{blob_path}: not valid JSON") from exc
        cache[ref] = value
        return value

    return load_blob


def _read_events(
    root: Path, manifest: dict[str, Any], load_blob: Any, warnings: list[str]
) -> list[Event]:
    path = root / EVENTS
    if not path.exists():
        if manifest.get("complete"):
            raise BundleFormatError(f"{root}: {EVENTS} is missing")
        return []
    raw = path.read_bytes()
    lines = raw.split(b"\n")
    tail = lines.pop()  # b"" when the file ends with a newline
    if tail:
        if manifest.get("complete"):
            raise BundleFormatError(f"{path}: truncated last line")
        warnings.append(f"{path.name}: dropped a partial last line left by an interrupted run")
    events: list[Event] = []
    seen: set[str] = set()
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = orjson.loads(line)
            record["request"] = blobs.join(record.get("request"), load_blob)
            record["response"] = blobs.join(record.get("response"), load_blob)
            event = Event.from_json(record)
        except (orjson.JSONDecodeError, KeyError, ValueError, TypeError) as exc:
            if isinstance(exc, BundleFormatError):
                raise
            raise BundleFormatError(f"{path}:{number}: not a valid event ({exc})") from exc
        if event.id in seen:
            raise BundleFormatError(f"{path}:{number}: duplicate event id {event.id}")
        seen.add(event.id)
        _verify_event(root, event)
        events.append(event)
    events.sort(key=lambda e: e.position)
    known = {e.id for e in events}
    for event in events:
        for parent in event.parent_ids:
            if parent not in known:
                raise BundleFormatError(f"{root}: {event.id} names unknown parent {parent}")
    return events


def _verify_event(root: Path, event: Event) -> None:
    recomputed = event.with_hashes()
    for name in ("request_hash", "response_hash", "content_hash"):
        if getattr(recomputed, name) != getattr(event, name):
            raise BundleIntegrityError(
                f"{root}: {event.id} {name} does not match its content (tampered or damaged)"
            )
