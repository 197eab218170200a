"""Reading a bundle's files as data that may come from anyone: bounded and typed.

A bundle is handed on (a PR, a CI artefact); its directory can hold anything git can commit.
So a bundle's files are opened without following symlinks and without blocking (a FIFO is
never waited on), only regular files are read, and each up to a size bound; every entry of the
directory is listed once so that a symlink anywhere in it is refused and files that are not
part of the format are named (`symtrace verify` reports them: the seal does not cover them).

JSON is parsed strictly: the manifest with duplicate keys refused (`parse_manifest`), event
and blob lines only in the canonical form the writer produces (`canonical_line`: a duplicate
key cannot hide in it), nesting bounded (`MAX_DEPTH`, also for values joined from blobs).
"""

from __future__ import annotations

import json
import os
import stat
import threading
from pathlib import Path

import orjson

from symtrace.bundle.format import MANIFEST, SEALED_FILES
from symtrace.errors import BundleFormatError

MANIFEST_MAX_BYTES = 16 * 2**20
FILE_MAX_BYTES = 4 * 2**30  # events, blobs, sums, stdout: far above any recording's
BUNDLE_FILES = frozenset((MANIFEST, *SEALED_FILES))
MAX_DEPTH = 128  # JSON nesting (after blobs are joined); orjson serialises at most 255
_OPEN_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)


def read_file(path: Path, limit: int = FILE_MAX_BYTES) -> bytes | None:
    """The bytes of the regular file *path*, or None when there is none.

    A symlink, FIFO, device, socket or directory is refused (BundleFormatError), as is a
    file larger than *limit* bytes: a bundle cannot make a reader block, or read forever."""
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except FileNotFoundError:
        return None
    except OSError as exc:  # ELOOP: a symlink (O_NOFOLLOW); EACCES...
        kind = "a symlink" if path.is_symlink() else f"cannot open ({exc.strerror})"
        raise BundleFormatError(f"{path}: {kind}; a bundle holds regular files only") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise BundleFormatError(
                f"{path}: not a regular file ({_kind(info.st_mode)}); a bundle holds regular "
                "files only")
        if info.st_size > limit:
            raise BundleFormatError(
                f"{path}: {info.st_size} bytes, more than a bundle file may hold ({limit})")
        chunks: list[bytes] = []
        size = 0
        while size <= limit:
            chunk = os.read(fd, min(2**24, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > limit:  # grew while read
            raise BundleFormatError(f"{path}: more than a bundle file may hold ({limit} bytes)")
        return b"".join(chunks)
    except OSError as exc:
        raise BundleFormatError(f"{path}: cannot read ({exc.strerror})") from None
    finally:
        os.close(fd)


def extra_entries(root: Path) -> tuple[str, ...]:
    """The names in bundle directory *root* that are not bundle files (sorted).

    Any symlink in it is refused: a bundle's files are its own bytes, never a pointer to
    another file of the reader's machine (nor a directory entry that changes what is read)."""
    try:
        with os.scandir(root) as entries:
            found = [(entry.name, entry.is_symlink()) for entry in entries]
    except OSError as exc:
        raise BundleFormatError(f"{root}: cannot list the bundle ({exc.strerror})") from None
    links = sorted(name for name, link in found if link)
    if links:
        raise BundleFormatError(
            f"{root}: holds symlinks ({', '.join(map(repr, links))}); a bundle holds regular "
            "files only")
    return tuple(sorted(name for name, _ in found if name not in BUNDLE_FILES))


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"),
                       (stat.S_ISDIR, "a directory")):
        if test(mode):
            return name
    return "not a plain file"


def depth_exceeds(value: object, limit: int = MAX_DEPTH) -> bool:
    """Whether *value* (parsed JSON) nests deeper than *limit* (iterative: any depth)."""
    stack = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        kind = type(item)
        if kind is dict or kind is list:
            if depth >= limit:
                return True
            children = item.values() if kind is dict else item  # type: ignore[union-attr]
            stack.extend((child, depth + 1) for child in children)
    return False


def canonical_line(line: bytes, value: object) -> bool:
    """Whether *line* is the canonical JSON of *value*, its parse (the writer writes nothing
    else: a duplicate key, a space or an unsorted key makes it not). False when *value*
    nests deeper than orjson serialises."""
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS) == line
    except orjson.JSONEncodeError:
        return False


def parse_manifest(data: bytes, where: str) -> object:
    """The parsed manifest: valid JSON, nested at most MAX_DEPTH, no key twice in an object
    (a reader that keeps the last of two keys sees another manifest than one keeping the
    first: a benign first `argv` must not hide the one replay would run)."""
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise BundleFormatError(f"{where}: not valid JSON ({exc})") from exc
    if depth_exceeds(value):
        raise BundleFormatError(f"{where}: JSON nested deeper than {MAX_DEPTH}")
    twice: list[str] = []

    def pairs(items: list[tuple[str, object]]) -> None:
        keys = [key for key, _ in items]
        if len(set(keys)) != len(keys) and not twice:
            twice.append(next(key for key in keys if keys.count(key) > 1))

    json.loads(data, object_pairs_hook=pairs)  # only to see every object's keys (orjson keeps
    if twice:  # the last of duplicates without a word)
        raise BundleFormatError(f"{where}: key {twice[0]!r} appears twice in one object")
    return value


def atomic_write(path: Path, data: bytes, *, durable: bool = True) -> None:
    """Write via a temp file and rename, so readers see all of the old or all of the new."""
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}-{threading.get_ident()}")
    with open(tmp, "wb") as fh:
        fh.write(data)
        if durable:
            fh.flush()
            os.fsync(fh.fileno())
    os.replace(tmp, path)
