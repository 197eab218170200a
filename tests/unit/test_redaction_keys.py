"""A credential in an object key is redacted like one in a value, and restored on replay.

Keys were searched (so a key holding a secret made the writer's last check refuse the whole
recording) but never rewritten. Now a key is replaced as a value is: `[REDACTED:NAME]` for a
named secret (restorable, what replay hands back), `[REDACTED]` otherwise (a request key is
replaced, a key of what the program received is refused, as values are). Two keys of one
object that would become the same key are never merged: RedactionError. Tuples are rewritten
like lists (they were left as they were).
"""

from __future__ import annotations

import httpx
import pytest

import symtrace
from symtrace.bundle import load_bundle
from symtrace.errors import RedactionError
from symtrace.model.redaction import REDACTED, Redactor
from symtrace.stub import StubLLM

NAMED = "named-secret-value-1234"
SHAPED = "sk-" + "A" * 24
REDACTOR = Redactor((("MY_TOKEN", NAMED),))


def test_a_key_is_redacted_like_a_value_and_keeps_its_place():
    value = {"first": 1, SHAPED: {"nested": [{NAMED: "x"}]}, "url?api_key=k123456": 2,
             "last": (NAMED, SHAPED)}
    scrubbed = REDACTOR.scrub(value)
    assert list(scrubbed) == ["first", REDACTED, "url?api_key=[REDACTED]", "last"]
    assert scrubbed[REDACTED] == {"nested": [{"[REDACTED:MY_TOKEN]": "x"}]}
    assert scrubbed["last"] == ("[REDACTED:MY_TOKEN]", REDACTED)  # a tuple stays one
    REDACTOR.check(repr(scrubbed).encode(), "the test")  # nothing left for the last check


def test_two_keys_that_would_become_one_are_refused_not_merged():
    with pytest.raises(RedactionError, match="same key"):
        REDACTOR.scrub({SHAPED: 1, "sk-" + "B" * 24: 2})
    with pytest.raises(RedactionError, match="same key"):
        REDACTOR.scrub({REDACTED: 1, SHAPED: 2})  # an existing key is not overwritten either
    with pytest.raises(RedactionError, match="same key"):
        REDACTOR.scrub_received({"[REDACTED:MY_TOKEN]": 1, NAMED: 2}, "a result")


def test_a_received_named_key_round_trips_and_an_unnamed_one_is_refused():
    received = {"a": 1, NAMED: {"b": NAMED}, "z": [{NAMED: 2}]}
    stored = REDACTOR.scrub_received(received, "a result")
    assert stored == {"a": 1, "[REDACTED:MY_TOKEN]": {"b": "[REDACTED:MY_TOKEN]"},
                      "z": [{"[REDACTED:MY_TOKEN]": 2}]}
    restored = REDACTOR.restore(stored)
    assert restored == received and list(restored) == list(received)
    other = Redactor().restore(stored, env={"MY_TOKEN": "this-process-value"})
    assert list(other) == ["a", "this-process-value", "z"]
    with pytest.raises(RedactionError, match="refusing to record a result"):
        REDACTOR.scrub_received({SHAPED: 1}, "a result")


def test_restoring_two_keys_to_one_is_refused_not_merged():
    stored = {"[REDACTED:A_KEY]": 1, "[REDACTED:B_KEY]": 2}
    with pytest.raises(RedactionError, match="same key"):
        Redactor().restore(stored, env={"A_KEY": "same-value-99", "B_KEY": "same-value-99"})


def test_a_secret_key_is_recorded_redacted_and_replayed_restored(tmp_path, monkeypatch):
    """End to end: a request body and a tool result keyed by a secret. Recording used to be
    refused whole by the writer's last check; now the bundle holds tokens, the strict replay
    (another value for the same secret) matches, and the program gets its own keys back."""
    bundle = tmp_path / "run"

    def run(secret: str) -> tuple[str, dict]:
        @symtrace.tool
        def lookup(query: str) -> dict:
            return {secret: query, "plain": 1}

        body = {"model": "m", "messages": [{"role": "user", "content": "hi"}],
                "metadata": {secret: "v", "sk-" + "C" * 24: "w"}}
        reply = httpx.post(f"{url}/chat/completions", json=body).json()
        return reply["choices"][0]["message"]["content"], lookup("q")

    with StubLLM(seed=3) as stub:
        url = stub.url
        with symtrace.record(bundle, secrets=[NAMED]):
            recorded = run(NAMED)
    raw = b"".join(p.read_bytes() for p in sorted(bundle.rglob("*")) if p.is_file())
    assert NAMED.encode() not in raw and b"sk-CCCC" not in raw
    events = load_bundle(bundle).events
    (llm,) = [e for e in events if e.is_llm]
    assert set(llm.request["body"]["metadata"]) == {"[REDACTED:SECRET_1]", REDACTED}
    assert recorded[1] == {NAMED: "q", "plain": 1}
    other = "another-secret-value-5678"
    with symtrace.replay(bundle, secrets=[other]):  # stub stopped: served from the bundle
        replayed = run(other)
    assert replayed == (recorded[0], {other: "q", "plain": 1})
