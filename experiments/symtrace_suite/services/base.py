"""One deterministic JSON service on a loopback port: routing, errors, request log, reset.

Each service is a `Service` (pure request → (status, payload) logic over its own state) served
by a stdlib `ThreadingHTTPServer` in a daemon thread. A lock serialises requests per service,
so concurrent tool calls see a consistent state; every answered request is logged, which is how
tests check that a MAS's tools really reached the service.
"""

from __future__ import annotations

import copy
import json
import socket
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import orjson

from symtrace_suite import DATA_DIR

JSON = dict[str, Any]
MAX_BODY = 1 << 20


class ServiceError(Exception):
    """An error answered as JSON: `{"status": "error", "http_status", "error": {code, message}}`."""

    def __init__(self, http_status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.http_status = http_status
        self.code = code
        self.message = message

    def payload(self) -> JSON:
        return {
            "status": "error",
            "http_status": self.http_status,
            "error": {"code": self.code, "message": self.message},
        }


def not_found(what: str) -> ServiceError:
    return ServiceError(404, "not_found", f"{what} not found")


def bad_request(message: str) -> ServiceError:
    return ServiceError(400, "bad_request", message)


@dataclass(frozen=True, slots=True)
class Request:
    method: str
    parts: tuple[str, ...]  # path segments, e.g. ("orders", "O-1001", "cancel")
    query: dict[str, str]
    body: JSON

    def arg(self, name: str, default: str | None = None) -> str | None:
        value = self.query.get(name, self.body.get(name, default))
        return None if value is None else str(value)


class Service:
    """Subclasses set `name`, load their data file, and implement `route`."""

    name = ""
    data_file = ""

    def __init__(self) -> None:
        self._initial: JSON = orjson.loads((DATA_DIR / self.data_file).read_bytes())
        self.data: JSON = copy.deepcopy(self._initial)

    def reset(self) -> None:
        self.data = copy.deepcopy(self._initial)

    def state(self) -> JSON:
        """The mutable part of the state (empty for read-only services)."""
        return {}

    def route(self, request: Request) -> JSON:
        raise NotImplementedError


def number(request: Request, name: str) -> float:
    raw = request.arg(name)
    if raw is None or raw == "":
        raise bad_request(f"missing parameter {name!r}")
    try:
        return float(raw)
    except ValueError:
        raise bad_request(f"parameter {name!r} must be a number, got {raw!r}") from None


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def setup(self) -> None:
        super().setup()
        # Headers and body go out in two writes: without TCP_NODELAY, Nagle + delayed ACK
        # add ~40 ms to every keep-alive request.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, format: str, *args: Any) -> None:
        pass  # quiet: the request log is data, not stderr noise

    def do_GET(self) -> None:
        self._serve("GET")

    def do_POST(self) -> None:
        self._serve("POST")

    def do_PUT(self) -> None:
        self._serve("PUT")

    def do_DELETE(self) -> None:
        self._serve("DELETE")

    def _serve(self, method: str) -> None:
        split = urlsplit(self.path)
        query = {k: v[-1] for k, v in parse_qs(split.query, keep_blank_values=True).items()}
        parts = tuple(p for p in split.path.split("/") if p)
        status, payload = self.server.host.dispatch(method, parts, query, self._body())
        data = orjson.dumps(payload, option=orjson.OPT_SORT_KEYS)
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _body(self) -> JSON | ServiceError:
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY:
            return ServiceError(413, "too_large", "request body too large")
        raw = self.rfile.read(length) if length else b""
        if not raw.strip():
            return {}
        try:
            body = json.loads(raw)
        except ValueError:
            return bad_request("request body is not valid JSON")
        return body if isinstance(body, dict) else bad_request("request body must be a JSON object")


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, host: ServedService) -> None:
        self.host = host
        super().__init__(("127.0.0.1", 0), _Handler)


class ServedService:
    """A `Service` behind a loopback HTTP server, with `/__reset`, `/__state`, `/__requests`."""

    def __init__(self, service: Service) -> None:
        self.service = service
        self._lock = threading.Lock()
        self._log: list[JSON] = []
        self._server = _Server(self)
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"suite-{service.name}",
            daemon=True,
        )
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def reset(self) -> None:
        with self._lock:
            self.service.reset()
            self._log.clear()

    def state(self) -> JSON:
        with self._lock:
            return copy.deepcopy(self.service.state())

    def requests(self) -> list[JSON]:
        with self._lock:
            return copy.deepcopy(self._log)

    def dispatch(
        self, method: str, parts: tuple[str, ...], query: dict[str, str], body: JSON | ServiceError
    ) -> tuple[int, JSON]:
        if parts[:1] and parts[0].startswith("__"):
            return self._control(method, parts)
        with self._lock:
            try:
                if isinstance(body, ServiceError):
                    raise body
                payload = self.service.route(Request(method, parts, query, body))
                status = 200
            except ServiceError as exc:
                status, payload = exc.http_status, exc.payload()
            self._log.append(
                {
                    "method": method,
                    "path": "/" + "/".join(parts),
                    "query": query,
                    "body": body if isinstance(body, dict) else None,
                    "status": status,
                }
            )
            return status, payload

    def _control(self, method: str, parts: tuple[str, ...]) -> tuple[int, JSON]:
        name = parts[0] if len(parts) == 1 else ""
        if name == "__reset" and method == "POST":
            self.reset()
            return 200, {"ok": True}
        if name == "__state" and method == "GET":
            return 200, self.state()
        if name == "__requests" and method == "GET":
            return 200, {"requests": self.requests()}
        err = not_found("/" + "/".join(parts))
        return err.http_status, err.payload()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
