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


# -- a conversation's messages, sent once ---------------------------------------------------
# An LLM request re-sends the conversation: most messages of one call's request are runs of
# the previous one's (the same list grown by new messages; a system message then a window of
# the rest slid on). A call frame names those runs of the previous message list (the base:
# the last call frame with chat messages, counted from the recording's start on both sides)
# and carries only the other messages; the writer process joins them back from the objects it
# decoded before. Parsing a conversation's frame was most of what the writer spent on the wire.


def chat_messages(request: Any) -> list[Any] | None:
    """An HTTP exchange's request's `body.messages` list, or None."""
    if type(request) is dict:
        body = request.get("body")
        if type(body) is dict:
            messages = body.get("messages")
            if type(messages) is list:
                return messages
    return None


def _plain_keys(message: Any) -> tuple[str, ...] | None:
    """The keys, in order, of a plain message (an object whose every value is a str: the
    only ones shared, since for them equal means the same bytes, where 1 == 1.0 == True
    would not); None for any other."""
    if type(message) is dict and all(type(value) is str for value in message.values()):
        return tuple(message)
    return None


class SentMessages:
    """The program's side: the base, and the keys of its plain messages (None: not plain)."""

    def __init__(self) -> None:
        self.number = 0  # of the base, counted from 1
        self.messages: list[Any] = []
        self.keys: list[tuple[str, ...] | None] = []

    def share(self, frame: dict[str, Any]) -> None:
        """Replace *frame*'s request by one carrying only the messages that are not in a
        run of the base (a copy: the program's request is left alone), and say in `shared`
        how to join them: [base, pieces], a piece [start, count] being the base's messages
        start..start + count, a piece n the next n messages sent."""
        messages = chat_messages(frame["request"])
        if messages is None:
            return
        pieces: list[Any] = []
        sent: list[Any] = []
        keys: list[tuple[str, ...] | None] = []
        at, end = 0, len(messages)
        while at < end:
            start, count = self._run(messages, at)
            if count:
                pieces.append([start, count])
                keys += self.keys[start:start + count]
                at += count
                continue
            message = messages[at]
            if pieces and type(pieces[-1]) is int:
                pieces[-1] += 1
            else:
                pieces.append(1)
            sent.append(message)
            keys.append(_plain_keys(message))
            at += 1
        self.number += 1
        self.messages, self.keys = messages, keys
        if len(sent) < end:
            request = frame["request"]
            frame["request"] = {**request, "body": {**request["body"], "messages": sent}}
            frame["shared"] = [self.number - 1, pieces]

    def _run(self, messages: list[Any], at: int) -> tuple[int, int]:
        """(start, count): a run of plain base messages equal to messages[at:at + count],
        keys in the same order, as long as found; (0, 0) for none."""
        base = self.messages
        try:
            start = base.index(messages[at])
        except ValueError:
            return 0, 0
        count = min(len(messages) - at, len(base) - start)
        if messages[at:at + count] != base[start:start + count]:
            count = 1  # the run ends before one of the lists does
            while at + count < len(messages) and start + count < len(base) and \
                    messages[at + count] == base[start + count]:
                count += 1
        try:  # equal objects: equal key sets; equal to plain ones: plain (None: not plain)
            same = list(map(tuple, messages[at:at + count])) == self.keys[start:start + count]
        except TypeError:  # an equal value that is not an object
            same = False
        return (start, count) if same else (0, 0)


class ReceivedMessages:
    """The writer process's side: the base, joined back into each call's request."""

    def __init__(self) -> None:
        self.number = 0
        self.messages: list[Any] = []

    def join(self, frame: dict[str, Any]) -> Any:
        """*frame*'s request, whole again; pieces that do not fit what the writer holds are
        a BundleWriteError (a bug, never a guess)."""
        request = frame["request"]
        messages = chat_messages(request)
        if messages is None:
            return request
        shared = frame.get("shared")
        if shared is not None:
            messages = self._joined(shared, messages)
            request["body"]["messages"] = messages
        self.number += 1
        self.messages = messages
        return request

    def _joined(self, shared: list[Any], sent: list[Any]) -> list[Any]:
        base, pieces = shared
        if base != self.number:
            raise errors.BundleWriteError(
                f"a call frame shares messages of message list {base}; the writer process "
                f"holds list {self.number}")
        joined: list[Any] = []
        at = 0
        for piece in pieces:
            if type(piece) is int and 0 < piece <= len(sent) - at:
                joined += sent[at:at + piece]
                at += piece
            elif type(piece) is list and len(piece) == 2 and piece[0] >= 0 and \
                    0 < piece[1] <= len(self.messages) - piece[0]:
                joined += self.messages[piece[0]:piece[0] + piece[1]]
            else:
                raise errors.BundleWriteError(
                    f"a call frame shares {piece!r} of a list of {len(self.messages)} "
                    f"messages, with {len(sent) - at} more sent")
        if at != len(sent):
            raise errors.BundleWriteError(f"a call frame sent {len(sent) - at} messages more "
                                          "than it places")
        return joined
