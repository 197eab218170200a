"""A stream the program stops early replays: it completes where it reached the program.

A program opens a streamed chat completion, reads one chunk, makes another call, and only
then ends the stream: an explicit close, a `with` block's exit, or `del` + the garbage
collector (which closes an SDK's stream). Recorded, the stream must rank before the later
call in the completion order (the rank it took when it reached the program, not the moment
it was closed); replayed strictly with the endpoint stopped, 3 of 3 runs give the recorded
result. Sync and async openai SDK, anthropic's stream helper; the raw httpx stream left
open is tests/unit/test_completion_order.py::TestAbandonedStream.
"""

from __future__ import annotations

import asyncio
import gc
from typing import Any

import pytest

import symtrace
from symtrace.bundle import load_bundle
from symtrace.session.scheduling import COMPLETED

openai = pytest.importorskip("openai")
anthropic = pytest.importorskip("anthropic")

REPLAYS = 3


@pytest.fixture
def stub(stub_llm_factory):
    # several chunks, sent apart: the program really stops before the stream's end
    return stub_llm_factory(script={"rules": [], "default": {"content": "one two three four"}},
                            chunk_delay=0.005)


def ask(text: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": text}]


def openai_sync(url: str, how: str) -> list[str]:
    with openai.OpenAI(base_url=url, api_key="k", max_retries=0) as client:
        def other() -> str:
            reply = client.chat.completions.create(model="m", messages=ask("right"))
            return reply.choices[0].message.content or ""

        if how == "with":
            with client.chat.completions.create(model="m", messages=ask("left"),
                                                stream=True) as stream:
                first = next(iter(stream)).choices[0].delta.content or "?"
                after = other()
            return [first, after]
        stream = client.chat.completions.create(model="m", messages=ask("left"), stream=True)
        first = next(iter(stream)).choices[0].delta.content or "?"
        after = other()
        if how == "close":
            stream.close()
        else:  # "gc": dropped, and closed by the collector
            del stream
            gc.collect()
        return [first, after]


def openai_async(url: str, how: str) -> list[str]:
    async def run() -> list[str]:
        async with openai.AsyncOpenAI(base_url=url, api_key="k", max_retries=0) as client:
            async def other() -> str:
                reply = await client.chat.completions.create(model="m", messages=ask("right"))
                return reply.choices[0].message.content or ""

            stream = await client.chat.completions.create(model="m", messages=ask("left"),
                                                          stream=True)
            if how == "with":
                async with stream:
                    first = (await anext(aiter(stream))).choices[0].delta.content or "?"
                    after = await other()
                return [first, after]
            first = (await anext(aiter(stream))).choices[0].delta.content or "?"
            after = await other()
            await stream.close()
            return [first, after]

    return asyncio.run(run())


def anthropic_sync(root_url: str, how: str) -> list[str]:
    with anthropic.Anthropic(base_url=root_url, api_key="k", max_retries=0) as client:
        kwargs: dict[str, Any] = {"model": "m", "max_tokens": 64}
        with client.messages.stream(messages=ask("left"), **kwargs) as stream:
            first = next(iter(stream.text_stream))
            reply = client.messages.create(messages=ask("right"), **kwargs)
            after = "".join(b.text for b in reply.content if b.type == "text")
        return [first, after]


CASES = [
    ("openai-sync", "close"),
    ("openai-sync", "with"),
    ("openai-sync", "gc"),
    ("openai-async", "close"),
    ("openai-async", "with"),
    ("anthropic", "with"),
]
PROGRAMS = {"openai-sync": openai_sync, "openai-async": openai_async,
            "anthropic": anthropic_sync}


@pytest.mark.parametrize(("sdk", "how"), CASES, ids=[f"{s}-{h}" for s, h in CASES])
def test_a_stream_stopped_early_replays_strictly(stub, tmp_path, sdk, how):
    url = stub.root_url if sdk == "anthropic" else stub.url
    program = lambda: PROGRAMS[sdk](url, how)  # noqa: E731
    with symtrace.record(tmp_path / "b", task="early close", adapters=[]):
        recorded = program()
    ranks = {}
    for event in load_bundle(tmp_path / "b").events:
        if event.is_llm:
            ranks[event.request["body"]["messages"][0]["content"]] = event.meta[COMPLETED]
    assert ranks["left"] < ranks["right"]  # where it reached the program, not where it ended
    stub.stop()
    for _ in range(REPLAYS):  # an unreachable order fails in 5 s, not 20
        with symtrace.replay(tmp_path / "b", adapters=[], order_timeout=5):
            assert program() == recorded
