"""`python -m symtrace_suite.services --ready-file F`: serve until SIGINT/SIGTERM.

The ready file is written atomically (temp file + rename) once every service listens, so a
parent process can poll for it and never reads half a JSON document.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from symtrace_suite.serve import wait_for_signal, write_ready_file
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
    with start_services() as services:
        write_ready_file(args.ready_file, {"urls": services.urls})
        print(f"symtrace_suite services ready: {services.urls}", flush=True)
        wait_for_signal()
    return 0


if __name__ == "__main__":
    sys.exit(main())
