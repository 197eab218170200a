"""Reading and verifying a bundle. Every failure is a typed BundleError, never "absent".

`load_bundle` (what replay, show and diagnose use) checks the seal: the sha256 of every file
and the root digest over the manifest and those digests, in C-speed passes over the bytes;
if anything differs it names the first field that does (locate.py). Blobs are parsed lazily,
once each, through the pack's index. `verify_bundle` (`symtrace verify`) adds the deep checks:
every blob against its ref, every event's request/response/content hash recomputed, counts
and the events digest against the manifest. An unsealed bundle (its recording process was
killed) has no seal to check: it is read up to its last complete line and deep-checked.
"""

from __future__ import annotations

import contextlib
import gc
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import orjson

from symtrace.bundle import blobs
from symtrace.bundle.files import (
    MANIFEST_MAX_BYTES,
    MAX_DEPTH,
    canonical_line,
    depth_exceeds,
    extra_entries,
    parse_manifest,
    read_file,
)
from symtrace.bundle.format import (
    DIGEST,
    EVENTS,
    MANIFEST,
    PACK,
    SEALED_FILES,
    STDOUT,
    check_manifest,
    check_version,
    counts_of,
    events_digest,
)
from symtrace.bundle.lazy import LazyEvent
from symtrace.bundle.locate import locate
from symtrace.bundle.pack import PackReader
from symtrace.bundle.seal import root_digest, sha256_ref
from symtrace.bundle.shape import check_event_record, check_manifest_types
from symtrace.errors import (
    BundleFormatError,
    BundleIntegrityError,
    BundleNotFound,
    UnknownEvent,
)
from symtrace.model.canonical import JSONValue
from symtrace.model.events import Event, EventType


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
    extra_files: tuple[str, ...] = field(default=())  # in its directory, not covered by the seal

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
    def sealed(self) -> bool:
        return DIGEST in self.manifest

    @property
    def root_digest(self) -> str | None:
        seal = self.manifest.get(DIGEST)
        return seal.get("root") if isinstance(seal, dict) else None

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
        return read_file(self.path / STDOUT)

    @property
    def digest(self) -> str:
        return self.manifest.get("events_digest") or events_digest(list(self.events))


def load_bundle(path: str | os.PathLike[str]) -> Bundle:
    """Load the bundle at *path*, checking its seal (any changed byte is named)."""
    return _load(Path(path), deep=False)


def verify_bundle(path: str | os.PathLike[str]) -> Bundle:
    """Load with every check: the seal, every blob, every event hash, counts, events digest."""
    return _load(Path(path), deep=True)


def partial_events(pack: bytes, events: bytes) -> list[Event]:
    """The events of an unsealed bundle's pack and events bytes (complete lines only)."""
    return _parse_events(_complete_lines(events), PackReader(_complete_lines(pack), verify=True),
                         verify=False)


def _load(root: Path, *, deep: bool) -> Bundle:
    manifest_path = root / MANIFEST
    if not root.is_dir():
        raise BundleNotFound(f"no bundle at {root} (not a directory)")
    extra = extra_entries(root)
    data = read_file(manifest_path, MANIFEST_MAX_BYTES)
    if data is None:
        raise BundleNotFound(f"no bundle at {root} (missing {MANIFEST})")
    manifest = parse_manifest(data, str(manifest_path))
    check_version(manifest, str(manifest_path))
    files = _read_files(root)
    warnings: list[str] = []
    sealed = DIGEST in manifest
    if sealed and not _seal_holds(manifest, files):
        raise _at(root, locate(manifest, files))
    if not sealed and manifest.get("complete"):
        # the writer seals in the same write that makes a bundle complete: a complete
        # bundle without a seal had it removed (its content may have been changed since)
        raise BundleIntegrityError(
            "the bundle says it is complete but has no seal (removed?): its content cannot "
            "be checked", where=f"manifest.{DIGEST}", bundle=str(root))
    check_manifest(manifest, str(manifest_path))
    check_manifest_types(manifest, str(manifest_path))
    if sealed:
        events_data, pack_data = files[EVENTS] or b"", files[PACK] or b""
    else:
        warnings.append(
            "bundle is unsealed: the recording process did not finish (killed?); read up to "
            "its last complete line"
        )
        events_data = _complete_lines(files[EVENTS] or b"")
        pack_data = _complete_lines(files[PACK] or b"")
        if len(events_data) != len(files[EVENTS] or b""):
            warnings.append(f"{EVENTS}: dropped a partial last line left by an interrupted run")
    try:
        pack = PackReader(pack_data, verify=deep or not sealed)
        pack.check_order()
        with _collector_paused():
            events = _parse_events(events_data, pack, verify=deep or not sealed)
        _check_graph(events, complete=bool(manifest.get("complete")))
        if deep:
            pack.check_all()
            _check_totals(manifest, events)
    except BundleIntegrityError as exc:
        raise _at(root, exc) from None
    if not manifest.get("complete"):
        outcome = manifest.get("outcome") or {}
        why = outcome.get("status") or "did not finish"
        warnings.append(f"bundle is incomplete: the recorded run {why_text(why)}")
    events.sort(key=lambda e: e.position)
    return Bundle(root, manifest, tuple(events), tuple(warnings), extra)


def why_text(status: str) -> str:
    return {
        "killed": "was killed",
        "interrupted": "was interrupted (SIGINT)",
        "terminated": "was terminated (SIGTERM)",
    }.get(status, f"did not finish ({status})")


def _at(root: Path, exc: BundleIntegrityError) -> BundleIntegrityError:
    return BundleIntegrityError(exc.what, where=exc.where, bundle=str(root))


def _read_files(root: Path) -> dict[str, bytes | None]:
    return {name: read_file(root / name) for name in SEALED_FILES}


def _seal_holds(manifest: dict[str, Any], files: dict[str, bytes | None]) -> bool:
    seal = manifest.get(DIGEST)
    if not isinstance(seal, dict) or not isinstance(seal.get("files"), dict):
        return False
    actual = {name: sha256_ref(data) for name, data in files.items() if data is not None}
    return seal["files"] == actual and seal.get("root") == root_digest(manifest, actual)


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector while event lines are parsed.

    Parsing a 50,000-event bundle allocates hundreds of thousands of dicts, lists and events
    that all stay alive: each allocation threshold crossed starts a collection that walks the
    ever larger young generations (a third of the load time, measured). Parsed JSON and events
    form no reference cycles, so pausing collects nothing later that it would have collected
    now. The collector's previous state is restored (a program that disabled it keeps it off).
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _complete_lines(data: bytes) -> bytes:
    return data[: data.rfind(b"\n") + 1]


def _parse_events(data: bytes, pack: PackReader, *, verify: bool) -> list[Event]:
    events: list[Event] = []
    seen: set[str] = set()
    joiner = blobs.Joiner(pack.load)
    edges: dict[tuple[str, str], Any] = {}
    lines = data.split(b"\n")
    lines.pop()  # b"" after the last newline
    for index, line in enumerate(lines):
        try:
            record = orjson.loads(line)
            if not canonical_line(line, record):
                raise BundleFormatError(
                    f"{EVENTS} line {index + 1}: not canonical JSON (a key twice, unsorted "
                    "keys, spaces, or nested too deep)")
            check_event_record(record, index + 1)
            # (canonical, the line nests at most 255: orjson's bound; a line with fewer
            # brackets than MAX_DEPTH, nearly all, cannot nest deeper, and is not walked)
            if line.count(b"{") + line.count(b"[") > MAX_DEPTH and depth_exceeds(record):
                raise BundleFormatError(
                    f"{EVENTS} line {index + 1}: JSON nested deeper than {MAX_DEPTH}")
            event = LazyEvent.of(record, joiner, edges)
        except (orjson.JSONDecodeError, KeyError, ValueError, TypeError, AttributeError) as exc:
            if isinstance(exc, BundleFormatError):
                raise
            raise BundleFormatError(
                f"{EVENTS} line {index + 1}: not a valid event ({exc})"
            ) from exc
        if event.id in seen:
            raise BundleIntegrityError(
                f"duplicate event id {event.id}", where=f"events[{index}].id"
            )
        seen.add(event.id)
        if verify:
            where = f"events[{index}]"
            recomputed = event.with_hashes()
            for name in ("request_hash", "response_hash", "content_hash"):
                if getattr(recomputed, name) != getattr(event, name):
                    raise BundleIntegrityError(
                        f"{event.id} {name} does not match its content", where=f"{where}.{name}"
                    )
        events.append(event)
    return events


def _check_graph(events: list[Event], *, complete: bool) -> None:
    ids = {e.id for e in events}
    for i, event in enumerate(events):
        for edge in event.parents:
            if edge.source not in ids:
                raise BundleIntegrityError(
                    f"{event.id} names unknown parent {edge.source}",
                    where=f"events[{i}].parents",
                )
    if complete:
        if sorted(e.position for e in events) == list(range(len(events))):
            return  # the common case, in C-speed passes; the loop below names the culprit
        by_position = sorted(range(len(events)), key=lambda i: events[i].position)
        for expected, i in enumerate(by_position):
            if events[i].position != expected:
                raise BundleIntegrityError(
                    f"{events[i].id} has position {events[i].position}; a complete bundle's "
                    f"positions run 0..{len(events) - 1}",
                    where=f"events[{i}].position",
                )


def _check_totals(manifest: dict[str, Any], events: list[Event]) -> None:
    if manifest.get("counts") is not None and manifest["counts"] != counts_of(events):
        raise BundleIntegrityError("counts differ from the events", where="manifest.counts")
    recorded = manifest.get("events_digest")
    if recorded is not None and recorded != events_digest(events):
        raise BundleIntegrityError(
            "events digest differs from the events", where="manifest.events_digest"
        )
