"""The urllib3 seam (and so `requests`): `HTTPConnectionPool.urlopen`.

`requests` sends every request through `HTTPAdapter.send` → `conn.urlopen(...)`, and programs
using urllib3 directly (`PoolManager.request`, `urllib3.request`) end there too, so one seam
covers both; HTTPS pools subclass it. A replayed response is a real `urllib3.HTTPResponse`
over the recorded bytes, which requests wraps as usual (`Response.json()`, `iter_lines()`).

`urlopen` calls itself for retries and redirects: only the outermost call is an exchange (the
inner ones run inside it, as the library's own plumbing). A live response is read in full
before it is handed on (an SSE stream read with `stream=True` arrives complete while
recording). Bodies must be bytes or str; a file or generator body is refused with
`UnsupportedRequestBody` rather than recorded as something it is not.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

import urllib3
from urllib3.connectionpool import HTTPConnectionPool
from urllib3.util.retry import Retry

from symtrace.boundaries.http.exchange import (
    Exchange,
    Recorded,
    UnsupportedRequestBody,
    WireRequest,
    is_stream,
    reason_phrase,
    sending,
    sending_library,
)
from symtrace.patching import Patch
from symtrace.session.core import active

LIBRARY = "urllib3"
DROPPED = ("content-encoding", "content-length", "transfer-encoding")


class Urllib3Seam:
    library = LIBRARY

    def patches(self) -> tuple[Patch, ...]:
        return (Patch(HTTPConnectionPool, "urlopen", self._shell),)

    def _shell(self, original: Callable[..., Any]) -> Callable[..., Any]:
        seam = self

        def urlopen(pool: HTTPConnectionPool, method: str, url: str, body: Any = None,
                    headers: Any = None, *args: Any, **kwargs: Any) -> Any:
            session = active()
            if session is None or sending_library() == LIBRARY:  # retries, redirects
                return original(pool, method, url, body, headers, *args, **kwargs)
            content = _content(body)
            parts = urlsplit(url)
            wire = WireRequest(method.upper(), pool.scheme, str(pool.host), pool.port,
                               parts.path or "/", parts.query, content)
            exchange = Exchange(session, wire, seam)
            ticket = session.begin(exchange.call)
            preload = kwargs.get("preload_content", True)
            if not ticket.live:
                return _response(exchange.served(ticket), preload, method, url,
                                 retries=_retries(pool, args, kwargs))
            changed = exchange.live_content(ticket)
            if changed is not None:
                body = changed
                headers = {k: v for k, v in dict(headers or {}).items()
                           if k.lower() != "content-length"}
            try:
                with sending(LIBRARY):
                    response = original(pool, method, url, body, headers, *args,
                                        **{**kwargs, "preload_content": False})
                    try:
                        data = response.read(decode_content=True)
                    finally:
                        response.release_conn()
            except urllib3.exceptions.HTTPError as exc:
                exchange.failed(ticket, exc)
                raise
            if is_stream(response.headers):
                exchange.streamed(ticket, response.status, response.headers, [data])
            else:
                exchange.completed(ticket, response.status, response.headers, data)
            headers_out = {k: v for k, v in response.headers.items() if k.lower() not in DROPPED}
            return _response(Recorded(response.status, headers_out, data), preload, method, url,
                             reason=response.reason, retries=response.retries,
                             version=(response.version,
                                      getattr(response, "version_string", "HTTP/1.1")))

        return urlopen

    def rebuild_error(self, error: dict[str, str]) -> BaseException:
        cls = getattr(urllib3.exceptions, str(error.get("type")), None)
        message = str(error.get("message", ""))
        if isinstance(cls, type) and issubclass(cls, urllib3.exceptions.HTTPError):
            try:
                return cls(message)
            except TypeError:  # classes whose constructor wants a pool or url first
                pass
        return urllib3.exceptions.ProtocolError(message)


def _content(body: Any) -> bytes:
    if body is None:
        return b""
    if isinstance(body, bytes | bytearray | memoryview):
        return bytes(body)
    if isinstance(body, str):
        return body.encode()
    raise UnsupportedRequestBody(
        f"urllib3/requests request body of type {type(body).__name__} cannot be recorded "
        "(symtrace snapshots bytes and str bodies); pass the body as bytes")


def _retries(pool: HTTPConnectionPool, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Retry:
    """The Retry urlopen would have given a response for these arguments (its own rule)."""
    retries = args[0] if args else kwargs.get("retries")
    redirect = args[1] if len(args) > 1 else kwargs.get("redirect", True)
    if retries is None:
        retries = pool.retries
    if not isinstance(retries, Retry):
        retries = Retry.from_int(retries, redirect=redirect, default=pool.retries)
    return retries


def _response(recorded: Recorded, preload: bool, method: str, url: str,
              reason: str | None = None, retries: Retry | None = None,
              version: tuple[int, str] = (11, "HTTP/1.1")) -> urllib3.HTTPResponse:
    """A real HTTPResponse over *recorded*, with what urlopen gives a response besides its
    body: *reason*, *retries* (its history is what `geturl()` follows) and the HTTP *version*
    (number, text): the live response's when recording; replayed, the bundle keeps none of
    them (the status's phrase, the Retry urlopen would attach, HTTP/1.1)."""
    headers = {**recorded.headers, "content-length": str(len(recorded.content))}
    response = urllib3.HTTPResponse(
        body=io.BytesIO(recorded.content), headers=headers, status=recorded.status,
        version=version[0], reason=reason or reason_phrase(recorded.status), retries=retries,
        preload_content=preload, decode_content=True, request_method=method,
        request_url=url, enforce_content_length=False)
    if hasattr(response, "version_string"):  # urllib3 2.x (1.26 has no such attribute)
        response.version_string = version[1]
    return response

