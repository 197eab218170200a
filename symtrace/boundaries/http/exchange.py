"""The LLM/HTTP exchange core: one intercepted request, whatever library carried it.

A seam (httpx, httpx2, aiohttp, urllib3) turns its library's request into a `WireRequest`
and drives one `Exchange` through the same steps, sync or async:

    exchange = Exchange(session, wire, seam)           # canonical, redacted BoundaryCall
    ticket = session.begin(exchange.call)              # or `await session.abegin(...)`
    if not ticket.live:
        return materialise(exchange.served(ticket))    # a Recorded response, or its error
    content = exchange.live_content(ticket)            # q ⊕ Δ at a selective anchor
    with sending(seam): response = <send it>           # connections opened here are the seam's
    exchange.completed(ticket, status, headers, body)  # or exchange.failed / exchange.tap

Everything that is not library plumbing lives here once: which requests are LLM calls (and in
which wire format), the canonical key, redaction (the session scrubs), what of a response is
recorded, stream assembly, and how a transport failure is kept. A seam only converts types.

Chat/Responses/Anthropic create calls become `agent_action` events; any other exchange is a
tool boundary named "http", so replay never reaches the network for it either.
"""

from __future__ import annotations

import codecs
import threading
from collections.abc import Callable, Iterable
from contextvars import ContextVar
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any, NamedTuple, Protocol

import orjson

from symtrace.errors import SymtraceError
from symtrace.model.attempts import CUT
from symtrace.model.canonical import JSONValue, canonical_tool_call, scanned_http_request
from symtrace.model.llm_streams import assemble
from symtrace.model.llm_wire import WireFormat, wire_format
from symtrace.model.shape import restore, shape_of
from symtrace.session.core import LLM, TOOL, BoundaryCall, Session, Ticket

# Response headers an SDK acts on (content type, retry advice, request ids for its errors).
KEPT_RESPONSE_HEADERS = (
    "content-type",
    "retry-after",
    "retry-after-ms",
    "x-should-retry",
    "x-request-id",
    "request-id",
)

_KEPT = frozenset(KEPT_RESPONSE_HEADERS)

# The library whose seam is sending right now (None outside every seam): a connection opened
# while it is set went through a recorded boundary (see symtrace.boundaries.egress).
_SENDING: ContextVar[str | None] = ContextVar("symtrace_sending", default=None)


class sending:  # a context manager used like a function: `with sending(lib):`
    """Mark the block as *library*'s seam sending (a class: no generator per request)."""

    __slots__ = ("_library", "_token")

    def __init__(self, library: str) -> None:
        self._library = library

    def __enter__(self) -> None:
        self._token = _SENDING.set(self._library)

    def __exit__(self, *exc: object) -> None:
        _SENDING.reset(self._token)


def sending_library() -> str | None:
    return _SENDING.get()


class UnsupportedRequestBody(SymtraceError, TypeError):
    """A request body symtrace cannot snapshot (a stream, files): refused, not guessed."""


class WireRequest(NamedTuple):
    """A request as every seam sees it: method, where, and the body bytes (a named tuple: a
    frozen dataclass takes 2 µs to build, one `object.__setattr__` per field, every call)."""

    method: str
    scheme: str
    host: str
    port: int | None
    path: str
    query: str
    content: bytes


@dataclass(frozen=True, slots=True)
class Recorded:
    """A response to hand back: a plain body, or (`chunks` set) a stream served chunk by chunk
    (`cut`: the error that cut it off after its last chunk, when the network did)."""

    status: int
    headers: dict[str, str]
    content: bytes
    chunks: tuple[bytes, ...] | None = None
    cut: BaseException | None = None


class SeamErrors(Protocol):
    """How a seam's library names its transport failures."""

    library: str

    def rebuild_error(self, error: dict[str, str]) -> BaseException: ...


class Exchange:
    """One request through a seam: its canonical call, and what to record or serve."""

    def __init__(self, session: Session, wire: WireRequest, seam: SeamErrors) -> None:
        self.session = session
        self.wire = wire
        self.seam = seam
        self.format = wire_format(wire.method, wire.path)
        self.call = _to_call(wire, self.format, session, seam.library)

    # -- replay ----------------------------------------------------------------------------
    def served(self, ticket: Ticket) -> Recorded:
        """The recorded response of a matched call (raises its recorded transport error)."""
        record = ticket.served
        if self.call.kind == TOOL:  # a non-LLM exchange is recorded as a tool outcome
            if not isinstance(record, dict):
                raise TypeError(f"{ticket.event_id}: a recorded http outcome is not an object")
            record = record["value"] if record.get("ok") else {"error": record.get("error")}
        if not isinstance(record, dict):
            raise TypeError(f"{ticket.event_id}: a recorded response is not an object")
        if "error" in record:
            raise self.seam.rebuild_error(dict(record["error"] or {}))
        headers = {str(k): str(v) for k, v in (record.get("headers") or {}).items()}
        if record.get("stream"):
            chunks = tuple(c.encode() for c in record.get("chunks") or [])
            cut = record.get(CUT)
            return Recorded(int(record["status"]), headers, b"".join(chunks), chunks,
                            self.seam.rebuild_error(dict(cut)) if isinstance(cut, dict) else None)
        body = restore(record.get("body"), record.get(BODY_SHAPE))
        if isinstance(body, dict) and set(body) == {"$text"}:
            content = str(body["$text"]).encode()
        else:
            content = orjson.dumps(body) if body is not None else b""
        return Recorded(int(record["status"]), headers, content)

    # -- live ------------------------------------------------------------------------------
    def live_content(self, ticket: Ticket) -> bytes | None:
        """The body to send live when it differs from the program's (q ⊕ Δ), else None."""
        if ticket.intervention is None:
            return None
        body = ticket.intervention.apply_to_body(orjson.loads(self.wire.content),
                                                 self.format or WireFormat.CHAT)
        return orjson.dumps(body)

    def failed(self, ticket: Ticket, exc: BaseException) -> None:
        self._finish(ticket, {"error": error_record(exc)})

    def completed(self, ticket: Ticket, status: int, headers: Any, content: bytes, *,
                  kept: bool = False) -> None:
        """Record a plain response. *kept*: *headers* is already `kept_headers` of the
        response's (a dict the seam made with `kept_header_items`), not the library's own."""
        try:
            body: JSONValue = orjson.loads(content) if content else None
        except orjson.JSONDecodeError:
            body = {"$text": content.decode("utf-8", "replace")}
        record = {"status": status, "headers": headers if kept else kept_headers(headers),
                  "body": body}
        shape = shape_of(body)  # key order and 1.0 as the server sent them (model/shape.py)
        if shape is not None:
            record[BODY_SHAPE] = shape
        self._finish(ticket, record)

    def tap(self, ticket: Ticket, status: int, headers: Any,
            decode: Callable[[bytes], bytes] | None = None, *, kept: bool = False) -> StreamTap:
        """A tap for a live stream: the seam feeds it the chunks the program reads.

        *decode* undoes a content-encoding (the recorded chunks are what the SDK parsed);
        *kept* as in `completed`."""
        return StreamTap(self, ticket, status, headers if kept else kept_headers(headers),
                         decode)

    def streamed(self, ticket: Ticket, status: int, headers: Any, chunks: list[bytes],
                 cut: BaseException | None = None) -> None:
        """Record a stream response: its chunks (served one by one) and the assembled object;
        *cut*: the transport error that cut it off (replay raises it after the chunks)."""
        texts = chunk_texts(chunks)
        record: dict[str, JSONValue] = {
            "status": status,
            "headers": kept_headers(headers),
            "stream": True,
            "chunks": texts,
            "body": assemble(self.format, "".join(texts)),
        }
        if cut is not None:
            record[CUT] = error_record(cut)
        self._finish(ticket, record)

    def _finish(self, ticket: Ticket, record: dict[str, JSONValue]) -> None:
        if not self.session.sink.accepting:
            # The session ended first (its bundle sealed or dropped; the call still in flight
            # was recorded as abandoned): the result reaches the program, nothing records it.
            return
        if self.call.kind == LLM:
            self.session.finish(ticket, record)
        elif "error" in record:
            self.session.finish(ticket, {"ok": False, "error": record["error"]})
        else:
            self.session.finish(ticket, {"ok": True, "value": record})


def error_record(exc: BaseException) -> dict[str, JSONValue]:
    """A transport error as recorded: its class (rebuilt by the seam on replay) and message."""
    return {"type": type(exc).__name__, "module": type(exc).__module__, "message": str(exc)}


BODY_SHAPE = "body_shape"  # what canonical JSON forgets of a response body (model/shape.py)


def chunk_texts(chunks: list[bytes]) -> list[str]:
    """*chunks* as texts whose concatenation is the stream's text: `b"".join(chunks)` decoded.

    A network cuts a stream anywhere, through a multi-byte character too; decoding each chunk
    on its own would keep both halves as U+FFFD and replay would serve those, not the bytes
    the program received. Such a character is kept whole in the chunk where it ends (a chunk
    holding only its first bytes becomes ""), so replay serves the same bytes, cut at most
    three bytes off. Bytes that are not UTF-8 at all are recorded as U+FFFD, as in a whole
    body's `$text` (a JSON bundle keeps text)."""
    try:  # the common case, at C speed: every chunk is whole UTF-8 on its own
        return [chunk.decode() for chunk in chunks]
    except UnicodeDecodeError:
        pass
    # An incremental decoder, inlined (codecs' own runs a Python method per chunk): a chunk's
    # unfinished last character waits for the next one; what it gives equals the joined
    # bytes' decoding, replacements included.
    decode = codecs.utf_8_decode
    texts: list[str] = []
    keep = texts.append
    rest = b""
    for chunk in chunks:
        if rest:
            chunk = rest + chunk
        text, used = decode(chunk, "replace", False)
        rest = chunk[used:] if used != len(chunk) else b""
        keep(text)
    if rest:  # the stream was cut off inside a character
        texts[-1] += decode(rest, "replace", True)[0]
    return texts


def is_stream(headers: Any) -> bool:
    return str(headers.get("content-type", "")).startswith("text/event-stream")


def reason_phrase(status: int) -> str:
    """The standard reason phrase of *status*: a replayed response's (the bundle keeps none)."""
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "OK" if status < 400 else "Error"


def kept_headers(headers: Any) -> dict[str, str]:
    return {name: str(headers[name]) for name in KEPT_RESPONSE_HEADERS if name in headers}


def kept_header_items(items: Iterable[tuple[str, str]]) -> dict[str, str]:
    """`kept_headers` of the (lowercase name, value) pairs of a response, in one pass (a
    library's case-insensitive `in` and `[]` may each scan every header). Repeated headers
    are joined by ", ", as httpx's and urllib3's `[]` join them."""
    found: dict[str, list[str]] = {}
    for name, value in items:
        if name in _KEPT:
            found.setdefault(name, []).append(value)
    return {name: ", ".join(found[name]) for name in KEPT_RESPONSE_HEADERS if name in found}


def _to_call(wire: WireRequest, fmt: WireFormat | None, session: Session,
             library: str) -> BoundaryCall:
    body = _parse_body(wire.content)
    # One walk of the parsed body finds both whether it is canonical as parsed and the
    # strings redaction searches (a conversation re-sends its history: it is the most work).
    request, strings = scanned_http_request(wire.method, wire.path, wire.query, body)
    # The whole request (query included: `?api_key=…`) is redacted before it is hashed.
    http = session.scrub(request, strings)
    port = wire.port or (443 if wire.scheme == "https" else 80)
    meta: dict[str, Any] = {"host": wire.host, "port": port, "transport": library}
    # scanned_http_request returns canonical data, scrubbing only replaces strings in it:
    # the request is hashed as it is, not canonicalised a second time.
    if fmt is not None:
        meta["wire_format"] = fmt.value
        return BoundaryCall.make(LLM, http, meta, canonical=True)
    meta["tool"] = "http"
    return BoundaryCall.make(TOOL, canonical_tool_call("http", http), meta, canonical=True)


def _parse_body(content: bytes) -> JSONValue | bytes | None:
    if not content:
        return None
    try:
        return orjson.loads(content)
    except orjson.JSONDecodeError:
        return content


# -- live streams ----------------------------------------------------------------------------
# Streams still open: finished (with what was read) when the session ends, so a stream the
# program abandoned without closing is still recorded rather than silently missing.
_open_streams: dict[int, Callable[[], None]] = {}


def finish_open_streams() -> None:
    """Record every stream the program left open (called when a session ends)."""
    for finish in list(_open_streams.values()):
        finish()


class StreamTap:
    """Collects a live stream's chunks as the program reads them (a seam's tee appends each
    to `chunks` as it passes it on, nothing more: the stream is parsed once, at its end);
    records them once, when the stream ends, is closed, or the session ends with it open.

    Its completion rank: a stream read to its last chunk completes where it ends. One that
    ends before that (closed early, explicitly or by a `with` block's exit; garbage-collected,
    which closes an SDK's stream; abandoned at session end; cut off by the network) completes
    where it reached the program: the rank reserved then. Its end may come after calls the
    program made in the meantime (a guard that reads the first tokens, then acts), and a
    replay, which serves the stream whole when it is asked for, could never reach a rank
    after those."""

    def __init__(self, exchange: Exchange, ticket: Ticket, status: int,
                 headers: dict[str, str], decode: Callable[[bytes], bytes] | None) -> None:
        self.exchange = exchange
        self.decode = decode
        self.ticket = ticket
        self.status = status
        self.headers = headers
        self.chunks: list[bytes] = []
        self._done = threading.Lock()
        self._finished = False
        self._cut: BaseException | None = None
        # The response reached the program now: a stream that ends before its last chunk
        # completes here in the completion order (one read to its end, where it ends).
        self._delivered_rank = exchange.session.reserve_completion()
        _open_streams[id(self)] = self.finish

    @property
    def finished(self) -> bool:
        return self._finished

    def cut(self, exc: BaseException) -> None:
        """The network cut the stream off with *exc* (the seam re-raises it): it ends now,
        before its last chunk, and replay raises the same error after the same chunks."""
        self._cut = exc
        self.finish()

    def finish(self, *, ended: bool = False) -> None:
        """Record the stream. *ended*: the program read it to its last chunk (the seam's
        tee saw the library's stream run out); otherwise it stopped early."""
        with self._done:
            if self._finished:
                return
            self._finished = True
        _open_streams.pop(id(self), None)
        if not ended:
            self.ticket.completed = self._delivered_rank
        chunks = [self.decode(b"".join(self.chunks))] if self.decode else self.chunks
        self.exchange.streamed(self.ticket, self.status, self.headers, chunks, self._cut)
