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

_captures: contextvars.ContextVar[tuple[Chunks, ...]] = contextvars.ContextVar(
    "symtrace_console_captures", default=())
_lock = threading.Lock()
_active = 0  # captures in progress, process-wide: the patches are installed while > 0


class _Tap:
    """Stands in for sys.stdout / sys.stderr: every write goes to the real stream and to each
    capture of the writing context. Everything else is the real stream's."""

    def __init__(self, inner: Any, stream: str) -> None:
        self._inner = inner
        self._stream = stream

    def write(self, text: str) -> int:
        if text:
            for chunks in _captures.get():
                if chunks and chunks[-1][0] == self._stream:
                    chunks[-1][1] += text
                else:
                    chunks.append([self._stream, text])
        return self._inner.write(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def _submitting(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def submit(self: Any, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
        captures = _captures.get()
        if captures:
            fn = functools.partial(_run_with, captures, fn)
        return original(self, fn, *args, **kwargs)

    return submit


def _run_with(captures: tuple[Chunks, ...], fn: Callable[..., Any], *args: Any,
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
    chunks: Chunks = []
    with _lock:
        if _active == 0:
            _PATCHES.install()
        _active += 1
    token = _captures.set((*_captures.get(), chunks))
    try:
        yield chunks
    finally:
        _captures.reset(token)
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
