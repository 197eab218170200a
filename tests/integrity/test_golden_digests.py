"""Golden digests: the v2 and v3 byte formats and every reference bundle's seal are pinned.

A change to how bundles are written (canonical form, blob splitting, sums, the seal) changes
the synthetic bundle's digests and needs a new format version; a re-recorded reference bundle
changes its root digest here, visibly in review (tests/integrity/reference_roots.json).
"""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from symtrace.bundle import FORMAT_VERSION, load_bundle, verify_bundle
from symtrace.bundle.completion import complete_bundle
from symtrace.bundle.writer import BundleWriter
from symtrace.model.events import Edge, EdgeKind, Event, EventType
from symtrace.model.redaction import Redactor

ROOT = Path(__file__).resolve().parents[2]
PINNED = Path(__file__).with_name("reference_roots.json")
BUNDLES = sorted(p.parent for p in (ROOT / "bundles").glob("**/manifest.json"))

GOLDEN_ROOT = "sha256:e3ba8e50a94db6e82f9858133a97492f96f24aaeed76b0a4600bba4f1e49dc38"
GOLDEN_FILES = {
    "blobs.jsonl": "sha256:c3da01113649efac354e05729873e6399c0a31e90e238bd5a884b480bfbde801",
    "events.jsonl": "sha256:56d693c30c7171f4e710d257e828c49a59633a723385d16b9bb596cdb56f7347",
    "stdout.txt": "sha256:d117fa006ba9208500b2930ce69cbde436c647afa917cb7396a9bc9111a46dd2",
    "sums.jsonl": "sha256:4774fcd55bd235c3870c87ce0cdabb00038732c346768e6f31d79ac98d39791d",
}


def synthetic(path: Path) -> Path:
    manifest = {"kind": "recording", "task": "golden", "initial_state": {"random_seed": 1},
                "config": {"adapters": []}, "lineage": None, "replayable": True}
    writer = BundleWriter(path, manifest, redactor=Redactor()).open()
    history = [{"role": "user", "content": f"message {i} " + "x" * 150} for i in range(3)]
    for i in range(3):
        request = {"method": "POST", "path": "/v1/chat/completions", "query": "",
                   "body": {"model": "m", "messages": history[: i + 1]}}
        writer.write_event(Event(
            id=f"agent_action_{i:04d}", position=i, type=EventType.AGENT_ACTION, lane="main",
            agent="writer", reason=None,
            parents=(Edge(f"agent_action_{i - 1:04d}", EdgeKind.DATA),) if i else (),
            request=request, response={"status": 200, "body": {"text": f"reply {i}"}},
            meta={"completed": i},
        ).with_hashes())
    writer.write_stdout(b"done\n")
    writer.finalize(outcome={"status": "ok", "exit_code": 0, "error": None})
    return path


def test_synthetic_bundle_digests_are_pinned(tmp_path):
    bundle = verify_bundle(synthetic(tmp_path / "b"))
    assert bundle.manifest["format_version"] == FORMAT_VERSION == 2
    seal = bundle.manifest["digest"]
    assert seal == {"files": GOLDEN_FILES, "root": GOLDEN_ROOT}, orjson.dumps(seal).decode()


GOLDEN_V3_ROOT = "sha256:48393b121871c46090f1b4c280ca940a39d6c580e1de34fa7fe3f14af132dcb5"
GOLDEN_V3_EVENTS = "sha256:fbbe53750c5e4e97c3f5fcaa36915244f78ffa1c942276f1af18abb630ca3a41"


def synthetic_at_read(path: Path) -> Path:
    """The synthetic run in format 3: the calls and the final_result hold what deriving their
    parents reads (one of them caused by another lane), the tool result its own parent."""
    manifest = {"kind": "recording", "task": "golden", "initial_state": {"random_seed": 1},
                "config": {"adapters": []}, "lineage": None, "replayable": True,
                "graph": "at-read"}
    writer = BundleWriter(path, manifest, redactor=Redactor()).open()
    assert writer.graph_at_read
    history = [{"role": "user", "content": f"message {i} " + "x" * 150} for i in range(3)]
    for i in range(3):
        request = {"method": "POST", "path": "/v1/chat/completions", "query": "",
                   "body": {"model": "m", "messages": history[: i + 1]}}
        writer.write_event(Event(
            id=f"agent_action_{i:04d}", position=i, type=EventType.AGENT_ACTION,
            lane="main" if i < 2 else "critic", agent="writer", reason=None,
            request=request, response={"status": 200, "body": {"text": f"reply {i}"}},
            meta={"completed": i},
            derive={"seen": i, "causes": ["main"]} if i == 2 else {"seen": i},
        ).with_hashes())
    writer.write_event(Event(
        id="tool_call_0000", position=3, type=EventType.TOOL_CALL, lane="critic",
        request={"tool": "lookup", "arguments": {"q": "reply 2"}}, derive={"seen": 3},
    ).with_hashes())
    writer.write_event(Event(
        id="tool_result_0000", position=4, type=EventType.TOOL_RESULT, lane="critic",
        parents=(Edge("tool_call_0000", EdgeKind.DATA),),
        response={"ok": True, "value": "found"}, meta={"completed": 3},
    ).with_hashes())
    complete_bundle(writer, exit_code=0, value="found", status="ok")
    return path


def test_synthetic_format_3_bundle_digests_and_graph_are_pinned(tmp_path):
    bundle = verify_bundle(synthetic_at_read(tmp_path / "b"))
    assert bundle.manifest["format_version"] == 3
    assert bundle.manifest["digest"]["files"]["events.jsonl"] == GOLDEN_V3_EVENTS
    assert bundle.manifest["digest"]["root"] == GOLDEN_V3_ROOT
    graph = {e.id: [(p.source, p.kind.value) for p in e.parents] for e in bundle.events}
    assert graph == {
        "agent_action_0000": [],
        "agent_action_0001": [("agent_action_0000", "control")],  # the lane's previous call
        "agent_action_0002": [("agent_action_0001", "control")],  # caused by lane main
        "tool_call_0000": [("agent_action_0002", "control")],
        "tool_result_0000": [("tool_call_0000", "data")],  # its own, as written
        "final_result_0000": [("tool_result_0000", "data")],  # it repeats the value "found"
    }


def test_same_content_same_bytes(tmp_path):
    a, b = synthetic(tmp_path / "a"), synthetic(tmp_path / "b")
    for name in ("manifest.json", "events.jsonl", "blobs.jsonl", "sums.jsonl", "stdout.txt"):
        assert (a / name).read_bytes() == (b / name).read_bytes(), name


def test_every_reference_bundle_root_is_pinned():
    pinned = orjson.loads(PINNED.read_bytes())
    found = {str(p.relative_to(ROOT / "bundles")): load_bundle(p).root_digest for p in BUNDLES}
    assert found == pinned


@pytest.mark.parametrize("bundle", BUNDLES, ids=lambda p: str(p.relative_to(ROOT / "bundles")))
def test_reference_bundle_verifies(bundle):
    loaded = verify_bundle(bundle)
    assert loaded.sealed and loaded.complete
    names = {p.name for p in bundle.iterdir()}
    assert {"manifest.json", "events.jsonl", "blobs.jsonl", "sums.jsonl"} <= names
    assert names <= {"manifest.json", "events.jsonl", "blobs.jsonl", "sums.jsonl", "stdout.txt",
                     "expected_divergence.json", "app.py"}  # constant: no file per event
