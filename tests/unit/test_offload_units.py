"""The writer process's parts: frames, typed errors, the writer's state after a failure,
the writer choice, the writer lock."""

from __future__ import annotations

import os
import threading
import time

import pytest

from symtrace.bundle.writer import BundleWriter, wait_unlocked
from symtrace.errors import BundleWriteError, RedactionError, UsageError
from symtrace.model.redaction import Redactor
from symtrace.record import frames, sinks
from symtrace.record.writer_process import Recording


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
