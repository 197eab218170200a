"""The writer process's parts: frames, typed errors, the writer's state after a failure,
the writer choice, the writer lock."""

from __future__ import annotations

import fcntl
import os
import random
import select
import threading
import time

import orjson
import pytest

from symtrace.bundle.writer import BundleWriter, wait_unlocked
from symtrace.errors import BundleWriteError, RedactionError, UsageError
from symtrace.model.events import Edge, EdgeKind, Event, EventType
from symtrace.model.redaction import Redactor
from symtrace.record import frames, sinks
from symtrace.record.offload import OffloadedSink, WriterProcess
from symtrace.record.writer_process import PAUSE_MS, Pause, Recording


def test_frames_round_trip_and_a_torn_frame_is_end_of_file():
    read, write = os.pipe()
    data = frames.encode({"op": "call", "seq": 1, "request": {"a": [1, 2.5, None, "é"]}})
    frames.write_all(write, data + data[: len(data) // 2])  # the second one torn by a kill
    os.close(write)
    assert frames.read_frame(read) == {"op": "call", "seq": 1,
                                       "request": {"a": [1, 2.5, None, "é"]}}
    assert frames.read_frame(read) is None
    os.close(read)


def test_errors_come_back_typed():
    with pytest.raises(RedactionError, match="a key"):
        frames.raise_error({"type": "RedactionError", "message": "a key"}, "writer")
    with pytest.raises(BundleWriteError, match="writer: KeyError: 'x'"):
        frames.raise_error({"type": "KeyError", "message": "'x'"}, "writer")


def _bundle(tmp_path) -> str:
    BundleWriter(tmp_path / "b", {"kind": "recording"}, redactor=Redactor()).open().close()
    return str(tmp_path / "b")


def test_after_a_failure_nothing_more_is_applied_and_every_answer_is_the_failure(tmp_path):
    recording = Recording()
    assert recording.apply({"op": "reopen", "seq": 1, "path": _bundle(tmp_path),
                            "named": []}) is None
    failed = recording.apply({"op": "event", "seq": 2, "event": {"id": "x"}})  # no call
    assert failed["unsolicited"] and failed["seq"] == 2
    assert "applying a 'event' frame" in failed["error"]["message"]
    assert recording.apply({"op": "call", "seq": 3, "id": "agent_action_0000",
                            "type": "agent_action", "lane": "main", "request": {},
                            "meta": {}, "dispatched_by": []}) is None
    assert recording.calls == {}  # not applied
    answer = recording.apply({"op": "close", "seq": 4})
    assert answer["seq"] == 4 and answer["error"] == failed["error"]
    wait_unlocked(tmp_path / "b", timeout=0)  # the failed writer let the bundle go


def test_a_failed_write_of_held_events_is_the_recordings_failure(tmp_path, monkeypatch):
    """The writer process writes a burst's events when it has applied them (flush): a write
    that fails there is answered at once and is every later answer, like any failure."""
    recording = Recording()
    recording.apply({"op": "reopen", "seq": 1, "path": _bundle(tmp_path), "named": []})
    event = Event(id="agent_action_0000", position=0, type=EventType.AGENT_ACTION,
                  lane="main", request={"body": {}}).with_hashes()
    call = {"op": "call", "seq": 2, "id": event.id, "type": "agent_action", "lane": "main",
            "request": event.request, "meta": {}, "dispatched_by": [],
            "event": {**event.to_json(), "parents": []}}
    assert recording.apply(call) is None
    assert (tmp_path / "b" / "events.jsonl").read_bytes() == b""  # held until the flush

    def refuse(self, name, data):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(BundleWriter, "_append", refuse)
    failed = recording.flush(2)
    assert failed["unsolicited"] and failed["seq"] == 2
    assert failed["error"]["type"] == "BundleWriteError"
    assert "No space left" in failed["error"]["message"]
    assert recording.flush(3) is None  # reported once; nothing more is applied
    answer = recording.apply({"op": "close", "seq": 3})
    assert answer["error"] == failed["error"]
    wait_unlocked(tmp_path / "b", timeout=0)


def test_the_writer_process_pins_its_collector():
    """pin_collector (run first by the writer process): imports frozen, young collections
    every GC_THRESHOLD0 allocations, older generations' thresholds kept."""
    import gc

    from symtrace.record.writer_process import GC_THRESHOLD0, pin_collector

    before = gc.get_threshold()
    try:
        pin_collector()
        assert gc.get_freeze_count() > 0
        assert gc.get_threshold() == (GC_THRESHOLD0, *before[1:])
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)


def test_the_writer_choice(monkeypatch):
    assert sinks.chosen() == "process"
    monkeypatch.setenv("SYMTRACE_WRITER", "inline")
    assert sinks.chosen() == "inline"
    assert sinks.chosen("process") == "process"
    with pytest.raises(UsageError, match="writer must be one of"):
        sinks.chosen("thread")


def test_reopen_waits_for_the_writer_holding_the_bundle(tmp_path, monkeypatch):
    path = _bundle(tmp_path)
    holder = BundleWriter.reopen(path, redactor=Redactor())
    threading.Timer(0.3, holder.close).start()
    started = time.monotonic()
    BundleWriter.reopen(path, redactor=Redactor()).close()
    assert time.monotonic() - started >= 0.25
    holder = BundleWriter.reopen(path, redactor=Redactor())
    monkeypatch.setattr("symtrace.bundle.writer.LOCK_TIMEOUT", 0.2)
    with pytest.raises(BundleWriteError, match=f"another writer \\(pid {os.getpid()}\\)"):
        BundleWriter.reopen(path, redactor=Redactor())
    holder.close()


def test_the_frame_reader_reads_bursts_and_frames_larger_than_its_chunk():
    read, write = os.pipe()
    data = b"".join(frames.encode({"n": i, "pad": "x" * (5000 * i)}) for i in range(4))
    sender = threading.Thread(target=lambda: (frames.write_all(write, data + data[:9]),
                                              os.close(write)))
    sender.start()
    reader = frames.FrameReader(read, chunk=4096)
    got = []
    while (frame := reader.next()) is not None:
        got.append(frame["n"])
    sender.join()
    os.close(read)
    assert got == [0, 1, 2, 3]  # then a torn frame: end of file


def test_the_frame_reader_keeps_frames_whole_across_reads_compaction_and_growth():
    """Frames of random sizes arriving in random pieces, through a small buffer: a frame's
    start moved to the front of the buffer (overlapping), the buffer grown past a large one."""
    rng = random.Random(7)
    sent = [{"n": i, "pad": "é" * rng.choice((0, 1, 30, 200, 3000))} for i in range(300)]
    data = b"".join(frames.encode(frame) for frame in sent)
    read, write = os.pipe()

    def send() -> None:
        at = 0
        while at < len(data):
            step = rng.randint(1, 700)
            frames.write_all(write, data[at:at + step])
            at += step
        os.close(write)

    sender = threading.Thread(target=send)
    sender.start()
    reader = frames.FrameReader(read, chunk=64)
    got = []
    while (frame := reader.next()) is not None:
        got.append(frame)
    sender.join()
    os.close(read)
    assert got == sent


def test_the_writer_pauses_unless_woken_and_no_more_once_the_program_ended():
    read, write = os.pipe()
    pause = Pause(read)
    started = time.monotonic()
    pause()  # nothing came: the whole pause
    assert time.monotonic() - started >= 0.9 * PAUSE_MS / 1000
    os.write(write, b"!!")  # two wake-ups pending: one ends this pause, none is left
    started = time.monotonic()
    pause()
    assert time.monotonic() - started < PAUSE_MS / 1000 / 2
    started = time.monotonic()
    pause()
    assert time.monotonic() - started >= 0.9 * PAUSE_MS / 1000
    os.close(write)  # the program ended
    pause()
    assert pause.fd is None
    started = time.monotonic()
    pause()
    assert time.monotonic() - started < PAUSE_MS / 1000 / 2
    os.close(read)


def test_a_full_pipe_wakes_the_writer_before_waiting_for_room():
    """A writer pausing reads nothing until woken: the program's write must wake it."""
    out_read, out_write = os.pipe()
    wake_read, wake_write = os.pipe()
    process = object.__new__(WriterProcess)  # only its pipes: no writer process behind
    process._out, process._wake = out_write, wake_write
    os.set_blocking(out_write, False)
    os.set_blocking(wake_write, False)
    process._room = select.poll()
    process._room.register(out_write, select.POLLOUT)
    data = bytes(range(256)) * (4 * fcntl.fcntl(out_write, 1032) // 256)  # F_GETPIPE_SZ
    result = []

    def pausing_reader() -> None:
        woken = select.select([wake_read], [], [], 10.0)[0]
        got = bytearray()
        while len(got) < len(data):
            got += os.read(out_read, 1 << 20)
        result.append((bool(woken), bytes(got)))

    reader = threading.Thread(target=pausing_reader)
    reader.start()
    process._write(data)
    reader.join()
    assert result == [(True, data)]
    for fd in (out_read, out_write, wake_read, wake_write):
        os.close(fd)


def test_a_request_is_answered_without_waiting_for_the_writers_pause():
    process = WriterProcess()
    try:
        took = []
        for _ in range(5):
            started = time.monotonic()
            process.request({"op": "hello"})
            took.append(time.monotonic() - started)
        assert sorted(took)[2] < PAUSE_MS / 1000 / 2
    finally:
        process.end()
    assert process.proc.returncode == 0


class _Pipe:
    """Stands for a WriterProcess: what the sink sends, write by write."""

    def __init__(self) -> None:
        self.writes: list[list[dict]] = []
        self.checks = 0

    def check(self) -> None:
        self.checks += 1

    def send(self, *frames_: dict, poll: bool = True) -> None:
        self.writes.append([dict(f, event=dict(f["event"])) if "event" in f else dict(f)
                            for f in frames_])


def _event(ident: str, request, parents=()) -> Event:
    return Event(id=ident, position=0, type=EventType.AGENT_ACTION, lane="main",
                 parents=parents, request=request, response={"r": ident}).with_hashes()


def test_a_call_s_own_event_travels_in_its_frame_and_others_in_their_own():
    """One write per event; a call's frame waits for the next write; the event of the last
    waiting call goes inside that call's frame, any other names its call (from_call)."""
    pipe = _Pipe()
    sink = OffloadedSink(pipe, {})  # type: ignore[arg-type]
    a, b = {"a": 1}, {"b": 2}
    sink.open_call("agent_action_0000", EventType.AGENT_ACTION, "main", a, {}, ())
    sink.open_call("agent_action_0001", EventType.AGENT_ACTION, "main", b, {}, ())
    assert pipe.writes == [] and pipe.checks == 2  # polled as each call starts
    sink.emit(_event("agent_action_0000", a))
    [call_a, call_b, event_a] = pipe.writes[-1]
    assert [call_a["op"], call_b["op"], event_a["op"]] == ["call", "call", "event"]
    assert "event" not in call_a and "event" not in call_b
    assert event_a["event"]["from_call"] and "request" not in event_a["event"]
    assert "parents" not in event_a["event"]  # the writer gives it its call's
    sink.emit(_event("agent_action_0001", {"b": 2}))  # an equal request, not the same object
    [event_b] = pipe.writes[-1]
    assert event_b["event"]["request"] == {"b": 2} and event_b["event"]["from_call"]
    sink.open_call("agent_action_0002", EventType.AGENT_ACTION, "main", a, {}, ())
    sink.emit(_event("agent_action_0002", a))
    [call_c] = pipe.writes[-1]
    assert call_c["op"] == "call" and call_c["request"] is a
    assert "request" not in call_c["event"] and "from_call" not in call_c["event"]
    sink.emit(_event("tool_result_0000", None, (Edge("x", EdgeKind.DATA),)))
    [result] = pipe.writes[-1]  # not of a call: its own parents
    assert result["event"]["parents"] == [{"source": "x", "kind": "data"}]


def test_a_call_s_body_travels_as_the_json_text_it_was_parsed_from():
    """body_json: the call's frame carries the program's own bytes (not the body serialised
    again); decoded, it is the same request, keys in the same order, and its event still
    leaves out the request it shares with its call."""
    pipe = _Pipe()
    sink = OffloadedSink(pipe, {})  # type: ignore[arg-type]
    text = b'{ "model" : "m",\n "messages": [{"role": "user", "content": "caf\\u00e9 1.5"}] }'
    request = {"method": "POST", "path": "/v1/chat/completions", "query": "",
               "body": orjson.loads(text)}
    sink.open_call("agent_action_0000", EventType.AGENT_ACTION, "main", request, {}, (), text)
    sink.emit(_event("agent_action_0000", request))
    [call] = pipe.writes[-1]
    data = frames.encode(call)
    assert text in data  # as sent, spaces and escapes included
    decoded = orjson.loads(data[frames.HEADER.size:])
    assert decoded["request"] == request
    assert list(decoded["request"]["body"]) == ["model", "messages"]
    assert "request" not in decoded["event"]  # not sent twice


def test_the_writer_applies_a_call_carrying_its_event_like_a_call_then_its_event(tmp_path):
    """Same parents, same request, same bundle bytes, whichever way the event came."""
    def record(root, combined: bool) -> bytes:
        BundleWriter(root, {"kind": "recording"}, redactor=Redactor()).open().close()
        recording = Recording()
        recording.apply({"op": "reopen", "seq": 1, "path": str(root), "named": []})
        for n in range(3):
            ident = f"agent_action_000{n}"
            request = {"messages": [{"role": "user", "content": f"say {k}"}
                                    for k in range(n + 1)]}
            call = {"op": "call", "seq": 2, "id": ident, "type": "agent_action",
                    "lane": "main", "request": request, "meta": {}, "dispatched_by": []}
            record = _event(ident, request).to_json()
            del record["parents"], record["request"]
            record["position"] = n
            if combined:
                recording.apply({**call, "event": record})
            else:
                recording.apply(call)
                recording.apply({"op": "event", "seq": 3, "event": {**record, "from_call": True}})
        assert recording.failure is None
        recording.apply({"op": "close", "seq": 9})
        return (root / "events.jsonl").read_bytes()

    combined, apart = record(tmp_path / "c", True), record(tmp_path / "s", False)
    assert combined == apart and b'"parents":[{"kind":"control"' in combined
