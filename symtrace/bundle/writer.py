"""Writing a bundle: append-only, crash-safe, nothing half-written.

The manifest is written first with `complete: false` and rewritten atomically (temp file +
rename) at the end, so a run killed mid-way leaves a readable bundle marked incomplete. Each
event is one line appended to events.jsonl after its blobs are on disk (blobs are written to a
temp name and renamed); a reader therefore never sees a line whose blobs are missing, and at
worst a final partial line, which it discards for incomplete bundles only.

A bundle that is the product of a larger operation (a selective replay's child bundle) is
written into a staging directory and renamed into place on success, so a failed operation
leaves nothing at the output path.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import threading
from pathlib import Path
from typing import Any

import orjson

from symtrace.bundle import blobs
from symtrace.bundle.format import BLOBS, EVENTS, FORMAT_VERSION, MANIFEST, STDOUT, events_digest
from symtrace.bundle.reader import read_partial
from symtrace.errors import BundleExistsError, BundleWriteError
from symtrace.model.canonical import canonical_bytes, pretty_bytes
from symtrace.model.events import Event
from symtrace.model.redaction import Redactor


def atomic_write(path: Path, data: bytes, *, durable: bool = True) -> None:
    """Write via a temp file and rename, so readers see all of the old or all of the new.

    `durable` adds an fsync (the manifest). Blobs skip it: a killed process loses nothing
    already written, and a blob torn by power loss is caught by its digest on load.
    """
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}-{threading.get_ident()}")
    with open(tmp, "wb") as fh:
        fh.write(data)
        if durable:
            fh.flush()
            os.fsync(fh.fileno())
    os.replace(tmp, path)


class BundleWriter:
    """Writes one bundle. Thread-safe: boundary calls on several threads append concurrently."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        manifest: dict[str, Any],
        *,
        redactor: Redactor,
        overwrite: bool = False,
        staging: bool = False,
    ) -> None:
        self.path = Path(path)
        self.manifest = {**manifest, "format_version": FORMAT_VERSION, "complete": False}
        self.redactor = redactor
        self.overwrite = overwrite
        self.staging = staging
        self.events: list[Event] = []
        self._lock = threading.Lock()
        self._known_blobs: set[str] = set()
        self._dir = self.path
        self._events_fh: Any = None

    # -- lifecycle -----------------------------------------------------------------------
    @classmethod
    def reopen(cls, path: str | os.PathLike[str], *, redactor: Redactor) -> BundleWriter:
        """Continue a bundle another process started (the CLI parent, or its child).

        A partial last line left by a killed writer is cut off first, so appends start on a
        line boundary; the events already on disk are loaded so counts and digests cover them.
        """
        root = Path(path)
        try:
            manifest = orjson.loads((root / MANIFEST).read_bytes())
        except (OSError, orjson.JSONDecodeError) as exc:
            raise BundleWriteError(f"cannot reopen bundle at {root}: {exc}") from exc
        writer = cls(root, manifest, redactor=redactor, overwrite=True)
        writer.manifest = manifest
        events_path = root / EVENTS
        try:
            if events_path.exists():
                raw = events_path.read_bytes()
                cut = raw.rfind(b"\n") + 1
                if cut != len(raw):
                    with open(events_path, "r+b") as fh:
                        fh.truncate(cut)
            writer.events = read_partial(root, manifest)
            writer._known_blobs = {
                p.stem.replace("-", ":", 1) for p in (root / BLOBS).glob("*.json")
            }
            writer._events_fh = open(events_path, "ab")  # noqa: SIM115 - kept open
        except OSError as exc:
            raise BundleWriteError(f"cannot reopen bundle at {root}: {exc}") from exc
        return writer

    def close(self) -> None:
        """Stop writing without completing (the other process finalizes)."""
        with self._lock:
            self._close_events()

    def open(self) -> BundleWriter:
        if (self.path / MANIFEST).exists() and not self.overwrite:
            raise BundleExistsError(
                f"{self.path} already holds a bundle; choose another path or pass --force"
            )
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            if self.staging:
                self._dir = self.path.with_name(f".{self.path.name}.partial-{os.getpid()}")
                shutil.rmtree(self._dir, ignore_errors=True)
            elif self.overwrite and self.path.exists():
                shutil.rmtree(self.path)
            (self._dir / BLOBS).mkdir(parents=True, exist_ok=True)
            self._write_manifest()
            self._events_fh = open(self._dir / EVENTS, "ab")  # noqa: SIM115 - kept open
        except OSError as exc:
            raise BundleWriteError(f"cannot write bundle at {self.path}: {exc}") from exc
        return self

    def finalize(self, **updates: Any) -> None:
        """Mark the bundle complete (or record why not) and move it into place."""
        with self._lock:
            self.manifest.update(updates)
            self.manifest["counts"] = _counts(self.events)
            self.manifest["events_digest"] = events_digest(self.events)
            self.manifest.setdefault("complete", True)
            self._close_events()
            self._write_manifest()
            if self.staging:
                if self.path.exists():
                    shutil.rmtree(self.path)
                os.replace(self._dir, self.path)
                self._dir = self.path

    def mark(self, **updates: Any) -> None:
        """Update manifest fields without completing (e.g. outcome of an aborted run)."""
        with self._lock:
            self.manifest.update(updates)
            self._write_manifest()

    def abort(self) -> None:
        """Drop a staged bundle; a non-staged one stays, marked incomplete."""
        with self._lock:
            self._close_events()
            if self.staging:
                shutil.rmtree(self._dir, ignore_errors=True)

    # -- content -------------------------------------------------------------------------
    def write_event(self, event: Event) -> None:
        """Append one event (hashes already computed on the redacted content)."""
        pending: dict[str, bytes] = {}

        def store(ref: str, data: bytes) -> None:
            if ref not in self._known_blobs:
                pending[ref] = data

        with self._lock:
            record = event.to_json()
            record["request"] = blobs.split(record["request"], store)
            record["response"] = blobs.split(record["response"], store)
            line = canonical_bytes(record) + b"\n"
            # Scan everything first: a refused event writes nothing at all.
            self.redactor.check(line, f"event {event.id}")
            for ref, data in pending.items():
                self.redactor.check(data, f"event {event.id} blob {ref}")
            try:
                for ref, data in pending.items():
                    target = self._dir / BLOBS / blobs.blob_filename(ref)
                    if not target.exists():
                        atomic_write(target, data, durable=False)
                    self._known_blobs.add(ref)
                self._events_fh.write(line)
                self._events_fh.flush()
            except OSError as exc:
                raise BundleWriteError(f"cannot append to {self.path}: {exc}") from exc
            self.events.append(event)

    def write_stdout(self, data: bytes) -> None:
        self.redactor.check(data, "captured stdout")
        atomic_write(self._dir / STDOUT, data)

    # -- internals -----------------------------------------------------------------------
    def _write_manifest(self) -> None:
        data = pretty_bytes(self.manifest)
        self.redactor.check(data, "manifest")
        atomic_write(self._dir / MANIFEST, data + b"\n")

    def _close_events(self) -> None:
        if self._events_fh is not None:
            with contextlib.suppress(OSError):
                self._events_fh.flush()
                os.fsync(self._events_fh.fileno())
            self._events_fh.close()
            self._events_fh = None


def _counts(events: list[Event]) -> dict[str, int]:
    counts: dict[str, int] = {"events": len(events)}
    for event in events:
        counts[event.type.value] = counts.get(event.type.value, 0) + 1
    return dict(sorted(counts.items()))
