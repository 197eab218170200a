"""What the foreground endpoint commands (`stub-llm`, `local-llm`) share: loopback address
options and a stop event set by SIGINT/SIGTERM, with the previous handlers restored after."""

from __future__ import annotations

import argparse
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def add_address_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", default="127.0.0.1", help="loopback address (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=0, help="port; 0 = ephemeral (default)")


@contextmanager
def stop_on_signals() -> Iterator[threading.Event]:
    """An event set on SIGINT/SIGTERM while the block runs (handlers only on the main thread,
    where `signal.signal` works; elsewhere the caller stops by other means)."""
    stop = threading.Event()
    previous = {}
    if threading.current_thread() is threading.main_thread():
        previous = {sig: signal.signal(sig, lambda *_: stop.set()) for sig in _SIGNALS}
    try:
        yield stop
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
