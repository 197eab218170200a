"""``python -m symtrace.localllm.serve``: llama-cpp-python's stock server with ``chatml-tools``.

The launcher that ``LocalLLM`` starts in a child process. In this order, because each step
depends on the previous: bind the loopback socket (so a busy port fails before the model
loads, and port 0 works: the chosen port is written to ``--port-file``), patch the request
types (before ``llama_cpp.server.types`` exists), register the chat format, build the stock
FastAPI app from a stock config file, serve it with uvicorn on the bound socket. The app is
wrapped only to count completion requests (``GET /_symtrace/stats``): tests assert that a
strict replay sent none.
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
import threading
import time
from collections.abc import Awaitable, Callable, MutableMapping
from pathlib import Path
from typing import Any

import orjson

from symtrace.localllm.protocol import STATS_PATH, write_atomically

COMPLETION_SUFFIXES = ("/chat/completions", "/completions")

Scope = MutableMapping[str, Any]
ASGIApp = Callable[[Scope, Callable[..., Awaitable[Any]], Callable[..., Awaitable[Any]]],
                   Awaitable[None]]


class CountingApp:
    """ASGI wrapper: counts completion requests by path and serves them at STATS_PATH."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.counts: dict[str, int] = {}

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        path = scope.get("path", "")
        if scope["type"] == "http" and path == STATS_PATH:
            body = orjson.dumps({"requests": dict(self.counts)}, option=orjson.OPT_SORT_KEYS)
            await send({"type": "http.response.start", "status": 200,
                        "headers": [(b"content-type", b"application/json")]})
            await send({"type": "http.response.body", "body": body})
            return
        if scope["type"] == "http" and path.endswith(COMPLETION_SUFFIXES):
            self.counts[path] = self.counts.get(path, 0) + 1
        await self.app(scope, receive, send)


def bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host.strip("[]"), port))
    sock.listen(128)
    return sock


def exit_with_parent(parent_pid: int) -> None:
    """Stop serving when the process that started us is gone (killed, crashed)."""

    def watch() -> None:
        while os.getppid() == parent_pid:
            time.sleep(0.5)
        os._exit(0)

    threading.Thread(target=watch, name="parent-watchdog", daemon=True).start()


def build_app(config_file: Path, max_tokens: int) -> Any:
    import llama_cpp
    import llama_cpp.llama as llama_module
    import llama_cpp.llama_types as llama_types

    from symtrace.localllm.chat_format import register
    from symtrace.localllm.types_patch import patch_llama_types

    patch_llama_types(llama_types, llama_cpp, llama_module)
    register(default_max_tokens=max_tokens)

    from llama_cpp.server.app import create_app
    from llama_cpp.server.settings import ConfigFileSettings, ServerSettings

    from symtrace.localllm.errors_http import install_invalid_request_mapping

    install_invalid_request_mapping()
    settings = ConfigFileSettings.model_validate_json(config_file.read_bytes())
    return create_app(
        server_settings=ServerSettings.model_validate(settings), model_settings=settings.models
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m symtrace.localllm.serve")
    parser.add_argument("--config", required=True, type=Path, help="llama_cpp.server config JSON")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--port-file", type=Path, help="write the bound port here")
    parser.add_argument("--parent-pid", type=int, help="exit when this parent process is gone")
    parser.add_argument("--max-tokens", type=int, default=512,
                        help="completion cap when a request sets no max_tokens")
    args = parser.parse_args(argv)

    from symtrace.stub.server import check_loopback

    check_loopback(args.host)
    if args.parent_pid:
        exit_with_parent(args.parent_pid)
    sock = bind(args.host, args.port)
    if args.port_file:
        write_atomically(args.port_file, str(sock.getsockname()[1]))
    app = CountingApp(build_app(args.config, args.max_tokens))

    import uvicorn

    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False))
    server.run(sockets=[sock])
    return 0


if __name__ == "__main__":
    sys.exit(main())
