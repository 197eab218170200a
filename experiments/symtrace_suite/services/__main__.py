"""`python -m symtrace_suite.services --ready-file F`: serve until SIGINT/SIGTERM.

The ready file is written atomically (temp file + rename) once every service listens, so a
parent process can poll for it and never reads half a JSON document.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
from pathlib import Path

import orjson

from symtrace_suite.services import start_services


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m symtrace_suite.services")
    parser.add_argument(
        "--ready-file",
        required=True,
        type=Path,
        help='written as {"urls": {name: url}} once the services listen',
    )
    args = parser.parse_args(argv)
    if not args.ready_file.parent.is_dir():
        parser.error(f"--ready-file: directory {args.ready_file.parent} does not exist")
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    with start_services() as services:
        tmp = args.ready_file.with_name(args.ready_file.name + f".{os.getpid()}.tmp")
        tmp.write_bytes(orjson.dumps({"urls": services.urls}, option=orjson.OPT_SORT_KEYS))
        os.replace(tmp, args.ready_file)
        print(f"symtrace_suite services ready: {services.urls}", flush=True)
        while not stop.wait(0.5):
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
