"""Nothing goes around the boundary silently: the socket-level guard in strict replay, and
unrecorded egress / LLM side channels at record time. Real child processes, real sockets."""

from __future__ import annotations

import socketserver
import threading
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from symtrace.bundle import load_bundle
from symtrace.stub import StubLLM
from tests.transport.test_programs_e2e import endpoint_env, symtrace

PROGRAM = str(Path(__file__).parent / "programs" / "egress_program.py")
pytestmark = pytest.mark.slow


class _Hello(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        self.request.sendall(b"hello from the service\n")


@pytest.fixture(scope="module")
def service() -> Iterator[int]:
    """A program's own local TCP service on 127.0.0.1 (say, a database)."""
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), _Hello)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def stub() -> Iterator[StubLLM]:
    with StubLLM(seed=3) as server:
        yield server


def record(tmp_path: Path, stub, *args: str, name: str = "run"):
    bundle = tmp_path / name
    done = symtrace("record", "-o", str(bundle), "--", "python", PROGRAM, *args,
                    env=endpoint_env(stub))
    return bundle, done


@pytest.fixture(scope="module")
def with_service(tmp_path_factory, stub, service):
    """One recording of the program talking to its local service (shared: replays are
    read-only)."""
    return record(tmp_path_factory.mktemp("service"), stub, "socket", "127.0.0.1", str(service))


@pytest.fixture(scope="module")
def plain(tmp_path_factory, stub):
    """One recording of the program's LLM call alone."""
    return record(tmp_path_factory.mktemp("plain"), stub, "none")


def test_recording_lists_unrecorded_egress_and_the_hosts_it_talked_to(with_service, stub,
                                                                        service):
    bundle, done = with_service
    assert done.returncode == 0, done.stderr[-3000:]
    assert "SERVICE: hello from the service" in done.stdout
    network = load_bundle(bundle).config["network"]
    assert f"127.0.0.1:{stub.port}" in network["endpoints"]
    [egress] = network["unrecorded_egress"]
    assert (egress["host"], egress["port"], egress["count"]) == ("127.0.0.1", service, 1)
    assert any("egress_program.py" in frame for frame in egress["stack"])
    assert "unrecorded" in done.stderr  # the CLI says so too


def test_strict_replay_blocks_the_service_and_names_host_port_and_stack(
        tmp_path, stub, service, with_service):
    bundle, done = with_service
    assert done.returncode == 0, done.stderr[-3000:]
    report = tmp_path / "report.json"
    replay = symtrace("replay", str(bundle), "--report-json", str(report),
                      env=endpoint_env(stub))
    assert replay.returncode == 90, replay.stderr[-3000:]
    assert "SERVICE: refused" in replay.stdout  # the program swallowed it; replay still fails
    found = orjson.loads(report.read_bytes())["report"]
    assert found["kind"] == "egress_blocked" and found["code"] == "SYM-R106"
    assert found["actual"]["connect"] == f"127.0.0.1:{service}"
    assert any("egress_program.py" in frame for frame in found["actual"]["stack"])
    assert f"127.0.0.1:{service}" in replay.stderr


@pytest.mark.parametrize("allow", ["127.0.0.1:{port}", "localhost:{port}", "localhost"])
def test_allow_host_lets_a_local_service_through(stub, service, allow, with_service):
    bundle, done = with_service
    replay = symtrace("replay", str(bundle), "--allow-host", allow.format(port=service),
                      env=endpoint_env(stub))
    assert replay.returncode == 0, replay.stderr[-3000:]
    assert replay.stdout == done.stdout


def test_allow_host_for_another_port_does_not(stub, service, with_service):
    bundle, _ = with_service
    replay = symtrace("replay", str(bundle), "--allow-host", f"127.0.0.1:{service + 1}",
                      env=endpoint_env(stub))
    assert replay.returncode == 90


@pytest.mark.parametrize("alias", ["localhost", "0.0.0.0", "127.0.0.2", "::ffff:127.0.0.1"])
def test_aliases_of_the_recorded_endpoint_are_blocked(tmp_path, stub, alias, plain):
    """The replayed program reaches the recorded LLM endpoint by another name of this host."""
    bundle, done = plain
    assert done.returncode == 0, done.stderr[-3000:]
    served = stub.served
    report = tmp_path / "report.json"
    replay = symtrace("replay", str(bundle), "--report-json", str(report), "--",
                      "python", PROGRAM, "socket", alias, str(stub.port), env=endpoint_env(stub))
    assert replay.returncode == 90, replay.stderr[-3000:]
    assert stub.served == served
    found = orjson.loads(report.read_bytes())["report"]
    assert found["kind"] == "egress_blocked"
    assert found["actual"]["alias_of"] == f"127.0.0.1:{stub.port}"


def test_an_llm_request_around_the_seams_fails_the_recording(tmp_path, stub):
    served = stub.served
    bundle, done = record(tmp_path, stub, "urllib")
    assert done.returncode == 94, done.stderr[-3000:]
    assert "urllib" in done.stderr and "POST /v1/chat/completions" in done.stderr
    assert not (bundle / "manifest.json").exists(), "no bundle that would replay live"
    assert stub.served == served + 1, "the side-channel request never left the process"
