"""Kernel-enforced network isolation of a strict replay (Linux network namespaces).

A strict replay serves every boundary call from the bundle and needs no network. The
Python-level guard (symtrace.boundaries.egress) refuses `socket.connect`/`connect_ex`/`sendto`
of Python sockets and names the opener, but a C extension, the raw `_socket` module,
`sendmsg`, DNS lookups and subprocesses (`curl`, `python -c ...`) go below it. So where Linux
allows it the replayed program starts in a private network namespace that holds only its own
loopback (unshare(2): `CLONE_NEWNET`, inside a new user namespace unless symtrace runs with
the capability to create one directly, the same as `unshare -rn`): nothing it or its
subprocesses open reaches another host, nor a service listening on this machine.

Not isolated, and said at run time: a selective replay (its live suffix needs the user's
endpoint), a strict replay with `--allow-host` (the program's own local services live in the
host's namespace; forwarding into the private one would need a user-space network stack, so
the honest simple option is the Python-level guard alone, named as such), and systems where the
namespace cannot be created (not Linux, unprivileged user namespaces disabled).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import fcntl
import functools
import os
import socket
import struct
import sys
from collections.abc import Sequence
from dataclasses import dataclass

CLONE_NEWNET = 0x40000000
CLONE_NEWUSER = 0x10000000
_SIOCGIFFLAGS = 0x8913
_SIOCSIFFLAGS = 0x8914
_IFF_UP = 0x1
PYTHON_LEVEL = (
    "the egress guard is Python-level here: it refuses socket.connect, connect_ex and sendto "
    "of Python sockets; a C extension, the raw _socket module, sendmsg, DNS lookups and "
    "subprocesses are not covered"
)


@dataclass(frozen=True)
class Isolation:
    isolate: bool  # start the program in a private network namespace
    note: str | None  # what the user is told when it is not


def choose_isolation(*, strict: bool, allow_hosts: Sequence[str]) -> Isolation:
    """How a replay's program is kept off the network (module doc)."""
    if not strict:
        return Isolation(False, None)  # the live suffix goes to the user's endpoint
    if allow_hosts:
        return Isolation(False, f"--allow-host: not network-isolated; {PYTHON_LEVEL}")
    if not available():
        return Isolation(False, f"no private network namespace on this system; {PYTHON_LEVEL}")
    return Isolation(True, None)


@functools.cache
def available() -> bool:
    """Whether this process can start a child in a private network namespace (probed once
    in a forked child that only tries, then exits)."""
    if not sys.platform.startswith("linux") or _libc() is None:
        return False
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child exits at once
        try:
            enter_private_network()
            os._exit(0)
        except BaseException:  # noqa: BLE001 - any failure means: not available
            os._exit(1)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status) == 0


def enter_private_network() -> None:
    """Move this (single-threaded, freshly forked) process into a new network namespace with
    its loopback up (a `preexec_fn`): OSError if the kernel refuses."""
    libc = _libc()
    if libc is None:
        raise OSError("unshare(2) is not available")
    uid, gid = os.getuid(), os.getgid()
    if os.geteuid() != 0 or libc.unshare(CLONE_NEWNET) != 0:
        if libc.unshare(CLONE_NEWUSER | CLONE_NEWNET) != 0:
            errno = ctypes.get_errno()
            raise OSError(errno, f"unshare: {os.strerror(errno)}")
        _write("/proc/self/setgroups", "deny")
        _write("/proc/self/uid_map", f"{uid} {uid} 1")
        _write("/proc/self/gid_map", f"{gid} {gid} 1")
    _loopback_up()


def _loopback_up() -> None:
    """Programs that talk to themselves over 127.0.0.1 keep working inside the namespace."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        request = struct.pack("16sH22x", b"lo", 0)
        flags = struct.unpack("16sH22x", fcntl.ioctl(sock, _SIOCGIFFLAGS, request))[1]
        fcntl.ioctl(sock, _SIOCSIFFLAGS, struct.pack("16sH22x", b"lo", flags | _IFF_UP))


def _write(path: str, text: str) -> None:
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


@functools.cache
def _libc() -> ctypes.CDLL | None:
    name = ctypes.util.find_library("c") or "libc.so.6"
    try:
        libc = ctypes.CDLL(name, use_errno=True)
    except OSError:
        return None
    return libc if hasattr(libc, "unshare") else None
