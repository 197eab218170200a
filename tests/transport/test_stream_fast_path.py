"""The stream-recording fast path against its plain reference.

Recording a live stream passes each chunk on through a seam's tee and parses the stream once,
at its end (`llm_streams.sse_data`, a few passes of C string methods). The reference is the
line-by-line parser `sse_events`. Real SSE bodies from the stub endpoint (chat, Responses,
Anthropic; text with non-ASCII and tool calls), cut at random byte offsets as a network cuts
them, must give the same assembled response either way, and the program must receive exactly
the chunks the inner stream yielded, as it yielded them; hand-made and randomly generated
texts cover the SSE corners (CRLF, other line breaks, several `data:` lines, comments,
unparsable payloads).
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator, Iterator
from types import SimpleNamespace
from typing import Any

import httpx
import orjson
import pytest

from symtrace.boundaries.http.exchange import chunk_texts
from symtrace.boundaries.http.httpx_family import HttpxSeam
from symtrace.model import llm_streams
from symtrace.model.llm_streams import assemble, sse_data, sse_events
from symtrace.model.llm_wire import WireFormat
from symtrace.stub import StubLLM

httpx2 = pytest.importorskip("httpx2")

TEXT = "Grüße aus Köln — naïve café ☃ 🙂, then plain ASCII words to stream in pieces."
SCRIPT: dict[str, Any] = {
    "rules": [
        {"match": {"last_user_contains": "tools"}, "reply": {
            "content": "Checking. ☃", "tool_calls": [
                {"name": "get_weather", "arguments": {"city": "Zürich", "days": 2}},
                {"name": "get_time", "arguments": {"tz": "Europe/Zurich"}}]}},
    ],
    "default": {"content": TEXT},
}
MESSAGES = {"tools": [{"role": "user", "content": "tools please"}],
            "text": [{"role": "user", "content": "hello"}]}
ENDPOINTS = [  # (path, wire format, extra request fields)
    ("/chat/completions", WireFormat.CHAT, {}),
    ("/chat/completions", WireFormat.CHAT, {"stream_options": {"include_usage": True}}),
    ("/responses", WireFormat.RESPONSES, {}),
    ("/messages", WireFormat.ANTHROPIC, {"max_tokens": 64}),
]


@pytest.fixture(scope="module")
def bodies() -> list[tuple[WireFormat, bytes]]:
    """Raw SSE bodies, as the stub endpoint sends them over HTTP (no symtrace)."""
    out = []
    with StubLLM(mode="scripted", script=SCRIPT) as stub, httpx.Client(timeout=10) as client:
        for path, fmt, extra in ENDPOINTS:
            for messages in MESSAGES.values():
                body = {"model": "m", "stream": True, "messages": messages, **extra}
                if fmt is WireFormat.RESPONSES:
                    body["input"] = messages[0]["content"]
                response = client.post(stub.url + path, json=body)
                assert response.status_code == 200, response.text
                assert response.headers["content-type"].startswith("text/event-stream")
                out.append((fmt, response.content))
    return out


def reference_data(text: str) -> list[Any]:
    return [data for _, data in sse_events(text)]


def reference_assemble(fmt: WireFormat, text: str, monkeypatch: pytest.MonkeyPatch) -> Any:
    with monkeypatch.context() as patch:
        patch.setattr(llm_streams, "sse_data", reference_data)
        return assemble(fmt, text)


def cut(data: bytes, rng: random.Random) -> list[bytes]:
    """*data* cut at random byte offsets (through multi-byte characters too), 1..40 pieces."""
    points = sorted(rng.sample(range(1, len(data)), min(len(data) - 1, rng.randint(0, 39))))
    return [data[a:b] for a, b in zip([0, *points], [*points, len(data)], strict=True)]


class Tap(SimpleNamespace):
    """What a tee touches of a StreamTap: its chunk list, finish, and the session's turn."""

    def __init__(self) -> None:
        async def ahand_off() -> None:
            self.turns += 1

        super().__init__(chunks=[], finishes=0, turns=0, ended=None,
                         exchange=SimpleNamespace(session=SimpleNamespace(ahand_off=ahand_off)))

    @property
    def finished(self) -> bool:
        return self.finishes > 0

    def finish(self, *, ended: bool = False) -> None:
        if not self.finishes:
            self.ended = ended  # the first finish records the stream
        self.finishes += 1


class Inner:
    """A live byte stream yielding given chunks (sync and async), remembering it was closed."""

    def __init__(self, chunks: list[bytes]) -> None:
        self.chunks, self.closed = chunks, False

    def __iter__(self) -> Iterator[bytes]:
        yield from self.chunks

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for chunk in self.chunks:
            yield chunk

    def close(self) -> None:
        self.closed = True

    async def aclose(self) -> None:
        self.closed = True


def read(lib: Any, asynchronous: bool, chunks: list[bytes], stop: int | None = None
         ) -> tuple[list[bytes], Tap, Inner]:
    """The chunks a program reads through *lib*'s tee (closing it after *stop* chunks)."""
    seam, tap, inner = HttpxSeam(lib), Tap(), Inner(chunks)
    tee = (seam._async_tee if asynchronous else seam._sync_tee)(inner, tap)
    received: list[bytes] = []
    if not asynchronous:
        for chunk in tee:
            received.append(chunk)
            if len(received) == stop:
                break
        tee.close()
        return received, tap, inner

    async def consume() -> None:
        async for chunk in tee:
            received.append(chunk)
            if len(received) == stop:
                break
        await tee.aclose()

    asyncio.run(consume())
    return received, tap, inner


@pytest.mark.parametrize("lib", [httpx, httpx2], ids=["httpx", "httpx2"])
@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
def test_random_cuts_of_real_streams_assemble_and_pass_through_as_the_reference(
        bodies, lib, asynchronous, monkeypatch):
    rng = random.Random(20261204)
    for fmt, body in bodies:
        for _ in range(12):
            chunks = cut(body, rng)
            received, tap, inner = read(lib, asynchronous, chunks)
            # the program gets the inner stream's own chunk objects, in order, all of them
            assert len(received) == len(chunks)
            assert all(a is b for a, b in zip(received, chunks, strict=True))
            assert tap.chunks == chunks and tap.finishes >= 1 and inner.closed
            assert tap.ended is True  # read to its end: it completes where it ends
            # what Exchange.streamed parses: the chunks' text (a cut character kept whole)
            text = "".join(chunk_texts(tap.chunks))
            assert text == body.decode()
            assert list(sse_data(text)) == reference_data(text)
            fast = assemble(fmt, text)
            assert fast == reference_assemble(fmt, text, monkeypatch)
            assert orjson.dumps(fast, option=orjson.OPT_SORT_KEYS) == orjson.dumps(
                reference_assemble(fmt, text, monkeypatch), option=orjson.OPT_SORT_KEYS)


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
def test_an_abandoned_stream_keeps_what_the_program_read(bodies, asynchronous):
    rng = random.Random(7)
    for _, body in bodies:
        chunks = cut(body, rng)
        stop = rng.randint(1, len(chunks))
        received, tap, inner = read(httpx, asynchronous, chunks, stop=stop)
        assert received == chunks[:stop] and tap.chunks == chunks[:stop]
        assert tap.finishes >= 1 and inner.closed
        # closed before its end (the inner stream never ran out, even after its last chunk):
        # it completes where it reached the program, the rank it reserved then; no turn now
        assert tap.ended is False and tap.turns == 0


def test_the_stub_bodies_take_each_fast_path(bodies):
    """The real bodies exercise both shortcuts (one-line events; `event:` + `data:` events),
    and really are parsed: a tautology would pass on empty lists."""
    texts = [body.decode() for _, body in bodies]
    assert any(t.count("\n") == 2 * len(t.split("\n\n")) - 2 for t in texts)
    assert any("\nevent:" in "\n" + t for t in texts)
    assert all(len(list(sse_data(t))) >= 3 for t in texts)


CORNERS = [
    "",
    "\n\n\n",
    "data: {\"a\": 1}",  # no final blank line
    "data: {\"a\": 1}\n",
    "data:{\"a\":1}\n\ndata:   {\"b\": 2}   \n\n",
    "data: {\"a\": 1}\r\n\r\ndata: {\"b\": 2}\r\n\r\n",  # CRLF
    "data: {\"a\": 1}\r\rdata: {\"b\": 2}\r\r",  # lone CR
    "data: {\"a\": \"x\u2028y\"}\n\ndata: {\"b\": 2}\n\n",  # a break splitlines sees inside JSON
    "data: {\"a\": \"x\x85y\"}\n\n",
    "data: {\"a\": \n\x0cdata: 1}\n\n",
    "data: {\"a\":\ndata: 1}\n\n",  # several data lines: joined by "\n"
    "data: [1,\ndata: 2]\nid: 3\ndata: \n\n",
    "event: x\ndata: {\"a\": 1}\n\nevent: y\n\ndata: {\"b\": 2}\nretry: 5\n\n",
    ": comment\ndata: {\"a\": 1}\n\n: another\n\n",
    "data: [DONE]\n\ndata:[DONE]\n\ndata: \"[DONE]\"\n\n",
    "data: 1,2\n\ndata: {\"a\": 1},{\"b\": 2}\n\ndata: [3\n\ndata: 4]\n\n",  # unparsable, skipped
    "data: {oops}\n\ndata: {\"a\": 1}\n\n",
    "\n\n\ndata: {\"a\": 1}\n\n\n\n\ndata: {\"b\": 2}\n",
    "data: \t{\"a\": 1}\t \n\n",
    "DATA: {\"a\": 1}\n\n data: {\"b\": 2}\n\n",  # not data lines
]


@pytest.mark.parametrize("text", CORNERS)
def test_sse_corners_parse_as_the_reference(text):
    assert list(sse_data(text)) == reference_data(text)


def test_random_sse_texts_parse_as_the_reference():
    rng = random.Random(99)
    lines = ["data: {\"a\": 1}", "data:{\"b\":[1,2]}", "data: [DONE]", "data: ", "data:", "",
             "event: x", ": c", "id: 4", "data: {\"c\":", "data: 3}", "data:  \"s\"  ",
             "data: {\"d\": \"\u2028\"}", "data: nope", "retry: 1"]
    breaks = ["\n", "\n", "\n", "\r\n", "\r", "\x0b", "\u2029"]
    for _ in range(3000):
        text = "".join(rng.choice(lines) + rng.choice(breaks) for _ in range(rng.randint(0, 12)))
        assert list(sse_data(text)) == reference_data(text), repr(text)
