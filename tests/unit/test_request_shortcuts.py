"""The recording path's shortcuts give the same keys, hashes and redaction as the plain path.

Recording a call no longer copies what it can use as is: canonical data is checked, not
rebuilt (`as_json_value`), echoed tool-call ids are rewritten only in the messages that
carry them, and response headers are kept in one pass. Each shortcut is compared here with
the plain definition it replaces, on random data with and without secrets, so a shortcut that
changed a request hash or let a credential through fails.
"""

from __future__ import annotations

import enum
import math
import random
import string
from collections import Counter
from typing import Any

import httpx
import orjson
import pytest

from symtrace.boundaries.http.exchange import (
    Exchange,
    WireRequest,
    kept_header_items,
    kept_headers,
)
from symtrace.errors import CanonicalizationError, RedactionError
from symtrace.model import canonical
from symtrace.model.canonical import as_json_value, canonical_bytes, json_strings, to_json_value
from symtrace.model.hashing import digest
from symtrace.model.llm_wire import normalise_echoed_ids
from symtrace.model.redaction import Redactor
from symtrace.record.recorder import Recorder
from symtrace.session.core import BoundaryCall, Session

NAMED = "n4med-s3cret-value"
SECRETS = (
    "sk-" + "A" * 24,
    "Bearer abcdefghijklmnopqrstuvwxyz012345",
    "AKIA" + "B" * 16,
    "ghp_" + "c" * 36,
    "xoxb-1234567890-abcd",
    "-----BEGIN RSA PRIVATE KEY-----",
    "https://h/x?api_key=hunter22&v=1",
    NAMED,
)


class Kind(enum.IntEnum):
    ONE = 1


class Text(str):
    pass


def leaf(rng: random.Random, secrets: bool) -> Any:
    roll = rng.random()
    if secrets and roll < 0.15:
        return rng.choice(SECRETS) + rng.choice(["", " tail", "\n"])
    if roll < 0.45:
        return "".join(rng.choice(string.printable) for _ in range(rng.randint(0, 30)))
    if roll < 0.55:
        return rng.choice([0.0, 1.0, -2.0, 3.5, 1e20, 2.0**60, -0.5, 7.25e-3])
    if roll < 0.65:
        return rng.randint(-(2**40), 2**40)
    if roll < 0.75:
        return rng.choice([True, False, None])
    if roll < 0.8:
        return "é✓ " + rng.choice(["plain", "sk-ok", "token=x"])
    return rng.choice(["user", "assistant", "a=b", "key", "task:Task-1", "[REDACTED]"])


def value(rng: random.Random, depth: int = 0, secrets: bool = False,
          exotic: bool = False) -> Any:
    roll = rng.random()
    if depth > 3 or roll < 0.35:
        if exotic and rng.random() < 0.1:
            return rng.choice([Kind.ONE, Text("sub"), (1, 2.0)])
        return leaf(rng, secrets)
    if roll < 0.7:
        keys = ["role", "content", "name", "x", "api_key", "temperature", "k"]
        if secrets:
            keys.append(rng.choice(SECRETS))  # a credential can be a key, too
        return {f"{rng.choice(keys)} {i}": value(rng, depth + 1, secrets, exotic)
                for i in range(rng.randint(0, 4))}
    items = [value(rng, depth + 1, secrets, exotic) for _ in range(rng.randint(0, 4))]
    return tuple(items) if exotic and rng.random() < 0.2 else items


# -- as_json_value: the plain definition, without the copy ----------------------------------------
@pytest.mark.parametrize("seed", range(4))
def test_as_json_value_is_to_json_value_without_the_copy(seed):
    rng = random.Random(seed)
    for _ in range(500):
        data = value(rng, exotic=True)
        plain = to_json_value(data)
        fast = as_json_value(data)
        # bytes, not ==: 1 == 1.0 in Python, but the canonical forms differ
        assert orjson.dumps(fast, option=orjson.OPT_SORT_KEYS) == orjson.dumps(
            plain, option=orjson.OPT_SORT_KEYS)
        assert canonical_bytes(data) == orjson.dumps(plain, option=orjson.OPT_SORT_KEYS)
        assert type(fast) is type(plain)
        if type(data) in (dict, list):  # canonical already: used as is, not copied
            assert (fast is data) == _exact(data)


def _exact(data: Any) -> bool:
    """Exact JSON types throughout, no integral or non-finite float (what needs no copy)."""
    if type(data) is dict:
        return all(type(k) is str and _exact(v) for k, v in data.items())
    if type(data) is list:
        return all(_exact(v) for v in data)
    if type(data) is float:
        return math.isfinite(data) and not data.is_integer()
    return type(data) in (str, int, bool, type(None))


def every_string(data: Any, keys: bool = True) -> list[str]:
    if isinstance(data, dict):
        return [*(data if keys else ()), *(s for v in data.values() for s in every_string(v, keys))]
    if isinstance(data, list | tuple):
        return [s for v in data for s in every_string(v, keys)]
    return [data] if isinstance(data, str) else []


@pytest.mark.parametrize("seed", range(3))
def test_json_strings_are_every_key_and_string_of_canonical_data(seed):
    rng = random.Random(seed)
    for _ in range(500):
        data = value(rng, secrets=True, exotic=rng.random() < 0.3)
        strings = json_strings(data)
        if _exact(data):
            assert strings is not None
            assert Counter(strings) == Counter(every_string(data))
        else:
            assert strings is None  # the caller converts it, then walks it again
    assert json_strings({1: "a"}) is None
    assert json_strings({"a": [1.0]}) is None and json_strings({"a": [1.5]}) == ["a"]


def long_list(rng: random.Random) -> list[Any]:
    """A list longer than json_strings types item by item: strings (stream chunks), objects
    (messages), and the odd item that spoils either (a float, a subclass, a non-string key)."""
    size = rng.randint(canonical._BULK + 1, 12)
    roll = rng.random()
    if roll < 0.3:
        items: list[Any] = [leaf(rng, True) if rng.random() < 0.1 else f"chunk {i}"
                            for i in range(size)]
    elif roll < 0.8:
        items = [{"role": "user", "content": f"turn {i}"} for i in range(size)]
        for _ in range(rng.randint(0, 2)):
            at = rng.randrange(size)
            items[at] = {**items[at], rng.choice(["x", "content"]): value(rng, 2, True, True)}
    else:
        items = [value(rng, 2, True, True) for _ in range(size)]
    if rng.random() < 0.15:
        items[rng.randrange(size)] = rng.choice(
            [{1: "a"}, Text("sub"), 2.0, {"k": {2: "b"}}, {"k": [1.0]}, (1, 2), Kind.ONE])
    return items


@pytest.mark.parametrize("seed", range(3))
def test_json_strings_of_long_lists_are_every_key_and_string(seed):
    rng = random.Random(seed)
    for _ in range(500):
        data = {"messages": long_list(rng), "nested": [long_list(rng)], "m": "x"}
        strings = json_strings(data)
        if _exact(data):
            assert strings is not None
            assert Counter(strings) == Counter(every_string(data))
        else:
            assert strings is None


@pytest.mark.parametrize("bad", [
    {"a": [1, float("nan")]}, {"a": {"b": float("inf")}}, {1: "x"}, {"a": [object()]},
])
def test_as_json_value_refuses_what_to_json_value_refuses(bad):
    with pytest.raises(CanonicalizationError) as plain:
        to_json_value(bad)
    with pytest.raises(CanonicalizationError) as fast:
        as_json_value(bad)
    assert str(fast.value) == str(plain.value)


def test_an_integral_float_is_still_an_integer_in_the_key():
    body = {"messages": [], "temperature": 1.0, "top_p": 0.5}
    assert as_json_value(body) is not body
    assert type(as_json_value(body)["temperature"]) is int
    assert digest(body) == digest({"messages": [], "temperature": 1, "top_p": 0.5})


# -- echoed ids: rewritten only where they occur -----------------------------------------------
def reference_normalise(request: dict[str, Any]) -> dict[str, Any]:
    """The definition before copy-on-write: every message copied, then ids replaced."""
    body = request["body"]
    ids: dict[str, str] = {}

    def ordinal(raw: object) -> object:
        return ids.setdefault(raw, f"call#{len(ids)}") if isinstance(raw, str) else raw

    out = []
    for message in body["messages"]:
        if not isinstance(message, dict):
            out.append(message)
            continue
        message = dict(message)
        if isinstance(message.get("tool_calls"), list):
            message["tool_calls"] = [{**c, "id": ordinal(c.get("id"))} if isinstance(c, dict)
                                     else c for c in message["tool_calls"]]
        if "tool_call_id" in message:
            message["tool_call_id"] = ordinal(message["tool_call_id"])
        out.append(message)
    return {**request, "body": {**body, "messages": out}}


def chat_message(rng: random.Random) -> Any:
    roll = rng.random()
    if roll < 0.5:
        return {"role": rng.choice(["user", "assistant", "system"]), "content": leaf(rng, False)}
    if roll < 0.7:
        return {"role": "assistant", "content": None, "tool_calls": [
            {"id": rng.choice(["call_a", "call_b", None, 3]), "type": "function"}
            for _ in range(rng.randint(0, 2))] + ([None] if rng.random() < 0.1 else [])}
    if roll < 0.9:
        return {"role": "tool", "tool_call_id": rng.choice(["call_a", "call_b", 7]),
                "content": "r"}
    return rng.choice(["bare", None, {"role": "user", "tool_calls": None}])


@pytest.mark.parametrize("seed", range(4))
def test_echoed_ids_copy_on_write_equals_the_plain_definition(seed):
    rng = random.Random(seed)
    for _ in range(400):
        messages = [chat_message(rng) for _ in range(rng.randint(0, 8))]
        request = {"method": "POST", "path": "/v1/chat/completions", "query": "",
                   "body": {"model": "m", "messages": messages}}
        snapshot = orjson.dumps(request)
        normal = normalise_echoed_ids(request)
        assert orjson.dumps(normal) == orjson.dumps(reference_normalise(request))
        assert orjson.dumps(request) == snapshot, "the input was changed in place"
        for new, old in zip(normal["body"]["messages"], messages, strict=True):
            carries_ids = isinstance(old, dict) and ("tool_calls" in old or "tool_call_id" in old)
            assert (new is old) != carries_ids


def echo_item(rng: random.Random) -> Any:
    """A message or input item of any format, with or without echoed ids (or look-alikes)."""
    roll = rng.random()
    if roll < 0.3:
        return chat_message(rng)
    if roll < 0.5:  # Responses: function calls and their outputs carry call_id
        return rng.choice([
            {"type": "function_call", "call_id": rng.choice(["c1", "c2", 5]), "name": "f"},
            {"type": "function_call_output", "call_id": "c1", "output": "ok"},
            {"type": "message", "role": "user", "content": "hi"}])
    if roll < 0.8:  # Anthropic: tool_use / tool_result blocks, one without its id
        blocks = rng.choice([
            [{"type": "tool_use", "id": "toolu_1", "name": "f", "input": {}}],
            [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "r"}],
            [{"type": "tool_result", "content": "no id"}],
            [{"type": "text", "text": "plain"}]])
        return {"role": rng.choice(["user", "assistant"]), "content": blocks}
    return {"role": "user", "content": "no ids", "meta": {"call_id": "nested"}}


@pytest.mark.parametrize("seed", range(4))
def test_a_scanned_request_rewrites_echoed_ids_as_the_full_rewrite_does(seed):
    """Skipping the rewrite when no echoed-id key occurs never changes a request's key."""
    rng = random.Random(seed)
    paths = ["/v1/chat/completions", "/v1/responses", "/v1/messages", "/api"]
    for i in range(400):
        items = [echo_item(rng) for _ in range(rng.randint(0, 5))]
        body: Any = {"model": "m", rng.choice(["messages", "input"]): items}
        path = rng.choice(paths)
        snapshot = orjson.dumps(body)
        request, strings = canonical.scanned_http_request("post", path, "", body)
        full = normalise_echoed_ids({"method": "POST", "path": path, "query": "",
                                     "body": as_json_value(body)})
        assert orjson.dumps(request) == orjson.dumps(full), i
        assert orjson.dumps(body) == snapshot, "the body was changed in place"
        if strings is not None:
            assert request["body"] is body
            assert Counter(strings) == Counter(every_string(request)), i


# -- the exchange's request: canonical, redacted, hashed as the plain path does it -------------
class _Seam:
    library = "httpx"

    def rebuild_error(self, error: dict[str, str]) -> BaseException:
        return RuntimeError(error)


def plain_request(redactor: Redactor, wire: WireRequest) -> Any:
    """The request key by the plain definition: parse, copy to JSON data, ids, redact."""
    try:
        body: Any = to_json_value(orjson.loads(wire.content)) if wire.content else None
    except orjson.JSONDecodeError:
        body = {"$bytes": wire.content.decode("utf-8", "replace")}
    request = {"method": wire.method.upper(), "path": wire.path, "query": wire.query,
               "body": body}
    if isinstance(body, dict) and isinstance(body.get("messages"), list):
        request = reference_normalise(request)
    return redactor.scrub(request)


@pytest.mark.parametrize("seed", range(6))
def test_a_recorded_request_keys_and_redacts_like_the_plain_path(seed):
    rng = random.Random(seed)
    redactor = Redactor((("MY_TOKEN", NAMED),))
    session = Session(None, redactor)
    for i in range(300):
        secrets = rng.random() < 0.5
        if rng.random() < 0.5:
            body: Any = {"model": "m", "messages": [
                chat_message(rng) if rng.random() < 0.5
                else {"role": "user", "content": leaf(rng, secrets)}
                for _ in range(rng.randint(0, 6))], "temperature": rng.choice([1.0, 0.7, 1])}
        else:
            body = value(rng, secrets=secrets)
        content = orjson.dumps(body) if rng.random() < 0.9 else b"not json " + NAMED.encode()
        path = rng.choice(["/v1/chat/completions", "/v1/other", "/api"])
        query = rng.choice(["", "a=1", "api_key=hunter22", "token=" + NAMED])
        wire = WireRequest("post", "http", "127.0.0.1", 8080, path, query, content)
        call = Exchange(session, wire, _Seam()).call
        expected = plain_request(redactor, wire)
        if call.kind == "tool":
            expected = {"tool": "http", "arguments": expected}
        key = orjson.dumps(call.request, option=orjson.OPT_SORT_KEYS)
        assert key == orjson.dumps(expected, option=orjson.OPT_SORT_KEYS), i
        assert call.request_hash == digest(expected)
        # (object keys are searched but never rewritten, by either path: a key holding a
        # credential is refused by the writer's last check instead)
        texts = "\n".join(every_string(call.request, keys=False))
        for secret in (NAMED, "A" * 24, "B" * 16, "c" * 36, "hunter22",
                       "abcdefghijklmnopqrstuvwxyz012345", "xoxb-1234567890"):
            assert secret not in texts, (i, secret)


# -- response headers, one pass -------------------------------------------------------------------
@pytest.mark.parametrize("seed", range(3))
def test_kept_header_items_equals_the_mapping_lookups(seed):
    rng = random.Random(seed)
    names = ["Content-Type", "content-type", "Retry-After", "x-request-id", "X-Request-Id",
             "request-id", "date", "server", "x-should-retry", "retry-after-ms", "set-cookie"]
    for _ in range(300):
        raw = [(rng.choice(names), rng.choice(["a", "b, c", "1", ""]))
               for _ in range(rng.randint(0, 8))]
        headers = httpx.Headers(raw)
        fast = kept_header_items(headers.multi_items())
        assert fast == kept_headers(headers)
        assert list(fast) == list(kept_headers(headers))  # same order too


# -- the recorded result: redacted and hashed from one walk, as the plain path does it --------
def response_value(rng: random.Random) -> Any:
    """A response-like value: parsed JSON, sometimes with a named secret, an integral float,
    a tuple or a credential nobody declared (which must be refused)."""
    data = {"status": 200, "headers": {"content-type": "application/json"},
            "body": value(rng, exotic=rng.random() < 0.3)}
    roll = rng.random()
    if roll < 0.3:
        data["body"] = {"echo": f"the key is {NAMED}", "rest": data["body"]}
    elif roll < 0.4:
        data["body"] = {"leak": rng.choice(SECRETS[:-1])}
    elif roll < 0.5:
        data["usage"] = {"ratio": 1.0, "tokens": (1, 2)}
    return data


@pytest.mark.parametrize("kind", ["llm", "tool"])
@pytest.mark.parametrize("seed", range(3))
def test_a_recorded_result_is_redacted_and_hashed_like_the_plain_path(kind, seed):
    rng = random.Random(seed)
    recorder = Recorder(None, Redactor((("MY_TOKEN", NAMED),)))
    plain = Redactor((("MY_TOKEN", NAMED),))
    for i in range(200):
        response = response_value(rng)
        snapshot = orjson.dumps(response)
        try:
            expected = plain.scrub_received(response, "x")  # the plain path: walk, then hash
        except RedactionError:
            expected = None
        ticket = recorder.begin(BoundaryCall.make(kind, {"n": i}))
        if expected is None:
            with pytest.raises(RedactionError):
                recorder.finish(ticket, response)
            recorder.refusal = None
            continue
        event = recorder.finish(ticket, response)
        if kind == "tool":  # the tool_call was emitted at begin; the result is its own event
            assert event.type.value == "tool_result"
        assert canonical_bytes(event.response) == canonical_bytes(expected), i
        assert event.response_hash == digest(expected)
        again = event.with_hashes()  # everything recomputed from the content, nothing reused
        assert (again.request_hash, again.response_hash, again.content_hash) == (
            event.request_hash, event.response_hash, event.content_hash)
        assert orjson.dumps(response) == snapshot, "the program's result was changed in place"
        assert NAMED not in canonical_bytes(event.response).decode()
