"""`symtrace export` end to end: OTLP JSON files, an OTLP/HTTP receiver, every typed error.

No OpenTelemetry Collector binary can be installed here (no Go toolchain, no downloads), and
PyPI has no small collector; the receiver below is a minimal OTLP/HTTP endpoint on 127.0.0.1
that decodes `ExportTraceServiceRequest` with opentelemetry-proto, as a collector does, and
answers with an `ExportTraceServiceResponse`.
"""

from __future__ import annotations

import socket
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import orjson
import pytest

pytest.importorskip("opentelemetry.sdk", reason="needs the otel extra")

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from symtrace.bundle import load_bundle
from symtrace.cli import main
from symtrace.cli.export import start_ns

BUNDLES = Path(__file__).resolve().parents[2] / "bundles"
MAGENTIC = str(BUNDLES / "autogen_agentchat-magentic_one")
CREW = str(BUNDLES / "crewai-sequential")


@dataclass
class Receiver:
    url: str
    requests: list[ExportTraceServiceRequest] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    status: int = 200
    reject: int = 0


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    state = Receiver("")

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            if self.path != "/v1/traces" or self.headers["Content-Type"] != \
                    "application/x-protobuf":
                self.send_error(404 if self.path != "/v1/traces" else 415)
                return
            request = ExportTraceServiceRequest()
            request.ParseFromString(body)
            state.requests.append(request)
            state.headers.append(dict(self.headers))
            answer = ExportTraceServiceResponse()
            if state.reject:
                answer.partial_success.rejected_spans = state.reject
                answer.partial_success.error_message = "span too old"
            payload = answer.SerializeToString()
            self.send_response(state.status)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    state.url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()


def spans_of(request: ExportTraceServiceRequest) -> list:
    return [s for r in request.resource_spans for ss in r.scope_spans for s in ss.spans]


class TestCollector:
    def test_sends_every_span_of_a_real_recording(self, receiver: Receiver) -> None:
        assert main(["export", MAGENTIC, "--otlp", receiver.url,
                     "--header", "Authorization=Bearer t0"]) == 0
        (request,) = receiver.requests
        bundle = load_bundle(MAGENTIC)
        spans = spans_of(request)
        event_ids = sorted(a.value.string_value for s in spans for a in s.attributes
                           if a.key == "symtrace.event_id")
        assert event_ids == sorted(e.id for e in bundle.events)
        assert len({s.trace_id for s in spans}) == 1
        names = {s.name for s in spans}
        assert "invoke_agent MagenticOneOrchestrator" in names
        assert any(n.startswith("chat ") for n in names)
        assert any(n.startswith("execute_tool ") for n in names)
        assert receiver.headers[0]["Authorization"] == "Bearer t0"

    def test_file_and_collector_carry_the_same_spans(
        self, receiver: Receiver, tmp_path: Path
    ) -> None:
        out = tmp_path / "trace.json"
        assert main(["export", CREW, "--otel", str(out)]) == 0
        assert main(["export", CREW, "--otlp", receiver.url + "/v1/traces"]) == 0
        sent = spans_of(receiver.requests[0])
        written = orjson.loads(out.read_bytes())["resourceSpans"][0]["scopeSpans"][0]["spans"]
        assert [s["spanId"] for s in written] == [s.span_id.hex() for s in sent]
        assert [s["name"] for s in written] == [s.name for s in sent]

    def test_unreachable_collector_is_a_clear_error(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        with socket.socket() as sock:  # a port nobody listens on
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        code = main(["export", CREW, "--otlp", f"http://127.0.0.1:{port}", "--timeout", "2"])
        assert code == 96
        assert "unreachable" in capsys.readouterr().err
        assert list(tmp_path.iterdir()) == []

    def test_collector_errors_and_rejections_fail(
        self, receiver: Receiver, capsys: pytest.CaptureFixture[str]
    ) -> None:
        receiver.status = 503
        assert main(["export", CREW, "--otlp", receiver.url]) == 96
        assert "HTTP 503" in capsys.readouterr().err
        receiver.status, receiver.reject = 200, 2
        assert main(["export", CREW, "--otlp", receiver.url]) == 96
        assert "rejected 2 of 19 spans: span too old" in capsys.readouterr().err


class TestFileAndErrors:
    def test_writes_one_otlp_json_request_deterministically(self, tmp_path: Path) -> None:
        first, second = tmp_path / "a.json", tmp_path / "b.json"
        assert main(["export", MAGENTIC, "--otel", str(first)]) == 0
        assert main(["export", MAGENTIC, "--otel", str(second)]) == 0
        assert first.read_bytes() == second.read_bytes()
        assert first.read_bytes().count(b"\n") == 1  # one request per line (JSON lines)

    def test_bad_bundle_is_exit_91_and_writes_nothing(self, tmp_path: Path) -> None:
        out = tmp_path / "t.json"
        assert main(["export", str(tmp_path / "missing"), "--otel", str(out)]) == 91
        broken = tmp_path / "broken"
        broken.mkdir()
        (broken / "manifest.json").write_text("{not json")
        assert main(["export", str(broken), "--otel", str(out)]) == 91
        assert not out.exists()

    def test_existing_output_needs_force(self, tmp_path: Path) -> None:
        out = tmp_path / "t.json"
        out.write_text("keep")
        assert main(["export", CREW, "--otel", str(out)]) == 93
        assert out.read_text() == "keep"
        assert main(["export", CREW, "--otel", str(out), "--force"]) == 0
        assert out.read_bytes().startswith(b'{"resourceSpans"')

    def test_missing_otel_extra_is_exit_94_with_the_install_hint(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
    ) -> None:
        import symtrace.export

        monkeypatch.delitem(sys.modules, "symtrace.export.otel", raising=False)
        monkeypatch.delattr(symtrace.export, "otel", raising=False)
        monkeypatch.setitem(sys.modules, "opentelemetry.sdk.trace", None)
        out = tmp_path / "t.json"
        assert main(["export", CREW, "--otel", str(out)]) == 94
        assert "pip install 'symtrace[otel]'" in capsys.readouterr().err
        assert not out.exists()

    def test_missing_protobuf_is_named_as_the_module_and_the_package_to_install(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """Without protobuf the ImportError names only `google`; the message names the
        module, the distribution that brings it and the extra to install (issue 38)."""
        import symtrace.export

        monkeypatch.delitem(sys.modules, "symtrace.export.otel", raising=False)
        monkeypatch.delattr(symtrace.export, "otel", raising=False)
        for name in [n for n in sys.modules if n == "google" or n.startswith("google.")]:
            monkeypatch.delitem(sys.modules, name)
        monkeypatch.setitem(sys.modules, "google", None)
        assert main(["export", CREW, "--otel", str(tmp_path / "t.json")]) == 94
        err = capsys.readouterr().err
        assert "module google.protobuf (package protobuf) is not installed" in err
        assert "pip install 'symtrace[otel]'" in err

    def test_start_time_shifts_the_sequence_clock(self, tmp_path: Path) -> None:
        out = tmp_path / "t.json"
        assert main(["export", CREW, "--otel", str(out), "--start-time",
                     "2026-01-02T03:04:05Z"]) == 0
        spans = orjson.loads(out.read_bytes())["resourceSpans"][0]["scopeSpans"][0]["spans"]
        assert spans[0]["startTimeUnixNano"] == str(1767323045 * 10**9)
        assert start_ns("5") == 5 * 10**9
        with pytest.raises(ValueError, match="time zone"):
            start_ns("2026-01-02T03:04:05")
        assert main(["export", CREW, "--otel", str(tmp_path / "x.json"),
                     "--start-time", "yesterday"]) == 2
