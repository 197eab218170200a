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
    """Frames from *fd*, read in large chunks: the frames of a burst (a call and its event,
    many calls queued while the reader worked) cost one read, not two per frame."""

    def __init__(self, fd: int, chunk: int = 1 << 20) -> None:
        self.fd, self.chunk = fd, chunk
        self.buffer = bytearray()
        self.offset = 0

    def next(self) -> dict[str, Any] | None:
        """The next frame; None at end of file (a torn last frame included)."""
        size = HEADER.size
        while len(self.buffer) - self.offset < size or len(self.buffer) - self.offset < (
                size + HEADER.unpack_from(self.buffer, self.offset)[0]):
            data = os.read(self.fd, self.chunk)
            if not data:
                return None
            if self.offset:
                del self.buffer[:self.offset]
                self.offset = 0
            self.buffer += data
        length = HEADER.unpack_from(self.buffer, self.offset)[0]
        start = self.offset + size
        self.offset = start + length
        return orjson.loads(memoryview(self.buffer)[start:self.offset])


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
