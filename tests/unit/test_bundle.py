"""Bundles round-trip, verify every digest, and fail with typed errors on bad input."""

from __future__ import annotations

import os
import stat

import orjson
import pytest

from symtrace.bundle import FORMAT_VERSION, load_bundle
from symtrace.bundle.completion import complete_bundle
from symtrace.bundle.writer import BundleWriter
from symtrace.errors import (
    BundleExistsError,
    BundleFormatError,
    BundleIntegrityError,
    BundleNotFound,
    BundleWriteError,
    RedactionError,
    UnsupportedBundleVersion,
)
from symtrace.model.redaction import Redactor

from ._support import chat_request, chat_response, llm_call, recorder, run, tool_call


def make_bundle(path, turns: int = 3):
    session, writer = recorder(path)
    history = []
    for i in range(turns):
        history.append(f"message number {i} " + "x" * 200)
        run(session, llm_call(chat_request(*history)), chat_response(f"reply {i}"))
    run(session, tool_call("lookup", {"city": "Lisbon"}), {"ok": True, "value": "sunny"})
    complete_bundle(writer, exit_code=0, value="reply 2", status="ok")
    return path


class TestRoundTrip:
    def test_events_survive_write_and_load(self, tmp_path):
        bundle = load_bundle(make_bundle(tmp_path / "b"))
        assert [e.id for e in bundle.events] == [
            "agent_action_0000",
            "agent_action_0001",
            "agent_action_0002",
            "tool_call_0000",
            "tool_result_0000",
            "final_result_0000",
        ]
        assert bundle.complete and bundle.manifest["format_version"] == FORMAT_VERSION
        assert bundle.events[1].request["body"]["messages"][0]["content"].startswith("message")
        assert bundle.final_result().response["value"] == "reply 2"

    def test_same_run_same_digest(self, tmp_path):
        a = load_bundle(make_bundle(tmp_path / "a"))
        b = load_bundle(make_bundle(tmp_path / "b"))
        assert a.digest == b.digest

    def test_repeated_messages_are_stored_once(self, tmp_path):
        small = make_bundle(tmp_path / "small", turns=4)
        large = make_bundle(tmp_path / "large", turns=16)
        # A request re-sends every earlier message: stored verbatim, 4x the turns would cost
        # ~14x the bytes (quadratic). Deduplicated it stays close to 4x (linear).
        assert _size(large) < 6 * _size(small)
        long_messages = [
            line
            for line in (large / "blobs.jsonl").read_bytes().splitlines()
            if b"message number" in line and b"content" not in line
        ]
        assert len(long_messages) == 16  # each long message stored exactly once

    def test_file_count_does_not_grow_with_events(self, tmp_path):
        small = make_bundle(tmp_path / "small", turns=2)
        large = make_bundle(tmp_path / "large", turns=40)
        names = sorted(p.name for p in small.iterdir())
        assert names == sorted(p.name for p in large.iterdir())
        assert names == ["blobs.jsonl", "events.jsonl", "manifest.json", "sums.jsonl"]

    def test_sealed_with_a_root_digest(self, tmp_path):
        bundle = load_bundle(make_bundle(tmp_path / "b"))
        assert bundle.sealed and bundle.root_digest.startswith("sha256:")
        assert set(bundle.manifest["digest"]["files"]) == {
            "blobs.jsonl", "events.jsonl", "sums.jsonl"
        }


class TestBadInput:
    def test_missing_bundle(self, tmp_path):
        with pytest.raises(BundleNotFound):
            load_bundle(tmp_path / "nope")

    def test_corrupt_manifest(self, tmp_path):
        path = make_bundle(tmp_path / "b")
        (path / "manifest.json").write_text("{not json")
        with pytest.raises(BundleFormatError):
            load_bundle(path)

    def test_unknown_format_version(self, tmp_path):
        path = make_bundle(tmp_path / "b")
        manifest = orjson.loads((path / "manifest.json").read_bytes())
        manifest["format_version"] = 99
        (path / "manifest.json").write_bytes(orjson.dumps(manifest))
        with pytest.raises(UnsupportedBundleVersion) as info:
            load_bundle(path)
        assert info.value.found == 99

    def test_tampered_blob(self, tmp_path):
        path = make_bundle(tmp_path / "b")
        pack = path / "blobs.jsonl"
        lines = pack.read_bytes().split(b"\n")
        number = next(i for i, line in enumerate(lines) if b"xxxx" in line)
        lines[number] = lines[number].replace(b"x", b"y")
        pack.write_bytes(b"\n".join(lines))
        with pytest.raises(BundleIntegrityError) as info:
            load_bundle(path)
        assert info.value.where == f"blobs.jsonl line {number + 1}"

    def test_tampered_event_line(self, tmp_path):
        path = make_bundle(tmp_path / "b")
        events = path / "events.jsonl"
        events.write_bytes(events.read_bytes().replace(b'"sunny"', b'"rainy"'))
        with pytest.raises(BundleIntegrityError, match="tool_result_0000") as info:
            load_bundle(path)
        assert info.value.where == "events[4].response"

    def test_truncated_complete_bundle(self, tmp_path):
        path = make_bundle(tmp_path / "b")
        events = path / "events.jsonl"
        events.write_bytes(events.read_bytes()[:-40])
        with pytest.raises(BundleIntegrityError) as info:
            load_bundle(path)
        assert info.value.where == "events[5]"

    def test_incomplete_bundle_keeps_complete_records(self, tmp_path):
        session, writer = recorder(tmp_path / "b")
        run(session, llm_call(chat_request("a")), chat_response("b"))
        writer.close()  # the process "died" here: never finalized
        with open(tmp_path / "b" / "events.jsonl", "ab") as fh:
            fh.write(b'{"id": "agent_action_0001", "posi')  # killed mid-line
        bundle = load_bundle(tmp_path / "b")
        assert not bundle.complete
        assert [e.id for e in bundle.events] == ["agent_action_0000"]
        assert any("partial last line" in w for w in bundle.warnings)

    def test_refuses_to_overwrite(self, tmp_path):
        make_bundle(tmp_path / "b")
        with pytest.raises(BundleExistsError):
            recorder(tmp_path / "b")

    @pytest.mark.skipif(os.geteuid() == 0, reason="root can write anywhere")
    def test_unwritable_output(self, tmp_path):
        locked = tmp_path / "locked"
        locked.mkdir()
        locked.chmod(stat.S_IRUSR | stat.S_IXUSR)
        with pytest.raises(BundleWriteError):
            recorder(locked / "b")

    def test_output_under_a_file_is_unwritable(self, tmp_path):
        (tmp_path / "file").write_text("x")
        with pytest.raises(BundleWriteError):
            recorder(tmp_path / "file" / "b")


class TestSecrets:
    def test_secret_shaped_value_is_refused_and_nothing_written(self, tmp_path):
        session, writer = recorder(tmp_path / "b")
        before = (tmp_path / "b" / "events.jsonl").read_bytes()
        leaked = "sk-" + "A1b2C3d4" * 4
        with pytest.raises(RedactionError):
            run(session, llm_call(chat_request(f"my key is {leaked}")), chat_response("ok"))
        writer.abort()  # what a refused recording's owner does: its files closed, not sealed
        assert (tmp_path / "b" / "events.jsonl").read_bytes() == before
        assert not any(leaked.encode() in p.read_bytes() for p in (tmp_path / "b").iterdir())

    def test_configured_secret_is_scrubbed_before_hashing(self, tmp_path):
        redactor = Redactor.from_environment(env={"MY_API_KEY": "hunter2-hunter2"})
        scrubbed = redactor.scrub({"content": "key=hunter2-hunter2"})
        # a configured value is named first, wherever it is (restorable on replay)
        assert scrubbed == {"content": "key=[REDACTED:MY_API_KEY]"}
        assert redactor.headers(
            {"Authorization": "Bearer x", "Content-Type": "j"},
            keep=["authorization", "content-type"],
        ) == {"content-type": "j"}

    def test_writer_checks_manifest_too(self, tmp_path):
        leaked = "ghp_" + "a" * 36
        with pytest.raises(RedactionError):
            BundleWriter(
                tmp_path / "b",
                {"kind": "recording", "task": leaked, "initial_state": {}, "config": {}},
                redactor=Redactor(),
            ).open()


def _size(path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())
