"""What a tool body writes to the console: captured while it runs, written back on replay.

Replay does not run tool bodies, so what a tool prints (`print("Checking for harmful
content...")`) would be missing from a replayed run's output. While a live tool body runs,
`capturing()` collects what it writes to `sys.stdout` / `sys.stderr` (still passed through to
the console) as `[stream, text]` chunks in write order; the tool boundary stores them with
the call's outcome (`console`), and `write_back` writes them to the same streams when the
replay serves that call, in order, at the point the call returns.

Attribution is by context, so concurrent tool bodies each get their own writes: the capture
is a context variable (asyncio tasks and `contextvars.copy_context` carry it), and while a
capture is active, `ThreadPoolExecutor.submit` carries it into the worker (`run_in_executor`,
which AgentChat and AG2 use for sync tool functions, does not carry context itself). A tool
body nested in another writes into both: the outer one is not re-run on replay either.

Not captured (a replay cannot reproduce it, and R107 says so): writes to a stream object
taken before the tool ran (a logging handler's stream), threads the body starts itself,
and writes below Python (`os.write(1, ...)`, a C extension).
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import contextvars
import functools
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

from symtrace.model.canonical import JSONValue
from symtrace.patching import Patch, PatchSet

STREAMS = ("stdout", "stderr")
CONSOLE_KEY = "console"  # the outcome field holding a tool body's chunks

Chunks = list[list[str]]  # [[stream, text], ...]: adjacent writes to one stream are joined

_captures: contextvars.ContextVar[tuple[_Capture, ...]] = contextvars.ContextVar(
    "symtrace_console_captures", default=())
_lock = threading.Lock()
_active = 0  # captures in progress, process-wide: the patches are installed while > 0


class _Tap:
    """Stands in for sys.stdout / sys.stderr: every write goes to the real stream and to each
    capture of the writing context. Everything else is the real stream's.

    A tool body's writes reach the real stream a whole line at a time (`print` writes the
    text and its newline separately): a framework printing from another thread meanwhile
    (CrewAI's panels) cannot cut a line of the tool's in two, which no replay could repeat."""

    def __init__(self, inner: Any, stream: str) -> None:
        self._inner = inner
        self._stream = stream

    def write(self, text: str) -> int:
        captures = _captures.get()
        if not captures or not text:
            return self._inner.write(text)
        for capture in captures:
            capture.add(self._stream, text)
        whole = captures[-1].line_ready(self._stream, text)
        if whole:
            self._inner.write(whole)
        return len(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        self._inner.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class _Capture:
    """One tool body's writes: the chunks recorded, and a line not yet passed on."""

    def __init__(self) -> None:
        self.chunks: Chunks = []
        self._pending = dict.fromkeys(STREAMS, "")

    def add(self, stream: str, text: str) -> None:
        if self.chunks and self.chunks[-1][0] == stream:
            self.chunks[-1][1] += text
        else:
            self.chunks.append([stream, text])

    def line_ready(self, stream: str, text: str) -> str:
        """What of the text held so far ends in a newline (to pass on now); the rest waits."""
        held = self._pending[stream] + text
        cut = held.rfind("\n") + 1
        self._pending[stream] = held[cut:]
        return held[:cut]

    def flush_pending(self) -> None:
        for stream, text in self._pending.items():
            if text:
                current = getattr(sys, stream)
                (current._inner if isinstance(current, _Tap) else current).write(text)
        self._pending = dict.fromkeys(STREAMS, "")


def _submitting(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def submit(self: Any, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
        captures = _captures.get()
        if captures:
            fn = functools.partial(_run_with, captures, fn)
        return original(self, fn, *args, **kwargs)

    return submit


def _run_with(captures: tuple[_Capture, ...], fn: Callable[..., Any], *args: Any,
              **kwargs: Any) -> Any:
    token = _captures.set(captures)
    try:
        return fn(*args, **kwargs)
    finally:
        _captures.reset(token)


_PATCHES = PatchSet([
    Patch(sys, "stdout", lambda inner: _Tap(inner, "stdout")),
    Patch(sys, "stderr", lambda inner: _Tap(inner, "stderr")),
    Patch(concurrent.futures.ThreadPoolExecutor, "submit", _submitting),
])


@contextlib.contextmanager
def capturing() -> Iterator[Chunks]:
    """Collect what the code in this block (and the tool bodies and executor jobs it starts)
    writes to stdout/stderr; the writes still reach the console."""
    global _active
    capture = _Capture()
    with _lock:
        if _active == 0:
            _PATCHES.install()
        _active += 1
    token = _captures.set((*_captures.get(), capture))
    try:
        yield capture.chunks
    finally:
        _captures.reset(token)
        capture.flush_pending()  # a last line without its newline
        with _lock:
            _active -= 1
            if _active == 0:
                _PATCHES.uninstall()


def write_back(outcome: JSONValue) -> None:
    """Write a recorded tool body's console chunks to today's stdout/stderr, in order."""
    chunks = outcome.get(CONSOLE_KEY) if isinstance(outcome, dict) else None
    if not isinstance(chunks, list):
        return
    for chunk in chunks:
        if isinstance(chunk, list) and len(chunk) == 2 and chunk[0] in STREAMS:
            stream = getattr(sys, chunk[0])
            stream.write(str(chunk[1]))
            stream.flush()
