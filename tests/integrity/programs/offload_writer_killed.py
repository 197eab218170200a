"""Under `symtrace record`: kills its own writer process mid-run and carries on.

The next boundary call raises BundleWriteError (the program catches it and exits 0); the
child must hand the failure back so the parent does not seal the bundle as complete.
"""

import os
import signal

import symtrace
from symtrace.errors import BundleWriteError
from symtrace.record import offload


@symtrace.tool
def step(i: int) -> str:
    return f"step {i}"


step(0)
pid = offload.writer_process().pid
os.kill(pid, signal.SIGKILL)
try:
    for i in range(1, 1000):  # the death is seen at the next send at the latest
        step(i)
except BundleWriteError as exc:
    print("caught:", type(exc).__name__, flush=True)
