"""The writer's bytes against the plain definition of the format, and against pinned digests.

`BundleWriter.write_event` takes shortcuts (a part with nothing to split is not copied, a
re-sent message's split is memoised, chain nodes and the event line are assembled from bytes
already serialised, a recurring field's sum is kept, the pack lines of an event are joined
once). None may change a byte: random events (sliding and growing conversations, reserved
keys, subclasses of the JSON types, non-ASCII text, lists of three or more objects at any
depth) are written by the writer and by a plain reference written from docs/bundle-format.md
here, and the three data files must be equal; the digests of the same draws are pinned
(made with the writer before the shortcuts), so the reference cannot drift with the writer.
"""

from __future__ import annotations

import hashlib
import random
from pathlib import Path
from typing import Any

import orjson
import pytest

from symtrace.bundle import load_bundle
from symtrace.bundle.writer import BundleWriter
from symtrace.model.events import Edge, EdgeKind, Event, EventType
from symtrace.model.redaction import Redactor

FILES = ("blobs.jsonl", "events.jsonl", "sums.jsonl")
FIELDS = sorted(Event("x", 0, EventType.AGENT_ACTION, "main").to_json())
# sha256 of blobs.jsonl + events.jsonl + sums.jsonl for each seed (made with the writer of 2093309).
PINNED = {
    0: "768490730f03332a8155b0a57f3a39848b86ecb91ad32b5a348f0c39104dde10",
    1: "46105c668ddb3881769a818eea4bbd359caf6506484f926345655cb668bdae92",
    2: "dcf1744428e537cc5bc5b4bbb629ce5ac6f8aedf28cf5f1c39da14aa2a17d272",
}


# -- the plain definition -----------------------------------------------------------------------
def canon(value: Any) -> bytes:
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)


def ref_of(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def reference_split(value: Any, pack: dict[str, bytes]) -> Any:
    """docs/bundle-format.md, *blobs.jsonl*: bottom-up; strings and objects of 128 bytes or
    more become blobs, a user object whose only key is $blob/$chain always does, a list of
    three or more objects becomes a prefix chain of whole nodes."""

    def blob(data: bytes) -> dict[str, str]:
        ref = ref_of(data)
        pack.setdefault(ref, data)
        return {"$blob": ref}

    if isinstance(value, list):
        items = [reference_split(item, pack) for item in value]
        if len(value) >= 3 and all(isinstance(item, dict) for item in value):
            previous = None
            for item in items:
                data = canon({"$i": item, "$p": previous})
                previous = ref_of(data)
                pack.setdefault(previous, data)
            return {"$chain": previous}
        return items
    if isinstance(value, dict):
        inner = {key: reference_split(item, pack) for key, item in value.items()}
        data = canon(inner)
        reserved = len(value) == 1 and next(iter(value)) in ("$blob", "$chain")
        return blob(data) if reserved or len(data) >= 128 else inner
    if isinstance(value, str) and len(value) >= 128:
        return blob(canon(value))
    return value


def reference_files(events: list[Event]) -> dict[str, bytes]:
    """blobs.jsonl, events.jsonl and sums.jsonl (before the trailer) for *events*."""
    written: set[str] = set()
    pack, lines, sums = [], [], []
    for event in events:
        record = event.to_json()
        new: dict[str, bytes] = {}
        record["request"] = reference_split(record["request"], new)
        record["response"] = reference_split(record["response"], new)
        pack += [ref.encode() + b" " + new[ref] + b"\n" for ref in new if ref not in written]
        written.update(new)
        lines.append(canon(record) + b"\n")
        short = [hashlib.sha256(canon(record[key])).hexdigest()[:8] for key in FIELDS]
        sums.append(canon(short) + b"\n")
    return {"blobs.jsonl": b"".join(pack), "events.jsonl": b"".join(lines),
            "sums.jsonl": b"".join(sums)}


# -- random events ------------------------------------------------------------------------------
class Text(str):
    pass


class Obj(dict):
    pass


class Items(list):
    pass


def text(rng: random.Random) -> str:
    size = rng.choice([0, 3, 40, 126, 127, 128, 129, 300])
    return "".join(rng.choice("ab é\"\\\n😀{}[]$:,") for _ in range(size))


def value(rng: random.Random, depth: int = 0) -> Any:
    kind = rng.randrange(12 if depth < 3 else 6)
    if kind == 0:
        return rng.choice([None, True, False, 0, 1, -7, 2**40, 0.5, -1e300])
    if kind in (1, 2, 3):
        return text(rng)
    if kind == 4:
        return Text(text(rng))
    if kind == 5:
        return rng.choice([{}, [], {"$blob": "x"}, {"$chain": None}])
    if kind in (6, 7, 8):
        out = {text(rng)[:6]: value(rng, depth + 1) for _ in range(rng.randint(0, 5))}
        return Obj(out) if rng.random() < 0.1 else out
    items = [value(rng, depth + 1) for _ in range(rng.randint(0, 5))]
    if rng.random() < 0.5:
        items = [item if isinstance(item, dict) else {"v": item} for item in items]
    return Items(items) if rng.random() < 0.1 else items


def message(rng: random.Random) -> dict[str, Any]:
    content = rng.choice([text(rng), text(rng), None, [{"type": "text", "text": text(rng)}]])
    out: dict[str, Any] = {"role": rng.choice(["user", "assistant", "system"]), "content": content}
    if rng.random() < 0.15:
        out["tool_calls"] = [{"id": "c1", "function": {"name": "f", "arguments": text(rng)}}]
    if rng.random() < 0.05:
        out = {"$blob": text(rng)}  # looks like a ref: always a blob
    return out


def events(seed: int, count: int = 120) -> list[Event]:
    rng = random.Random(seed)
    history = [message(rng) for _ in range(6)]
    out = []
    for n in range(count):
        history.append(message(rng))
        if rng.random() < 0.2:  # a program editing a message in place between calls
            history[rng.randrange(len(history))]["content"] = text(rng)
        window = rng.choice([history[-8:], history, history[:1] + history[-5:], history[-2:]])
        body = {"model": "m", "messages": [dict(m) for m in window]}
        if rng.random() < 0.3:
            body["extra"] = value(rng)
        kind = rng.choice([EventType.AGENT_ACTION, EventType.TOOL_CALL, EventType.TOOL_RESULT])
        parents = tuple(Edge(out[p].id, rng.choice(list(EdgeKind)))
                        for p in sorted(rng.sample(range(max(n, 1)), min(n, rng.randint(0, 3)))))
        response = rng.choice([value(rng), {"status": 200, "headers": {}, "body": value(rng)},
                               {"stream": True, "chunks": [text(rng) for _ in range(4)]}])
        out.append(Event(
            id=f"{kind.value}_{n:04d}", position=n, type=kind,
            lane=rng.choice(["main", "task:Task-1", "é"]), agent=rng.choice([None, "a", "b"]),
            reason=rng.choice([None, "speaker_selection"]), parents=parents,
            request={"method": "POST", "path": "/v1/chat/completions", "query": "", "body": body},
            request_hash=f"sha256:{n:064x}", response=response,
            response_hash=rng.choice([None, f"sha256:{n + 1:064x}"]),
            meta=rng.choice([{}, {"completed": n, "host": "127.0.0.1"}, {"within": "x"}]),
            content_hash=f"sha256:{n + 2:064x}",
        ))
    return out


def written(path: Path, drawn: list[Event]) -> dict[str, bytes]:
    writer = BundleWriter(path, {"kind": "recording"}, redactor=Redactor(())).open()
    for event in drawn:
        writer.write_event(event)
    writer.close()
    return {name: (path / name).read_bytes() for name in FILES}


@pytest.mark.parametrize("seed", sorted(PINNED))
def test_writer_bytes_equal_the_plain_definition_and_the_pinned_digests(tmp_path, seed):
    drawn = events(seed)
    got = written(tmp_path / "b", drawn)
    want = reference_files(drawn)
    for name in want:
        assert got[name] == want[name], name
    digest = hashlib.sha256(b"".join(got[name] for name in sorted(got))).hexdigest()
    assert digest == PINNED[seed]


def test_a_kill_loses_only_buffered_sums_and_reopen_rebuilds_them(tmp_path):
    """Each event's blobs and line are in the kernel when write_event returns; its sums line
    is buffered. The files as a SIGKILL leaves them (copied while the writer is open) reopen,
    seal and load, with the same bytes as a writer that was never interrupted."""
    import shutil

    drawn = events(5, count=60)
    manifest = {"kind": "recording", "task": "t", "initial_state": {}, "config": {}}
    writer = BundleWriter(tmp_path / "live", manifest, redactor=Redactor(())).open()
    for event in drawn:
        writer.write_event(event)
    shutil.copytree(tmp_path / "live", tmp_path / "killed")  # what the kernel holds
    writer.close()
    assert (tmp_path / "killed" / "sums.jsonl").read_bytes().count(b"\n") < len(drawn)
    assert (tmp_path / "killed" / "events.jsonl").read_bytes().count(b"\n") == len(drawn)

    reopened = BundleWriter.reopen(tmp_path / "killed", redactor=Redactor(()))
    reopened.finalize(complete=False)
    clean = BundleWriter(tmp_path / "clean", manifest, redactor=Redactor(())).open()
    for event in drawn:
        clean.write_event(event)
    clean.finalize(complete=False)
    for name in FILES:
        assert (tmp_path / "killed" / name).read_bytes() == (tmp_path / "clean" / name).read_bytes()
    assert len(load_bundle(tmp_path / "killed").events) == len(drawn)


def test_an_event_that_fails_after_splitting_leaves_no_blob_unwritten(tmp_path):
    """A message first split for an event that then failed (here: a value JSON cannot hold)
    is memoised, but its blobs never reached the pack: an event re-sending it later must
    still write them, even after other events succeeded in between."""
    long = "a message long enough to be a blob of its own " * 4
    base = [{"role": "system", "content": "s" * 200}, {"role": "user", "content": "u" * 150}]

    def event(n: int, messages: list[dict[str, Any]], **extra: Any) -> Event:
        return Event(id=f"agent_action_{n:04d}", position=n, type=EventType.AGENT_ACTION,
                     lane="main", request={"body": {"messages": messages, **extra}},
                     request_hash=f"sha256:{n:064x}")

    writer = BundleWriter(tmp_path / "b", {"kind": "recording"}, redactor=Redactor(())).open()
    with pytest.raises(TypeError):
        writer.write_event(event(0, [*base, {"role": "user", "content": long}], z=object()))
    kept = [event(0, [*base, {"role": "user", "content": "other"}]),
            event(1, [*base, {"role": "user", "content": long}])]
    for done in kept:
        writer.write_event(done)
    writer.close()
    want = reference_files(kept)
    for name in FILES:
        assert (tmp_path / "b" / name).read_bytes() == want[name], name


# -- the chain node table: growing conversations re-send every node -----------------------------
def conversation(seed: int, count: int = 40) -> list[Event]:
    """Calls of conversations that only grow (the node table's case), with tool calls,
    non-str values, in-place edits and now and then a sliding window or a new conversation."""
    rng = random.Random(seed)
    history = [message(rng) for _ in range(3)]
    out = []
    for n in range(count):
        history.append(message(rng))
        if rng.random() < 0.1:
            history[rng.randrange(len(history))]["content"] = text(rng)
        if rng.random() < 0.1:
            history.append({"role": "tool", "content": rng.choice([None, 3, 2.5, True, [1]])})
        if rng.random() < 0.05:
            history = [*history[:1], message(rng)]  # a new conversation, same system message
        window = history if rng.random() < 0.8 else history[:1] + history[-4:]
        out.append(Event(
            id=f"agent_action_{n:04d}", position=n, type=EventType.AGENT_ACTION, lane="main",
            request={"body": {"model": "m", "messages": [dict(m) for m in window]}},
            request_hash=f"sha256:{n:064x}", response={"text": text(rng)},
            content_hash=f"sha256:{n + 2:064x}",
        ))
    return out


@pytest.mark.parametrize("seed", range(4))
def test_chain_nodes_found_in_the_node_table_change_no_byte(tmp_path, seed):
    drawn = conversation(seed)
    writer = BundleWriter(tmp_path / "b", {"kind": "recording"}, redactor=Redactor(())).open()
    for event in drawn:
        writer.write_event(event)
    assert writer._split_memo.nodes  # the table was used: the test can fail
    writer.close()
    want = reference_files(drawn)
    for name in FILES:
        assert (tmp_path / "b" / name).read_bytes() == want[name], name


def test_a_node_found_in_the_table_is_only_as_clean_as_its_element():
    """A node found in the node table is stored as known clean only when its element was
    found in the element memo (checked with an earlier event): a message the memo does not
    hold (one holding a tuple: not split as the list it is written as) is read by the
    redaction check on every event, and does not keep the others from being found."""
    from symtrace.bundle import blobs

    memo = blobs.SplitMemo()
    messages = [{"role": "system", "content": "s"}, {"role": "user", "content": "u"},
                {"role": "tool", "content": None}, {"role": "user", "content": "v"},
                {"role": "tool", "content": ["x"]}, {"role": "tool", "content": ("x",)}]
    clean_flags: list[list[bool]] = []
    for _ in range(3):
        flags: list[bool] = []

        def keep(ref: str, data: bytes, known_clean: bool = False,
                 into: list[bool] = flags) -> None:
            if data.startswith(b'{"$i":'):
                into.append(known_clean)

        memo.begin()
        blobs.split({"messages": [dict(m) for m in messages]}, keep, memo)
        memo.written()
        clean_flags.append(flags)
    assert memo.nodes  # the second and third splits found their nodes there
    assert clean_flags[0] == [False] * 6
    assert clean_flags[1] == clean_flags[2] == [True] * 5 + [False]


def test_an_object_written_as_json_but_not_split_as_json_is_never_a_memo_hit():
    """Messages holding lists are memoised by their JSON text; a tuple is written as the
    list would be, but a long string in it is not split (split() keeps a tuple whole):
    the same text must not give it the list's split bytes, nor the list the tuple's."""
    from symtrace.bundle import blobs

    long = "a string long enough to be a blob of its own " * 4
    plain = [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]

    def messages(content: Any) -> dict[str, Any]:
        return {"messages": [*map(dict, plain), {"role": "tool", "content": content}]}

    memo = blobs.SplitMemo()
    for content in ([long], (long,), [long], (long,)):
        got: dict[str, bytes] = {}
        want: dict[str, bytes] = {}
        value = messages(content)
        def keep(ref: str, data: bytes, clean: bool = False, into: dict[str, bytes] = got) -> None:
            into.setdefault(ref, data)

        assert blobs.split(value, keep, memo) == reference_split(value, want)
        assert got == want


def test_a_refused_tool_call_is_refused_again_when_re_sent(tmp_path):
    """A message memoised by its JSON text (a tool call) for an event that was refused is
    not trusted as checked when the next event re-sends it (the memo is cleared)."""
    from symtrace.errors import RedactionError

    secret = "tok3n-value-123456"
    writer = BundleWriter(tmp_path / "b", {"kind": "recording"},
                          redactor=Redactor((("MY_TOKEN", secret),))).open()
    clean = [{"role": "user", "content": f"clean message {i}"} for i in range(3)]
    leaky = {"role": "assistant", "content": None,
             "tool_calls": [{"id": "c1", "function": {"name": "f", "arguments": secret}}]}

    def event(n: int, messages: list[dict[str, Any]]) -> Event:
        return Event(id=f"agent_action_{n:04d}", position=n, type=EventType.AGENT_ACTION,
                     lane="main", request={"body": {"messages": messages}}).with_hashes()

    writer.write_event(event(0, clean))
    for n in (1, 2):
        with pytest.raises(RedactionError):
            writer.write_event(event(n, [*clean, dict(leaky)]))
    writer.write_event(event(1, [*clean, {"role": "user", "content": "fine"}]))
    writer.close()
    data = b"".join(p.read_bytes() for p in (tmp_path / "b").iterdir())
    assert secret.encode() not in data


def test_a_re_sent_tool_call_is_found_without_parsing_its_text(monkeypatch):
    """A message memoised by its JSON text holds the parse made when it was split: a hit
    compares the re-sent object with it (a tuple is still refused), and parses nothing."""
    from symtrace.bundle import blobs

    call = {"role": "assistant", "content": None,
            "tool_calls": [{"id": "c1", "type": "function",
                            "function": {"name": "f", "arguments": '{"q": 1}'}}]}
    plain = [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]
    memo = blobs.SplitMemo()
    first = blobs.split({"messages": [*plain, call]}, lambda *_: None, memo)
    memo.written()
    again = orjson.loads(orjson.dumps({"messages": [*plain, call]}))  # new objects, same content
    parses: list[bytes] = []
    real_loads = blobs.orjson.loads
    monkeypatch.setattr(blobs.orjson, "loads", lambda text: parses.append(text) or real_loads(text))
    assert blobs.split(again, lambda *_: None, memo) == first
    assert parses == []
    as_tuple = {**call, "tool_calls": tuple(call["tool_calls"])}
    kept: dict[str, bytes] = {}
    want: dict[str, bytes] = {}
    value = {"messages": [*plain, as_tuple]}

    def keep(ref: str, data: bytes, clean: bool = False) -> None:
        kept.setdefault(ref, data)

    assert blobs.split(value, keep, memo) == reference_split(value, want)
    assert kept == want


def test_the_writer_takes_every_field_of_the_event_record():
    """The writer makes the line from an event's fields without Event.to_json: the fields it
    takes must be the record's, in seal.EVENT_FIELDS order (a field added to the record and
    not to the writer fails here, not only in the bytes)."""
    from symtrace.bundle.seal import EVENT_FIELDS
    from symtrace.bundle.writer import _line_fields

    assert tuple(sorted(FIELDS)) == EVENT_FIELDS
    for event in events(4, count=30):
        record = event.to_json()
        assert _line_fields(event, event.request, event.response) == tuple(
            record[key] for key in EVENT_FIELDS)


def test_the_seals_digest_and_counts_equal_the_plain_definitions():
    """format.events_digest skips the canonicalising walk when every id, hash and parent id
    is a string; counts_of reads each enum's value at once: neither may change the manifest
    (an id a bundle on disk stores as 1.0 still digests as the walk makes it, as 1)."""
    from collections import Counter

    from symtrace.bundle.format import counts_of, events_digest
    from symtrace.model.hashing import digest

    def plain_digest(drawn: list[Event]) -> str:
        ordered = sorted(drawn, key=lambda e: e.position)
        return digest([[e.id, e.content_hash, list(e.parent_ids)] for e in ordered])

    for seed in range(3):
        drawn = events(seed, count=30)
        random.Random(seed).shuffle(drawn)
        assert events_digest(drawn) == plain_digest(drawn)
        want = dict(Counter(e.type.value for e in drawn), events=len(drawn))
        assert counts_of(drawn) == dict(sorted(want.items()))
    odd = [Event(1.0, 0, EventType.AGENT_ACTION, "main"),  # type: ignore[arg-type]
           Event("b", 1, EventType.TOOL_CALL, "main", parents=(Edge(2.0, EdgeKind.DATA),))]  # type: ignore[arg-type]
    assert events_digest(odd) == plain_digest(odd)
    assert events_digest(odd) != events_digest([Event("1.0", 0, EventType.AGENT_ACTION, "main"),
                                                odd[1]])


def _seal_files(root: Path) -> dict[str, str]:
    return orjson.loads((root / "manifest.json").read_bytes())["digest"]["files"]


def _read_back(root: Path) -> dict[str, str]:
    return {path.name: "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()
            for path in root.iterdir() if path.name != "manifest.json"}


def test_the_seal_digests_the_bytes_on_disk_without_reading_them_back(tmp_path):
    """The writer digests each data file as it writes it (the seal reads none back): a writer
    with captured stdout and a reopened one (torn last lines cut, missing sums rebuilt) both
    seal the sha256 of the files' actual bytes."""
    import shutil

    drawn = events(7, count=30)
    manifest = {"kind": "recording", "task": "t", "initial_state": {}, "config": {}}
    held = BundleWriter(tmp_path / "held", manifest, redactor=Redactor(())).open()
    for event in drawn:
        held.write_event(event)
    held.write_stdout(b"printed\n")
    held.finalize(complete=True)
    assert _seal_files(tmp_path / "held") == _read_back(tmp_path / "held")
    assert set(_seal_files(tmp_path / "held")) == {*FILES, "stdout.txt"}

    live = BundleWriter(tmp_path / "live", manifest, redactor=Redactor(())).open()
    for event in drawn[:20]:
        live.write_event(event)
    shutil.copytree(tmp_path / "live", tmp_path / "torn")
    live.close()
    for name in ("events.jsonl", "blobs.jsonl"):  # a kill in the middle of each append
        with open(tmp_path / "torn" / name, "ab") as fh:
            fh.write(b'{"torn')
    reopened = BundleWriter.reopen(tmp_path / "torn", redactor=Redactor(()))
    for event in drawn[20:]:
        reopened.write_event(event)
    reopened.finalize(complete=True)
    assert _seal_files(tmp_path / "torn") == _read_back(tmp_path / "torn")
    assert len(load_bundle(tmp_path / "torn").events) == len(drawn)


def test_after_a_failed_append_the_seal_reads_the_files_back(tmp_path):
    """A write that fails part-way leaves bytes the writer did not count: the seal then
    digests what the files hold (the bundle still loads), not what it meant to write."""
    from symtrace.errors import BundleWriteError

    drawn = events(8, count=6)
    manifest = {"kind": "recording", "task": "t", "initial_state": {}, "config": {}}
    writer = BundleWriter(tmp_path / "b", manifest, redactor=Redactor(())).open()
    for event in drawn[:3]:
        writer.write_event(event)
    events_file = writer._files["events.jsonl"]
    real_write = events_file.write

    def half_then_fail(data: bytes) -> int:
        real_write(data[: len(data) // 2])
        raise OSError(28, "No space left on device")

    events_file.write = half_then_fail
    with pytest.raises(BundleWriteError, match="No space left"):
        writer.write_event(drawn[3])
    events_file.write = real_write
    writer.finalize(complete=False)
    assert _seal_files(tmp_path / "b") == _read_back(tmp_path / "b")


def test_a_seal_whose_fsync_fails_is_not_written(tmp_path, monkeypatch):
    """A sealed bundle claims to survive power loss: when a data file cannot be fsynced the
    seal fails (BundleWriteError) and the manifest stays unsealed."""
    import os

    from symtrace.errors import BundleWriteError

    manifest = {"kind": "recording", "task": "t", "initial_state": {}, "config": {}}
    writer = BundleWriter(tmp_path / "b", manifest, redactor=Redactor(())).open()
    for event in events(9, count=4):
        writer.write_event(event)

    real_fsync = os.fsync

    def failing_fsync(fd: int) -> None:  # events.jsonl only: the manifest's would fail anyway
        if os.readlink(f"/proc/self/fd/{fd}").endswith("events.jsonl"):
            raise OSError(5, "Input/output error")
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", failing_fsync)
    with pytest.raises(BundleWriteError, match="cannot seal"):
        writer.finalize(complete=True)
    assert "digest" not in orjson.loads((tmp_path / "b" / "manifest.json").read_bytes())
