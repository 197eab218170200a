"""Running the program as a child process: output tee, signals, exit status.

The program's exit status passes through: its own code, or 128+N when a signal N ended it
(137 for SIGKILL), whether or not symtrace's bootstrap had run yet.

Ctrl-C at a terminal sends SIGINT to the whole foreground process group, so the program gets
it from the terminal; symtrace does not die of it (no traceback of its own), waits for the
program, and reports the run as interrupted (exit 130). A SIGTERM sent to symtrace (`kill
PID`, a CI runner's timeout) is forwarded to the program at once; a SIGINT that did not come
from symtrace's terminal is forwarded if the program is still running a second later (a
SIGINT to the whole process group reached the program already). Either way the
bundle is sealed as far as it got and marked incomplete (docs/bundle-format.md, *Crash and
signal semantics*).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import IO, Any

from symtrace.errors import SymtraceError

FORWARDED = (signal.SIGINT, signal.SIGTERM)
FORWARD_GRACE = 1.0  # seconds a SIGINT-ed program has to exit before symtrace forwards it


@dataclass(frozen=True)
class ChildExit:
    code: int  # shell-style: the program's code, or 128+N if signal N ended it
    signal: str | None  # name of the signal that ended the program, if one did
    received: str | None  # SIGINT/SIGTERM symtrace itself received while the program ran
    stdout: bytes
    # replay: what the program wrote to stderr after the first divergence and before its last
    # traceback, left out of the terminal (symtrace.process.held_stderr)
    stderr_left_out: str = ""

    @property
    def exit_code(self) -> int:
        """What `symtrace record/replay` exits with: 130/143 when the user interrupted."""
        if self.received is not None:
            return 128 + int(signal.Signals[self.received])
        return self.code


def run_child(
    argv: Sequence[str], cwd: str, env: dict[str, str], *, quiet: bool,
    before_exec: Callable[[], None] | None = None,
) -> ChildExit:
    """Run *argv* (*before_exec*: called in the forked child before it execs, e.g. to enter
    a private network namespace; SymtraceError if it fails: nothing ran)."""
    try:
        proc = subprocess.Popen(list(argv), cwd=cwd, env=env, stdout=subprocess.PIPE,
                                preexec_fn=before_exec)
    except subprocess.SubprocessError as exc:  # before_exec raised in the child
        raise SymtraceError(f"cannot start {argv[0]!r} isolated: {exc}") from exc
    except OSError as exc:
        raise SymtraceError(f"cannot start {argv[0]!r}: {exc}") from exc
    captured: list[bytes] = []
    sink: IO[bytes] | None = None if quiet else sys.stdout.buffer

    def pump() -> None:
        assert proc.stdout is not None
        for chunk in iter(lambda: proc.stdout.read1(65536), b""):  # type: ignore[union-attr]
            captured.append(chunk)
            if sink is not None:
                with contextlib.suppress(OSError, ValueError):
                    sink.write(chunk)
                    sink.flush()

    thread = threading.Thread(target=pump, daemon=True)
    thread.start()
    received: list[int] = []
    with _forwarding(proc, received):
        code = proc.wait()
    thread.join()
    proc.stdout.close()  # type: ignore[union-attr]  # read to its end: closed, not left to GC
    name = signal.Signals(-code).name if code < 0 else None
    return ChildExit(
        code=128 - code if code < 0 else code,
        signal=name,
        received=signal.Signals(received[0]).name if received else None,
        stdout=b"".join(captured),
    )


@contextlib.contextmanager
def _forwarding(proc: subprocess.Popen[bytes], received: list[int]) -> Any:
    if threading.current_thread() is not threading.main_thread():
        yield  # signal handlers can only be set from the main thread
        return

    def forward(signum: int) -> None:
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                proc.send_signal(signum)

    def handle(signum: int, frame: object) -> None:
        received.append(signum)
        if signum != signal.SIGINT:
            forward(signum)
        elif not _terminal_sent_it():
            # A SIGINT sent to the whole process group (a terminal without a tty in sight,
            # `kill -INT -PGID`) reached the program too: forward only to a program still
            # running after a grace, so one Ctrl-C is not delivered to it twice.
            timer = threading.Timer(FORWARD_GRACE, forward, (signum,))
            timer.daemon = True
            timer.start()

    previous = {signum: signal.signal(signum, handle) for signum in FORWARDED}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def _terminal_sent_it() -> bool:
    """True when symtrace runs in the foreground process group of its terminal (Ctrl-C there
    reaches every process of the group, the program included)."""
    try:
        fd = os.open("/dev/tty", os.O_RDONLY | os.O_NOCTTY)
    except OSError:
        return False
    try:
        return os.tcgetpgrp(fd) == os.getpgrp()
    except OSError:
        return False
    finally:
        os.close(fd)
