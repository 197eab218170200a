"""Records many tool calls quickly, then SIGKILLs itself: every result it received is on disk.

    python flood.py BUNDLE N     (the API: symtrace.record(BUNDLE))
    python flood.py - N          (under `symtrace record`: the session is running)
Prints the number of tool results the program received before the kill.
"""

import os
import signal
import sys

import symtrace


@symtrace.tool
def step(i: int) -> str:
    return f"step {i} done " + "x" * 200


def flood(n: int) -> None:
    for i in range(n):
        step(i)
    print(n, flush=True)
    os.kill(os.getpid(), signal.SIGKILL)


if __name__ == "__main__":
    if sys.argv[1] == "-":
        flood(int(sys.argv[2]))
    with symtrace.record(sys.argv[1]):
        flood(int(sys.argv[2]))
