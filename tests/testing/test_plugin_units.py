"""Pure parts of the pytest plugin: the mode table, CI detection, bundle names, the socket
block."""

from __future__ import annotations

import errno
import socket
from pathlib import Path

import pytest

from symtrace.errors import ReplayError
from symtrace.testing.locations import bundle_path, module_digest, safe_name
from symtrace.testing.modes import Action, RecordMode, decide, default_mode, in_ci, parse_mode
from symtrace.testing.netblock import NetworkBlocked, blocked_network


class TestModes:
    @pytest.mark.parametrize(
        ("mode", "exists", "changed", "action"),
        [
            (RecordMode.NONE, False, False, Action.MISSING),
            (RecordMode.NONE, True, True, Action.REPLAY),
            (RecordMode.ONCE, False, False, Action.RECORD),
            (RecordMode.ONCE, True, True, Action.REPLAY),
            (RecordMode.NEW, False, False, Action.RECORD),
            (RecordMode.NEW, True, False, Action.REPLAY),
            (RecordMode.NEW, True, True, Action.RECORD),
            (RecordMode.REWRITE, True, False, Action.RECORD),
            (RecordMode.REWRITE, False, False, Action.RECORD),
        ],
    )
    def test_decide_follows_the_documented_table(self, mode, exists, changed, action):
        assert decide(mode, exists=exists, changed=changed) is action

    @pytest.mark.parametrize(("value", "ci"), [
        (None, False), ("", False), ("0", False), ("false", False), ("No", False),
        ("true", True), ("1", True), ("yes", True), ("github", True),
    ])
    def test_ci_detection(self, value, ci):
        env = {} if value is None else {"CI": value}
        assert in_ci(env) is ci
        assert default_mode(env) is (RecordMode.NONE if ci else RecordMode.ONCE)

    def test_parse_mode_normalises_and_rejects_misspellings(self):
        assert parse_mode(" Rewrite ", source="x") is RecordMode.REWRITE
        with pytest.raises(ValueError, match=r"x: unknown symtrace mode 'all' \(valid: none"):
            parse_mode("all", source="x")


class TestLocations:
    def test_safe_names_keep_plain_names_and_disambiguate_altered_ones(self):
        assert safe_name("test_x[1-a]") == "test_x[1-a]"
        a, b = safe_name("test_x[a/b]"), safe_name("test_x[a_b]")
        assert a.startswith("test_x[a_b]-") and b == "test_x[a_b]" and a != b
        assert not safe_name("../x").startswith(".")

    def test_paths(self, tmp_path: Path):
        module = tmp_path / "tests" / "unit" / "test_m.py"
        assert bundle_path(module, tmp_path, None, class_name=None, test_name="test_a") == (
            tmp_path / "tests" / "unit" / "bundles" / "test_m" / "test_a"
        )
        assert bundle_path(module, tmp_path, tmp_path / "b", class_name="TestC",
                           test_name="test_a") == tmp_path / "b/tests/unit/test_m/TestC/test_a"
        assert bundle_path(module, tmp_path, None, class_name=None, test_name="t",
                           explicit=str(tmp_path / "abs")) == tmp_path / "abs"
        for bad in ("", "a/../../b", 3):
            with pytest.raises(ValueError, match="bundle="):
                bundle_path(module, tmp_path, None, class_name=None, test_name="t", explicit=bad)

    def test_module_digest_changes_with_the_module(self, tmp_path: Path):
        module = tmp_path / "test_m.py"
        module.write_text("A = 1\n")
        first = module_digest(module)
        module.write_text("A = 2\n")
        assert module_digest(module) != first
        assert module_digest(tmp_path / "missing.py") is None


class TestNetworkBlock:
    def test_blocks_inet_records_attempts_and_restores(self):
        original = socket.socket.connect
        with blocked_network() as attempts:
            with socket.socket() as sock, pytest.raises(NetworkBlocked) as caught:
                sock.connect(("10.255.255.1", 9))
            assert isinstance(caught.value, ConnectionRefusedError | ReplayError)
            with socket.socket() as sock:
                assert sock.connect_ex(("127.0.0.1", 9)) == errno.ECONNREFUSED
        assert attempts == ["10.255.255.1:9", "127.0.0.1:9"]
        assert socket.socket.connect is original

    def test_unix_sockets_and_allowed_hosts_pass(self, tmp_path: Path):
        server = socket.create_server(("127.0.0.1", 0))
        with blocked_network(["localhost"]) as attempts:
            socket.create_connection(server.getsockname(), timeout=2).close()
            left, right = socket.socketpair()
            left.close()
            right.close()
        server.close()
        assert attempts == []

    def test_is_not_reentrant(self):
        with (blocked_network(), pytest.raises(RuntimeError, match="already active"),
              blocked_network()):
            pass
