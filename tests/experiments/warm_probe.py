"""A program for test_study_warm: kills the fork server it was forked from, then prints.

It only ever kills a parent that is a warm server (read from /proc): run cold, its parent is
whoever started it."""

import os
import signal
import sys
from pathlib import Path

if __name__ == "__main__":
    parent = Path(f"/proc/{os.getppid()}/cmdline").read_bytes()
    if b"symtrace_study.warm_server" not in parent:
        print("not forked from a warm server", flush=True)
        sys.exit(3)
    if "--kill-server" in sys.argv:
        os.kill(os.getppid(), signal.SIGKILL)
    print("ran", flush=True)
