"""Egress around the patched socket methods, seen through CPython's audit events: listed while
recording (raw `_socket`, `sendmsg`, DNS, subprocesses), refused in strict replay (raw connect,
sendmsg). symtrace/boundaries/egress.py."""

from __future__ import annotations

import _socket
import socket
import subprocess
import sys

import pytest

from symtrace.boundaries.egress import (
    DNS,
    RAW_SOCKET,
    SENDMSG,
    SUBPROCESS,
    EgressGuard,
    EgressRecorder,
    audited_egress,
)


class Blocked(ConnectionRefusedError):
    pass


def _listener() -> tuple[socket.socket, int]:
    server = socket.create_server(("127.0.0.1", 0))
    return server, server.getsockname()[1]


def test_recording_lists_raw_socket_sendmsg_dns_and_subprocesses():
    server, port = _listener()
    recorder = EgressRecorder()
    recorder.install()
    try:
        raw = _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM)
        _socket.socket.connect(raw, ("127.0.0.1", port))
        raw.close()
        udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        udp.sendmsg([b"x"], [], 0, ("127.0.0.1", port))
        udp.close()
        with pytest.raises(OSError):
            socket.getaddrinfo("symtrace-test.invalid", 443)
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        plain = socket.create_connection(("127.0.0.1", port))  # the patched path: once
        plain.close()
    finally:
        recorder.uninstall()
        server.close()
    kinds = {(e["kind"], e["host"], e["port"]): e["count"] for e in recorder.to_json()}
    assert kinds[(RAW_SOCKET, "127.0.0.1", port)] == 1
    assert kinds[(SENDMSG, "127.0.0.1", port)] == 1
    assert kinds[(DNS, "symtrace-test.invalid", 443)] == 1
    assert kinds[(SUBPROCESS, sys.executable, 0)] == 1
    assert kinds[("connect", "127.0.0.1", port)] == 1  # not counted again as raw
    assert recorder.to_json()[0]["kind"] == "connect"  # connections first, as before


def test_after_uninstall_nothing_is_listed():
    recorder = EgressRecorder()
    recorder.install()
    recorder.uninstall()
    with pytest.raises(OSError):
        socket.getaddrinfo("symtrace-test.invalid", 80)
    assert recorder.to_json() == []


def test_strict_replay_refuses_raw_connect_and_sendmsg():
    server, port = _listener()
    attempts: list[dict] = []

    def block(attempt: dict) -> BaseException:
        attempts.append(attempt)
        return Blocked(attempt["connect"])

    guard = EgressGuard((), (), block)
    guard.install()
    try:
        raw = _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM)
        with pytest.raises(Blocked):
            _socket.socket.connect(raw, ("127.0.0.1", port))
        raw.close()
        udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        with pytest.raises(Blocked):
            udp.sendmsg([b"x"], [], 0, ("127.0.0.1", port))
        udp.close()
        unix_a, unix_b = socket.socketpair()  # local IPC is not egress
        unix_a.sendmsg([b"ok"])
        assert unix_b.recv(2) == b"ok"
        unix_a.close()
        unix_b.close()
    finally:
        guard.uninstall()
        server.close()
    assert [a["connect"] for a in attempts] == [f"127.0.0.1:{port}"] * 2


@pytest.mark.parametrize(("event", "args", "expected"), [
    ("socket.getaddrinfo", ("127.0.0.1", 80, 0, 0, 0), None),  # numeric: no lookup leaves
    ("socket.getaddrinfo", ("localhost", 80, 0, 0, 0), None),
    ("socket.gethostbyname", ("example.org",), (DNS, "example.org", 0)),
    ("os.system", ("curl http://x",), (SUBPROCESS, "curl", 0)),
    ("subprocess.Popen", (None, ["curl", "-s"], None, None), (SUBPROCESS, "curl", 0)),
    ("open", ("/etc/passwd", "r", 0), None),
])
def test_audited_egress_reads_each_event(event, args, expected):
    assert audited_egress(event, args) == expected
