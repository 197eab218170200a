"""Issue 40: what replay serves is the value the program got, not its canonical JSON.

Hashing canonicalises (sorted keys, tuples as lists, 1.0 as 1); the bundle keeps the shape
beside the value (`symtrace/model/shape.py`), and every serving path hands back the recorded
structure, so `repr()` / `str()` / JSON of a served value equal the original's. Checked over
generated values for each serving path: the shape itself, tool results, LLM response bodies
(through a real HTTP server and httpx) and streamed chunks.
"""

from __future__ import annotations

import enum
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import symtrace
from symtrace.model.canonical import canonical_bytes
from symtrace.model.shape import restore, shape_of


class Colour(enum.StrEnum):  # a str subclass a framework relies on (module level: importable)
    RED = "red"
    BLUE = "blue"


KEYS = st.text(min_size=0, max_size=6)
FLOATS = st.floats(allow_nan=False, allow_infinity=False, width=64)
SCALARS = st.none() | st.booleans() | st.integers(-(2**40), 2**40) | FLOATS | st.text(max_size=8)


def _children(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return (st.lists(inner, max_size=4) | st.lists(inner, max_size=4).map(tuple)
            | st.dictionaries(KEYS, inner, max_size=5))


VALUES = st.recursive(SCALARS | st.sampled_from(list(Colour)), _children, max_leaves=12)
JSON_VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=4)
                           | st.dictionaries(KEYS, inner, max_size=5), max_leaves=12)


def stored(value: Any) -> Any:
    """What a bundle gives back: canonical JSON bytes, parsed."""
    return orjson.loads(canonical_bytes(value))


def same(a: Any, b: Any) -> bool:
    """Equal, with the same types and key order all the way down (repr alone would not see
    a StrEnum member served as its str)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return repr(a) == repr(b)


@given(VALUES)
@example(-0.0)  # canonical JSON stores 0; served back it must still print "-0.0"
@example({"b": [-0.0, 1.0], "a": (2.0,)})
@settings(max_examples=300, deadline=None)
def test_a_value_is_restored_from_its_canonical_json_and_its_shape(value):
    shape = shape_of(value)
    assert same(restore(stored(value), stored(shape)), value)
    if shape is None:  # nothing lost: the canonical value is the value
        assert same(stored(value), value)


def test_a_shape_that_does_not_fit_restores_nothing_of_that_part():
    assert restore({"a": 1, "b": 2}, {"o": ["b", "c"]}) == {"a": 1, "b": 2}
    assert restore("x", {"c": "nowhere.to.be:Found"}) == "x"
    assert restore([1], "f") == [1]


# -- tool results --------------------------------------------------------------------------
@given(st.lists(VALUES, min_size=1, max_size=4))
@settings(max_examples=12, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
def test_tool_results_are_served_with_their_recorded_structure(tmp_path_factory, values):
    path = tmp_path_factory.mktemp("tool") / "b"

    @symtrace.tool
    def lookup(index: int) -> Any:
        return values[index]

    with symtrace.record(path):
        recorded = [lookup(i) for i in range(len(values))]
    with symtrace.replay(path):
        served = [lookup(i) for i in range(len(values))]
    for original, got in zip(recorded, served, strict=True):
        assert same(got, original)
        assert str(got) == str(original)


def test_a_tool_result_that_is_canonical_already_stores_no_shape(tmp_path):
    @symtrace.tool
    def plain() -> Any:
        return {"a": [1, 2.5], "b": "x"}

    with symtrace.record(tmp_path / "b"):
        plain()
    (result,) = [e for e in symtrace.load_bundle(tmp_path / "b").events
                 if e.type.value == "tool_result"]
    assert result.response == {"ok": True, "value": {"a": [1, 2.5], "b": "x"}}


# -- LLM responses and streamed chunks, through HTTP --------------------------------------
class _Server:
    """A loopback server answering each POST with the next queued (content type, body)."""

    def __init__(self) -> None:
        self.queue: list[tuple[str, bytes]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("content-length") or 0))
                kind, body = outer.queue.pop(0)
                self.send_response(200)
                self.send_header("content-type", kind)
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1/chat/completions"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()


@pytest.fixture(scope="module")
def server() -> Iterator[_Server]:
    serving = _Server()
    yield serving
    serving.httpd.shutdown()


REQUEST = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}


def _round_trip(path: Path, server: _Server, kind: str, body: bytes) -> tuple[bytes, bytes]:
    server.queue.append((kind, body))
    with symtrace.record(path), httpx.Client() as client:
        recorded = client.post(server.url, json=REQUEST).content
    with symtrace.replay(path), httpx.Client() as client:
        served = client.post(server.url, json=REQUEST).content
    return recorded, served


@given(st.dictionaries(KEYS, JSON_VALUES, max_size=6))
@settings(max_examples=15, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
def test_llm_response_bodies_are_served_with_their_key_order_and_numbers(
        tmp_path_factory, server, body):
    recorded, served = _round_trip(tmp_path_factory.mktemp("llm") / "b", server,
                                   "application/json", orjson.dumps(body))
    assert same(orjson.loads(served), orjson.loads(recorded))


@given(st.lists(st.text(max_size=12).map(lambda t: f"data: {t!r}\n\n"), min_size=1,
                max_size=5))
@settings(max_examples=10, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
def test_streamed_chunks_are_served_as_the_bytes_received(tmp_path_factory, server, events):
    body = "".join(events).encode() + b"data: [DONE]\n\n"
    recorded, served = _round_trip(tmp_path_factory.mktemp("stream") / "b", server,
                                   "text/event-stream", body)
    assert served == recorded == body
