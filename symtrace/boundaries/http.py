"""The LLM value boundary: where the provider SDK hands a request to httpx.

Every framework here reaches its provider through the `openai` SDK, which sends through an
httpx transport. Patching `HTTPTransport.handle_request` and
`AsyncHTTPTransport.handle_async_request` at class level therefore sees every call (sync,
async, streaming, retries, framework-internal calls) without touching framework code, and a
replayed response re-enters the SDK exactly where a live one would: status, the headers that
matter, the JSON body, or the SSE stream chunk for chunk.

Chat/completions-style requests become `agent_action` events. Any other HTTP exchange made
through httpx is a tool boundary named "http", so replay never reaches the network for it
either. Transport failures (connection refused, timeouts) are recorded and re-raised as the
same httpx exception type.
"""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import httpx
import orjson

from symtrace.model.canonical import JSONValue, canonical_http_request, canonical_tool_call
from symtrace.patching import Patch, PatchSet
from symtrace.session.core import LLM, TOOL, BoundaryCall, Ticket, active

LLM_PATH_SUFFIXES = ("/chat/completions", "/completions", "/responses")
KEPT_RESPONSE_HEADERS = (
    "content-type",
    "retry-after",
    "retry-after-ms",
    "x-should-retry",
    "x-request-id",
)

_install_lock = threading.Lock()
_install_count = 0
# Streams still open: finished (with what was read) when the session ends, so a stream the
# program abandoned without closing is still recorded rather than silently missing.
_open_streams: dict[int, Callable[[], None]] = {}


# -- install / uninstall (symmetric, reference-counted) --------------------------------------
def install() -> None:
    global _install_count
    with _install_lock:
        if _install_count == 0:
            PATCHES.install()
        _install_count += 1


def uninstall() -> None:
    global _install_count
    with _install_lock:
        if _install_count == 0:
            return
        _install_count -= 1
        if _install_count == 0:
            PATCHES.uninstall()


def is_installed() -> bool:
    return _install_count > 0


def finish_open_streams() -> None:
    """Record every stream the program left open (called when a session ends)."""
    for finish in list(_open_streams.values()):
        finish()


# -- the two shells --------------------------------------------------------------------------
def _sync_handle(self: httpx.HTTPTransport, request: httpx.Request) -> httpx.Response:
    original = PATCHES.original(httpx.HTTPTransport, "handle_request")
    session = active()
    if session is None:
        return original(self, request)
    request.read()
    call = to_call(request, session.scrub)
    ticket = session.begin(call)
    if not ticket.live:
        return from_record(call, ticket.served, request)
    live_request = with_intervention(request, ticket)
    try:
        response = original(self, live_request)
    except httpx.TransportError as exc:
        _finish(session, ticket, call, {"error": _error(exc)})
        raise
    if _is_stream(response):
        return _tee(session, ticket, call, response, _SyncTee)
    response.read()
    record = _response_record(response, response.content)
    _finish(session, ticket, call, record)
    return _rebuild(response, response.content)


async def _async_handle(self: httpx.AsyncHTTPTransport, request: httpx.Request) -> httpx.Response:
    original = PATCHES.original(httpx.AsyncHTTPTransport, "handle_async_request")
    session = active()
    if session is None:
        return await original(self, request)
    await request.aread()
    call = to_call(request, session.scrub)
    ticket = await session.abegin(call)  # a replay may hold it for the completion order
    if not ticket.live:
        return from_record(call, ticket.served, request)
    live_request = with_intervention(request, ticket)
    try:
        response = await original(self, live_request)
    except httpx.TransportError as exc:
        _finish(session, ticket, call, {"error": _error(exc)})
        raise
    if _is_stream(response):
        return _tee(session, ticket, call, response, _AsyncTee)
    await response.aread()
    record = _response_record(response, response.content)
    _finish(session, ticket, call, record)
    return _rebuild(response, response.content)


# -- request side ----------------------------------------------------------------------------
# The two patches (the shells above replace httpx's transports; they call the originals
# through PATCHES.original).
PATCHES = PatchSet((
    Patch(httpx.HTTPTransport, "handle_request", lambda _original: _sync_handle),
    Patch(httpx.AsyncHTTPTransport, "handle_async_request", lambda _original: _async_handle),
))


def is_llm_request(request: httpx.Request) -> bool:
    return request.method == "POST" and request.url.path.endswith(LLM_PATH_SUFFIXES)


def to_call(request: httpx.Request, scrub: Callable[[JSONValue], JSONValue]) -> BoundaryCall:
    body = _parse_body(request.content)
    # The whole request (query included: `?api_key=…`) is redacted before it is hashed.
    http = scrub(
        canonical_http_request(request.method, request.url.path, request.url.query.decode(), body)
    )
    meta = {"host": request.url.host, "port": request.url.port}
    if is_llm_request(request):
        return BoundaryCall.make(LLM, http, meta)
    return BoundaryCall.make(TOOL, canonical_tool_call("http", http), {**meta, "tool": "http"})


def with_intervention(request: httpx.Request, ticket: Ticket) -> httpx.Request:
    """The request to send live: the original, or q ⊕ Δ at a selective replay's anchor."""
    if ticket.intervention is None:
        return request
    body = ticket.intervention.apply_to_body(orjson.loads(request.content))
    headers = {k: v for k, v in request.headers.items() if k.lower() != "content-length"}
    return httpx.Request(
        request.method,
        request.url,
        headers=headers,
        content=orjson.dumps(body),
        extensions=request.extensions,
    )


def _parse_body(content: bytes) -> JSONValue | bytes | None:
    if not content:
        return None
    try:
        return orjson.loads(content)
    except orjson.JSONDecodeError:
        return content


# -- response side ---------------------------------------------------------------------------
def _is_stream(response: httpx.Response) -> bool:
    return response.headers.get("content-type", "").startswith("text/event-stream")


def _kept_headers(response: httpx.Response) -> dict[str, str]:
    return {
        name: response.headers[name] for name in KEPT_RESPONSE_HEADERS if name in response.headers
    }


def _response_record(response: httpx.Response, content: bytes) -> dict[str, JSONValue]:
    try:
        body: JSONValue = orjson.loads(content) if content else None
    except orjson.JSONDecodeError:
        body = {"$text": content.decode("utf-8", "replace")}
    return {"status": response.status_code, "headers": _kept_headers(response), "body": body}


def _stream_record(response: httpx.Response, chunks: list[bytes]) -> dict[str, JSONValue]:
    data = b"".join(chunks)
    encoding = response.headers.get("content-encoding", "identity")
    if encoding not in ("", "identity"):
        # Keep the decoded stream: what the SDK saw. One chunk, since boundaries are lost.
        decoded = httpx.Response(200, headers={"content-encoding": encoding}, content=data)
        texts = [decoded.read().decode("utf-8", "replace")]
    else:
        texts = [chunk.decode("utf-8", "replace") for chunk in chunks]
    return {
        "status": response.status_code,
        "headers": _kept_headers(response),
        "stream": True,
        "chunks": texts,
        "body": assemble_sse("".join(texts)),
    }


def _rebuild(response: httpx.Response, content: bytes) -> httpx.Response:
    headers = [
        (k, v)
        for k, v in response.headers.multi_items()
        if k.lower() not in ("content-encoding", "content-length", "transfer-encoding")
    ]
    return httpx.Response(
        response.status_code, headers=headers, content=content, extensions=response.extensions
    )


def from_record(call: BoundaryCall, served: JSONValue, request: httpx.Request) -> httpx.Response:
    """Materialise a recorded response (or re-raise a recorded transport error)."""
    record = served
    if call.kind == TOOL:  # a non-LLM HTTP exchange recorded as a tool outcome
        assert isinstance(served, dict)
        record = served["value"] if served.get("ok") else {"error": served.get("error")}
    assert isinstance(record, dict)
    if "error" in record:
        raise _rebuild_error(record["error"], request)
    headers = dict(record.get("headers") or {})
    if record.get("stream"):
        chunks = [c.encode() for c in record.get("chunks") or []]
        return httpx.Response(
            record["status"], headers=headers, stream=_ChunkStream(chunks), request=request
        )
    body = record.get("body")
    if isinstance(body, dict) and set(body) == {"$text"}:
        content = body["$text"].encode()
    else:
        content = orjson.dumps(body) if body is not None else b""
    return httpx.Response(record["status"], headers=headers, content=content, request=request)


class _ChunkStream(httpx.SyncByteStream, httpx.AsyncByteStream):
    """Recorded SSE chunks, yielded one by one to sync and async consumers."""

    def __init__(self, chunks: list[bytes]) -> None:
        self._chunks = chunks

    def __iter__(self) -> Iterator[bytes]:
        yield from self._chunks

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for chunk in self._chunks:
            yield chunk


class _StreamTap:
    """Collects a live stream's chunks as the program reads them; records them once, when
    the stream ends, is closed, or the session ends with it still open."""

    def __init__(self, session: Any, ticket: Ticket, call: BoundaryCall,
                 response: httpx.Response) -> None:
        self.inner: Any = response.stream
        self.chunks: list[bytes] = []
        self._record = lambda: _finish(session, ticket, call,
                                       _stream_record(response, self.chunks))
        self._done = threading.Lock()
        self._finished = False
        # The response reached the program now: an abandoned stream completes here in the
        # completion order (a stream read to its end completes where it ends).
        self._ticket = ticket
        self._delivered_rank = session.reserve_completion()
        _open_streams[id(self)] = lambda: self.finish(abandoned=True)

    def finish(self, abandoned: bool = False) -> None:
        with self._done:
            if self._finished:
                return
            self._finished = True
        _open_streams.pop(id(self), None)
        if abandoned:
            self._ticket.completed = self._delivered_rank
        self._record()


class _SyncTee(httpx.SyncByteStream):
    def __init__(self, tap: _StreamTap) -> None:
        self.tap = tap

    def __iter__(self) -> Iterator[bytes]:
        for chunk in self.tap.inner:
            self.tap.chunks.append(chunk)
            yield chunk
        self.tap.finish()

    def close(self) -> None:
        try:
            self.tap.inner.close()
        finally:
            self.tap.finish()


class _AsyncTee(httpx.AsyncByteStream):
    def __init__(self, tap: _StreamTap) -> None:
        self.tap = tap

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self.tap.inner:
            self.tap.chunks.append(chunk)
            yield chunk
        self.tap.finish()

    async def aclose(self) -> None:
        try:
            await self.tap.inner.aclose()
        finally:
            self.tap.finish()


def _tee(session: Any, ticket: Ticket, call: BoundaryCall, response: httpx.Response,
         tee: type[_SyncTee] | type[_AsyncTee]) -> httpx.Response:
    stream = tee(_StreamTap(session, ticket, call, response))
    return httpx.Response(
        response.status_code, headers=response.headers, stream=stream,
        extensions=response.extensions,
    )


def _finish(session: Any, ticket: Ticket, call: BoundaryCall, record: dict[str, JSONValue]) -> None:
    if call.kind == LLM:
        session.finish(ticket, record)
    elif "error" in record:
        session.finish(ticket, {"ok": False, "error": record["error"]})
    else:
        session.finish(ticket, {"ok": True, "value": record})


# -- errors ----------------------------------------------------------------------------------
def _error(exc: BaseException) -> dict[str, str]:
    return {"type": type(exc).__name__, "module": type(exc).__module__, "message": str(exc)}


def _rebuild_error(error: JSONValue, request: httpx.Request) -> Exception:
    assert isinstance(error, dict)
    cls = getattr(httpx, str(error.get("type")), None)
    if not (isinstance(cls, type) and issubclass(cls, httpx.TransportError)):
        cls = httpx.TransportError
    return cls(str(error.get("message", "")), request=request)


# -- SSE assembly (analysis only; replay serves the chunks) ----------------------------------
def assemble_sse(text: str) -> JSONValue:
    """Rebuild one chat.completion from `data:` chunks, for inspection and diagnosis."""
    content: list[str] = []
    calls: dict[int, dict[str, Any]] = {}
    meta: dict[str, Any] = {}
    finish_reason = None
    for line in text.splitlines():
        if not line.startswith("data:"):
            continue
        payload = line[5:].strip()
        if not payload or payload == "[DONE]":
            continue
        try:
            chunk = orjson.loads(payload)
        except orjson.JSONDecodeError:
            continue
        if not isinstance(chunk, dict):
            continue
        for key in ("id", "model", "created"):
            meta.setdefault(key, chunk.get(key))
        if chunk.get("usage"):
            meta["usage"] = chunk["usage"]
        for choice in chunk.get("choices") or []:
            delta = choice.get("delta") or {}
            if delta.get("content"):
                content.append(delta["content"])
            for tc in delta.get("tool_calls") or []:
                slot = calls.setdefault(
                    tc.get("index", 0),
                    {"id": None, "type": "function", "function": {"name": "", "arguments": ""}},
                )
                slot["id"] = tc.get("id") or slot["id"]
                function = tc.get("function") or {}
                slot["function"]["name"] += function.get("name") or ""
                slot["function"]["arguments"] += function.get("arguments") or ""
            finish_reason = choice.get("finish_reason") or finish_reason
    message: dict[str, Any] = {"role": "assistant", "content": "".join(content) or None}
    if calls:
        message["tool_calls"] = [calls[i] for i in sorted(calls)]
    return {
        "object": "chat.completion",
        **{k: v for k, v in meta.items() if v is not None},
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
    }
