"""Writing a bundle: append-only, O(1) per event, crash-safe, sealed at the end.

API (docs/bundle-format.md, *Writer API*): `BundleWriter(path, manifest, redactor=...)`,
`.open()` or `BundleWriter.reopen(path)`, `.write_event(event)`, `.write_stdout(data)`,
`.mark(**fields)`, `.finalize(**fields)` (seal), `.close()`, `.abort()`; `.events` holds what
was written.

Files are opened once and appended to: blob lines first (blobs.jsonl), then the event line
(events.jsonl), each one write to the kernel before the call returns, then its field sums
(sums.jsonl), buffered: they reach the kernel a few kilobytes at a time and on close or seal
(sums only locate damage in a sealed bundle). A process killed at any point therefore leaves
a readable prefix: every complete event line's blobs are on disk, a torn last line is cut by
the next reader or writer, and missing sums lines are recomputed from their event lines
(`reopen`). Nothing is fsynced per event; sealing
fsyncs every file, then writes the manifest atomically (temp file, fsync, rename, directory
fsync), so a sealed bundle survives power loss and an unsealed one is readable up to its
last complete line.

A writer holds an exclusive advisory lock (flock) on events.jsonl while it has the bundle open,
and opening waits for it (bounded): two writers never interleave lines (`symtrace record`'s
parent reopens the bundle only once its child let go).

A new bundle goes only where symtrace.bundle.output.check_target allows (never over a file, a
symbolic link or a directory that is not a bundle, even with overwrite). A staging writer (a
selective replay's child bundle) claims its path (output.OutputSlot: locked until the seal,
written into `.NAME.partial-PID` and renamed into place on success), so a failed operation
leaves nothing at the output path; `symtrace record` claims its path the same way around the
writers of its processes. Symbolic links inside a bundle directory are refused on reopen.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shutil
import threading
import time
from pathlib import Path
from typing import IO, Any

import orjson

from symtrace.bundle import blobs
from symtrace.bundle.files import atomic_write
from symtrace.bundle.format import (
    DIGEST,
    EVENTS,
    FORMAT_VERSION,
    MANIFEST,
    PACK,
    STDOUT,
    SUMS,
    counts_of,
    events_digest,
)
from symtrace.bundle.output import OutputSlot, check_target, is_bundle_dir, refuse_symlinks
from symtrace.bundle.pack import scan
from symtrace.bundle.reader import partial_events
from symtrace.bundle.seal import (
    canon,
    event_line_of,
    event_sums,
    root_digest,
    sha256_ref,
    trailer,
)
from symtrace.errors import (
    BundleFormatError,
    BundleWriteError,
    RedactionError,
)
from symtrace.model.canonical import pretty_bytes
from symtrace.model.events import Event
from symtrace.model.redaction import Redactor

LOCK_TIMEOUT = 60.0  # seconds a writer waits for another writer to release the bundle


def _fsync_dir(path: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


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
        self.manifest = {**manifest, "format_version": FORMAT_VERSION,
                         "complete": False}
        self.manifest.pop(DIGEST, None)
        self.redactor = redactor
        self.overwrite = overwrite
        self.staging = staging
        self.events: list[Event] = []
        self._lock = threading.Lock()
        self._known_blobs: set[str] = set()
        self._split_memo = blobs.SplitMemo()  # a conversation re-sends its messages
        self._dir = self.path
        self._slot: OutputSlot | None = None  # a staging writer's claim on its path
        self._files: dict[str, IO[bytes]] = {}
        # The sha256 of each data file's bytes so far, fed as they are written: the seal's
        # file digests without reading the files back (None: a write failed, read them back).
        self._digests: dict[str, Any] | None = None

    # -- lifecycle -----------------------------------------------------------------------
    @classmethod
    def reopen(cls, path: str | os.PathLike[str], *, redactor: Redactor) -> BundleWriter:
        """Continue a bundle another process started (the CLI parent, or its child).

        Torn last lines left by a killed writer are cut first, so appends start on a line
        boundary, and sums missing for complete event lines are recomputed; the events
        already on disk are loaded so counts and digests cover them. A sealed bundle is
        final and cannot be reopened.
        """
        root = Path(path)
        refuse_symlinks(root, (MANIFEST, PACK, EVENTS, SUMS, STDOUT))
        manifest = unsealed_manifest(root)
        writer = cls(root, manifest, redactor=redactor, overwrite=True)
        writer.manifest = manifest
        try:
            # the lock first: another writer finishes before this one reads what is there
            locked = open(root / EVENTS, "ab")  # noqa: SIM115 - becomes the writer's handle
            try:
                _lock(locked, root / EVENTS)
                # each data file read once: cut, completed, then scanned and digested
                data = {name: _cut_torn_tail(root / name) for name in (PACK, EVENTS, SUMS)}
                data[SUMS] = _complete_sums(root, data[EVENTS], data[SUMS])
                writer._known_blobs = set(scan(data[PACK]))
                writer.events = partial_events(data[PACK], data[EVENTS])
                writer._digests = {name: hashlib.sha256(data[name]) for name in data}
            except BaseException:
                locked.close()
                raise
            writer._open_files(locked)
        except OSError as exc:
            raise BundleWriteError(f"cannot reopen bundle at {root}: {exc}") from exc
        return writer

    def open(self) -> BundleWriter:
        """Create the bundle: only where check_target allows (a new or empty directory, or a
        bundle replaced with *overwrite*); a staging writer claims the path (output.OutputSlot:
        locked until the seal, written beside it, renamed into place)."""
        if self.staging:
            self._slot = OutputSlot(self.path, force=self.overwrite).claim()
            self._dir = self._slot.staged
        else:
            check_target(self.path, self.overwrite)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            if not self.staging and self.overwrite and is_bundle_dir(self.path):
                shutil.rmtree(self.path)
            self._dir.mkdir(parents=True, exist_ok=True)
            for name in (PACK, EVENTS, SUMS):
                (self._dir / name).write_bytes(b"")
            self._digests = {name: hashlib.sha256() for name in (PACK, EVENTS, SUMS)}
            # not fsynced: an unsealed bundle is not durable (its events are not fsynced
            # either); the seal writes the manifest durably
            self._write_manifest(durable=False)
            self._open_files()
        except OSError as exc:
            if self._slot is not None:
                self._slot.discard()
            raise BundleWriteError(f"cannot write bundle at {self.path}: {exc}") from exc
        return self

    @property
    def is_open(self) -> bool:
        """Events can still be appended (not closed, sealed or aborted)."""
        return bool(self._files)

    def close(self) -> None:
        """Stop writing without sealing (another process continues or seals)."""
        with self._lock:
            self._close_files(durable=False)

    def finalize(self, **updates: Any) -> None:
        """Seal the bundle: counts, digests, `complete` (True unless given), root digest.

        An incomplete run is sealed too (`finalize(complete=False, outcome=...)`): its
        events are then covered like any others, and the manifest says why it stopped.
        """
        with self._lock:
            self.manifest.update(updates)
            self.manifest["counts"] = counts_of(self.events)
            self.manifest["events_digest"] = events_digest(self.events)
            self.manifest.setdefault("complete", True)
            self.manifest.pop(DIGEST, None)
            try:
                stdout_path = self._dir / STDOUT
                stdout = stdout_path.read_bytes() if stdout_path.exists() else None
                self._append_sums(canon(trailer(self.manifest, stdout)) + b"\n")
                self._close_files(durable=True)
                files = self._file_digests(stdout)
                self.manifest[DIGEST] = {
                    "files": files,
                    "root": root_digest(self.manifest, files),
                }
                self._write_manifest()
                _fsync_dir(self._dir)
            except OSError as exc:
                raise BundleWriteError(f"cannot seal bundle at {self.path}: {exc}") from exc
            if self._slot is not None:
                self._slot.commit()
                self._dir = self.path

    def mark(self, **updates: Any) -> None:
        """Update manifest fields without sealing (e.g. the outcome of an aborted run)."""
        with self._lock:
            self.manifest.update(updates)
            self._write_manifest(durable=False)  # an unsealed bundle is not durable

    def abort(self) -> None:
        """Drop a staged bundle; a non-staged one stays, unsealed and incomplete."""
        with self._lock:
            self._close_files(durable=False)
            if self._slot is not None:
                self._slot.discard()

    # -- content -------------------------------------------------------------------------
    def write_event(self, event: Event) -> None:
        """Append one event (hashes already computed on the redacted content), written to
        the kernel before this returns (a killed program loses no event it received). O(1)."""
        with self._lock:
            self._split_memo.begin()
            added = _AddedBlobs(self._known_blobs)
            request = blobs.split(event.request, added.store, self._split_memo)
            response = blobs.split(event.response, added.store, self._split_memo)
            line, sums = event_line_of(_line_fields(event, request, response))
            # Scan everything first: a refused event writes nothing at all. A chain node around
            # a message split for an earlier event is not read again (blobs.SplitMemo).
            try:
                self.redactor.check(b"\n".join((line, *added.unchecked)), f"event {event.id}")
            except RedactionError:
                self._split_memo.clear()  # what this event split was never checked clean
                raise
            if not self._files:
                raise BundleWriteError(f"cannot append to {self.path}: the writer is closed")
            self._write(added.pack, line + b"\n", sums + b"\n")
            self._split_memo.written()  # this event's blobs are in the pack
            self._known_blobs.update(added.refs)
            self.events.append(event)

    def _write(self, pack: list[bytes], events: bytes, sums: bytes) -> None:
        """Append pack lines, then the event lines that name them, then their sums lines
        (a sums line never precedes its event line: reopen rebuilds missing ones, refuses
        extra ones)."""
        try:
            if pack:
                self._append(PACK, b"".join(pack))
            self._append(EVENTS, events)
            # Not flushed: a sums line only locates damage in a sealed bundle, and one
            # missing after a kill is recomputed from its event line (reopen).
            self._append_sums(sums)
        except OSError as exc:
            self._digests = None  # what reached the files is unknown: the seal reads them
            raise BundleWriteError(f"cannot append to {self.path}: {exc}") from exc

    def write_stdout(self, data: bytes) -> None:
        self.redactor.check(data, "captured stdout")
        atomic_write(self._dir / STDOUT, data, durable=False)

    # -- internals -----------------------------------------------------------------------
    def _append(self, name: str, data: bytes) -> None:
        fh = self._files[name]
        fh.write(data)
        fh.flush()
        if self._digests is not None:
            self._digests[name].update(data)

    def _append_sums(self, data: bytes) -> None:
        """Buffered (see _write): the close before the seal flushes it, or fails the seal."""
        self._files[SUMS].write(data)
        if self._digests is not None:
            self._digests[SUMS].update(data)

    def _file_digests(self, stdout: bytes | None) -> dict[str, str]:
        """The seal's `files`: each data file's sha256, as written (read back only after a
        failed write, when what reached the file is unknown)."""
        files: dict[str, str] = {}
        for name in (SUMS, EVENTS, PACK):
            if self._digests is not None:
                files[name] = "sha256:" + self._digests[name].hexdigest()
            elif (self._dir / name).exists():
                files[name] = sha256_ref((self._dir / name).read_bytes())
        if stdout is not None:
            files[STDOUT] = sha256_ref(stdout)
        return files

    def _open_files(self, locked: IO[bytes] | None = None) -> None:
        """Open the data files for appending and take the lock (*locked*: events.jsonl,
        open and locked already)."""
        for name in (PACK, EVENTS, SUMS):
            if name == EVENTS and locked is not None:
                self._files[name] = locked
            else:
                self._files[name] = open(self._dir / name, "ab")  # noqa: SIM115 - kept open
        if locked is None:
            try:
                _lock(self._files[EVENTS], self._dir / EVENTS)
            except BundleWriteError:
                self._close_files(durable=False)
                raise

    def _close_files(self, *, durable: bool) -> None:
        """Close every data file. *durable* (the seal): flushed and fsynced, and the first
        failure raised once all are closed (a seal must not claim what did not reach the
        disk); otherwise failures are ignored (the files stay an unsealed prefix)."""
        failure: OSError | None = None
        for fh in self._files.values():
            try:
                fh.flush()
                if durable:
                    os.fsync(fh.fileno())
            except OSError as exc:
                failure = failure or exc
            with contextlib.suppress(OSError):
                fh.close()
        self._files = {}
        if durable and failure is not None:
            raise failure

    def _write_manifest(self, *, durable: bool = True) -> None:
        data = pretty_bytes(self.manifest)
        self.redactor.check(data, "manifest")
        atomic_write(self._dir / MANIFEST, data + b"\n", durable=durable)


def _line_fields(event: Event, request: Any, response: Any) -> tuple[Any, ...]:
    """The fields of event.to_json() in seal.EVENT_FIELDS order, *request* and *response*
    split: the line is made without building the record (an enum's `_value_` is a plain
    attribute; its `value` is a property)."""
    return (
        event.agent, event.content_hash, event.id, event.lane, event.meta,
        [{"source": edge.source, "kind": edge.kind._value_} for edge in event.parents],
        event.position, event.reason, request, event.request_hash, response,
        event.response_hash, event.type._value_,
    )


class _AddedBlobs:
    """The blobs one event adds to the pack: its `store` is what blobs.split calls.

    A ref already in the pack or already added is skipped; the pack bytes are collected as
    pack lines (`REF JSON`), joined once for one append."""

    __slots__ = ("known", "pack", "refs", "store", "unchecked")

    def __init__(self, known: set[str]) -> None:
        self.known = known
        self.refs: set[str] = set()
        self.pack: list[bytes] = []
        self.unchecked: list[bytes] = []  # what the redaction check reads besides the line
        refs, pack, unchecked = self.refs, self.pack, self.unchecked

        def store(ref: str, data: bytes, known_clean: bool = False) -> None:
            if ref in known or ref in refs:
                return
            refs.add(ref)
            pack.append(b"%b %b\n" % (ref.encode(), data))
            if not known_clean:
                unchecked.append(data)

        def many(blobs: list[tuple[str, bytes, bool]]) -> None:  # store, each in order
            for ref, data, known_clean in blobs:
                if ref in known or ref in refs:
                    continue
                refs.add(ref)
                pack.append(b"%b %b\n" % (ref.encode(), data))
                if not known_clean:
                    unchecked.append(data)

        store.many = many  # type: ignore[attr-defined]  # blobs.store_all
        self.store = store


def unsealed_manifest(root: Path) -> dict[str, Any]:
    """The manifest of a bundle that may be continued (BundleWriteError: unreadable, or
    sealed: a sealed bundle is final)."""
    try:
        manifest = orjson.loads((root / MANIFEST).read_bytes())
    except (OSError, orjson.JSONDecodeError) as exc:
        raise BundleWriteError(f"cannot reopen bundle at {root}: {exc}") from exc
    if DIGEST in manifest:
        raise BundleWriteError(f"cannot reopen bundle at {root}: it is sealed")
    return manifest


def _lock(fh: IO[bytes], path: Path, timeout: float | None = None) -> None:
    """Take the bundle's writer lock on *fh* (events.jsonl), waiting up to *timeout*."""
    deadline = time.monotonic() + (LOCK_TIMEOUT if timeout is None else timeout)
    while True:
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() >= deadline:
                raise BundleWriteError(
                    f"{path.parent} is still being written by another writer "
                    f"({_holder(path)}) after {LOCK_TIMEOUT:.0f} s"
                ) from None
            time.sleep(0.02)


def wait_unlocked(path: str | os.PathLike[str], timeout: float | None = None) -> None:
    """Return once no writer holds the bundle at *path* (BundleWriteError after *timeout*)."""
    with open(Path(path) / EVENTS, "rb") as fh:
        _lock(fh, Path(path) / EVENTS, timeout)  # released when fh closes


def _holder(path: Path) -> str:
    """Who holds the lock on *path*, from /proc/locks where there is one."""
    with contextlib.suppress(OSError, ValueError, IndexError):
        inode = os.stat(path).st_ino
        for line in Path("/proc/locks").read_text().splitlines():
            fields = line.split()
            if "FLOCK" in fields and int(fields[-3].rsplit(":", 1)[1]) == inode:
                return f"pid {fields[-4]}"
    return "pid unknown"


def _cut_torn_tail(path: Path) -> bytes:
    """Cut a partial last line (a writer killed mid-append) so appends start on a boundary;
    the file's bytes then."""
    if not path.exists():
        path.write_bytes(b"")
        return b""
    data = path.read_bytes()
    if data and not data.endswith(b"\n"):
        data = data[: data.rfind(b"\n") + 1]
        with open(path, "r+b") as fh:
            fh.truncate(len(data))
    return data


def _complete_sums(root: Path, events_data: bytes, sums_data: bytes) -> bytes:
    """Recompute sums lines a killed writer did not get to (one per complete event line) from
    the files' bytes (*events_data*, *sums_data*); the sums file's bytes then."""
    events = events_data.split(b"\n")[:-1]
    have = sums_data.count(b"\n")
    if have > len(events):
        raise BundleFormatError(f"{root}: {SUMS} has more lines than {EVENTS}")
    if have < len(events):
        missing = b"".join(canon(event_sums(orjson.loads(line))) + b"\n"
                           for line in events[have:])
        with open(root / SUMS, "ab") as fh:
            fh.write(missing)
        sums_data += missing
    return sums_data
