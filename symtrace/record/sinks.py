"""Which sink a recording writes through: a writer process (the default) or inline.

`SYMTRACE_WRITER=inline` (or `symtrace.record(..., writer="inline")`) keeps graph derivation
and writing in the program's process; `process` (the default) moves them to a writer process
(symtrace/record/offload.py). If the writer process cannot be started the recording is
written inline, with a warning: the bundle is the same either way. Replay sessions always
write inline (docs/recording-process.md).

`SYMTRACE_GRAPH=at-read` (or `graph="at-read"`) records without deriving the graph: the
bundle (format 3) holds what deriving it reads, and a reader derives it when first needed
(symtrace/model/graph_at_read.py).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from symtrace.bundle.completion import complete_bundle
from symtrace.bundle.format import GRAPH, GRAPH_AT_READ, GRAPH_AT_RECORD
from symtrace.bundle.writer import BundleWriter, unsealed_manifest
from symtrace.errors import UsageError
from symtrace.model.canonical import JSONValue
from symtrace.model.redaction import Redactor
from symtrace.record import offload
from symtrace.session.sink import InlineSink

ENV_WRITER = "SYMTRACE_WRITER"
PROCESS, INLINE = "process", "inline"
WRITERS = (PROCESS, INLINE)
ENV_GRAPH = "SYMTRACE_GRAPH"
GRAPHS = (GRAPH_AT_RECORD, GRAPH_AT_READ)


class InlineRecording(InlineSink):
    """A recording written in the program's process (the same end-of-run API as
    `offload.OffloadedSink`)."""

    writer: BundleWriter

    @property
    def manifest(self) -> dict[str, Any]:
        return self.writer.manifest

    def check(self) -> None:
        """Nothing pending: inline errors are raised where they happen."""

    def complete(self, *, exit_code: int | None, value: JSONValue, status: str,
                 error: str | None = None) -> None:
        complete_bundle(self.writer, exit_code=exit_code, value=value, status=status,
                        error=error)

    def close(self) -> None:
        self.writer.close()

    def abort(self) -> None:
        self.writer.abort()


Recording = InlineRecording | offload.OffloadedSink


def chosen(writer: str | None = None) -> str:
    """*writer*, else $SYMTRACE_WRITER, else `process`; anything else is a UsageError."""
    value = writer if writer is not None else os.environ.get(ENV_WRITER) or PROCESS
    if value not in WRITERS:
        raise UsageError(f"writer must be one of {', '.join(WRITERS)} (got {value!r}; "
                         f"${ENV_WRITER} or writer=)")
    return value


def with_graph(manifest: dict[str, Any], graph: str | None = None) -> dict[str, Any]:
    """*manifest* for a recording whose graph is derived when *graph* says: *graph*, else
    $SYMTRACE_GRAPH, else `at-record` (the manifest as it is: format 2); `at-read` marks it
    (format 3, docs/bundle-format.md). Anything else is a UsageError."""
    value = graph if graph is not None else os.environ.get(ENV_GRAPH) or GRAPH_AT_RECORD
    if value not in GRAPHS:
        raise UsageError(f"graph must be one of {', '.join(GRAPHS)} (got {value!r}; "
                         f"${ENV_GRAPH} or graph=)")
    return {**manifest, GRAPH: GRAPH_AT_READ} if value == GRAPH_AT_READ else manifest


def new_recording(path: str | os.PathLike[str], manifest: dict[str, Any], *,
                  redactor: Redactor, overwrite: bool, writer: str | None = None,
                  graph: str | None = None) -> Recording:
    """Create the bundle at *path* here (a bad path fails now, typed) and write it through
    the chosen sink (*graph*: with_graph())."""
    how = chosen(writer)
    manifest = with_graph(manifest, graph)
    created = BundleWriter(path, manifest, redactor=redactor, overwrite=overwrite).open()
    process = offload.spawn_or_warn() if how == PROCESS else None
    if process is None:
        return InlineRecording(created)
    created.close()
    return offload.OffloadedSink.reopen(process, Path(path), created.manifest, redactor)


def continued_recording(path: str | os.PathLike[str], *, redactor: Redactor,
                        writer: str | None = None) -> Recording:
    """Continue the bundle another process created (the `symtrace record` parent, which
    reopens it once this process ended: the writer process holds its lock before this
    returns)."""
    how = chosen(writer)
    process = offload.spawn_or_warn() if how == PROCESS else None
    if process is None:
        return InlineRecording(BundleWriter.reopen(path, redactor=redactor))
    root = Path(path)
    manifest = unsealed_manifest(root)  # read here: the program's seed is in it
    return offload.OffloadedSink.reopen(process, root, manifest, redactor)
