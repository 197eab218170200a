"""Claiming an output path for a new bundle: nothing the user had there is destroyed.

* `check_target(path, force)` says whether a new bundle may go to *path*: a missing path or an
  empty directory may; an existing symtrace bundle only with *force*; anything else never, not
  even with *force* (a file, a symbolic link, a directory with anything that is not a bundle's
  regular files). It raises BundleExistsError (exit 93) before anything runs or is written.
* `OutputSlot(path, force).claim()` checks, then holds an exclusive lock on the path from
  creation to seal (a sibling `.NAME.lock`, flock: a second writer to the same path is
  refused at once with exit 93, nothing mixed) and gives the staging directory
  `.NAME.partial-PID` beside it, where the bundle is written; `commit()` renames it into place
  (an old bundle replaced by --force is moved aside first, then removed), `discard()` drops it.
  A writer killed before the seal leaves its unsealed bundle at `.NAME.partial-PID`, readable.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import stat
from pathlib import Path

import orjson

from symtrace.bundle.format import EVENTS, MANIFEST, PACK, STDOUT, SUMS
from symtrace.errors import BundleExistsError, BundleWriteError

BUNDLE_FILES = frozenset((MANIFEST, EVENTS, PACK, SUMS, STDOUT))
MAX_MANIFEST_BYTES = 64 << 20


def check_target(path: str | os.PathLike[str], force: bool) -> None:
    """Raise BundleExistsError unless a new bundle may be written at *path* (module doc)."""
    target = Path(path)
    try:
        info = target.lstat()
    except FileNotFoundError:
        return
    except OSError as exc:
        raise BundleWriteError(f"cannot write a bundle at {target}: {exc}") from exc
    if stat.S_ISLNK(info.st_mode):
        raise BundleExistsError(f"{target} is a symbolic link; symtrace writes a bundle only "
                                "into a new or empty directory or over a bundle (--force)")
    if not stat.S_ISDIR(info.st_mode):
        raise BundleExistsError(f"{target} exists and is not a directory; symtrace never "
                                "replaces it, even with --force: choose another path")
    if not any(target.iterdir()):
        return
    if not is_bundle_dir(target):
        raise BundleExistsError(
            f"{target} is a non-empty directory that is not a symtrace bundle; symtrace never "
            "replaces it, even with --force: choose another path")
    if not force:
        raise BundleExistsError(
            f"{target} already holds a bundle; choose another path or pass --force")


def is_bundle_dir(path: Path) -> bool:
    """A directory of a bundle's regular files only, with a manifest that is a bundle's."""
    try:
        with os.scandir(path) as entries:  # closed on the early returns too
            for entry in entries:
                if not entry.is_file(follow_symlinks=False):
                    return False
                if entry.name not in BUNDLE_FILES and not _writer_temp(entry.name):
                    return False
        manifest_path = path / MANIFEST
        if manifest_path.lstat().st_size > MAX_MANIFEST_BYTES:
            return False
        manifest = orjson.loads(manifest_path.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return False
    return isinstance(manifest, dict) and "format_version" in manifest and "kind" in manifest


def _writer_temp(name: str) -> bool:
    """files.atomic_write's temp file (`.manifest.json.tmp-PID-TID`) a killed writer left."""
    return any(name.startswith(f".{known}.tmp-") for known in BUNDLE_FILES)


def refuse_symlinks(root: Path, names: tuple[str, ...]) -> None:
    """BundleWriteError if one of *names* in the bundle directory *root* is not a regular
    file (a planted symbolic link would send the writer's appends elsewhere)."""
    for name in names:
        try:
            info = (root / name).lstat()
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise BundleWriteError(f"cannot write bundle at {root}: {exc}") from exc
        if not stat.S_ISREG(info.st_mode):
            raise BundleWriteError(
                f"cannot write bundle at {root}: {name} is not a regular file (a symbolic "
                "link inside a bundle directory is refused)")


class OutputSlot:
    """One new bundle's output path, claimed from creation to seal (module doc)."""

    def __init__(self, path: str | os.PathLike[str], *, force: bool) -> None:
        self.path = Path(path)  # as the user gave it, for messages
        self._target = Path(os.path.abspath(path))  # `-o .` names its directory too
        self.force = force
        self.staged = self._target.with_name(f".{self._target.name}.partial-{os.getpid()}")
        self._lock_path = self._target.with_name(f".{self._target.name}.lock")
        self._lock_fd: int | None = None

    def claim(self) -> OutputSlot:
        check_target(self.path, self.force)
        try:
            self._target.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise BundleWriteError(f"cannot write a bundle at {self.path}: {exc}") from exc
        self._lock()
        try:
            check_target(self.path, self.force)  # again, under the lock
            shutil.rmtree(self.staged, ignore_errors=True)  # a partial of a dead pid like ours
            try:
                self.staged.mkdir()
            except OSError as exc:
                raise BundleWriteError(f"cannot write a bundle at {self.path}: {exc}") from exc
        except BaseException:
            self._unlock()
            raise
        return self

    @property
    def held(self) -> bool:
        return self._lock_fd is not None

    def commit(self) -> Path:
        """Move the staged bundle into place and release the path."""
        try:
            check_target(self.path, self.force)  # nobody put user data there meanwhile
            aside = None
            target = self._target
            if target.exists() and any(target.iterdir()):
                aside = target.with_name(f".{target.name}.replaced-{os.getpid()}")
                os.replace(target, aside)
            os.replace(self.staged, target)
            if aside is not None:
                shutil.rmtree(aside, ignore_errors=True)
        except OSError as exc:
            raise BundleWriteError(
                f"cannot move the bundle into place at {self.path}: {exc} (it is at "
                f"{self.staged})") from exc
        finally:
            self._unlock()
        return self.path

    def discard(self) -> None:
        """Drop the staged bundle and release the path."""
        shutil.rmtree(self.staged, ignore_errors=True)
        self._unlock()

    def release(self) -> None:
        """Release the path, leaving the staged bundle where it is (unsealed, readable)."""
        self._unlock()

    # -- the lock file -----------------------------------------------------------------------
    def _lock(self) -> None:
        for _ in range(20):  # a holder that unlinks between our open and flock: open again
            try:
                fd = os.open(self._lock_path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
            except OSError as exc:
                raise BundleWriteError(
                    f"cannot lock {self.path} for writing: {exc}") from exc
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = _read_holder(fd)
                os.close(fd)
                raise BundleExistsError(
                    f"{self.path} is being written by another symtrace process ({holder}); "
                    "choose another path") from None
            try:
                same = os.fstat(fd).st_ino == os.stat(self._lock_path).st_ino
            except FileNotFoundError:
                same = False
            if same:
                os.ftruncate(fd, 0)
                os.write(fd, f"pid {os.getpid()}\n".encode())
                self._lock_fd = fd
                return
            os.close(fd)
        raise BundleWriteError(f"cannot lock {self.path} for writing: the lock file keeps moving")

    def _unlock(self) -> None:
        if self._lock_fd is None:
            return
        with contextlib.suppress(OSError):
            os.unlink(self._lock_path)  # before the unlock: a waiter then re-opens a new one
        os.close(self._lock_fd)
        self._lock_fd = None


def _read_holder(fd: int) -> str:
    with contextlib.suppress(OSError):
        text = os.pread(fd, 64, 0).decode("ascii", "replace").strip()
        if text:
            return text
    return "pid unknown"
