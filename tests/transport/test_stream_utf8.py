"""A stream cut inside a multi-byte character is recorded, and replayed, as the bytes it was.

A network cuts an SSE stream anywhere, through `é`, `日本` or an emoji too. The recorded chunks
are text; decoding each chunk on its own kept both halves of a cut character as U+FFFD, and a
strict replay then served those bytes, not the ones the program received. Here the live
stream comes from a fake connection pool under the real transport (`HTTPTransport._pool`, the
one thing the seam's original method calls), so the chunks the client reads are exactly the
ones given: every byte offset of every character is a cut somewhere. Recorded through the real
openai SDK (httpx) and through httpx2's seam, replayed strictly (the pool must not be reached),
the program's text and the bundle's stored stream must be the original's. Bytes that are not
UTF-8 at all are recorded as U+FFFD, as `chunk_texts` documents.
"""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpcore
import httpx
import pytest

import symtrace
from symtrace.boundaries.http.exchange import chunk_texts
from symtrace.bundle import load_bundle

httpx2 = pytest.importorskip("httpx2")
httpcore2 = pytest.importorskip("httpcore2")

PIECES = ["Grüße ", "aus 日本", " — café ", "🙂🎉", " naïve ☃", "\u00e9\u0301", " 𝄞 end"]
TEXT = "".join(PIECES)


def sse_body(pieces: list[str]) -> bytes:
    """A chat-completions SSE body carrying *pieces*, raw UTF-8 (as providers send it)."""
    events = [{"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "m",
               "choices": [{"index": 0, "delta": {"role": "assistant", "content": piece},
                            "finish_reason": None}]} for piece in pieces]
    events.append({"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "m",
                   "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    lines = [b"data: " + json.dumps(e, ensure_ascii=False).encode() + b"\n\n" for e in events]
    return b"".join(lines) + b"data: [DONE]\n\n"


BODY = sse_body(PIECES)


def every(size: int, data: bytes = BODY) -> list[bytes]:
    return [data[i:i + size] for i in range(0, len(data), size)]


def cut_at(data: bytes, points: list[int]) -> list[bytes]:
    return [data[a:b] for a, b in zip([0, *points], [*points, len(data)], strict=True)]


def cuts_through_characters(chunks: list[bytes]) -> int:
    """How many chunk boundaries fall inside a character (a continuation byte follows)."""
    return sum(1 for chunk in chunks[1:] if chunk and 0x80 <= chunk[0] < 0xC0)


# Chunk sizes 1..4 cut every character of up to four bytes at every offset inside it.
CUTS = {f"every {n} bytes": every(n) for n in (1, 2, 3, 4, 7)}
CUTS["random"] = cut_at(BODY, sorted(random.Random(20261204).sample(range(1, len(BODY)), 60)))


def test_the_cuts_really_split_characters():
    assert all(cuts_through_characters(chunks) > 0 for chunks in CUTS.values())
    assert b"".join(CUTS["every 1 bytes"]) == BODY
    assert all(piece.encode() in BODY for piece in PIECES)


# -- the decoding itself -----------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(CUTS))
def test_chunk_texts_are_the_streams_text_and_bytes(name):
    chunks = CUTS[name]
    texts = chunk_texts(chunks)
    assert len(texts) == len(chunks)
    assert "".join(texts) == BODY.decode()
    assert b"".join(t.encode() for t in texts) == BODY
    # a character is moved, whole, to the chunk where it ends: at most three bytes
    for chunk, text in zip(chunks, texts, strict=True):
        assert abs(len(text.encode()) - len(chunk)) <= 3


def test_every_cut_of_every_character_decodes_whole():
    for char in ("é", "日", "🙂", "𝄞"):
        data = ("a" + char + "b").encode()
        for point in range(1, len(data)):
            texts = chunk_texts([data[:point], data[point:]])
            assert "".join(texts) == "a" + char + "b", (char, point)


INVALID = [
    b"ok \xff bad",  # never UTF-8
    b"lone continuation \x80\x80 here",
    b"truncated \xe6\x97 then more",  # a character missing its last byte, mid-stream
    b"overlong \xc0\xaf and surrogate \xed\xa0\x80",
    b"ends inside a character \xf0\x9f\x99",
]


@pytest.mark.parametrize("data", INVALID)
def test_bytes_that_are_not_utf8_are_recorded_as_replacement_characters(data):
    """Documented in `chunk_texts`: what a whole body's `$text` keeps, wherever the cuts are."""
    expected = data.decode("utf-8", "replace")
    assert "\ufffd" in expected
    assert chunk_texts([data]) == [expected]
    rng = random.Random(len(data))
    for size in (1, 2, 3, 5):
        assert "".join(chunk_texts(every(size, data))) == expected
    for _ in range(50):
        points = sorted(rng.sample(range(1, len(data)), rng.randint(1, min(8, len(data) - 1))))
        assert "".join(chunk_texts(cut_at(data, points))) == expected


def test_a_whole_utf8_stream_keeps_its_chunks_as_cut():
    chunks = [b"data: a\n\n", "data: é\n\n".encode(), b"", b"data: [DONE]\n\n"]
    assert chunk_texts(chunks) == [c.decode() for c in chunks]


# -- recorded and replayed through the real clients --------------------------------------------
HEADERS = [(b"content-type", b"text/event-stream; charset=utf-8")]


class Pool:
    """A connection pool answering every request with *chunks*, exactly as cut."""

    def __init__(self, response: type, chunks: list[bytes]) -> None:
        self.response, self.chunks, self.sent = response, chunks, 0

    def handle_request(self, request: Any) -> Any:
        self.sent += 1
        return self.response(200, headers=HEADERS, content=iter(self.chunks))

    async def handle_async_request(self, request: Any) -> Any:
        self.sent += 1

        async def stream() -> AsyncIterator[bytes]:
            for chunk in self.chunks:
                yield chunk

        return self.response(200, headers=HEADERS, content=stream())

    def __enter__(self) -> Pool:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    async def __aenter__(self) -> Pool:
        return self

    async def __aexit__(self, *exc: object) -> None:
        pass

    def close(self) -> None:
        pass

    async def aclose(self) -> None:
        pass


def transport(lib: Any, pool: Pool, use_async: bool) -> Any:
    made = lib.AsyncHTTPTransport() if use_async else lib.HTTPTransport()
    made._pool = pool
    return made


def openai_text(pool: Pool, use_async: bool) -> str:
    import openai

    def pieces(stream: Iterator[Any]) -> str:
        return "".join(c.choices[0].delta.content or "" for c in stream if c.choices)

    if not use_async:
        http = httpx.Client(transport=transport(httpx, pool, False))
        with openai.OpenAI(base_url="http://llm.test/v1", api_key="k", max_retries=0,
                           http_client=http) as client:
            return pieces(client.chat.completions.create(
                model="m", messages=[{"role": "user", "content": "hi"}], stream=True))

    async def run() -> str:
        http = httpx.AsyncClient(transport=transport(httpx, pool, True))
        async with openai.AsyncOpenAI(base_url="http://llm.test/v1", api_key="k",
                                      max_retries=0, http_client=http) as client:
            stream = await client.chat.completions.create(
                model="m", messages=[{"role": "user", "content": "hi"}], stream=True)
            return "".join([c.choices[0].delta.content or "" async for c in stream
                            if c.choices])

    return asyncio.run(run())


def httpx2_text(pool: Pool, use_async: bool) -> str:
    """The bytes an httpx2 client reads from the stream, decoded as a whole."""
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": True}
    url = "http://llm.test/v1/chat/completions"
    if not use_async:
        with httpx2.Client(transport=transport(httpx2, pool, False)) as client, \
                client.stream("POST", url, json=body) as response:
            return b"".join(response.iter_bytes()).decode()

    async def run() -> str:
        async with httpx2.AsyncClient(transport=transport(httpx2, pool, True)) \
                as client, client.stream("POST", url, json=body) as response:
            return b"".join([chunk async for chunk in response.aiter_bytes()]).decode()

    return asyncio.run(run())


CLIENTS = {  # name: (program, the pool's response type, what the program gets)
    "openai-httpx": (openai_text, httpcore.Response, TEXT),
    "httpx2": (httpx2_text, httpcore2.Response, BODY.decode()),
}


@pytest.mark.parametrize("use_async", [False, True], ids=["sync", "async"])
@pytest.mark.parametrize("client", sorted(CLIENTS))
@pytest.mark.parametrize("name", ["every 1 bytes", "every 3 bytes", "random"])
def test_a_stream_cut_inside_characters_replays_as_received(client, use_async, name,
                                                            tmp_path):
    program, response_type, expected = CLIENTS[client]
    chunks = CUTS[name]
    bundle = tmp_path / "run"
    live = Pool(response_type, chunks)
    with symtrace.record(bundle):
        assert program(live, use_async) == expected
    assert live.sent == 1

    [event] = [e for e in load_bundle(bundle).events if e.is_llm]
    stored = event.response
    assert stored["stream"] is True and len(stored["chunks"]) == len(chunks)
    assert b"".join(c.encode() for c in stored["chunks"]) == BODY
    assert stored["body"]["choices"][0]["message"]["content"] == TEXT

    offline = Pool(response_type, [])
    with symtrace.replay(bundle):  # strict: every call served from the bundle
        assert program(offline, use_async) == expected
    assert offline.sent == 0


def test_random_byte_soups_cut_anywhere_decode_as_joined():
    """Valid and broken pieces, cut at random (empty chunks too): the texts always join to
    the joined bytes' decoding, one text per chunk."""
    rng = random.Random(5)
    pieces = [b"a", "é".encode(), "日".encode(), "🙂".encode(), b"\n", b"\xff", b"\xc3",
              b"\xe6\x97", b"\xf0\x9f\x99", b"\x80", b"\xed\xa0\x80", b"\xf4\x90\x80\x80"]
    for _ in range(5000):
        data = b"".join(rng.choice(pieces) for _ in range(rng.randint(0, 12)))
        points = sorted(rng.choices(range(len(data) + 1), k=rng.randint(0, 6)))
        chunks = cut_at(data, points)
        texts = chunk_texts(chunks)
        assert len(texts) == len(chunks)
        assert "".join(texts) == data.decode("utf-8", "replace"), chunks
