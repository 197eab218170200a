"""Writing an export or a report: refuse to overwrite unless forced, never leave half a file."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from symtrace.export.errors import OutputExists, OutputNotWritable


def check_output(path: Path, *, force: bool) -> None:
    """Fail before any work is done when *path* cannot be the output."""
    if path.is_dir():
        raise OutputExists(f"{path} is a directory")
    if path.exists() and not force:
        raise OutputExists(f"{path} exists (use --force to overwrite)")
    if not path.parent.is_dir():
        raise OutputNotWritable(f"cannot write {path}: directory {path.parent} does not exist")


def write_output(path: Path, data: bytes, *, force: bool) -> None:
    """Write *data* to *path* via a temp file and rename: all of it or nothing."""
    check_output(path, force=force)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        tmp.write_bytes(data)
        os.replace(tmp, path)
    except OSError as exc:
        with contextlib.suppress(OSError):  # a read-only file system refuses even this
            tmp.unlink(missing_ok=True)
        raise OutputNotWritable(f"cannot write {path}: {exc.strerror or exc}") from None
