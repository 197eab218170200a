"""The warm launcher's fork server: `python -m symtrace_study.warm_server --module M --socket S`.

It imports symtrace (its child session and adapter registry) and the MAS module M — and so the
framework M imports — once, then serves attempts: per connection it receives a client's argv,
cwd, environment and stdin/stdout/stderr, forks, and the fork runs M as `__main__` under
symtrace exactly as the bootstrap would (start the session, run the program, run the atexit
hand-back), then leaves with `os._exit`: no interpreter teardown. The exit code goes back to
the client.

Fork safety: the server holds no live state at a fork — it refuses to serve (the client then
runs the program cold) when importing M left another thread running, an event loop, or a
socket other than its own. Hash randomisation is fixed when an interpreter starts, so the
server runs with PYTHONHASHSEED=0 and declines a request that asks for another seed.
"""

from __future__ import annotations

import argparse
import asyncio
import atexit
import importlib
import json
import os
import runpy
import socket
import stat
import struct
import sys
import threading
import traceback
from pathlib import Path
from typing import Any


def unsafe_state(listener: socket.socket) -> str | None:
    """Why forking now would copy live state, or None."""
    threads = [t.name for t in threading.enumerate() if t is not threading.main_thread()]
    if threads:
        return f"threads running after the imports: {threads}"
    if asyncio._get_running_loop() is not None:
        return "an event loop is running"
    sockets = []
    for name in os.listdir("/proc/self/fd") if os.path.isdir("/proc/self/fd") else ():
        fd = int(name)
        try:
            if stat.S_ISSOCK(os.fstat(fd).st_mode) and fd != listener.fileno():
                sockets.append(fd)
        except OSError:
            continue
    if sockets:
        return f"open sockets after the imports: fds {sockets}"
    return None


# Imported by most MAS programs only inside their functions (after argument checks), so
# importing the module alone would leave them cold. Missing ones are skipped.
COMMON = ("openai", "openai.resources", "httpx", "symtrace.diagnosis")


def preload(module: str) -> None:
    import symtrace.process.child  # noqa: F401 -- the session the fork starts
    from symtrace.frameworks import registry

    registry.resolve(None)  # reads the entry points once; arms nothing
    for name in COMMON:
        try:
            importlib.import_module(name)
        except ImportError:
            continue
    importlib.import_module(module)


def run_attempt(module: str, request: dict[str, Any]) -> int:
    """In the fork: become the program the client stands for; return its exit code."""
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    sys.argv = ["-m", *request["argv"][3:]]
    if os.environ.get("SYMTRACE_CHILD"):  # what symtrace's sitecustomize bootstrap does
        try:
            from symtrace.process import child

            child.start()
        except BaseException as exc:  # noqa: BLE001 -- never run uninstrumented
            sys.stderr.write(f"symtrace: cannot instrument this process: {exc}\n")
            sys.stderr.flush()
            return int(os.environ.get("SYMTRACE_BOOT_FAIL_EXIT", "94"))
    code = 0
    sys.modules.pop(module, None)  # run it as __main__ afresh (its imports stay warm)
    try:
        runpy.run_module(module, run_name="__main__", alter_sys=True)
    except SystemExit as exc:
        code = _exit_code(exc.code)
    except BaseException:  # noqa: BLE001 -- what the interpreter prints for an uncaught one
        traceback.print_exc()
        code = 1
    try:  # interpreter shutdown, in order: join threads, then atexit (symtrace's hand-back)
        threading._shutdown()  # type: ignore[attr-defined]
    except BaseException:  # noqa: BLE001
        traceback.print_exc()
    atexit._run_exitfuncs()
    return code


def _exit_code(value: Any) -> int:
    if value is None:
        return 0
    if isinstance(value, int):
        return value & 0xFF
    sys.stderr.write(f"{value}\n")
    return 1


def _receive(conn: socket.socket) -> tuple[dict[str, Any], list[int]]:
    head, fds, _, _ = socket.recv_fds(conn, 4, 3)
    while len(head) < 4:
        more = conn.recv(4 - len(head))
        if not more:
            raise ConnectionError("client closed before its request")
        head += more
    size = struct.unpack("!I", head)[0]
    data = b""
    while len(data) < size:
        chunk = conn.recv(size - len(data))
        if not chunk:
            raise ConnectionError("client closed mid-request")
        data += chunk
    return json.loads(data), list(fds)


def serve(module: str, path: Path, ready: Path) -> None:
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    listener.listen(4)
    preload(module)
    refusal = unsafe_state(listener)
    if refusal:
        sys.stderr.write(f"warm_server {module}: not forking ({refusal}); clients run cold\n")
    hash_seed = os.environ.get("PYTHONHASHSEED")
    tmp = ready.with_name(ready.name + ".tmp")
    tmp.write_text(json.dumps({"pid": os.getpid(), "refusal": refusal}))
    os.replace(tmp, ready)  # the launcher never reads half of it
    while True:
        conn, _ = listener.accept()
        with conn:
            try:
                request, fds = _receive(conn)
            except (OSError, ValueError) as exc:
                sys.stderr.write(f"warm_server: bad request: {exc}\n")
                continue
            why = refusal
            if why is None and request["env"].get("PYTHONHASHSEED") != hash_seed:
                why = "the attempt asks for another PYTHONHASHSEED"
            if why is not None:
                for fd in fds:
                    os.close(fd)
                conn.sendall(json.dumps({"cold": why}).encode() + b"\n")
                continue
            sys.stdout.flush()
            sys.stderr.flush()
            pid = os.fork()
            if pid == 0:  # the attempt
                code = 1
                try:
                    listener.close()
                    conn.close()
                    for target, fd in enumerate(fds):
                        os.dup2(fd, target)
                        os.close(fd)
                    code = run_attempt(module, request)
                finally:
                    for stream in (sys.stdout, sys.stderr):
                        try:
                            stream.flush()
                        except BaseException:  # noqa: BLE001, S110 -- leaving regardless
                            pass
                    os._exit(code)
            for fd in fds:
                os.close(fd)
            try:  # the attempt has started: from now on the client must not run it again
                conn.sendall(json.dumps({"forked": pid}).encode() + b"\n")
            except OSError:
                pass
            _, status = os.waitpid(pid, 0)
            code = os.waitstatus_to_exitcode(status)
            code = 128 - code if code < 0 else code  # killed by signal N: 128 + N, as a shell
            try:
                conn.sendall(json.dumps({"exit": code}).encode() + b"\n")
            except OSError:
                pass  # the client is gone


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m symtrace_study.warm_server")
    parser.add_argument("--module", required=True)
    parser.add_argument("--socket", type=Path, required=True)
    parser.add_argument("--ready-file", type=Path, required=True)
    args = parser.parse_args(argv)
    serve(args.module, args.socket, args.ready_file)


if __name__ == "__main__":
    main()
