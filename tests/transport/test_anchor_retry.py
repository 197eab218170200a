"""Repair guidance reaches the model: every retry of the anchor request carries it.

A program is recorded against a healthy stub; then replayed selectively at its first LLM
call with guidance, against an endpoint that fails the first guided request (HTTP 429 or
503, a timeout, a stream cut off after its first events) and answers the next. The SDK (or
the program's own retry loop, as a framework's) sends the request again: the guidance must
be in the request that succeeded, never an unguided one sent, and the child bundle must hold
every attempt, marked as retries of the anchor, and replay strictly with the endpoint gone.

Per SDK: openai (sync, async; openai 2 over httpx here, openai 3 over httpx2 in
tests/next_stack), anthropic, and the plain libraries (httpx, httpx2, requests, urllib3,
aiohttp) under a program-level retry loop.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import symtrace
from symtrace.bundle import load_bundle
from symtrace.errors import GuidedAnchorFailed, SymtraceError
from symtrace.model.attempts import failure_of, wire_format_of
from symtrace.model.events import ATTEMPT, RETRY_OF
from symtrace.replay.anchor_retries import AnchorAttempts
from symtrace.session.context import Attribution
from symtrace.session.core import LLM, BoundaryCall
from symtrace.stub import handler as stub_handler
from symtrace.stub.reply import error_reply

openai = pytest.importorskip("openai")
anthropic = pytest.importorskip("anthropic")

MARK = "GUIDANCE-MARK"
TIMEOUT = 1.5  # the client's; a "timeout" failure keeps the answer back longer than this
ANCHOR = "agent_action_0000"


# -- the flaky endpoint ------------------------------------------------------------------------
_dropping = threading.local()


class Flaky:
    """Fails the first *times* requests that carry the guidance with *mode*, then answers."""

    def __init__(self, stub: Any, mode: str, times: int = 1) -> None:
        self.mode, self.left = mode, times
        self._answer = stub.answer
        self._lock = threading.Lock()
        stub.answer = self.answer

    def answer(self, body: dict[str, Any], call_index: int) -> Any:
        with self._lock:
            fail = self.left > 0 and MARK in json.dumps(body)
            self.left -= fail
        _dropping.on = fail and self.mode == "drop"
        if fail and self.mode in ("429", "503"):
            return error_reply(int(self.mode), f"stub: failing with {self.mode}")
        if fail and self.mode == "timeout":
            time.sleep(TIMEOUT + 1.0)
        return self._answer(body, call_index)


@pytest.fixture(autouse=True)
def droppable_streams(monkeypatch: pytest.MonkeyPatch) -> None:
    """A stream the Flaky endpoint drops: two events, then the connection closes."""
    send = stub_handler.Handler._send_stream

    def send_stream(handler: Any, events: Iterator[bytes]) -> None:
        if getattr(_dropping, "on", False):
            _dropping.on = False

            def cut(events: Iterator[bytes] = events) -> Iterator[bytes]:
                for index, data in enumerate(events):
                    if index == 2:
                        raise ConnectionResetError("stub: dropping the stream")
                    yield data

            events = cut()
        send(handler, events)

    monkeypatch.setattr(stub_handler.Handler, "_send_stream", send_stream)


@pytest.fixture(autouse=True)
def instant_sdk_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    """The SDKs' back-off between attempts is not what is tested: no wait."""
    for module in (openai, anthropic):
        monkeypatch.setattr(module._base_client.BaseClient, "_calculate_retry_timeout",
                            lambda *args, **kwargs: 0.0)


@pytest.fixture
def stub(stub_llm_factory):
    return stub_llm_factory(script={"rules": [], "default": {"content": "an answer"}})


# -- programs: two questions, the second carrying the first answer ---------------------------
def app_retries(ask: Callable[[], str], attempts: int = 3) -> str:
    """A framework's own retry loop: a stream cut off is sent again (the SDKs do not)."""
    for attempt in range(attempts):
        try:
            return ask()
        except SymtraceError:
            raise
        except Exception:  # whatever the library raises for a failed attempt
            if attempt == attempts - 1:
                raise
    raise AssertionError("unreachable")


async def app_retries_async(ask: Callable[[], Awaitable[str]], attempts: int = 3) -> str:
    """`app_retries` in a task (one task retries, as an async program does)."""
    for attempt in range(attempts):
        try:
            return await ask()
        except SymtraceError:
            raise
        except Exception:  # whatever the library raises for a failed attempt
            if attempt == attempts - 1:
                raise
    raise AssertionError("unreachable")


def openai_program(url: str, *, stream: bool = False, use_async: bool = False) -> list[str]:
    def messages(text: str) -> list[dict[str, str]]:
        return [{"role": "user", "content": text}]

    if use_async:
        async def run() -> list[str]:
            async with openai.AsyncOpenAI(base_url=url, api_key="k", timeout=TIMEOUT) as client:
                return await asked(client)

        async def asked(client: Any) -> list[str]:
            async def ask(text: str) -> str:
                if not stream:
                    reply = await client.chat.completions.create(model="m",
                                                                 messages=messages(text))
                    return reply.choices[0].message.content or ""

                async def read() -> str:
                    chunks = await client.chat.completions.create(
                        model="m", messages=messages(text), stream=True)
                    return "".join([c.choices[0].delta.content or ""
                                    async for c in chunks if c.choices])

                return await app_retries_async(read)

            first = await ask("q0")
            return [first, await ask(f"q1 after {first}")]

        return asyncio.run(run())

    with openai.OpenAI(base_url=url, api_key="k", timeout=TIMEOUT) as client:

        def ask(text: str) -> str:
            if stream:
                return app_retries(lambda: "".join(
                    c.choices[0].delta.content or ""
                    for c in client.chat.completions.create(model="m", messages=messages(text),
                                                            stream=True)
                    if c.choices))
            return client.chat.completions.create(model="m", messages=messages(text)
                                                  ).choices[0].message.content or ""

        first = ask("q0")
        return [first, ask(f"q1 after {first}")]


def anthropic_program(root_url: str, *, stream: bool = False) -> list[str]:
    with anthropic.Anthropic(base_url=root_url, api_key="k", timeout=TIMEOUT) as client:

        def ask(text: str) -> str:
            kwargs: dict[str, Any] = {"model": "m", "max_tokens": 64,
                                      "messages": [{"role": "user", "content": text}]}
            if stream:
                def read() -> str:
                    with client.messages.stream(**kwargs) as events:
                        return "".join(events.text_stream)
                return app_retries(read)
            return "".join(b.text for b in client.messages.create(**kwargs).content
                           if b.type == "text")

        first = ask("q0")
        return [first, ask(f"q1 after {first}")]


def plain_program(lib: str, url: str) -> list[str]:
    """A plain HTTP library and the program's own retry loop (an error status raises)."""
    import aiohttp
    import httpx
    import httpx2
    import requests
    import urllib3

    endpoint = f"{url}/chat/completions"

    def post(text: str) -> dict[str, Any]:
        body = {"model": "m", "messages": [{"role": "user", "content": text}]}
        if lib in ("httpx", "httpx2"):
            module = httpx if lib == "httpx" else httpx2
            response = module.post(endpoint, json=body, timeout=TIMEOUT)
            response.raise_for_status()
            return response.json()
        if lib == "requests":
            response = requests.post(endpoint, json=body, timeout=TIMEOUT)
            response.raise_for_status()
            return response.json()
        if lib == "urllib3":
            response = urllib3.request("POST", endpoint, body=json.dumps(body).encode(),
                                       headers={"content-type": "application/json"},
                                       retries=False, timeout=TIMEOUT)
            if response.status >= 400:
                raise RuntimeError(f"HTTP {response.status}")
            return response.json()
        raise AssertionError(lib)

    def ask(text: str) -> str:
        return app_retries(lambda: post(text)["choices"][0]["message"]["content"])

    if lib == "aiohttp":  # one task retries, as an async program does
        async def run() -> list[str]:
            async with aiohttp.ClientSession() as session:
                async def ask_async(text: str) -> str:
                    body = {"model": "m", "messages": [{"role": "user", "content": text}]}

                    async def post_async() -> str:
                        async with session.post(endpoint, json=body) as response:
                            response.raise_for_status()
                            return (await response.json())["choices"][0]["message"]["content"]

                    return await app_retries_async(post_async)

                first = await ask_async("q0")
                return [first, await ask_async(f"q1 after {first}")]

        return asyncio.run(run())
    first = ask("q0")
    return [first, ask(f"q1 after {first}")]


# -- the check -----------------------------------------------------------------------------------
def _text(body: Any) -> str:
    return json.dumps(body)


def guided_retry_holds(stub: Any, tmp_path: Path, program: Callable[[], list[str]],
                       mode: str, failure: str) -> None:
    """Record healthy; replay at the anchor with guidance through a Flaky endpoint; check
    the endpoint's log, the child bundle, and the child's strict replay without endpoint."""
    with symtrace.record(tmp_path / "b", task="retry", adapters=[]):
        program()
    seen = len(stub.requests)
    Flaky(stub, mode)
    with symtrace.replay(tmp_path / "b", anchor=ANCHOR, guidance=MARK, out=tmp_path / "c",
                         adapters=[]):
        guided = program()
    asked = [_text(body) for body in stub.requests[seen:] if "q0" in _text(body)]
    # every attempt at the anchor carried the guidance: the failed one and the one that
    # succeeded (the first and the last); none went out without it
    assert len(asked) == 2 and all(MARK in text for text in asked), asked
    child = load_bundle(tmp_path / "c")
    attempts = child.lineage["anchor_attempts"]
    assert [a["failure"] is None for a in attempts] == [False, True], attempts
    assert failure in attempts[0]["failure"]
    events = {e.id: e for e in child.events}
    first, retry = events[attempts[0]["event_id"]], events[attempts[1]["event_id"]]
    assert first.id == child.lineage["intervention"]["event_id"]
    assert (retry.meta[RETRY_OF], retry.meta[ATTEMPT]) == (first.id, 2)
    assert MARK in _text(first.request) and MARK in _text(retry.request)
    assert failure_of(retry.response, None) is None
    stub.stop()  # the child replays strictly from its bundle alone: the failed attempt too
    with symtrace.replay(tmp_path / "c", adapters=[]):
        assert program() == guided


OPENAI_CASES = [
    ("429", False, "HTTP 429"),
    ("503", False, "HTTP 503"),
    ("timeout", False, "Timeout"),
    ("drop", True, "the stream was cut off"),
]


@pytest.mark.parametrize(("mode", "stream", "failure"), OPENAI_CASES,
                         ids=[c[0] for c in OPENAI_CASES])
def test_openai_sync_retries_of_the_anchor_carry_the_guidance(stub, tmp_path, mode, stream,
                                                              failure):
    guided_retry_holds(stub, tmp_path, lambda: openai_program(stub.url, stream=stream),
                       mode, failure)


@pytest.mark.parametrize(("mode", "stream", "failure"),
                         [OPENAI_CASES[0], OPENAI_CASES[3]], ids=["429", "drop"])
def test_openai_async_retries_of_the_anchor_carry_the_guidance(stub, tmp_path, mode, stream,
                                                               failure):
    guided_retry_holds(
        stub, tmp_path, lambda: openai_program(stub.url, stream=stream, use_async=True),
        mode, failure)


@pytest.mark.parametrize(("mode", "stream", "failure"),
                         [("503", False, "HTTP 503"), ("timeout", False, "Timeout"),
                          ("drop", True, "the stream was cut off")],
                         ids=["503", "timeout", "drop"])
def test_anthropic_retries_of_the_anchor_carry_the_guidance(stub, tmp_path, mode, stream,
                                                            failure):
    guided_retry_holds(stub, tmp_path, lambda: anthropic_program(stub.root_url, stream=stream),
                       mode, failure)


@pytest.mark.parametrize("lib", ["httpx", "httpx2", "requests", "urllib3", "aiohttp"])
def test_a_programs_own_retry_over_each_library_carries_the_guidance(stub, tmp_path, lib):
    guided_retry_holds(stub, tmp_path, lambda: plain_program(lib, stub.url), "503", "HTTP 503")


def test_when_no_guided_attempt_succeeds_the_replay_fails_typed(stub, tmp_path):
    """The SDK gives up after its retries: not "1 live" as if guided, but SYM-R109, and no
    child bundle is kept."""
    program = lambda: openai_program(stub.url)  # noqa: E731
    with symtrace.record(tmp_path / "b", task="retry", adapters=[]):
        program()
    Flaky(stub, "429", times=99)
    with pytest.raises(GuidedAnchorFailed) as info, symtrace.replay(
            tmp_path / "b", anchor=ANCHOR, guidance=MARK, out=tmp_path / "c", adapters=[]):
        program()
    report = info.value.report
    assert report.code == "SYM-R109" and report.event_id == ANCHOR
    assert [a["failure"] for a in report.actual] == ["HTTP 429"] * 3  # max_retries=2
    assert "infrastructure error" in report.hint
    assert not (tmp_path / "c").exists()
    assert isinstance(info.value.__cause__, openai.RateLimitError)


# -- what counts as a retry (unit) ---------------------------------------------------------------
def _call(text: str, lane: str = "main") -> BoundaryCall:
    request = {"method": "POST", "path": "/v1/chat/completions", "query": "",
               "body": {"model": "m", "messages": [{"role": "user", "content": text}]}}
    return BoundaryCall.make(LLM, request, {"wire_format": "openai.chat"},
                             Attribution(agent=None, lane=lane, reason=None))


class TestWhatIsARetry:
    def attempts_after(self, response: Any) -> AnchorAttempts:
        attempts = AnchorAttempts()
        attempts.started(_call("q0"), "agent_action_0005")
        attempts.finished("agent_action_0005", _call("q0"), response)
        return attempts

    def test_the_same_request_after_a_failure_on_the_same_lane_is_a_retry(self):
        assert self.attempts_after({"status": 429, "headers": {}, "body": None}).is_retry(
            _call("q0"))
        assert self.attempts_after({"error": {"type": "ReadTimeout", "message": ""}}).is_retry(
            _call("q0"))

    def test_the_same_request_after_a_success_is_not(self):
        ok = {"status": 200, "headers": {}, "body": {"choices": []}}
        assert not self.attempts_after(ok).is_retry(_call("q0"))

    def test_another_lane_or_body_is_not_and_another_call_of_the_lane_ends_the_turn(self):
        attempts = self.attempts_after({"status": 503, "headers": {}, "body": None})
        assert not attempts.is_retry(_call("q0", lane="other"))
        assert attempts.is_retry(_call("q0"))  # a call of another lane leaves the turn open
        assert not attempts.is_retry(_call("q0 changed"))  # the turn went on ...
        assert not attempts.is_retry(_call("q0"))  # ... so the same request now is new

    def test_an_attempt_never_answered_alone_is_not_the_providers_failure(self):
        attempts = AnchorAttempts()
        attempts.started(_call("q0"), "agent_action_0005")
        assert not attempts.failed
        attempts.finished("agent_action_0005", _call("q0"), {"status": 500, "body": None})
        assert attempts.failed

    def test_a_stream_is_failed_when_cut_or_unfinished(self):
        cut = {"status": 200, "stream": True, "chunks": ["data: {}\n\n"],
               "cut": {"type": "RemoteProtocolError", "message": "peer closed"}}
        short = {"status": 200, "stream": True, "chunks": ["data: {}\n\n"]}
        whole = {"status": 200, "stream": True, "chunks": ["data: {}\n\n", "data: [DONE]\n\n"]}
        fmt = wire_format_of(_call("q").meta)
        assert "cut off" in (failure_of(cut, fmt) or "")
        assert failure_of(short, fmt) is not None
        assert failure_of(whole, fmt) is None


# -- the CLI: the success line, the report, `show`, and SYM-R109 ---------------------------------
CLI_PROGRAM = '''
from openai import OpenAI
client = OpenAI()  # the SDK's default retries (max_retries=2)
first = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "q0"}])
text = first.choices[0].message.content
second = client.chat.completions.create(
    model="m", messages=[{"role": "user", "content": "q1 after " + text}])
print(second.choices[0].message.content)
'''


@pytest.mark.slow
def test_the_cli_says_how_many_attempts_the_anchor_took(stub, tmp_path):
    import os
    import subprocess
    import sys

    program = tmp_path / "program.py"
    program.write_text(CLI_PROGRAM)
    env = {**os.environ, "OPENAI_BASE_URL": stub.url, "OPENAI_API_KEY": "sk-test"}

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "symtrace", *args], capture_output=True,
                              text=True, env=env, timeout=240)

    recorded = cli("record", "-o", str(tmp_path / "b"), "--", sys.executable, str(program))
    assert recorded.returncode == 0, recorded.stderr[-3000:]
    flaky = Flaky(stub, "429")
    report = tmp_path / "report.json"
    repaired = cli("replay", str(tmp_path / "b"), "--anchor", ANCHOR, "--guidance", MARK,
                   "-o", str(tmp_path / "c"), "--report-json", str(report))
    assert repaired.returncode == 0, repaired.stderr[-3000:]
    assert "the anchor took 2 attempts, each with the guidance (retried after HTTP 429)" in (
        " ".join(repaired.stderr.split()))
    attempts = json.loads(report.read_text())["lineage"]["anchor_attempts"]
    assert [a["failure"] for a in attempts] == ["HTTP 429", None]
    shown = cli("show", str(tmp_path / "c"), "--width", "200")
    assert shown.returncode == 0 and "HTTP 429, retried" in shown.stdout, shown.stdout
    assert '{"body"' not in shown.stdout

    flaky.left = 99  # every guided attempt fails: a typed error, no child, never "live"
    failed = cli("replay", str(tmp_path / "b"), "--anchor", ANCHOR, "--guidance", MARK,
                 "-o", str(tmp_path / "d"), "--report-json", str(report))
    assert failed.returncode == 90, failed.stderr[-3000:]
    assert "SYM-R109" in failed.stderr and "selective replay wrote" not in failed.stderr
    assert json.loads(report.read_text())["report"]["kind"] == "anchor_failed"
    assert not (tmp_path / "d").exists()
