"""Recording with a writer process: graph derivation and bundle writing off the program's process.

While a program records, its process assigns ids, positions, lanes and completion ranks and
builds each event's canonical, redacted content and hashes, as always; `OffloadedSink` then
ships each call and each event as one frame down a pipe (symtrace/record/frames.py) to a
writer process (symtrace/record/writer_process.py) that runs the real `GraphBuilder` and
`BundleWriter` on them: the bundle is byte-identical to an inline recording's.

One writer process per recording process, started at the first recording session and reused
by the next ones, ended at interpreter exit. Errors come back typed: the reply pipe is polled
(without blocking) at every send, so a failed write raises at the program's next boundary call,
and always at the end of the session; a writer process that died raises BundleWriteError with
its pid and exit code. A forked child of the recording process never writes into its parent's
pipe: it refuses with SessionError. docs/recording-process.md has the semantics.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import os
import select
import subprocess
import sys
import threading
import time
import warnings
from pathlib import Path
from typing import Any

import orjson

from symtrace._version import PACKAGE_ROOT
from symtrace.errors import BundleWriteError, SessionError
from symtrace.model.canonical import JSONValue
from symtrace.model.events import Edge, Event, EventType
from symtrace.model.redaction import Redactor
from symtrace.record.frames import encode, raise_error, read_frame

PIPE_SIZE = 1 << 20  # bytes the pipe to the writer holds (Linux's default limit for a user)
_F_SETPIPE_SZ = 1031  # fcntl.F_SETPIPE_SZ (Python 3.10+ names it; not on every platform)
START_TIMEOUT = 60.0  # seconds the writer process has to start (import symtrace) and greet
EXIT_TIMEOUT = 60.0  # seconds interpreter exit waits for the writer to write what it got
_BOOT = ("import sys; sys.path.insert(0, sys.argv[1]); "
         "from symtrace.record.writer_process import main; sys.exit(main(int(sys.argv[2])))")


class WriterProcess:
    """The pipe to one writer process, and the process itself."""

    def __init__(self) -> None:
        self.owner = os.getpid()
        # -I: none of the program's PYTHON* variables, user site or working directory (a
        # program's sitecustomize, a `symtrace record` bootstrap); the package root is put
        # first so the same symtrace is imported whatever the program did to sys.path.
        # A session of its own: Ctrl-C and signals to the program's group do not reach it.
        # The wake-up pipe: see writer_process.Pause (its read end is the writer's only).
        wake_read, self._wake = os.pipe()
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-I", "-c", _BOOT, str(PACKAGE_ROOT), str(wake_read)],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                cwd="/", start_new_session=True, close_fds=True, pass_fds=(wake_read,),
                bufsize=0,
            )
        except BaseException:
            os.close(self._wake)
            raise
        finally:
            os.close(wake_read)
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.pid = self.proc.pid
        self._out = self.proc.stdin.fileno()
        self._in = self.proc.stdout.fileno()
        with contextlib.suppress(OSError):  # a smaller pipe only means earlier back-pressure
            fcntl.fcntl(self._out, _F_SETPIPE_SZ, PIPE_SIZE)
        # Non-blocking: a full pipe wakes the writer (it may be pausing) before waiting.
        os.set_blocking(self._out, False)
        os.set_blocking(self._wake, False)
        self._poll = select.poll()
        self._poll.register(self._in, select.POLLIN)
        self._room = select.poll()
        self._room.register(self._out, select.POLLOUT)
        self._lock = threading.Lock()
        self._seq = 0
        # Set in a forked child (at fork): checked per send instead of comparing os.getpid()
        # with the owner's, a system call per frame.
        self.inherited = False
        self.failure: dict[str, Any] | None = None
        self.cpu_at_exit: float | None = None
        try:
            self.request({"op": "hello"}, greeting=True)
        except BaseException:
            with contextlib.suppress(OSError):
                self.proc.kill()
            self.proc.wait()
            self._close_pipes()
            raise

    # -- sending ---------------------------------------------------------------------------
    def send(self, *frames: dict[str, Any], poll: bool = True) -> None:
        """Ship *frames*, in order, in one write; raise the first failure the writer process
        reported, if any (*poll* False: unless already seen; the sink polls once per boundary
        call, when it starts, see OffloadedSink.open_call)."""
        with self._lock:
            self._usable()
            if poll:
                self._poll_failures()
            self._write(b"".join([self._numbered(frame) for frame in frames]))

    def _write(self, data: bytes) -> None:
        """Write *data* whole; a full pipe wakes the writer process (which may be pausing,
        writer_process.Pause) and waits until it made room: back-pressure, never a stall."""
        view = memoryview(data)
        try:
            while view:
                try:
                    view = view[os.write(self._out, view):]
                except BlockingIOError:
                    self._wake_up()
                    self._room.poll()  # room, or the reader gone (the next write says EPIPE)
        except OSError as exc:  # EPIPE: the writer process is gone
            raise self._died() from exc

    def _wake_up(self) -> None:
        """End the writer process's pause now (writer_process.Pause)."""
        # full: a wake-up is pending already; gone: the frames' pipe says so
        with contextlib.suppress(OSError):
            os.write(self._wake, b"!")

    def request(self, frame: dict[str, Any], *before: dict[str, Any],
                greeting: bool = False) -> dict[str, Any]:
        """Ship *frame* (after the frames *before*, in the same write) and wait for its
        answer (its error raised, typed)."""
        with self._lock:
            # not _usable(): a writer process that failed still answers (and releases the
            # bundle it holds); its answer is that failure
            self._owned()
            data = b"".join([self._numbered(f) for f in (*before, frame)])
            seq = frame["seq"]
            self._write(data)
            self._wake_up()  # answered now, not after the writer's pause
            deadline = time.monotonic() + START_TIMEOUT if greeting else None
            while True:
                if deadline is not None and not self._poll.poll(
                        max(0, int((deadline - time.monotonic()) * 1000))):
                    raise BundleWriteError(
                        f"the writer process (pid {self.pid}) did not start within "
                        f"{START_TIMEOUT:.0f} s")
                answer = read_frame(self._in)
                if answer is None:
                    raise self._died()
                if "error" in answer:
                    self.failure = answer
                if answer.get("seq") == seq or (answer.get("seq") == 0 and "error" in answer):
                    break
            if "error" in answer:
                raise_error(answer["error"], f"the writer process (pid {self.pid})")
            return answer

    def check(self) -> None:
        """Raise a failure the writer process reported since the last check."""
        with self._lock:
            self._usable()
            self._poll_failures()

    def _numbered(self, frame: dict[str, Any]) -> bytes:
        """*frame* numbered and encoded (under the lock: frames leave in number order)."""
        self._seq += 1
        frame["seq"] = self._seq
        return encode(frame)

    def _usable(self) -> None:
        self._owned()
        if self.failure is not None:
            raise_error(self.failure["error"], f"the writer process (pid {self.pid})")

    def _owned(self) -> None:
        if self.inherited:
            raise SessionError(
                "this process was forked from a recording process: it cannot record into "
                "its parent's bundle (record in the parent, or start a session of its own)"
            )

    def _poll_failures(self) -> None:
        while self._poll.poll(0):
            answer = read_frame(self._in)
            if answer is None:
                raise self._died()
            if "error" in answer:
                self.failure = answer
                raise_error(answer["error"], f"the writer process (pid {self.pid})")

    def _died(self) -> BundleWriteError:
        code = self._reap(5.0)
        self.failure = {"error": {"type": "BundleWriteError", "message": (
            f"the writer process (pid {self.pid}) ended (exit code {code}); the events "
            "still in its pipe are lost and the bundle ends unsealed before them")}}
        return BundleWriteError(self.failure["error"]["message"])

    # -- ending ----------------------------------------------------------------------------
    def alive(self) -> bool:
        """Not ended (checked without reaping it: its CPU figure is read when it is)."""
        if self.cpu_at_exit is not None:
            return False
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        return _proc_state(self.pid) not in (b"Z", b"X")  # b"": no /proc, trust kill(0)

    def cpu_seconds(self) -> float:
        if self.cpu_at_exit is not None:
            return self.cpu_at_exit
        return _proc_cpu(self.pid)

    def end(self, timeout: float = EXIT_TIMEOUT) -> None:
        """Close the pipe; wait (bounded) for the writer to apply what it got, and reap it
        keeping its CPU figure."""
        if os.getpid() != self.owner or self.cpu_at_exit is not None:
            return
        with contextlib.suppress(OSError):
            self.proc.stdin.close()  # type: ignore[union-attr]
        self._close_wake()  # its end of file ends the writer's pause at once
        if self._reap(timeout) is None:
            # still writing: left to end on its own; its CPU so far is what is known
            self.cpu_at_exit = _proc_cpu(self.pid)

    def _reap(self, timeout: float) -> int | None:
        """Wait up to *timeout* for the process to end; its exit code (None: still running).
        Its CPU figure is kept from the kernel's accounting of the ended child (wait4)."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                pid, status, usage = os.wait4(self.pid, os.WNOHANG)
            except ChildProcessError:  # reaped already (Popen.poll): no figure left to read
                self.cpu_at_exit = self.cpu_at_exit or 0.0
                self._close_pipes()
                return self.proc.returncode
            if pid:
                self.proc.returncode = os.waitstatus_to_exitcode(status)
                self.cpu_at_exit = usage.ru_utime + usage.ru_stime
                self._close_pipes()
                return self.proc.returncode
            if time.monotonic() >= deadline:
                return None
            time.sleep(0.005)

    def _close_pipes(self) -> None:
        for pipe in (self.proc.stdin, self.proc.stdout):
            with contextlib.suppress(OSError):
                pipe.close()  # type: ignore[union-attr]
        self._close_wake()

    def _close_wake(self) -> None:
        if self._wake >= 0:
            with contextlib.suppress(OSError):
                os.close(self._wake)
            self._wake = -1


def _proc_stat(pid: int) -> list[bytes]:
    """The fields of /proc/<pid>/stat after "pid (comm)" (state first; [] where unreadable)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return []
    return stat[stat.rindex(b")") + 2:].split()


def _proc_state(pid: int) -> bytes:
    """The process's state letter (Z: ended, not yet reaped; b"": unreadable)."""
    fields = _proc_stat(pid)
    return fields[0] if fields else b""


def _proc_cpu(pid: int) -> float:
    """User + system CPU seconds of a live process (0 where unreadable)."""
    fields = _proc_stat(pid)
    if not fields:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


# -- the process's writer process -----------------------------------------------------------
_started: list[WriterProcess] = []
_started_lock = threading.Lock()


def writer_process() -> WriterProcess:
    """The writer process of this process, started if there is none (or it ended)."""
    with _started_lock:
        current = _started[-1] if _started else None
        if current is not None and current.owner == os.getpid() and current.alive() \
                and current.failure is None:
            return current
        if current is not None and current.owner == os.getpid():
            current.end(timeout=0)
        process = WriterProcess()
        if not _started:
            atexit.register(end_writer_processes)
        _started.append(process)
        return process


def writer_cpu_seconds() -> float:
    """Cumulative user + system CPU seconds of the writer processes this process started
    (a live one read from /proc, an ended one as it ended)."""
    return sum(p.cpu_seconds() for p in _started if p.owner == os.getpid())


def end_writer_processes() -> None:
    """End this process's writer processes (at interpreter exit; the next recording starts
    a new one): each applies what it received first (bounded wait)."""
    for process in _started:
        process.end()


def _forgotten_in_child() -> None:
    """A forked child does not own its parent's writer processes: it must not close their
    pipes' write ends late (the writer would not see the parent's end) nor write to them."""
    if not _started:
        return
    null = os.open(os.devnull, os.O_RDWR)
    for process in _started:
        process.inherited = True
        for fd in (process._out, process._in, process._wake):
            with contextlib.suppress(OSError):
                os.dup2(null, fd)  # not closed: the pipe's file objects still own the numbers
    os.close(null)


os.register_at_fork(after_in_child=_forgotten_in_child)


# -- the sink a recording session writes through --------------------------------------------
_NOT_A_CALL = object()


class OffloadedSink:
    """A recording's trajectory sink whose graph and writer live in the writer process."""

    def __init__(self, process: WriterProcess, manifest: dict[str, Any]) -> None:
        self.process = process
        self.manifest = manifest  # the bundle's manifest as the program sees and edits it
        self._calls: dict[str, JSONValue] = {}  # calls shipped, not yet written: their request
        self._held: list[dict[str, Any]] = []  # call frames not yet shipped (see emit)
        self._open = True

    @classmethod
    def reopen(cls, process: WriterProcess, path: Path, manifest: dict[str, Any],
               redactor: Redactor) -> OffloadedSink:
        """Write the (created, closed) bundle at *path* through *process*, once the writer
        holds it: the bundle is never left unlocked with frames on their way, so a reader
        (`wait_unlocked`, `symtrace record`'s parent reopening it after this process ended)
        cannot take it before the writer drained them (docs/recording-process.md)."""
        sink = cls(process, manifest)
        process.send({"op": "reopen", "path": str(path.resolve()),
                      "named": [list(pair) for pair in redactor.named]})
        process.request({"op": "ready"})
        return sink

    @property
    def accepting(self) -> bool:
        return self._open

    def open_call(self, ident: str, event_type: EventType, lane: str, request: JSONValue,
                  meta: dict[str, Any], dispatched_by: tuple[str, ...],
                  body_json: bytes | None = None) -> tuple[Edge, ...]:
        # A failure the writer reported is raised here, before the call runs (its frame
        # waits: see emit); emit does not poll again, a system call per boundary call less.
        self.process.check()
        self._calls[ident] = request  # what the event's request is compared with (emit)
        if body_json is not None:  # the body as the program sent it, not serialised again:
            # the writer parses it into the same data, keys in the same order
            request = {**request, "body": orjson.Fragment(body_json)}
        self._held.append({"op": "call", "id": ident, "type": event_type.value, "lane": lane,
                           "request": request, "meta": meta, "dispatched_by": dispatched_by})
        return ()  # derived in the writer process; the event takes them there

    def emit(self, event: Event) -> None:
        """Ship *event* with the calls held since the last write, in one write: a call's
        frame need not reach the writer before an event does (nothing is written for it
        alone), and one write per boundary call halves the system calls and the writer's
        wake-ups. The event of the last held call travels inside that call's frame (the
        commonest case: a call's own event follows it), else in a frame of its own."""
        record = event.to_json()
        held, self._held = self._held, []
        request = self._calls.pop(event.id, _NOT_A_CALL)
        frames = held
        if request is not _NOT_A_CALL:  # it takes the parents its call gets
            del record["parents"]
            if event.request is request:
                del record["request"]  # not serialised twice
            if held and held[-1]["id"] == event.id:
                held[-1]["event"] = record
            else:
                record["from_call"] = True
                frames = [*held, {"op": "event", "event": record}]
        else:
            frames = [*held, {"op": "event", "event": record}]
        self.process.send(*frames, poll=False)

    def adopt(self, event: Event) -> None:
        raise SessionError("replay writes its child bundle inline, never through a writer "
                           "process")

    # -- the end of the recording ----------------------------------------------------------
    def check(self) -> None:
        self.process.check()

    def complete(self, *, exit_code: int | None, value: JSONValue, status: str,
                 error: str | None = None) -> None:
        self._open = False
        held, self._held = self._held, []
        self.process.request({"op": "complete", "manifest": self.manifest,
                              "exit_code": exit_code, "value": value, "status": status,
                              "error": error}, *held)

    def close(self) -> None:
        self._open = False
        held, self._held = self._held, []
        self.process.request({"op": "close"}, *held)

    def abort(self) -> None:
        self._open = False
        with contextlib.suppress(BundleWriteError):  # a dead writer holds nothing open
            self.process.request({"op": "abort"})


def spawn_or_warn() -> WriterProcess | None:
    """The writer process, or None (with a warning) when it cannot be started: the
    recording is then written inline, which gives the same bundle."""
    try:
        return writer_process()
    except (OSError, BundleWriteError) as exc:
        warnings.warn(
            f"symtrace: cannot start the writer process ({exc}); recording inline in the "
            "program's process instead (the bundle is the same)",
            RuntimeWarning, stacklevel=3,
        )
        return None
