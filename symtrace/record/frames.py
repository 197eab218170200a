"""The writer process's pipe protocol: length-prefixed orjson frames, and errors as data.

A frame is a 4-byte big-endian length and that many bytes of JSON (orjson: the content is
the canonical, redacted JSON a bundle holds, so whatever a bundle can hold a frame can carry).
Every frame the program sends has `op` and `seq` (its number, from 1); the writer process
answers only the synchronous ones, with `{"seq": n, "ok": true, ...}` or `{"seq": n, "error":
...}`, and sends `{"seq": n, "error": ..., "unsolicited": true}` as soon as applying frame n
failed (the program raises it at its next call). docs/recording-process.md has the frames.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Callable
from typing import Any

import orjson

from symtrace import errors

HEADER = struct.Struct(">I")
MAX_FRAME = 1 << 31  # a frame's length must fit the header; a bigger value is refused


def encode(frame: dict[str, Any]) -> bytes:
    body = orjson.dumps(frame)
    if len(body) >= MAX_FRAME:
        raise errors.BundleWriteError(f"a recorded value of {len(body)} bytes is too large")
    return HEADER.pack(len(body)) + body


def write_all(fd: int, data: bytes) -> None:
    """Write *data* whole (a write to a pipe may be cut short by a signal)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def read_exact(fd: int, size: int) -> bytes | None:
    """*size* bytes from *fd*, or None at end of file (a torn frame at EOF is also None: the
    sender died mid-frame, so that frame was never sent)."""
    chunks = []
    while size:
        chunk = os.read(fd, min(size, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def read_frame(fd: int) -> dict[str, Any] | None:
    header = read_exact(fd, HEADER.size)
    if header is None:
        return None
    body = read_exact(fd, HEADER.unpack(header)[0])
    return None if body is None else orjson.loads(body)


class FrameReader:
    """Frames from *fd*, read in large chunks into one buffer kept for the reader's life: the
    frames of a burst (a call and its event, many calls queued while the reader worked) cost
    one read, not two per frame, and a read allocates nothing (`os.read(fd, 1 MiB)` allocated
    a fresh 1 MiB object per read, mapped and page-faulted anew: ~35 us per read here, more
    than the kernel's copy). The buffer grows to hold a frame larger than it. *pause*: called
    before reading when nothing is held (the writer process's pause, writer_process.Pause)."""

    def __init__(self, fd: int, chunk: int = 1 << 20,
                 pause: Callable[[], None] | None = None) -> None:
        self.fd, self.pause = fd, pause
        self.buffer = bytearray(chunk)
        self.view = memoryview(self.buffer)
        self.start = self.end = 0  # the bytes received, not yet returned as frames

    def next(self) -> dict[str, Any] | None:
        """The next frame; None at end of file (a torn last frame included)."""
        size = HEADER.size
        while True:
            available = self.end - self.start
            if available >= size:
                needed = size + HEADER.unpack_from(self.buffer, self.start)[0]
                if available >= needed:
                    break
            else:
                needed = size
            if not self._fill(needed):
                return None
        start = self.start + size
        self.start += needed
        return orjson.loads(self.view[start:self.start])

    def _fill(self, needed: int) -> bool:
        """Read more (at least one byte) with room for *needed* bytes from `start`; False at
        end of file."""
        if self.start == self.end:
            self.start = self.end = 0
            if self.pause is not None:
                self.pause()
        elif self.start + needed > len(self.buffer) or len(self.buffer) - self.end < len(
                self.buffer) >> 2:
            # the frame's rest would not fit, or little room is left: move what is held to
            # the front (a larger buffer if the frame is larger than this one)
            held = self.end - self.start
            if needed > len(self.buffer):
                self.view.release()
                grown = bytearray(max(needed, 2 * len(self.buffer)))
                grown[:held] = self.buffer[self.start:self.end]
                self.buffer, self.view = grown, memoryview(grown)
            else:
                self.view[:held] = self.view[self.start:self.end]
            self.start, self.end = 0, held
        count = os.readv(self.fd, [self.view[self.end:]])
        self.end += count
        return count > 0


def error_json(exc: BaseException) -> dict[str, str]:
    return {"type": type(exc).__name__, "message": str(exc)}


def raise_error(error: dict[str, Any], context: str) -> None:
    """Raise the typed symtrace error the writer process hit (its own type when it is one of
    symtrace's errors; otherwise BundleWriteError naming it)."""
    name, message = str(error.get("type")), str(error.get("message"))
    cls = getattr(errors, name, None)
    if isinstance(cls, type) and issubclass(cls, errors.SymtraceError):
        try:
            typed = cls(message)
        except TypeError:  # an error whose constructor takes more than a message
            typed = None
        if typed is not None:
            raise typed
    raise errors.BundleWriteError(f"{context}: {name}: {message}")
