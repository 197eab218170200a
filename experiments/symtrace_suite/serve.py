"""Shared by the `python -m` servers of the suite: an atomic ready file, run until a signal."""

from __future__ import annotations

import os
import signal
import threading
from pathlib import Path
from typing import Any

import orjson


def write_ready_file(path: Path, data: Any) -> None:
    """Write JSON to *path* via a temp file and rename: a poller never reads half of it."""
    tmp = path.with_name(path.name + f".{os.getpid()}.tmp")
    tmp.write_bytes(orjson.dumps(data, option=orjson.OPT_SORT_KEYS))
    os.replace(tmp, path)


def wait_for_signal() -> None:
    """Block until SIGINT or SIGTERM (then return, so `with` blocks close cleanly)."""
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    while not stop.wait(0.5):
        pass
