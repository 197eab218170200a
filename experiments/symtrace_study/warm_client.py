"""The warm launcher's client: `python -S warm_client.py python -m MODULE ARGS...`.

Started by `symtrace record/replay` in place of the MAS program. It imports nothing beyond the
standard library (`-S`: not even site, so symtrace's bootstrap does not instrument *this*
process), hands its argv, cwd, environment and stdin/stdout/stderr (as file descriptors) to the
fork server of MODULE in $SYMTRACE_WARM_DIR, and exits with the code of the forked attempt.
When no server answers, or the server declines (another hash seed, unsafe to fork), it
becomes the program itself (`exec`), exactly as without the warm backend: a bundle recorded
through the client replays anywhere.
"""

import json
import os
import socket
import struct
import sys

ENV_DIR = "SYMTRACE_WARM_DIR"
EXIT_INFRASTRUCTURE = 75  # the server died while the forked attempt ran: the harness failed


def _warm(argv: list[str]) -> int | None:
    folder = os.environ.get(ENV_DIR)
    if not folder or len(argv) < 3 or argv[1] != "-m":
        return None
    path = os.path.join(folder, argv[2] + ".sock")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(path)
    except OSError:
        sock.close()
        return None
    with sock:
        payload = json.dumps({"argv": argv, "cwd": os.getcwd(), "env": dict(os.environ)}).encode()
        socket.send_fds(sock, [struct.pack("!I", len(payload))], [0, 1, 2])
        sock.sendall(payload)
        stream = sock.makefile("rb")
        first = stream.readline()
        if not first:
            return None  # the server died before deciding: nothing ran, run it ourselves
        answer = json.loads(first)
        if "cold" in answer:
            return None
        if "exit" in answer:
            return int(answer["exit"])
        last = stream.readline()  # {"forked": pid} came first; now the exit code
        if not last:
            sys.stderr.write("symtrace warm client: the fork server died during the attempt\n")
            return EXIT_INFRASTRUCTURE  # never run it a second time into the same bundle
    return int(json.loads(last)["exit"])


def main() -> None:
    argv = sys.argv[1:]
    if not argv:
        sys.stderr.write("usage: python -S warm_client.py python -m MODULE ARGS...\n")
        os._exit(2)
    code = _warm(argv)
    if code is not None:
        os._exit(code)
    program = sys.executable if argv[0] in ("python", "python3") else argv[0]
    os.execv(program, [program, *argv[1:]])


if __name__ == "__main__":
    main()
