"""The writer process: derives the graph and writes the bundle for a recording process.

    python -m symtrace.record.writer_process      (started by symtrace.record.offload)

It reads frames (symtrace/record/frames.py) from stdin and applies them in order with the
same `GraphBuilder`, `BundleWriter` and `complete_bundle` a session uses inline, so the bundle
is byte-identical: `reopen` (a new recording: the bundle, the redactor's secrets), `call` (a
call started: its parents are derived now, from the graph's state at request time, and kept
by event id; it may carry the call's own event, written at once), `event` (an event to
write; one of a call takes that call's parents, and its request unless it carries
another), `complete` / `close` / `abort` (answered), `ready` (answered: the bundle is open
and locked), `hello` (answered: the process runs).

It runs in a session of its own and ignores SIGINT, so Ctrl-C or a signal to the program's
process group does not cut a write short. At end of file (the program ended, or was killed)
it applies everything it received, closes the bundle unsealed (the readable prefix a killed
inline writer leaves, with its sums lines flushed) and exits. The first failure is answered
at once (unsolicited) and to every later request; frames after it are not applied, so the
bundle stays the prefix written before it.
"""

from __future__ import annotations

import contextlib
import gc
import os
import select
import signal
import sys
import traceback
from typing import Any

from symtrace.bundle.completion import complete_bundle
from symtrace.bundle.writer import BundleWriter
from symtrace.errors import BundleWriteError, SymtraceError
from symtrace.model.events import Edge, Event, EventType
from symtrace.model.graph import GraphBuilder
from symtrace.model.graph_at_read import inputs_of
from symtrace.model.redaction import Redactor
from symtrace.record.frames import FrameReader, encode, error_json, write_all

STDIN, STDOUT = 0, 1
ANSWERED = frozenset({"hello", "ready", "complete", "close", "abort"})
PAUSE_MS = 1000  # how long the writer lets frames gather before it reads again (see Pause)


class Recording:
    """The state of the recording being written (one at a time: sessions do not nest)."""

    def __init__(self) -> None:
        self._reset()

    def _reset(self) -> None:
        self.writer: BundleWriter | None = None
        self.graph = GraphBuilder()
        # event id -> (parents, request, what deriving them at read reads)
        self.calls: dict[str, tuple[Any, Any, Any]] = {}
        self.failure: dict[str, str] | None = None

    def apply(self, frame: dict[str, Any]) -> dict[str, Any] | None:
        """Apply one frame; the answer to send, if any."""
        op, seq = frame["op"], frame["seq"]
        if op == "reopen":
            self._close()
            self._reset()  # a new recording starts from nothing
        if self.failure is None or op == "abort":
            try:
                getattr(self, "op_" + op)(frame)
            except Exception as exc:  # noqa: BLE001 - every failure is reported, typed
                self.failure = _failure(exc, op)
                if op not in ANSWERED:
                    return {"seq": seq, "error": self.failure, "unsolicited": True}
        if op in ("close", "complete") and self.failure is not None:
            self._close()  # release the bundle (and its lock) either way
        if op not in ANSWERED:
            return None
        if self.failure is not None and op != "abort":
            return {"seq": seq, "error": self.failure}
        return {"seq": seq, "ok": True}

    def flush(self, seq: int) -> dict[str, Any] | None:
        """Write what the events applied so far appended (BundleWriter.hold): called when
        every frame received is applied, before the writer waits for more. A failure is
        this recording's failure, answered at once (unsolicited, as *seq*'s)."""
        if self.failure is not None or self.writer is None:
            return None
        try:
            self.writer.flush()
        except Exception as exc:  # noqa: BLE001 - every failure is reported, typed
            self.failure = _failure(exc, "event")
            return {"seq": seq, "error": self.failure, "unsolicited": True}
        return None

    # -- operations ------------------------------------------------------------------------
    def op_reopen(self, frame: dict[str, Any]) -> None:
        redactor = Redactor(tuple((name, value) for name, value in frame["named"]))
        self.writer = BundleWriter.reopen(frame["path"], redactor=redactor)
        self.writer.hold()  # written when the burst is applied (flush)

    def op_hello(self, frame: dict[str, Any]) -> None:
        """Answered once the process runs (symtrace imported)."""

    def op_ready(self, frame: dict[str, Any]) -> None:
        self._writer()

    def op_call(self, frame: dict[str, Any]) -> None:
        ident, request = frame["id"], frame["request"]
        writer = self._writer()
        if writer.graph_at_read:  # what deriving its parents reads, for the reader
            parents: tuple[Edge, ...] = ()
            derive = inputs_of(len(writer.events), frame["dispatched_by"])
        else:
            parents = self.graph.parents_for(
                ident, EventType(frame["type"]), frame["lane"], request, frame["meta"],
                dispatched_by=tuple(frame["dispatched_by"]),
            )
            derive = None
        data = frame.get("event")
        if data is None:
            self.calls[ident] = (parents, request, derive)
        else:  # the call's own event came with it
            self._write(Event.from_parts(data, parents, data.get("request", request), derive))

    def op_event(self, frame: dict[str, Any]) -> None:
        data = frame["event"]
        if data.get("from_call"):  # the parents (and maybe the request) of its call
            parents, request, derive = self.calls.pop(data["id"])
            self._write(Event.from_parts(data, parents, data.get("request", request), derive))
        else:
            self._write(Event.from_json(data))

    def _write(self, event: Event) -> None:
        writer = self._writer()
        writer.write_event(event)
        if not writer.graph_at_read:
            self.graph.completed(event)

    def op_complete(self, frame: dict[str, Any]) -> None:
        writer = self._writer()
        writer.manifest = frame["manifest"]
        complete_bundle(writer, exit_code=frame["exit_code"], value=frame["value"],
                        status=frame["status"], error=frame["error"])
        self.writer = None

    def op_close(self, frame: dict[str, Any]) -> None:
        self._writer().close()
        self.writer = None

    def op_abort(self, frame: dict[str, Any]) -> None:
        if self.writer is not None:
            self.writer.abort()
            self.writer = None

    # -- internals -------------------------------------------------------------------------
    def _writer(self) -> BundleWriter:
        if self.writer is None or not self.writer.is_open:
            raise BundleWriteError("the writer process has no bundle open")
        return self.writer

    def _close(self) -> None:
        if self.writer is not None:
            with contextlib.suppress(Exception):
                self.writer.close()
            self.writer = None


def _failure(exc: Exception, op: str) -> dict[str, str]:
    if isinstance(exc, SymtraceError):
        return error_json(exc)
    # anything else is a bug of the writer process: say where it happened
    return {"type": "BundleWriteError", "message": (
        f"{type(exc).__name__}: {exc} (applying a {op!r} frame)\n{traceback.format_exc()}")}


class Pause:
    """Before reading again, having applied everything received, the writer waits up to
    PAUSE_MS on its wake-up pipe, not on the frames' pipe: the frames the program sends
    meanwhile gather in the pipe and are read and applied in one go. Woken per frame, the
    writer spent far more CPU per call than the same work costs applied in a burst (each
    wake-up runs on cold caches; the program's write paid for waking it): the benchmark's
    conversation calls, a few ms apart, cost the writer ~1.0 ms each woken per frame, ~0.87
    with a 20 ms pause, ~0.66 with 100, ~0.6 with 300 (recording_components.py, 3 rounds);
    against 100 ms, 1000 ms took 8-31 % off it (three alternating pairs of
    recording_overhead.py, 10 rounds: a 40-call session then is one burst).
    Why a second costs no guarantee: a killed program loses nothing the pipe holds (below),
    a killed writer loses at most the pipe's size either way, and what reached the page cache
    is on disk only after the kernel's writeback (dirty_expire_centisecs: 30 s by default), so
    a machine crash loses about as much with 0.1 s as with 1 s. What waits longer: a reader of
    a bundle still being written, and a failed write, which surfaces at the program's next
    call once the writer applied it. The program writes to the wake-up pipe when it waits for
    an answer (`WriterProcess.request`) or finds the frames' pipe full, so neither waits for a
    pause; when the program ends (or is killed) the wake-up pipe's end of file ends the pause
    at once, and the writer pauses no more (it reads the frames' pipe to its end)."""

    def __init__(self, fd: int) -> None:
        os.set_blocking(fd, False)
        self.fd: int | None = fd
        self.poll = select.poll()
        self.poll.register(fd, select.POLLIN)

    def __call__(self) -> None:
        if self.fd is None or not self.poll.poll(PAUSE_MS):
            return
        try:
            woken = os.read(self.fd, 4096)  # the wake-up bytes so far: one wake-up serves all
        except BlockingIOError:
            return
        if not woken:  # end of file: the program ended
            self.fd = None


def _answer(answer: dict[str, Any] | None) -> None:
    if answer is not None:
        try:
            write_all(STDOUT, encode(answer))
        except BrokenPipeError:
            pass  # the program is gone: keep applying what it sent


GC_THRESHOLD0 = 10_000  # allocations between young collections in the writer process


def pin_collector() -> None:
    """Set the writer process's collector for its work: what importing symtrace made is
    frozen (never walked again: ~23k objects, alive for the process's life anyway), and a
    young collection runs every GC_THRESHOLD0 allocations instead of 700. Each call's frame
    allocates a few hundred containers, most freed by reference counting before any
    collection: at 700 the collector ran several times per call and walked what the graph
    and the writer keep (replaying the benchmark's frames in-process, collector time per
    call: conversation sync ~14 us, up to ~70 when a full collection fell in, -> ~0-6; short
    sync ~5 -> ~0). Cycles are still collected, only less often."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(GC_THRESHOLD0, *gc.get_threshold()[1:])


def main(wake: int | None = None) -> int:
    """*wake*: the wake-up pipe's read end (see Pause); None: read as frames come."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the program's to handle
    pin_collector()
    recording = Recording()
    pause = None if wake is None else Pause(wake)
    seq = 0

    def idle() -> None:
        """Everything received is applied: write it (one write per file), then pause."""
        _answer(recording.flush(seq))
        if pause is not None:
            pause()

    try:
        frames = FrameReader(STDIN, pause=idle)
        while (frame := frames.next()) is not None:
            seq = frame["seq"]
            _answer(recording.apply(frame))
    except BaseException as exc:  # noqa: BLE001 - a bug here must still say what happened
        detail = {"type": "BundleWriteError",
                  "message": f"the writer process failed: {type(exc).__name__}: {exc}\n"
                             + traceback.format_exc()}
        with contextlib.suppress(OSError):
            write_all(STDOUT, encode({"seq": 0, "error": detail, "unsolicited": True}))
        recording._close()
        return 1
    recording._close()  # end of file: the prefix received stays, unsealed
    return 0


if __name__ == "__main__":
    sys.exit(main())
