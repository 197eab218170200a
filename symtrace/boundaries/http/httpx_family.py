"""The httpx and httpx2 seams: `HTTPTransport.handle_request` and
`AsyncHTTPTransport.handle_async_request`, patched at class level.

httpx2 is a fork of httpx with its own module and classes (openai 3, anthropic 2,
openai-agents, google-genai and mistralai send through it) but the same transport seam, so
one shell serves both: it is built per module, and everything it hands back (responses,
byte streams, exceptions) is that module's own type. `httpx2.alias_httpx()` makes `httpx`
*be* `httpx2`; then both names resolve to one class and it is patched once.

`response.elapsed`: the client sets it when it closes the response stream it wrapped, but a
response whose body the seam read (recording) or built (replay) is closed before that, and
reading `elapsed` would raise. The seam sets it then: recorded, the live call's time (sending
and reading the body, symtrace's own bookkeeping excluded); replayed, the time the seam took
to serve the body from the bundle (a bundle keeps no durations, and replay serves no clock).
A stream's `elapsed` is the client's own measure, live or replayed (until it is closed).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from datetime import timedelta
from time import perf_counter
from types import ModuleType
from typing import Any

from symtrace.boundaries.http.exchange import (
    Exchange,
    Recorded,
    StreamTap,
    WireRequest,
    is_stream,
    kept_header_items,
    sending,
)
from symtrace.patching import Patch
from symtrace.session.core import active


class HttpxSeam:
    """The shells and conversions for one httpx-family module (httpx or httpx2)."""

    def __init__(self, lib: ModuleType) -> None:
        self.lib = lib
        self.library = lib.__name__
        self._chunks, self._sync_tee, self._async_tee = _stream_classes(lib)

    # -- the patch table ------------------------------------------------------------------
    def patches(self) -> tuple[Patch, ...]:
        return (
            Patch(self.lib.HTTPTransport, "handle_request", self._sync_shell),
            Patch(self.lib.AsyncHTTPTransport, "handle_async_request", self._async_shell),
        )

    # -- the two shells: the same steps, with and without await ------------------------------
    def _sync_shell(self, original: Callable[..., Any]) -> Callable[..., Any]:
        seam = self

        def handle_request(transport: Any, request: Any) -> Any:
            session = active()
            if session is None:
                return original(transport, request)
            started = perf_counter()
            request.read()
            exchange = Exchange(session, seam.wire(request), seam)
            ticket = session.begin(exchange.call)
            if not ticket.live:
                return seam.materialise(exchange.served(ticket), request, started)
            live = seam.with_content(request, exchange.live_content(ticket))
            try:
                with sending(seam.library):
                    started = perf_counter()
                    response = original(transport, live)
            except seam.lib.TransportError as exc:
                exchange.failed(ticket, exc)
                raise
            headers = kept_header_items(response.headers.multi_items())
            if is_stream(headers):
                return seam.teed(response, seam.tap(exchange, ticket, response, headers))
            response.read()  # cached: the program's read returns this content (no re-wrap)
            response.elapsed = timedelta(seconds=perf_counter() - started)
            exchange.completed(ticket, response.status_code, headers, response.content,
                               kept=True)
            return response

        return handle_request

    def _async_shell(self, original: Callable[..., Any]) -> Callable[..., Any]:
        seam = self

        async def handle_async_request(transport: Any, request: Any) -> Any:
            session = active()
            if session is None:
                return await original(transport, request)
            started = perf_counter()
            await request.aread()
            exchange = Exchange(session, seam.wire(request), seam)
            ticket = await session.abegin(exchange.call)  # replay may hold it for its turn
            if not ticket.live:
                return seam.materialise(exchange.served(ticket), request, started)
            live = seam.with_content(request, exchange.live_content(ticket))
            try:
                with sending(seam.library):
                    started = perf_counter()
                    response = await original(transport, live)
            except seam.lib.TransportError as exc:
                await session.ahand_off()  # the failure reaches the program in its turn
                exchange.failed(ticket, exc)
                raise
            headers = kept_header_items(response.headers.multi_items())
            if is_stream(headers):
                return seam.teed(response, seam.tap(exchange, ticket, response, headers))
            await response.aread()  # cached: the program's read returns this content
            response.elapsed = timedelta(seconds=perf_counter() - started)
            await session.ahand_off()  # the response reaches the program in its turn
            exchange.completed(ticket, response.status_code, headers, response.content,
                               kept=True)
            return response

        return handle_async_request

    # -- conversions -------------------------------------------------------------------------
    def wire(self, request: Any) -> WireRequest:
        url = request.url
        return WireRequest(request.method, url.scheme, url.host, url.port, url.path,
                           url.query.decode(), request.content)

    def with_content(self, request: Any, content: bytes | None) -> Any:
        if content is None:
            return request
        headers = {k: v for k, v in request.headers.items() if k.lower() != "content-length"}
        return self.lib.Request(request.method, request.url, headers=headers, content=content,
                                extensions=request.extensions)

    def materialise(self, recorded: Recorded, request: Any, started: float) -> Any:
        """*recorded* as this library's Response (*started*: when the seam was entered)."""
        if recorded.chunks is not None:  # the client times it, until it is closed
            return self.lib.Response(recorded.status, headers=recorded.headers,
                                     stream=self._chunks(recorded.chunks, recorded.cut),
                                     request=request)
        response = self.lib.Response(recorded.status, headers=recorded.headers,
                                     content=recorded.content, request=request)
        response.elapsed = timedelta(seconds=perf_counter() - started)  # read: closed already
        return response

    def tap(self, exchange: Exchange, ticket: Any, response: Any,
            headers: dict[str, str]) -> StreamTap:
        """A tap recording *response*'s stream (*headers*: its kept headers, read once)."""
        encoding = response.headers.get("content-encoding", "identity")
        decode = None
        if encoding not in ("", "identity"):
            def decode(data: bytes) -> bytes:
                return self.lib.Response(200, headers={"content-encoding": encoding},
                                         content=data).read()
        return exchange.tap(ticket, response.status_code, headers, decode, kept=True)

    def teed(self, response: Any, tap: StreamTap) -> Any:
        """*response* with its unread stream fed through *tap* (its stream replaced, as the
        client itself replaces it next: no second Response)."""
        inner = response.stream
        tee = self._async_tee if hasattr(inner, "__aiter__") else self._sync_tee
        response.stream = tee(inner, tap)
        return response

    def rebuild_error(self, error: dict[str, str]) -> BaseException:
        cls = getattr(self.lib, str(error.get("type")), None)
        if not (isinstance(cls, type) and issubclass(cls, self.lib.TransportError)):
            cls = self.lib.TransportError
        return cls(str(error.get("message", "")))


def _stream_classes(lib: ModuleType) -> tuple[type, type, type]:
    """Byte streams of *lib*'s own base classes: recorded chunks (for sync and async clients),
    and a sync and an async tee feeding a live stream's chunks to a StreamTap."""

    class Chunks(lib.SyncByteStream, lib.AsyncByteStream):  # type: ignore[name-defined,misc]
        def __init__(self, chunks: tuple[bytes, ...], cut: BaseException | None) -> None:
            self._chunks, self._cut = chunks, cut

        def __iter__(self) -> Iterator[bytes]:
            yield from self._chunks
            if self._cut is not None:  # the recorded stream was cut off here
                raise self._cut

        async def __aiter__(self) -> AsyncIterator[bytes]:
            for chunk in self._chunks:
                yield chunk
            if self._cut is not None:
                raise self._cut

    class SyncTee(lib.SyncByteStream):  # type: ignore[name-defined,misc]
        def __init__(self, inner: Any, tap: StreamTap) -> None:
            self.inner, self.tap = inner, tap

        def __iter__(self) -> Iterator[bytes]:
            keep = self.tap.chunks.append  # per chunk: one C call, no Python frame
            try:
                for chunk in self.inner:
                    keep(chunk)
                    yield chunk
            except lib.TransportError as exc:  # the network cut the stream off
                self.tap.cut(exc)
                raise
            self.tap.finish(ended=True)

        def close(self) -> None:
            try:
                self.inner.close()
            finally:
                self.tap.finish()

    class AsyncTee(lib.AsyncByteStream):  # type: ignore[name-defined,misc]
        def __init__(self, inner: Any, tap: StreamTap) -> None:
            self.inner, self.tap = inner, tap

        async def __aiter__(self) -> AsyncIterator[bytes]:
            keep = self.tap.chunks.append
            try:
                async for chunk in self.inner:
                    keep(chunk)
                    yield chunk
            except lib.TransportError as exc:  # the network cut the stream off
                self.tap.cut(exc)
                raise
            await self.tap.exchange.session.ahand_off()  # the stream ends in its turn
            self.tap.finish(ended=True)

        async def aclose(self) -> None:
            try:
                await self.inner.aclose()
            finally:
                self.tap.finish()  # closed before its end: it completes where it was delivered

    return Chunks, SyncTee, AsyncTee
