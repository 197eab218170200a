"""SIGINT/SIGTERM stop a study cleanly: the attempts in flight are discarded, never rows.

The runner (and each pool worker) installs `install()`: a signal raises `StudyInterrupted`
in the main thread and is remembered in `received()`. While an attempt's program runs,
symtrace's own supervisor holds the handlers (it forwards the signal to the program and
returns with the outcome marked interrupted/terminated); the attempt runner turns that
outcome into `StudyInterrupted` too (`raise_if_interrupted`), so neither path writes a row
for the interrupted attempt (it would be a crash counted against the method). The parent
writes rows only while no signal has been received; `--resume` runs what is missing.
"""

from __future__ import annotations

import signal
from typing import Any

from symtrace_study.errors import StudyInterrupted

HANDLED = (signal.SIGINT, signal.SIGTERM)
_received: list[int] = []


def _handle(signum: int, frame: Any) -> None:
    _received.append(signum)
    raise StudyInterrupted(signum)


def install() -> None:
    """From the main thread; a no-op elsewhere (signal handlers live in the main thread)."""
    import threading

    if threading.current_thread() is threading.main_thread():
        for signum in HANDLED:
            signal.signal(signum, _handle)


def received() -> int | None:
    return _received[0] if _received else None


def note(signum: int) -> None:
    """Remember a signal the supervisor of an attempt's program received instead of us."""
    _received.append(signum)


def raise_if_interrupted() -> None:
    if _received:
        raise StudyInterrupted(_received[0])


def reset() -> None:
    """For tests that run several studies in one process."""
    _received.clear()


def signal_of(name: str | None) -> int | None:
    """SIGINT/SIGTERM by name (as symtrace's outcomes spell it), else None."""
    if name in ("SIGINT", "SIGTERM"):
        return int(signal.Signals[name])
    return None
