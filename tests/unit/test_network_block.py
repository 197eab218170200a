"""The root conftest blocks every non-loopback connection of the test process."""

from __future__ import annotations

import asyncio
import errno
import socket

import pytest

REMOTE = ("203.0.113.7", 443)  # TEST-NET-3: never a real host


def test_a_connection_beyond_loopback_is_refused():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        with pytest.raises(ConnectionRefusedError, match="tests reach only loopback"):
            sock.connect(REMOTE)
        assert sock.connect_ex(REMOTE) == errno.ECONNREFUSED


def test_create_connection_and_asyncio_are_refused_too():
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(REMOTE, timeout=1)

    async def reach() -> None:
        await asyncio.open_connection(*REMOTE)

    with pytest.raises(OSError, match="loopback"):
        asyncio.run(reach())


def test_loopback_connections_pass():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        with socket.create_connection(server.getsockname(), timeout=5) as client:
            peer, _ = server.accept()
            with peer:
                client.sendall(b"ping")
                assert peer.recv(4) == b"ping"
