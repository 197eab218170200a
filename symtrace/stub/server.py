"""A stub LLM endpoint on loopback (handler.ROUTES: OpenAI chat completions and Responses,
Anthropic messages), for tests and demos.

Record/replay has to be exercised against real HTTP: real sockets, real SDK retries and
parsing, real SSE, fresh ids and timestamps on every response. ``StubLLM`` serves that from a
daemon thread (stdlib ``ThreadingHTTPServer``, HTTP/1.1 keep-alive, chunked SSE), answering
with a scripted or a stochastic responder. It only ever binds loopback addresses.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import socket
import threading
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal, Protocol

from symtrace.stub.handler import Handler, Server, Server6
from symtrace.stub.reply import Reply
from symtrace.stub.scripted import Script, ScriptedResponder, load_script
from symtrace.stub.stochastic import StochasticConfig, StochasticResponder

Mode = Literal["stochastic", "scripted", "policy"]


class Responder(Protocol):
    mode: str

    def respond(self, body: dict[str, Any], call_index: int) -> Reply: ...


def check_loopback(host: str) -> None:
    """Raise ValueError unless *host* is a loopback address (or ``localhost``)."""
    if host == "localhost":
        return
    try:
        ok = ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        ok = False
    if not ok:
        raise ValueError(
            f"refusing to listen on {host!r}: the stub LLM serves loopback only "
            "(use 127.0.0.1, ::1 or localhost)"
        )


class StubLLM:
    """The stub LLM endpoint on ``host:port`` (port 0 = ephemeral).

    *mode* defaults to ``"scripted"`` when a *script* (dict, Script or JSON file path) is given,
    else ``"stochastic"``. *seed* makes stochastic answers reproducible from server start (and
    from each ``reset()``). *responder* serves any object with ``respond(body, call_index) ->
    Reply`` instead (mode ``"policy"``). Use as a context manager or call ``start()``/``stop()``.
    """

    def __init__(
        self,
        mode: Mode | None = None,
        script: Mapping[str, Any] | Script | str | Path | None = None,
        seed: int | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        tool_probability: float | None = None,
        terminate_probability: float | None = None,
        config: StochasticConfig | None = None,
        chunk_delay: float = 0.0,
        responder: Responder | None = None,
    ) -> None:
        check_loopback(host)
        if seed is not None and (not isinstance(seed, int) or isinstance(seed, bool)):
            raise TypeError(f"seed must be an int or None, got {seed!r}")
        self._responder: Responder
        if responder is not None:
            # A caller-supplied policy (mode "policy"); it owns seeding and answers alone.
            if mode not in (None, "policy") or script is not None or config is not None:
                raise ValueError("a responder is served alone: no mode, script or config")
            if not callable(getattr(responder, "respond", None)):
                raise TypeError(f"responder needs respond(body, call_index): {responder!r}")
            self._responder = responder
            mode = "policy"
        elif mode is None:
            mode = "scripted" if script is not None else "stochastic"
        if mode == "policy":
            if responder is None:
                raise ValueError("mode 'policy' serves a responder object: pass responder=")
        elif mode == "scripted":
            if isinstance(script, str | Path):
                script = load_script(script)
            self._responder = ScriptedResponder(Script.from_obj(script or {}))
        elif mode == "stochastic":
            if script is not None:
                raise ValueError("a script is only used in scripted mode")
            base = config or StochasticConfig()
            overrides = {
                k: v
                for k, v in (
                    ("tool_probability", tool_probability),
                    ("terminate_probability", terminate_probability),
                )
                if v is not None
            }
            cfg = dataclasses.replace(base, **overrides)
            self._responder = StochasticResponder(seed, cfg)
        else:
            raise ValueError(f"mode must be 'stochastic' or 'scripted', got {mode!r}")
        self.mode: str = mode
        self.seed = seed
        self.host = host
        self._requested_port = port
        self.chunk_delay = chunk_delay
        self._lock = threading.Lock()
        self._served = 0
        self._by_path: Counter[str] = Counter()
        self._requests: list[dict[str, Any]] = []
        self._connections: set[socket.socket] = set()
        self._server: Server | None = None
        self._thread: threading.Thread | None = None
        self._port: int | None = None

    # -- lifecycle -------------------------------------------------------------------------

    def start(self) -> StubLLM:
        """Bind and serve from a daemon thread; returns self. Idempotent while running."""
        with self._lock:
            if self._server is not None:
                return self
            cls = Server6 if ":" in self.host else Server
            server = cls((self.host.strip("[]"), self._requested_port), Handler, self)
            self._server = server
            self._port = server.server_address[1]
            self._thread = threading.Thread(
                target=server.serve_forever,
                kwargs={"poll_interval": 0.05},
                name=f"stub-llm:{self._port}",
                daemon=True,
            )
            self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and drop open connections. Safe to call twice."""
        with self._lock:
            server, thread = self._server, self._thread
            self._server = self._thread = None
            connections = list(self._connections)
        if server is None:
            return
        server.shutdown()
        for conn in connections:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        server.server_close()
        if thread is not None:
            thread.join(timeout=5)

    def __enter__(self) -> StubLLM:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def running(self) -> bool:
        return self._server is not None

    # -- addresses -------------------------------------------------------------------------

    @property
    def port(self) -> int:
        if self._port is None:
            raise RuntimeError("StubLLM is not started")
        return self._port

    @property
    def root_url(self) -> str:
        """``http://host:port`` without the ``/v1`` prefix."""
        host = f"[{self.host.strip('[]')}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    @property
    def url(self) -> str:
        """Base URL for OpenAI clients (``http://host:port/v1``)."""
        return f"{self.root_url}/v1"

    def env(self) -> dict[str, str]:
        """Environment variables that point an OpenAI SDK at this server."""
        return {"OPENAI_BASE_URL": self.url, "OPENAI_API_KEY": "stub-key"}

    # -- observation -----------------------------------------------------------------------

    @property
    def served(self) -> int:
        """LLM requests answered, all three APIs (scripted errors included; not malformed ones)."""
        with self._lock:
            return self._served

    @property
    def requests(self) -> list[dict[str, Any]]:
        """Snapshot of the parsed bodies of the answered completion requests, in order."""
        with self._lock:
            return list(self._requests)

    def stats(self) -> dict[str, Any]:
        with self._lock:
            return {"served": self._served, "by_path": dict(self._by_path), "mode": self.mode}

    def reset(self) -> None:
        """Forget counters and requests; call indices (and seeded sequences) restart at 0."""
        with self._lock:
            self._served = 0
            self._by_path.clear()
            self._requests.clear()

    def __repr__(self) -> str:
        where = self.url if self._port is not None else "not started"
        return f"StubLLM(mode={self.mode!r}, seed={self.seed!r}, {where})"

    # -- the handler's Backend protocol ----------------------------------------------------

    def record(self, path: str, body: dict[str, Any]) -> int:
        with self._lock:
            index = self._served
            self._served += 1
            self._by_path[path] += 1
            self._requests.append(body)
            return index

    def answer(self, body: dict[str, Any], call_index: int) -> Reply:
        return self._responder.respond(body, call_index)

    def track(self, conn: socket.socket, *, active: bool) -> None:
        with self._lock:
            if active:
                self._connections.add(conn)
            else:
                self._connections.discard(conn)
