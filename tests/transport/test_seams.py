"""Each HTTP seam records through the one exchange core and replays without the endpoint.

One chat request per client library (httpx, httpx2, sync and async; requests; urllib3;
aiohttp), plain and streamed, recorded in-process against the stub, then replayed with the
stub *stopped*: the replay must produce the same content from the bundle, hand back the
library's own response type, and leave the classes exactly as they were when it ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import http.server
import json
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any

import pytest

import symtrace
from symtrace.bundle import load_bundle
from symtrace.stub import StubLLM

httpx2 = pytest.importorskip("httpx2")
import aiohttp  # noqa: E402
import httpx  # noqa: E402
import requests  # noqa: E402
import urllib3  # noqa: E402


def chat(text: str, stream: bool = False) -> dict[str, Any]:
    return {"model": "m", "messages": [{"role": "user", "content": text}], "stream": stream}


def sse_text(lines: list[str]) -> str:
    """The assistant text carried by chat-completion SSE `data:` lines."""
    out = []
    for line in lines:
        line = line.strip()
        if line.startswith("data:") and line[5:].strip() != "[DONE]":
            for choice in json.loads(line[5:])["choices"]:
                out.append(choice["delta"].get("content") or "")
    return "".join(out)


def via_httpx_family(lib: Any, use_async: bool) -> Callable[[str, dict], tuple[Any, str]]:
    def sync(url: str, body: dict) -> tuple[Any, str]:
        with lib.Client() as client:
            if body["stream"]:
                with client.stream("POST", url, json=body) as response:
                    return response, sse_text(list(response.iter_lines()))
            response = client.post(url, json=body)
            return response, response.json()["choices"][0]["message"]["content"]

    async def run_async(url: str, body: dict) -> tuple[Any, str]:
        async with lib.AsyncClient() as client:
            if body["stream"]:
                async with client.stream("POST", url, json=body) as response:
                    return response, sse_text([line async for line in response.aiter_lines()])
            response = await client.post(url, json=body)
            return response, response.json()["choices"][0]["message"]["content"]

    if use_async:
        return lambda url, body: asyncio.run(run_async(url, body))
    return sync


def via_requests(url: str, body: dict) -> tuple[Any, str]:
    response = requests.post(url, json=body, stream=body["stream"], timeout=10)
    if body["stream"]:
        return response, sse_text([line.decode() for line in response.iter_lines()])
    return response, response.json()["choices"][0]["message"]["content"]


def via_urllib3(url: str, body: dict) -> tuple[Any, str]:
    response = urllib3.request("POST", url, body=json.dumps(body).encode(),
                               headers={"content-type": "application/json"})
    if body["stream"]:
        return response, sse_text(response.data.decode().splitlines())
    return response, response.json()["choices"][0]["message"]["content"]


def via_aiohttp(url: str, body: dict) -> tuple[Any, str]:
    async def run() -> tuple[Any, str]:
        async with aiohttp.ClientSession() as session, session.post(url, json=body) as response:
            if body["stream"]:
                return response, sse_text([line.decode() async for line in response.content])
            return response, (await response.json())["choices"][0]["message"]["content"]

    return asyncio.run(run())


CLIENTS = {
    "httpx-sync": (via_httpx_family(httpx, False), httpx.Response),
    "httpx-async": (via_httpx_family(httpx, True), httpx.Response),
    "httpx2-sync": (via_httpx_family(httpx2, False), httpx2.Response),
    "httpx2-async": (via_httpx_family(httpx2, True), httpx2.Response),
    "requests": (via_requests, requests.Response),
    "urllib3": (via_urllib3, urllib3.HTTPResponse),
    "aiohttp": (via_aiohttp, aiohttp.ClientResponse),
}


def patched_attributes() -> dict[str, Any]:
    """The class attributes the seams patch, as they are now."""
    return {
        "httpx": httpx.HTTPTransport.__dict__["handle_request"],
        "httpx-async": httpx.AsyncHTTPTransport.__dict__["handle_async_request"],
        "httpx2": httpx2.HTTPTransport.__dict__["handle_request"],
        "httpx2-async": httpx2.AsyncHTTPTransport.__dict__["handle_async_request"],
        "aiohttp": aiohttp.ClientSession.__dict__["_request"],
        "urllib3": urllib3.connectionpool.HTTPConnectionPool.__dict__["urlopen"],
    }


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
@pytest.mark.parametrize("client", sorted(CLIENTS))
def test_seam_records_and_replays_offline(client, stream, tmp_path):
    send, own_type = CLIENTS[client]
    before = patched_attributes()
    bundle = tmp_path / "run"
    with StubLLM(seed=5) as stub:
        url = f"{stub.url}/chat/completions"
        with symtrace.record(bundle):
            recorded_response, recorded_text = send(url, chat(f"{client} says hi", stream))
        assert stub.served == 1
    assert patched_attributes() == before, "record left a patch behind"
    assert isinstance(recorded_response, own_type)
    events = load_bundle(bundle).events
    llm = [e for e in events if e.is_llm]
    assert len(llm) == 1 and llm[0].meta["wire_format"] == "openai.chat"
    assert llm[0].response["body"]["choices"][0]["message"]["content"] == recorded_text

    # the stub is stopped: anything not served from the bundle would fail to connect
    with symtrace.replay(bundle):
        replayed_response, replayed_text = send(url, chat(f"{client} says hi", stream))
    assert patched_attributes() == before, "replay left a patch behind"
    assert isinstance(replayed_response, own_type)
    assert replayed_text == recorded_text


@pytest.mark.parametrize("client", ["httpx2-sync", "requests", "aiohttp"])
def test_a_changed_request_diverges_at_the_seam(client, tmp_path):
    send, _ = CLIENTS[client]
    bundle = tmp_path / "run"
    with StubLLM(seed=5) as stub:
        url = f"{stub.url}/chat/completions"
        with symtrace.record(bundle):
            send(url, chat("first"))
    with pytest.raises(symtrace.RequestMismatch), symtrace.replay(bundle):
        send(url, chat("second"))


def test_httpx2_transport_errors_are_recorded_and_re_raised_as_httpx2_errors(tmp_path):
    with StubLLM() as stub:
        url = f"{stub.url}/chat/completions"  # closed once the block ends
    bundle = tmp_path / "run"
    with pytest.raises(httpx2.ConnectError), symtrace.record(bundle):
        httpx2.post(url, json=chat("nobody home"))
    with pytest.raises(httpx2.ConnectError), symtrace.replay(bundle):
        httpx2.post(url, json=chat("nobody home"))


def test_sessions_nest_no_patches(tmp_path):
    """Install is reference-counted and uninstall restores the originals (not a wrapper)."""
    from symtrace.boundaries import http as boundary

    before = patched_attributes()
    boundary.install()
    boundary.install()
    assert patched_attributes() != before
    boundary.uninstall()
    assert patched_attributes() != before, "still one user"
    boundary.uninstall()
    assert patched_attributes() == before
    boundary.uninstall()  # one more is harmless
    assert patched_attributes() == before


# -- a compressed response: handed back as read, recorded decoded ---------------------------------
REPLY = {"id": "c1", "object": "chat.completion", "model": "m",
         "choices": [{"index": 0, "message": {"role": "assistant", "content": "zipped"},
                      "finish_reason": "stop"}]}
SSE = b"".join(
    b"data: " + json.dumps({"id": "c1", "object": "chat.completion.chunk", "model": "m",
                            "choices": [{"index": 0, "delta": {"content": part}}]}).encode()
    + b"\n\n" for part in ("zip", "ped")) + b"data: [DONE]\n\n"


@contextlib.contextmanager
def gzip_endpoint(delay: float = 0.0) -> Iterator[str]:
    """A chat endpoint whose responses are gzip-encoded (as many providers send them), each
    after *delay* seconds."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            stream = json.loads(self.rfile.read(int(self.headers["content-length"])))["stream"]
            time.sleep(delay)
            body = gzip.compress(SSE if stream else json.dumps(REPLY).encode())
            self.send_response(200)
            kind = "text/event-stream" if stream else "application/json"
            for name, value in (("content-type", kind),
                                ("content-encoding", "gzip"),
                                ("content-length", str(len(body))), ("x-request-id", "req_1")):
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

        def date_time_string(self, timestamp: float | None = None) -> str:
            return "Fri, 04 Dec 2026 00:00:00 GMT"  # two responses compared across a second

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1/chat/completions"
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
@pytest.mark.parametrize("client", ["httpx-sync", "httpx-async", "httpx2-sync", "httpx2-async"])
def test_a_compressed_response_reaches_the_program_as_without_symtrace(client, stream, tmp_path):
    send, own_type = CLIENTS[client]
    bundle = tmp_path / "run"
    with gzip_endpoint() as url:
        plain, plain_text = send(url, chat("hi", stream))
        with symtrace.record(bundle):
            recorded, recorded_text = send(url, chat("hi", stream))
    assert isinstance(recorded, own_type)
    assert recorded_text == plain_text == "zipped"
    assert sorted(recorded.headers.multi_items()) == sorted(plain.headers.multi_items())
    assert recorded.is_closed and recorded.is_stream_consumed
    (event,) = [e for e in load_bundle(bundle).events if e.is_llm]
    if stream:  # recorded as the SDK parsed it: decoded
        assert "".join(event.response["chunks"]).encode() == SSE
    else:
        assert recorded.content == plain.content  # decoded once, not twice
        assert event.response["body"] == REPLY
        assert event.response["headers"] == {"content-type": "application/json",
                                              "x-request-id": "req_1"}
    with symtrace.replay(bundle):  # the endpoint is gone: served from the bundle
        replayed, replayed_text = send(url, chat("hi", stream))
    assert replayed_text == "zipped"
    if not stream:
        assert replayed.json() == REPLY


# -- what a response carries besides its body: as without symtrace ---------------------------------
HTTPX_FAMILY = ["httpx-sync", "httpx-async", "httpx2-sync", "httpx2-async"]
SLOW = 0.3  # seconds the endpoint waits before it answers


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
@pytest.mark.parametrize("client", HTTPX_FAMILY)
def test_elapsed_is_the_live_calls_when_recorded_and_the_replays_own_when_replayed(
        client, stream, tmp_path):
    """httpx sets `elapsed` when its client closes the response stream; a response the seam
    read (recording) or built (replay) is closed before that, so symtrace sets it."""
    send, _ = CLIENTS[client]
    bundle = tmp_path / "run"
    with gzip_endpoint(delay=SLOW) as url, symtrace.record(bundle):
        recorded, _ = send(url, chat("hi", stream))
    assert recorded.elapsed >= timedelta(seconds=SLOW)  # the live call, endpoint wait included
    with symtrace.replay(bundle):  # the endpoint is gone: nothing to wait for
        replayed, _ = send(url, chat("hi", stream))
    assert timedelta(0) <= replayed.elapsed < timedelta(seconds=SLOW)


def public_attributes(response: Any) -> dict[str, str]:
    """Each public non-method attribute of *response*: its type's name, or what reading it
    raised (a transparency bug: the program reading it would crash under symtrace only)."""
    out = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name in dir(response):
            if name.startswith("_"):
                continue
            try:
                value = getattr(response, name)
            except Exception as exc:  # what reading it raised is what is compared
                out[name] = f"raises {type(exc).__name__}"
                continue
            if not callable(value):
                out[name] = type(value).__name__
    for name in VALUES_COMPARED:  # values that do not vary between two calls
        if name in out:
            out[name] = repr(getattr(response, name))
    return out


VALUES_COMPARED = ("version", "version_string", "http_version", "reason", "reason_phrase",
                   "status", "status_code", "ok")


# A recorded or replayed body is whole (read at once while recording): it has a length where a
# live chunked stream had none.
WHOLE_BODY = {("aiohttp", True): {"content_length"}, ("urllib3", True): {"length_remaining"}}


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
@pytest.mark.parametrize("client", sorted(CLIENTS))
def test_a_response_has_the_attributes_it_has_without_symtrace(client, stream, tmp_path):
    send, _ = CLIENTS[client]
    bundle = tmp_path / "run"
    with StubLLM(seed=5) as stub:
        url = f"{stub.url}/chat/completions"
        plain = public_attributes(send(url, chat("hi", stream))[0])
        with symtrace.record(bundle):
            recorded = public_attributes(send(url, chat("hi", stream))[0])
    with symtrace.replay(bundle):
        replayed = public_attributes(send(url, chat("hi", stream))[0])
    ignored = WHOLE_BODY.get((client, stream), set())
    expected = {k: v for k, v in plain.items() if k not in ignored}
    assert {k: v for k, v in recorded.items() if k not in ignored} == expected
    assert {k: v for k, v in replayed.items() if k not in ignored} == expected


@pytest.mark.parametrize("use_async", [False, True], ids=["sync", "async"])
def test_the_openai_sdks_raw_response_elapsed_recorded_and_replayed(use_async, tmp_path):
    """What SDK logging reads: `with_raw_response` responses expose httpx's `elapsed`."""
    import openai

    def create(client_type: type, url: str) -> Any:
        async def run_async() -> Any:
            async with client_type(base_url=url, api_key="k", max_retries=0) as client:
                return await client.chat.completions.with_raw_response.create(
                    model="m", messages=[{"role": "user", "content": "hi"}])

        if use_async:
            return asyncio.run(run_async())
        with client_type(base_url=url, api_key="k", max_retries=0) as client:
            return client.chat.completions.with_raw_response.create(
                model="m", messages=[{"role": "user", "content": "hi"}])

    client_type = openai.AsyncOpenAI if use_async else openai.OpenAI
    bundle = tmp_path / "run"
    with StubLLM(seed=5) as stub, symtrace.record(bundle):
        recorded = create(client_type, stub.url)
        recorded_text = recorded.parse().choices[0].message.content
    with symtrace.replay(bundle):
        replayed = create(client_type, stub.url)
        assert replayed.parse().choices[0].message.content == recorded_text
    assert recorded.elapsed > timedelta(0) and replayed.elapsed >= timedelta(0)
