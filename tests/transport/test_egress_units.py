"""The egress guard's pieces: host aliases, --allow-host parsing, symmetric socket patches."""

from __future__ import annotations

import socket
import ssl

import pytest

from symtrace.boundaries.egress import EgressGuard, EgressRecorder, HostPort, canonical_host
from tests._support import python_ok


@pytest.mark.parametrize("alias", [
    "localhost", "LOCALHOST", "127.0.0.1", "127.0.0.2", "127.255.0.1", "0.0.0.0", "::1", "::",
    "::ffff:127.0.0.1", "[::1]",
])
def test_every_name_of_this_machine_is_one_host(alias):
    assert canonical_host(alias) == "localhost"


@pytest.mark.parametrize(("name", "expected"), [
    ("Example.COM", "example.com"), ("10.0.0.7", "10.0.0.7"), ("::ffff:10.0.0.7", "10.0.0.7"),
])
def test_other_hosts_keep_their_identity(name, expected):
    assert canonical_host(name) == expected


@pytest.mark.parametrize(("text", "host", "port"), [
    ("localhost", "localhost", None), ("127.0.0.1:5432", "localhost", 5432),
    ("[::1]:6379", "localhost", 6379), ("db.internal:5432", "db.internal", 5432),
    ("::1", "localhost", None),
])
def test_allow_host_parses_host_and_optional_port(text, host, port):
    assert HostPort.parse(text) == HostPort(host, port)


@pytest.mark.parametrize("bad", ["", ":80", "host:0", "host:99999", "host:http"])
def test_a_bad_allow_host_is_refused(bad):
    with pytest.raises(ValueError, match="allow-host"):
        HostPort.parse(bad)


def test_allowing_a_port_allows_every_alias_of_that_host():
    rule = HostPort.parse("localhost:5432")
    assert rule.allows("127.0.0.1", 5432) and rule.allows("::1", 5432)
    assert not rule.allows("127.0.0.1", 5433) and not rule.allows("10.0.0.1", 5432)


def _socket_methods():
    names = ("connect", "connect_ex", "sendto", "send", "sendall")
    return {(cls, n): cls.__dict__.get(n) for cls in (socket.socket, ssl.SSLSocket) for n in names}


@pytest.mark.parametrize("make", [
    lambda: EgressGuard([], [], lambda attempt: ConnectionRefusedError(attempt["connect"])),
    EgressRecorder,
], ids=["guard", "recorder"])
def test_install_and_uninstall_are_symmetric(make):
    before = _socket_methods()
    watch = make()
    watch.install()
    assert _socket_methods() != before
    with pytest.raises(RuntimeError):
        watch.install()
    watch.uninstall()
    assert _socket_methods() == before


def test_the_recorder_patches_tls_sends_when_ssl_is_first_imported():
    """ssl is not imported for a program without TLS (fast start); its sends are watched from
    the moment it is, and restored on uninstall."""
    code = (
        "import sys\n"
        "from symtrace.boundaries.egress import EgressRecorder\n"
        "assert 'ssl' not in sys.modules\n"
        "recorder = EgressRecorder()\n"
        "recorder.install()\n"
        "assert 'ssl' not in sys.modules\n"
        "import ssl\n"
        "assert 'send' in vars(ssl.SSLSocket) and ssl.SSLSocket.send.__name__ == 'send'\n"
        "assert ssl.SSLSocket.sendall.__qualname__.startswith('_SocketWatch._send')\n"
        "recorder.uninstall()\n"
        "assert ssl.SSLSocket.sendall.__qualname__ == 'SSLSocket.sendall'\n"
        "recorder.install()  # ssl imported now: patched at once\n"
        "assert ssl.SSLSocket.sendall.__qualname__.startswith('_SocketWatch._send')\n"
    )
    python_ok(code)


def test_the_guard_refuses_with_host_port_and_stack_and_lets_unix_sockets_pass():
    attempts = []

    def refuse(attempt):
        attempts.append(attempt)
        return ConnectionRefusedError(attempt["connect"])

    guard = EgressGuard([HostPort.parse("localhost:1")], [("127.0.0.1", 9)], refuse)
    guard.install()
    try:
        with socket.socket() as s, pytest.raises(ConnectionRefusedError, match=r"0\.0\.0\.0:9"):
            s.connect(("0.0.0.0", 9))
        left, right = socket.socketpair()  # AF_UNIX: not network egress
        left.close()
        right.close()
    finally:
        guard.uninstall()
    [attempt] = attempts
    assert attempt["alias_of"] == "127.0.0.1:9" and attempt["recorded_endpoint"]
    assert any("test_egress_units.py" in frame for frame in attempt["stack"])
