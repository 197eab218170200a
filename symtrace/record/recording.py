"""A recording's sink: the session's trajectory written into a bundle it completes at the end.

`new_recording` creates the bundle (the API, `symtrace.record`); `continued_recording`
continues one the `symtrace record` parent created (its child, which holds the bundle's lock
from its session's start, before the first boundary call, until it ends; the parent then
reopens it and seals it).
"""

from __future__ import annotations

import os
from typing import Any

from symtrace.bundle.completion import complete_bundle
from symtrace.bundle.writer import BundleWriter
from symtrace.model.canonical import JSONValue
from symtrace.model.redaction import Redactor
from symtrace.session.sink import TrajectorySink


class Recording(TrajectorySink):
    """Graph derivation and bundle writing on the calling thread (session/sink.py), and the
    bundle's end: completed, closed for another process to seal, or aborted."""

    writer: BundleWriter

    @property
    def manifest(self) -> dict[str, Any]:
        return self.writer.manifest

    def complete(self, *, exit_code: int | None, value: JSONValue, status: str,
                 error: str | None = None) -> None:
        complete_bundle(self.writer, exit_code=exit_code, value=value, status=status,
                        error=error)

    def close(self) -> None:
        self.writer.close()

    def abort(self) -> None:
        self.writer.abort()


def new_recording(path: str | os.PathLike[str], manifest: dict[str, Any], *,
                  redactor: Redactor, overwrite: bool) -> Recording:
    """Create the bundle at *path* (a bad path fails now, typed)."""
    return Recording(BundleWriter(path, manifest, redactor=redactor, overwrite=overwrite).open())


def continued_recording(path: str | os.PathLike[str], *, redactor: Redactor) -> Recording:
    """Continue the bundle another process created (BundleWriter.reopen)."""
    return Recording(BundleWriter.reopen(path, redactor=redactor))
