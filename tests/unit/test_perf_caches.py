"""The caches that keep recording cheap must never serve something stale.

Each cache is keyed by the identity of what it read (content, or the installation state),
so these tests change that input in place between two uses and check the second answer is
the fresh one, not the remembered one.
"""

from __future__ import annotations

import random
import sys

import orjson
import pytest

from symtrace.errors import AdapterNotFound
from symtrace.frameworks import registry


# -- the adapter registry: read afresh, so never stale ------------------------------------------
def _dist(root, name: str, adapters: dict[str, str]) -> None:
    info = root / f"{name}-0.0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.0.1\n")
    (info / "entry_points.txt").write_text(
        "[symtrace.adapters]\n" + "".join(f"{k} = {v}\n" for k, v in adapters.items())
    )


def test_registry_sees_an_adapter_installed_while_the_process_runs(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(tmp_path))
    before = registry.registered()
    assert "late_fake" not in before
    _dist(tmp_path, "symtrace_late_fake", {"late_fake": "symtrace_late_fake_mod:make"})
    assert registry.registered()["late_fake"] == "symtrace_late_fake_mod:make"
    # a second distribution claiming the same name differently is still refused, not cached
    _dist(tmp_path, "symtrace_late_twin", {"late_fake": "elsewhere:make"})
    with pytest.raises(AdapterNotFound, match="two adapters"):
        registry.registered()


def test_registry_forgets_an_adapter_removed_from_the_path(tmp_path, monkeypatch):
    _dist(tmp_path, "symtrace_gone_fake", {"gone_fake": "symtrace_gone_fake_mod:make"})
    monkeypatch.syspath_prepend(str(tmp_path))
    assert "gone_fake" in registry.registered()
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p != str(tmp_path)])
    assert "gone_fake" not in registry.registered()


# -- canonical data is hashed once: the shortcut equals the full digest ------------------------
def _random_json(rng, depth=0):
    kind = rng.randrange(8 if depth < 4 else 5)
    if kind == 0:
        return rng.choice([None, True, False])
    if kind == 1:
        return rng.randint(-(2**60), 2**60)
    if kind == 2:
        return rng.choice([1.0, -0.0, 2.5, 1e300, 3.0e15, -7.25, float(2**53), 0.1])
    if kind in (3, 4):
        return "".join(rng.choice("ab é\"\\\n/~😀") for _ in range(rng.randint(0, 12)))
    if kind in (5, 6):
        return {"".join(rng.choice("kéy/~") for _ in range(rng.randint(0, 4))):
                _random_json(rng, depth + 1) for _ in range(rng.randint(0, 4))}
    return [_random_json(rng, depth + 1) for _ in range(rng.randint(0, 4))]


def test_digest_of_canonical_data_equals_the_full_digest():
    import random

    from symtrace.model.canonical import to_json_value
    from symtrace.model.hashing import digest, digest_canonical

    rng = random.Random(20)
    for _ in range(2000):
        value = to_json_value(_random_json(rng))
        assert digest_canonical(value) == digest(value)


# -- redaction: a string is searched once, a mutated container is searched again ---------------
def test_redaction_memo_never_hides_a_secret_put_into_a_clean_message_in_place():
    from symtrace.model.redaction import Redactor

    secret = "tok3n-value-123456"
    redactor = Redactor((("MY_TOKEN", secret),))
    message = {"role": "user", "content": "nothing to hide here, twice over"}
    request = {"body": {"messages": [message]}}
    assert redactor.scrub(request) is request  # clean: returned as is, and remembered
    message["content"] = f"now it holds {secret} and sk-{'a' * 24}"
    scrubbed = redactor.scrub(request)
    assert scrubbed["body"]["messages"][0]["content"] == (
        "now it holds [REDACTED:MY_TOKEN] and [REDACTED]"
    )
    message["extra"] = {f"key-{secret}": 1}  # a secret in a key is found (and refused later)
    message["content"] = "clean again"
    assert redactor._maybe(request)


def test_redaction_memo_is_per_redactor_and_bounded(monkeypatch):
    from symtrace.model import redaction

    text = "a perfectly ordinary sentence of some length"
    plain = redaction.Redactor()
    assert plain.scrub({"t": text}) == {"t": text}
    assert text in plain._clean
    # the same text is a secret to another redactor: its memo does not leak
    strict = redaction.Redactor((("X_TOKEN", text),))
    assert strict.scrub({"t": text}) == {"t": "[REDACTED:X_TOKEN]"}
    monkeypatch.setattr(redaction, "CLEAN_ENTRIES", 3)
    for i in range(10):
        plain.scrub({"t": f"text number {i}"})
    assert len(plain._clean) <= 3


def test_redaction_memo_remembers_a_batch_as_one_by_one(monkeypatch):
    """A call's new clean texts are remembered at once when that changes nothing: the memo
    (entries, characters, clearings, texts too long to keep) ends as remembering them one by
    one leaves it, across bounds small enough to be crossed."""
    from symtrace.model import redaction

    monkeypatch.setattr(redaction, "CLEAN_ENTRIES", 40)
    monkeypatch.setattr(redaction, "CLEAN_CHARS", 900)
    monkeypatch.setattr(redaction, "CLEAN_MAX_TEXT", 120)
    rng = random.Random(3)
    batch, single = redaction.Redactor(), redaction.Redactor()
    for _ in range(400):
        texts = [f"t{rng.randrange(60)} " * rng.randint(0, 35) for _ in range(rng.randint(1, 12))]
        batch._remember_all_clean(texts)
        for text in texts:
            single._remember_clean(text)
        assert batch._clean == single._clean and list(batch._clean) == list(single._clean)
        assert batch._clean_chars == single._clean_chars


# -- end to end: a message edited in place between calls ----------------------------------
def test_recording_a_conversation_mutated_in_place_stores_each_state(tmp_path):
    """End to end through the openai SDK: the program edits a message dict between calls;
    each recorded request is what was sent, and its hash is its content's."""
    openai = pytest.importorskip("openai")
    import symtrace
    from symtrace.bundle.reader import verify_bundle
    from symtrace.model.hashing import digest
    from symtrace.stub import StubLLM

    with StubLLM(seed=3) as stub:
        client = openai.OpenAI(base_url=stub.url, api_key="sk-test", max_retries=0)
        history = [{"role": "system", "content": "Be brief. " * 20},
                   {"role": "user", "content": "What is two and two? " * 10},
                   {"role": "assistant", "content": "Four, as usual."}]
        with symtrace.record(tmp_path / "b"):
            client.chat.completions.create(model="m", messages=history)
            history[1]["content"] = "What is three and three? " * 10  # in place
            client.chat.completions.create(model="m", messages=history)
            client.chat.completions.create(model="m", messages=history)
        client.close()
    events = [e for e in symtrace.load_bundle(tmp_path / "b").events if e.is_llm]
    sent = [e.request["body"]["messages"][1]["content"] for e in events]
    assert sent == ["What is two and two? " * 10] + ["What is three and three? " * 10] * 2
    for event in events:
        assert event.request_hash == digest(event.request)
    assert events[1].request_hash == events[2].request_hash != events[0].request_hash
    assert verify_bundle(tmp_path / "b").sealed


# -- quoted texts: the per-message index answers exactly what a scan of the joined text does ---
def test_quote_index_equals_the_scan_of_the_joined_request():
    import random

    from symtrace.model.quotes import QuoteIndex

    rng = random.Random(19)
    words = ["alpha", "beta", "gamma", "delta", "ab", "a", "b", "ta", "al", "x.", "pha"]

    def text(n):
        return " ".join(rng.choice(words) for _ in range(n))

    index = QuoteIndex()
    history = [text(rng.randint(1, 6)) for _ in range(12)]
    for _ in range(400):
        if rng.random() < 0.5:
            # a producer: often a piece of the history, across message boundaries too
            joined = " ".join(history)
            start = rng.randrange(len(joined))
            piece = joined[start:start + rng.randint(1, 30)].strip()
            index.add(" ".join((piece or text(3)).split()))
        window = history[rng.randrange(len(history)):] if rng.random() < 0.5 else history
        parts = [p for p in window if p]
        lo = max(0, len(index) - rng.choice([len(index) + 1, 5, 50]))
        haystack = " ".join(parts)
        expected = {i for i in range(lo, len(index)) if index.texts[i] in haystack}
        assert index.quoted(parts, lo) == expected
        history.append(text(rng.randint(1, 6)))
        if rng.random() < 0.3:
            history[rng.randrange(len(history))] = text(rng.randint(1, 4))


def test_quote_index_finds_a_text_that_covers_a_message_boundary():
    from symtrace.model.quotes import QuoteIndex

    index = QuoteIndex()
    spanning = index.add("the end of one and the start of another")
    inside = index.add("start of another message")
    absent = index.add("nowhere in the request")
    parts = ["this is the end of one", "and the start of another message"]
    assert index.quoted(parts) == {spanning, inside}
    assert index.quoted(["the end of one", "and the start"]) == set()
    assert absent not in index.quoted(parts)
    # a text longer than a whole part, covering two boundaries
    across = index.add("x one two y")
    assert across in index.quoted(["w x", "one two", "y z"])


# -- fast event construction equals the dataclass path -----------------------------------------
def test_event_fast_paths_equal_the_dataclass_ones():
    from dataclasses import replace

    import pytest as _pytest

    from symtrace.bundle.blobs import Joiner
    from symtrace.bundle.lazy import LazyEvent
    from symtrace.model.events import Edge, EdgeKind, Event, EventType

    event = Event(id="agent_action_0001", position=3, type=EventType.AGENT_ACTION, lane="main",
                  agent="a", reason=None,
                  parents=(Edge("tool_result_0000", EdgeKind.DATA),
                           Edge("agent_action_0000", EdgeKind.CONTROL)),
                  request={"body": {"x": 1}}, response={"ok": True}, meta={"completed": 2})
    event = event.with_hashes()
    data = event.to_json()
    assert Event.from_json(data) == event
    lazy = LazyEvent.of(orjson.loads(orjson.dumps(data)), Joiner(lambda ref: None))
    assert (lazy.request, lazy.response, lazy.parents, lazy.meta) == (
        event.request, event.response, event.parents, event.meta)
    assert lazy.with_hashes().to_json() == event.with_hashes().to_json()
    for changes in ({"meta": {"k": 1}}, {"position": 9, "request": None}, {}):
        assert event.evolve(**changes) == replace(event, **changes)
    with _pytest.raises(TypeError):
        event.evolve(nope=1)
    with _pytest.raises(ValueError):
        Event.from_json({**data, "type": "not_a_type"})
    with _pytest.raises(KeyError):
        Event.from_json({k: v for k, v in data.items() if k != "lane"})
    made = Event.from_json({**data, "position": 3.0, "meta": None})
    assert type(made) is Event and made.position == 3 and made.meta == {}
    with _pytest.raises(ValueError):
        Event.from_json({**data, "parents": [{"source": "x", "kind": "nope"}]})
    shared: dict = {}
    a = Event.from_json(data, shared)
    b = Event.from_json(data, shared)
    assert a.parents[0] is b.parents[0]  # equal edges are one immutable object


@pytest.mark.parametrize("seed", range(4))
def test_redaction_batched_search_never_hides_a_string_with_a_match(seed):
    """New strings are searched joined by '"' at once: that must find whatever one string
    searched alone would (a fresh redactor per case, so nothing is remembered)."""
    import random
    import string

    from symtrace.model.redaction import Redactor

    pieces = ("sk-", "Bearer ", "AKIA", "ghp_", "xoxb-", "key=", "token=", "&sig=", "?api_key=",
              "[REDACTED]", "-----BEGIN RSA PRIVATE KEY-----", "tok3n-value-1234", "\"", "=")
    rng = random.Random(seed)
    alphabet = string.ascii_letters + string.digits + " _-\"?&;=é"
    for _ in range(1500):
        strings = []
        for _ in range(rng.randint(1, 5)):
            parts = []
            for _ in range(rng.randint(0, 4)):
                parts.append("".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12))))
                if rng.random() < 0.3:
                    parts.append(rng.choice(pieces))
                    parts.append("".join(rng.choice(string.ascii_uppercase + string.digits)
                                         for _ in range(rng.randint(0, 30))))
            strings.append("".join(parts))
        redactor = Redactor((("MY_TOKEN", "tok3n-value-1234"),))
        expected = any(redactor._search(text) is not None for text in strings)
        assert Redactor((("MY_TOKEN", "tok3n-value-1234"),))._maybe({"m": strings}) == expected


# -- blob splitting: the message memo and chain nodes built from bytes change no byte ----------
def _reference_split(value, store):
    """The plain definition of blobs.split (docs/bundle-format.md): bottom-up, every chain
    node serialised whole."""
    from symtrace.bundle import blobs
    from symtrace.bundle.seal import canon, sha256_ref

    def blob(inner, force):
        data = canon(inner)
        if not force and len(data) < blobs.BLOB_MIN_BYTES:
            return inner
        ref = sha256_ref(data)
        store(ref, data)
        return {blobs.REF_KEY: ref}

    if isinstance(value, list):
        items = [_reference_split(item, store) for item in value]
        if len(value) >= blobs.CHAIN_MIN_ITEMS and all(isinstance(i, dict) for i in value):
            previous = None
            for item in items:
                data = canon({"$i": item, "$p": previous})
                previous = sha256_ref(data)
                store(previous, data)
            return {blobs.CHAIN_KEY: previous}
        return items
    if isinstance(value, dict):
        return blob({k: _reference_split(v, store) for k, v in value.items()},
                    force=blobs.is_ref(value))
    if isinstance(value, str) and len(value) >= blobs.BLOB_MIN_BYTES:
        return blob(value, force=False)
    return value


def _random_message(rng):
    long_text = "".join(rng.choice("ab é\"\\\n😀") for _ in range(rng.choice([3, 60, 200])))
    kind = rng.randrange(6)
    if kind == 0:
        return {"$blob": long_text}  # a user object that looks like a ref: always a blob
    if kind == 1:
        return {"role": "assistant", "content": None, "tool_calls": [{"id": long_text[:5]}]}
    if kind == 2:
        return {"content": long_text, "role": "user"}  # other key order, same content
    return {"role": rng.choice(["user", "system"]), "content": long_text}


def test_memoised_split_equals_the_plain_definition():
    import random

    from symtrace.bundle import blobs

    rng = random.Random(7)
    memo = blobs.SplitMemo()
    pool = [_random_message(rng) for _ in range(12)]
    for _ in range(400):
        # a sliding window over a pool of re-sent messages, or a random JSON value
        if rng.random() < 0.7:
            start = rng.randrange(len(pool))
            value = {"body": {"messages": [dict(m) for m in pool[start:start + 6]]}}
        else:
            value = _random_json(rng)
        got: dict[str, bytes] = {}
        want: dict[str, bytes] = {}

        def keep(ref, data, known_clean=False, into=got):
            into.setdefault(ref, data)

        assert blobs.split(value, keep, memo) == _reference_split(
            value, lambda ref, data, into=want: into.setdefault(ref, data))
        assert got == want
        if rng.random() < 0.2:
            pool[rng.randrange(len(pool))] = _random_message(rng)


def test_a_refused_event_leaves_nothing_trusted_for_the_next(tmp_path):
    """Chain nodes around messages split for an earlier event are not read again by the last
    redaction check: only messages of events that passed it may be trusted."""
    from symtrace.bundle.writer import BundleWriter
    from symtrace.errors import RedactionError
    from symtrace.model.events import Event, EventType
    from symtrace.model.redaction import Redactor

    secret = "tok3n-value-123456"
    writer = BundleWriter(tmp_path / "b", {"kind": "recording"},
                          redactor=Redactor((("MY_TOKEN", secret),))).open()
    clean = [{"role": "user", "content": f"clean message {i}"} for i in range(3)]
    leaky = {"role": "user", "content": f"short {secret}"}  # inline in its chain node

    def event(n, messages):
        return Event(id=f"agent_action_{n:04d}", position=n, type=EventType.AGENT_ACTION,
                     lane="main", request={"body": {"messages": messages}}).with_hashes()

    writer.write_event(event(0, clean))
    for n in (1, 2):  # the second time, the leaky message is a memo hit: still refused
        with pytest.raises(RedactionError):
            writer.write_event(event(n, [*clean, leaky]))
    writer.write_event(event(1, [*clean, {"role": "user", "content": "fine"}]))
    data = b"".join(p.read_bytes() for p in (tmp_path / "b").iterdir())
    assert secret.encode() not in data
    writer.close()


# -- graph fingerprints: one memo lookup per message, each value once ---------------------------
def _reference_consumed(request):
    from symtrace.model import dataflow
    from symtrace.model.llm_wire import chat_messages

    out = []
    for message in chat_messages(request):
        out.append(dataflow.fingerprint("text", dataflow.text_of(message.get("content"))))
        for call in message.get("tool_calls") or []:
            out.append(dataflow.call_fp(call.get("function") or {}))
    out.extend(dataflow._request_parts(request))
    return [fp for fp in out if fp]


def test_consumed_equals_the_plain_definition_without_repeats():
    import random

    from symtrace.model import dataflow
    from symtrace.model.events import EventType

    rng = random.Random(3)
    sentences = ["The figures moved again this quarter.", "Ask the planner first!",
                 "Short.", "Final Answer: the total is forty-two units overall."]
    for _ in range(300):
        messages = []
        for _ in range(rng.randint(0, 6)):
            text = "\n".join(" ".join(rng.choice(sentences) for _ in range(rng.randint(1, 3)))
                             for _ in range(rng.randint(1, 3)))
            content = rng.choice([text, None, "", [{"type": "text", "text": text}]])
            message = {"role": rng.choice(["user", "assistant", "tool"]), "content": content}
            if rng.random() < 0.2:
                message["tool_calls"] = [{"id": "c", "function": {"name": "f",
                                                                 "arguments": '{"a": 1}'}}]
            messages.append(message)
        path = rng.choice(["/v1/chat/completions", "/v1/messages", "/v1/responses"])
        body = {"messages": messages} if path != "/v1/responses" else {
            "input": [{"type": "message", "role": "user", "content": m["content"]}
                      for m in messages if isinstance(m["content"], str)]}
        request = {"method": "POST", "path": path, "query": "", "body": body}
        want = list(dict.fromkeys(_reference_consumed(request)))
        assert dataflow.consumed(EventType.AGENT_ACTION, request, {}) == want


# -- loading pauses the cyclic collector and gives it back as it was ---------------------------
@pytest.mark.parametrize("enabled", [True, False])
def test_loading_restores_the_collector_state(tmp_path, enabled):
    import gc

    import symtrace

    with symtrace.record(tmp_path / "b"):
        symtrace.final_result("done")
    was = gc.isenabled()
    try:
        (gc.enable if enabled else gc.disable)()
        assert len(symtrace.load_bundle(tmp_path / "b").events) == 1
        assert gc.isenabled() is enabled
    finally:
        (gc.enable if was else gc.disable)()
