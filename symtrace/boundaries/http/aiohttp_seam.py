"""The aiohttp seam: `aiohttp.ClientSession._request` (litellm's async path, and any program's).

Why `_request` and not the connector: every `session.get/post/request(...)` (and
`async with session.post(...)`) ends in `ClientSession._request(method, url, **kwargs)`, which
returns the `ClientResponse` the program reads. That is the semantic seam (method, URL, body,
response), like httpx's transport. A connector-level seam would hand back connections, so a
replay would have to fake a socket protocol below the HTTP layer: what the style guide calls
faking below the semantic boundary. aiohttp 3.14's client middlewares would be cleaner but are
per session (a program's own sessions would need arguments symtrace cannot add).

The request body is snapshot from `json=` or `data=` (bytes, str, or form fields); any other
body type (a stream, a FormData with files) is refused with `UnsupportedRequestBody` rather
than recorded as something it is not. A live response is read in full before it is handed to
the program (an SSE stream reaches the program at once, complete, while recording); the
program gets a real `aiohttp.ClientResponse` either way, live or replayed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any
from urllib.parse import urlencode

import aiohttp
from multidict import CIMultiDict, CIMultiDictProxy
from yarl import URL

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

LIBRARY = "aiohttp"


class AiohttpSeam:
    library = LIBRARY

    def patches(self) -> tuple[Patch, ...]:
        return (Patch(aiohttp.ClientSession, "_request", self._shell),)

    def _shell(self, original: Callable[..., Any]) -> Callable[..., Any]:
        seam = self

        async def _request(client: aiohttp.ClientSession, method: str, str_or_url: Any,
                           **kwargs: Any) -> aiohttp.ClientResponse:
            session = active()
            if session is None or sending_library() == LIBRARY:
                return await original(client, method, str_or_url, **kwargs)
            url = _url(client, str_or_url, kwargs.get("params"))
            content = _content(client, kwargs.get("data"), kwargs.get("json"))
            wire = WireRequest(method.upper(), url.scheme, url.host or "", url.port,
                               url.path, url.query_string, content)
            exchange = Exchange(session, wire, seam)
            ticket = await session.abegin(exchange.call)
            if not ticket.live:
                return _response(method, url, exchange.served(ticket), client,
                                 aiohttp.HttpVersion11, None)
            changed = exchange.live_content(ticket)
            if changed is not None:
                kwargs = {**{k: v for k, v in kwargs.items() if k != "json"}, "data": changed}
            try:
                with sending(LIBRARY):
                    response = await original(client, method, str_or_url, **kwargs)
                    try:
                        body = await response.read()
                    finally:
                        response.release()
            except aiohttp.ClientError as exc:
                await session.ahand_off()  # the failure reaches the program in its turn
                exchange.failed(ticket, exc)
                raise
            await session.ahand_off()  # the response reaches the program in its turn
            if is_stream(response.headers):  # read whole: recorded as one chunk
                exchange.streamed(ticket, response.status, response.headers, [body])
            else:
                exchange.completed(ticket, response.status, response.headers, body)
            return _response(method, url, Recorded(response.status, _plain(response.headers),
                                                   body), client,
                             response.version, response.reason)

        return _request

    def rebuild_error(self, error: dict[str, str]) -> BaseException:
        cls = getattr(aiohttp, str(error.get("type")), None)
        if not (isinstance(cls, type) and issubclass(cls, aiohttp.ClientError)):
            cls = aiohttp.ClientConnectionError
        try:
            return cls(str(error.get("message", "")))
        except TypeError:  # exception classes that need more arguments
            return aiohttp.ClientConnectionError(str(error.get("message", "")))


def _url(client: aiohttp.ClientSession, str_or_url: Any, params: Any) -> URL:
    url = client._build_url(str_or_url)
    return url.extend_query(params) if params else url


def _content(client: aiohttp.ClientSession, data: Any, json: Any) -> bytes:
    if json is not None:
        dumped = client._json_serialize(json)
        return dumped.encode() if isinstance(dumped, str) else bytes(dumped)
    if data is None:
        return b""
    if isinstance(data, bytes | bytearray | memoryview):
        return bytes(data)
    if isinstance(data, str):
        return data.encode()
    if isinstance(data, dict) or (isinstance(data, list | tuple)
                                  and all(isinstance(p, tuple) for p in data)):
        return urlencode(data, doseq=True).encode()
    raise UnsupportedRequestBody(
        f"aiohttp request body of type {type(data).__name__} cannot be recorded (symtrace "
        "snapshots bytes, str, form fields and json=); send the body as bytes")


def _plain(headers: Any) -> dict[str, str]:
    dropped = ("content-encoding", "content-length", "transfer-encoding")
    return {k: v for k, v in headers.items() if k.lower() not in dropped}


class _Sent:
    output_size = 0


def _response(method: str, url: URL, recorded: Recorded, client: aiohttp.ClientSession,
              version: aiohttp.HttpVersion | None, reason: str | None) -> aiohttp.ClientResponse:
    """A real ClientResponse whose body is *recorded*: what aiohttp itself would hand back,
    with the live response's HTTP *version* and *reason* when recording (replayed: HTTP/1.1
    and the status's standard phrase; the bundle keeps neither)."""
    loop = asyncio.get_running_loop()
    headers = CIMultiDictProxy(CIMultiDict({**recorded.headers,
                                            "Content-Length": str(len(recorded.content))}))
    info = aiohttp.RequestInfo(url, method.upper(), CIMultiDictProxy(CIMultiDict()), url)
    response = aiohttp.ClientResponse(
        method.upper(), url, writer=None, continue100=None, timer=None, request_info=info,
        traces=[], loop=loop, session=client, stream_writer=_Sent())  # type: ignore[arg-type]
    response.status = recorded.status
    response.version = version
    response.reason = reason if reason is not None else reason_phrase(recorded.status)
    response._headers = headers
    response._raw_headers = tuple((k.encode(), v.encode()) for k, v in headers.items())
    protocol = aiohttp.client_proto.ResponseHandler(loop)
    response.content = aiohttp.StreamReader(protocol, limit=2**16, loop=loop)
    response.content.feed_data(recorded.content)
    response.content.feed_eof()
    return response


