"""A program for test_study_warm: kills the fork server it was forked from, then prints."""

import os
import signal
import sys

if __name__ == "__main__":
    if "--kill-server" in sys.argv:
        os.kill(os.getppid(), signal.SIGKILL)
    print("ran", flush=True)
