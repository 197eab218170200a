"""HTTP plumbing of the stub: routing, body reading, JSON and chunked-SSE responses.

Kept apart from ``server`` (lifecycle and state) so each reads on its own. The handler talks to
its owner only through the small ``Backend`` protocol. HTTP/1.1 keep-alive matters: SDK
clients pool connections, and a server that closes after every response is not what they
meet in production.
"""

from __future__ import annotations

import socket
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Protocol
from urllib.parse import urlsplit

import orjson

from symtrace.stub import formats, sse
from symtrace.stub.reply import Reply, error_reply

STATS_PATH = "/_stub/stats"
RESET_PATH = "/_stub/reset"
MAX_BODY = 64 * 1024 * 1024
IDLE_TIMEOUT = 60.0  # seconds an idle keep-alive connection is kept open


class Backend(Protocol):
    """What the handler needs from the object that owns the server (a StubLLM)."""

    chunk_delay: float

    def record(self, path: str, body: dict[str, Any]) -> int: ...
    def answer(self, body: dict[str, Any], call_index: int) -> Reply: ...
    def stats(self) -> dict[str, Any]: ...
    def reset(self) -> None: ...
    def track(self, conn: socket.socket, *, active: bool) -> None: ...


@dataclass(frozen=True, slots=True)
class Route:
    """One thing the stub serves. The handler dispatches through `ROUTES` and
    `symtrace stub-llm --help` lists it, so the help cannot name a route that is not served."""

    method: str  # "GET" or "POST"
    paths: tuple[str, ...]  # the first is the one documented; the others are aliases
    serve: str  # the Handler method that answers: (self, path, body bytes) -> None
    what: str  # one line for the help


def _paths_of(fmt: formats.WireFormat) -> tuple[str, ...]:
    return tuple(path for path, wire in formats.PATHS.items() if wire is fmt)


ROUTES: tuple[Route, ...] = (
    Route("POST", ("/v1/chat/completions", "/chat/completions"), "_completion",
          "OpenAI chat completions (plain or streamed)"),
    Route("POST", _paths_of(formats.WireFormat.RESPONSES), "_provider_format",
          "OpenAI Responses API (plain or streamed)"),
    Route("POST", _paths_of(formats.WireFormat.ANTHROPIC), "_provider_format",
          "Anthropic messages (plain or streamed)"),
    Route("GET", ("/v1/models", "/models"), "_models", "a model list with one model, 'stub'"),
    Route("GET", (STATS_PATH,), "_stats",
          "request counter, JSON: served, by_path, mode"),
    Route("POST", (RESET_PATH,), "_reset", "zero the counters; call indices restart at 0"),
)
_ROUTE_OF = {(route.method, path): route for route in ROUTES for path in route.paths}


class Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False  # idle keep-alive connections must not block stop()
    request_queue_size = 1024  # asyncio clients open many connections at once

    def __init__(self, address: tuple[str, int], handler: type, stub: Backend) -> None:
        self.stub = stub
        super().__init__(address, handler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        if isinstance(sys.exc_info()[1], OSError):
            return  # a client hung up, or stop() cut the connection
        super().handle_error(request, client_address)


class Server6(Server):
    address_family = socket.AF_INET6


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "symtrace-stub-llm/1"
    sys_version = ""
    timeout = IDLE_TIMEOUT
    server: Server

    @property
    def stub(self) -> Backend:
        return self.server.stub

    def setup(self) -> None:
        super().setup()
        # Headers and body are separate small writes; without NODELAY, Nagle's algorithm and
        # the client's delayed ACK add ~40 ms to every response.
        try:
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError:
            pass
        self.stub.track(self.connection, active=True)

    def finish(self) -> None:
        self.stub.track(self.connection, active=False)
        try:
            super().finish()
        except OSError:
            pass

    def log_message(self, format: str, *args: Any) -> None:
        pass  # tests and CLI users do not want an access log on stderr

    # -- routing ---------------------------------------------------------------------------

    def _path(self) -> str:
        path = urlsplit(self.path).path
        return path.rstrip("/") or "/"

    def do_GET(self) -> None:
        self._dispatch("GET", b"")

    def do_POST(self) -> None:
        raw = self._read_body()
        if raw is not None:
            self._dispatch("POST", raw)

    def _dispatch(self, method: str, raw: bytes) -> None:
        path = self._path()
        route = _ROUTE_OF.get((method, path))
        if route is None:
            self._not_found(method, path)
        else:
            getattr(self, route.serve)(path, raw)

    def _stats(self, path: str, raw: bytes) -> None:
        self._send_json(200, self.stub.stats())

    def _models(self, path: str, raw: bytes) -> None:
        model = {"id": "stub", "object": "model", "created": 0, "owned_by": "symtrace"}
        self._send_json(200, {"object": "list", "data": [model]})

    def _reset(self, path: str, raw: bytes) -> None:
        self.stub.reset()
        self._send_json(200, {"ok": True})

    # -- completions -----------------------------------------------------------------------

    def _completion(self, path: str, raw: bytes) -> None:
        try:
            body = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            self._send_error(error_reply(400, f"request body is not valid JSON: {exc}"))
            return
        if not isinstance(body, dict):
            self._send_error(error_reply(400, "request body must be a JSON object"))
            return
        if not isinstance(body.get("messages"), list):
            self._send_error(error_reply(400, "Missing required parameter: 'messages'."))
            return
        if body.get("n", 1) not in (None, 1):
            self._send_error(error_reply(400, "the stub supports only n=1", code="unsupported"))
            return
        call_index = self.stub.record(path, body)
        try:
            reply = self.stub.answer(body, call_index)
        except Exception as exc:  # noqa: BLE001 - a responder bug must reach the client as a 500
            reply = error_reply(500, f"stub responder failed: {type(exc).__name__}: {exc}")
        if reply.is_error:
            self._send_error(reply)
        elif body.get("stream") is True:
            self._send_stream(sse.stream_events(body, reply))
        else:
            self._send_json(200, sse.completion(body, reply))

    def _provider_format(self, path: str, raw: bytes) -> None:
        """A Responses-API or Anthropic-messages request, answered by the same responder."""
        fmt = formats.PATHS[path]
        anthropic = fmt is formats.WireFormat.ANTHROPIC
        try:
            body = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            body, problem = None, f"request body is not valid JSON: {exc}"
        else:
            problem = (formats.bad_request(fmt, body) if isinstance(body, dict)
                       else "request body must be a JSON object")
        if problem is not None or not isinstance(body, dict):
            self._send_format_error(error_reply(400, problem or "bad request"), anthropic)
            return
        call_index = self.stub.record(path, body)
        try:
            reply = self.stub.answer(formats.chat_body(fmt, path, body), call_index)
        except Exception as exc:  # noqa: BLE001 - a responder bug must reach the client as a 500
            reply = error_reply(500, f"stub responder failed: {type(exc).__name__}: {exc}")
        if reply.is_error:
            self._send_format_error(reply, anthropic)
        elif body.get("stream") is True:
            events = formats.anthropic_events if anthropic else formats.response_events
            self._send_stream(events(body, reply))
        else:
            encode = formats.anthropic_message if anthropic else formats.response_object
            self._send_json(200, encode(body, reply))

    def _send_format_error(self, reply: Reply, anthropic: bool) -> None:
        if anthropic:
            self._send_json(reply.status, formats.anthropic_error(reply.status, reply.error or ""))
        else:
            self._send_error(reply)

    # -- I/O -------------------------------------------------------------------------------

    def _read_body(self) -> bytes | None:
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            return self._read_chunked()
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            length = -1
        if length < 0 or length > MAX_BODY:
            self.close_connection = True
            self._send_error(error_reply(400, "bad Content-Length"))
            return None
        return self.rfile.read(length) if length else b""

    def _read_chunked(self) -> bytes | None:
        parts: list[bytes] = []
        total = 0
        while True:
            line = self.rfile.readline(1024)
            try:
                size = int(line.split(b";")[0].strip(), 16)
            except ValueError:
                size = -1
            total += max(size, 0)
            if size < 0 or total > MAX_BODY:
                self.close_connection = True
                self._send_error(error_reply(400, "bad chunked request body"))
                return None
            if size == 0:
                while self.rfile.readline(1024) not in (b"\r\n", b"\n", b""):
                    pass  # trailers
                return b"".join(parts)
            parts.append(self.rfile.read(size))
            self.rfile.readline(1024)

    def _not_found(self, method: str, path: str) -> None:
        reply = error_reply(404, f"Unknown request URL: {method} {path}.", code="unknown_url")
        self._send_error(reply)

    def _send_error(self, reply: Reply) -> None:
        self._send_json(reply.status, sse.error_body(reply))

    def _send_json(self, status: int, obj: object) -> None:
        data = orjson.dumps(obj)
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.send_header("x-request-id", sse.random_id("req_", 16))
            self._headers_buffer.append(b"\r\n" + data)  # one write: headers and body
            self.flush_headers()
        except OSError:
            self.close_connection = True

    def _send_stream(self, events: Iterator[bytes]) -> None:
        try:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream; charset=utf-8")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Transfer-Encoding", "chunked")
            self.send_header("x-request-id", sse.random_id("req_", 16))
            self.end_headers()
            for data in events:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                if self.stub.chunk_delay:
                    time.sleep(self.stub.chunk_delay)
            self.wfile.write(b"0\r\n\r\n")
        except OSError:
            self.close_connection = True
