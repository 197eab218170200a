"""Token counting offline: recorded counts replay without tiktoken; live counts fall back.

Each test runs with an empty TIKTOKEN_CACHE_DIR (conftest) and no network, which is how an
offline CI sees autogen-ext: tiktoken cannot fetch o200k_base for gpt-4o-mini.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging

import pytest
from symtrace_autogen_agentchat import (
    TiktokenCacheError,
    encoding_cached,
    estimate_tokens,
    seed_tiktoken_cache,
)

import symtrace
from symtrace.bundle import load_bundle
from symtrace.model.events import EventType

pytestmark = pytest.mark.framework("autogen_agentchat")

SCRIPT = {"rules": [], "default": {"content": "Noted."}}


async def chat(turns):
    from agentchat_common import model_client
    from autogen_agentchat.agents import AssistantAgent
    from autogen_core.model_context import TokenLimitedChatCompletionContext

    client = model_client()
    agent = AssistantAgent(
        "summariser", model_client=client,
        model_context=TokenLimitedChatCompletionContext(client, token_limit=40),
    )
    replies = []
    for turn in turns:
        result = await agent.run(task=turn)
        replies.append([m.to_text() for m in result.messages])
    await client.close()
    return replies


TURNS = ["Remember the number 17 for me, please.", "Now also remember 42 and the word tram.",
         "What did I ask you to remember first?"]


def test_token_counts_are_recorded_and_served_without_tiktoken(stub_llm_factory, use_stub,
                                                               tmp_path, monkeypatch, caplog):
    stub = use_stub(stub_llm_factory(script=SCRIPT))
    assert not encoding_cached("o200k_base")
    with caplog.at_level(logging.WARNING), symtrace.record(
            tmp_path / "run", adapters=["autogen_agentchat"]):
        recorded = asyncio.run(chat(TURNS))
    assert "cannot load o200k_base offline" in caplog.text
    bundle = load_bundle(tmp_path / "run")
    calls = [e for e in bundle.events if e.type is EventType.TOOL_CALL]
    # Besides the counts, tiktoken's failed attempt to download o200k_base goes through requests
    # and is recorded as a non-LLM HTTP call (tool "http"), so replay never reaches the network.
    assert {c.request["tool"] for c in calls} <= {"count_tokens", "http"}
    counts = [c for c in calls if c.request["tool"] == "count_tokens"]
    assert counts
    assert all(c.agent == "summariser" and c.meta["encoding"] == "o200k_base" for c in counts)
    trimmed = [e for e in bundle.events if e.is_llm][-1]
    assert len(trimmed.request["body"]["messages"]) < 6, "the context was trimmed by count"

    import autogen_ext.models.openai._openai_client as openai_client

    def no_tiktoken(*args, **kwargs):
        raise AssertionError("replay must not count tokens again")

    monkeypatch.setattr(openai_client.tiktoken, "encoding_for_model", no_tiktoken)
    monkeypatch.setattr(openai_client.tiktoken, "get_encoding", no_tiktoken)
    served = stub.served
    with symtrace.replay(tmp_path / "run"):
        assert asyncio.run(chat(TURNS)) == recorded
    assert stub.served == served


def test_the_estimate_is_deterministic_and_grows_with_the_text():
    from autogen_core.models import UserMessage

    short = [UserMessage(content="Lisbon", source="user")]
    long = [UserMessage(content="Lisbon is a city of seven hills by the river.", source="user")]
    assert estimate_tokens(short, []) == estimate_tokens(list(short), [])
    assert estimate_tokens(long, []) > estimate_tokens(short, [])


def test_seeding_the_cache_checks_the_file(tmp_path):
    bogus = tmp_path / "o200k_base.tiktoken"
    bogus.write_bytes(b"not a bpe file")
    with pytest.raises(TiktokenCacheError, match="not the o200k_base file"):
        seed_tiktoken_cache("o200k_base", bogus)
    with pytest.raises(TiktokenCacheError, match="unknown encoding"):
        seed_tiktoken_cache("o9k_base", bogus)
    with pytest.raises(TiktokenCacheError, match="cannot read"):
        seed_tiktoken_cache("cl100k_base", tmp_path / "missing.tiktoken")
    assert not encoding_cached("o200k_base")


def test_a_seeded_file_is_found_where_tiktoken_looks(tmp_path, monkeypatch):
    """Stand in a file with a known digest for the real one: the lookup path is tiktoken's."""
    from symtrace_autogen_agentchat import _tokens

    data = b"stand-in encoding file"
    source = tmp_path / "x.tiktoken"
    source.write_bytes(data)
    url = "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken"
    monkeypatch.setitem(_tokens.ENCODING_FILES, "o200k_base",
                        (url, hashlib.sha256(data).hexdigest()))
    target = seed_tiktoken_cache("o200k_base", source)
    assert target.name == hashlib.sha1(url.encode()).hexdigest()
    assert target.read_bytes() == data
    assert encoding_cached("o200k_base")
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", "")
    with pytest.raises(TiktokenCacheError, match="disabled"):
        seed_tiktoken_cache("o200k_base", source)
