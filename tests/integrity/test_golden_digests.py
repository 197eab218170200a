"""Golden digests: the v2 byte format and every reference bundle's seal are pinned.

A change to how bundles are written (canonical form, blob splitting, sums, the seal) changes
the synthetic bundle's digests and needs a new format version; a re-recorded reference bundle
changes its root digest here, visibly in review (tests/integrity/reference_roots.json).
"""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from symtrace.bundle import FORMAT_VERSION, load_bundle, verify_bundle
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
