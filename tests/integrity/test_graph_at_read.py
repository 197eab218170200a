"""Recording with the graph derived at read (format 3): the same run gives the same events as
a recording that derives the graph while it runs, with the parents derived when the bundle is
first read; nothing is derived before; a bundle a reader cannot derive from is refused, typed.

The program (tests/integrity/programs/offload_mix.py) covers every recording path: a growing
conversation with quotes, tool calls fed by replies, a provider tool call, a failing tool,
pooled asyncio calls completing out of issue order, a stream read whole and one abandoned, a
call cancelled before its response, an HTTP 500.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

import symtrace
from symtrace.bundle import lazy, load_bundle, verify_bundle
from symtrace.bundle.seal import root_digest, sha256_ref
from symtrace.errors import BundleFormatError, UnsupportedBundleVersion, UsageError
from symtrace.record.sinks import with_graph

from ._deterministic import PROGRAMS, files, offload_mix


def _record(stub: Any, path: Path, **kwargs: Any) -> Path:
    stub.restart_ids()
    with symtrace.record(path, seed=11, task="plan a trip", **kwargs):
        offload_mix.run(stub.url)
    return path


def _fields(event: symtrace.Event) -> dict[str, Any]:
    """An event as a reader sees it, parents (derived or not) included, not how they are kept."""
    return {**event.to_json(), "request": event.request, "response": event.response}


def test_a_run_recorded_at_read_reads_as_the_run_recorded_at_record(stub, tmp_path):
    at_record = _record(stub, tmp_path / "at-record", writer="inline")
    at_read = _record(stub, tmp_path / "at-read", graph="at-read")
    recorded, derived = verify_bundle(at_record), verify_bundle(at_read)
    assert recorded.manifest["format_version"] == 2 and "graph" not in recorded.manifest
    assert derived.manifest["format_version"] == 3 and derived.manifest["graph"] == "at-read"
    assert [_fields(e) for e in derived.events] == [_fields(e) for e in recorded.events]
    calls = [e for e in derived.events if e.derive is not None]
    assert {e.type.value for e in calls} == {"agent_action", "tool_call", "final_result"}
    assert sum(1 for e in calls for p in e.parents if p.kind.value == "data") >= 5
    # only the calls' parents are kept differently: the blob pack is the same
    assert files(at_read)["blobs.jsonl"] == files(at_record)["blobs.jsonl"]
    assert len(files(at_read)["events.jsonl"]) < len(files(at_record)["events.jsonl"])


def test_the_writer_process_and_an_inline_writer_write_the_same_bytes(stub, tmp_path):
    inline = files(_record(stub, tmp_path / "inline", graph="at-read", writer="inline"))
    offloaded = files(_record(stub, tmp_path / "process", graph="at-read", writer="process"))
    assert inline == offloaded


def test_the_graph_is_derived_once_when_a_parent_is_first_read(stub, tmp_path, monkeypatch):
    path = _record(stub, tmp_path / "b", graph="at-read")
    runs: list[int] = []
    real = lazy.derive_at_read

    def counted(lines: Any) -> Any:
        runs.append(len(lines))
        return real(lines)

    monkeypatch.setattr(lazy, "derive_at_read", counted)
    bundle = verify_bundle(path)  # the deepest check reads every stored field, none derived
    assert [(e.request, e.response) for e in bundle.events]  # nor does reading content
    assert runs == []
    call = [e for e in bundle.events if e.derive is not None and e.is_llm][-1]
    assert call.parents  # the first read derives every derived event's parents
    assert runs == [len(bundle.events)]
    assert [e.parents for e in bundle.events]
    assert runs == [len(bundle.events)]


def test_a_strict_replay_of_a_bundle_recorded_at_read_sends_nothing(stub, tmp_path):
    path = _record(stub, tmp_path / "b", graph="at-read")
    served = stub.served
    with symtrace.replay(path):
        offload_mix.run(stub.url)
    assert stub.served == served


def test_the_cli_records_at_read_with_the_flag_and_the_variable(stub, tmp_path):
    def record(out: Path, *flags: str, **env: str) -> symtrace.Bundle:
        stub.restart_ids()
        done = subprocess.run(
            [sys.executable, "-m", "symtrace", "record", "-o", str(out), "--seed", "3", *flags,
             "--", sys.executable, str(PROGRAMS / "offload_mix.py")],
            env={**os.environ, "OPENAI_BASE_URL": stub.url, "PYTHONHASHSEED": "5", **env},
            capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        return verify_bundle(out)

    eager = record(tmp_path / "eager")
    flagged = record(tmp_path / "flag", "--graph", "at-read")
    variable = record(tmp_path / "variable", SYMTRACE_GRAPH="at-read")
    for bundle in (flagged, variable):
        assert bundle.manifest["format_version"] == 3
        assert [_fields(e) for e in bundle.events] == [_fields(e) for e in eager.events]


def test_an_unsealed_prefix_derives_what_the_whole_bundle_derives(stub, tmp_path):
    """A killed recording leaves a prefix of its lines: each call in it reads what it read
    when it started, so its parents are those of the sealed run."""
    path = _record(stub, tmp_path / "b", graph="at-read")
    whole = {e.id: e.parents for e in load_bundle(path).events}
    manifest = orjson.loads((path / "manifest.json").read_bytes())
    del manifest["digest"]
    manifest["complete"] = False
    (path / "manifest.json").write_bytes(orjson.dumps(manifest))
    lines = (path / "events.jsonl").read_bytes().splitlines(keepends=True)
    (path / "events.jsonl").write_bytes(b"".join(lines[: len(lines) // 2]) + lines[-1][:20])
    prefix = load_bundle(path).events
    assert 0 < len(prefix) < len(whole)
    assert any(e.derive is not None and e.parents for e in prefix)
    assert {e.id: e.parents for e in prefix} == {e.id: whole[e.id] for e in prefix}


# -- what a reader refuses ------------------------------------------------------------------
def _resealed(path: Path, *, manifest: Any = None, line: tuple[int, Any] | None = None) -> Path:
    """*path* with its manifest and/or one event line replaced, sealed again (a bundle a
    writer could have made, not a damaged one)."""
    data = orjson.loads((path / "manifest.json").read_bytes())
    if manifest is not None:
        data = manifest(data)
    if line is not None:
        index, edit = line
        lines = (path / "events.jsonl").read_bytes().split(b"\n")
        record = orjson.loads(lines[index])
        edit(record)
        lines[index] = orjson.dumps(record, option=orjson.OPT_SORT_KEYS)
        (path / "events.jsonl").write_bytes(b"\n".join(lines))
    data.pop("digest", None)
    digests = {name: sha256_ref((path / name).read_bytes())
               for name in ("sums.jsonl", "events.jsonl", "blobs.jsonl")}
    data["digest"] = {"files": digests, "root": root_digest(data, digests)}
    (path / "manifest.json").write_bytes(orjson.dumps(data))
    return path


def _first_call(path: Path) -> int:
    lines = (path / "events.jsonl").read_bytes().split(b"\n")
    return next(i for i, line in enumerate(lines) if b'"parents":{' in line and i > 0)


@pytest.fixture
def at_read(stub, tmp_path) -> Path:
    return _record(stub, tmp_path / "b", graph="at-read")


def test_a_version_it_does_not_read_is_refused_typed(at_read):
    _resealed(at_read, manifest=lambda m: {**m, "format_version": 4})
    with pytest.raises(UnsupportedBundleVersion) as info:
        load_bundle(at_read)
    assert info.value.found == 4
    assert "version 2 and 3" in str(info.value)


@pytest.mark.parametrize("manifest", [
    lambda m: {**m, "format_version": 2},  # parents to derive in a bundle that says it has none
    lambda m: {k: v for k, v in m.items() if k != "graph"},
])
def test_a_version_that_disagrees_with_the_graph_is_refused(at_read, manifest):
    _resealed(at_read, manifest=manifest)
    with pytest.raises(BundleFormatError):
        load_bundle(at_read)


@pytest.mark.parametrize(("edit", "says"), [
    (lambda r: r["parents"].update(seen=10**6), "seen must count event lines before it"),
    (lambda r: r["parents"].update(seen="3"), "seen must count event lines before it"),
    (lambda r: r["parents"].update(extra=1), "parents to derive must be"),
    (lambda r: r["parents"].update(causes="planner"), "causes must be a list"),
])
def test_inputs_a_derivation_cannot_read_are_refused_naming_the_line(at_read, edit, says):
    index = _first_call(at_read)
    _resealed(at_read, line=(index, edit))
    with pytest.raises(BundleFormatError, match=f"events.jsonl line {index + 1}: {says}"):
        load_bundle(at_read)


def test_a_graph_setting_other_than_the_two_is_a_usage_error(monkeypatch):
    with pytest.raises(UsageError, match="at-record, at-read"):
        with_graph({}, "later")
    monkeypatch.setenv("SYMTRACE_GRAPH", "never")
    with pytest.raises(UsageError, match="SYMTRACE_GRAPH"):
        with_graph({})
    monkeypatch.setenv("SYMTRACE_GRAPH", "at-read")
    assert with_graph({}) == {"graph": "at-read"}
    assert with_graph({}, "at-record") == {}


def test_a_call_that_saw_a_line_of_a_later_call_is_refused(at_read):
    """Pooled calls complete out of issue order: a call that started earlier but claims to
    have seen the line of one that started after it cannot be derived (that one's parents
    are not known yet). Refused, typed, on the first read of a parent."""
    lines = [orjson.loads(line) for line in (at_read / "events.jsonl").read_bytes().splitlines()]
    calls = [(i, r) for i, r in enumerate(lines) if isinstance(r["parents"], dict)
             and r["type"] != "final_result"]
    later, earlier = next((x, y) for x in calls for y in calls
                          if y[1]["position"] < x[1]["position"] and x[0] < y[0])
    _resealed(at_read, line=(earlier[0], lambda r: r["parents"].update(seen=later[0] + 1)))
    bundle = load_bundle(at_read)  # reading stored fields derives nothing: loads
    with pytest.raises(BundleFormatError, match="comes before the call started"):
        [e.parents for e in bundle.events]
