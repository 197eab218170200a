"""Golden digests: the v2 byte format and every reference bundle's seal are pinned; other
versions are refused, naming the version (docs/bundle-format.md, "Versions").

A change to how bundles are written (canonical form, blob splitting, sums, the seal) changes
the synthetic bundle's digests and needs a new format version; a re-recorded reference bundle
changes its root digest here, visibly in review (tests/integrity/reference_roots.json).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from symtrace.bundle import FORMAT_VERSION, load_bundle, verify_bundle
from symtrace.bundle.writer import BundleWriter
from symtrace.errors import UnsupportedBundleVersion
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


RETIRED = Path(__file__).parent / "retired"


def test_a_format_3_bundle_is_refused_naming_its_version():
    """A bundle an earlier symtrace recorded with the graph derived at read (the reference
    trip planner, kept as it was written): refused typed, exit 91, before anything is read."""
    with pytest.raises(UnsupportedBundleVersion, match=r"format_version 3 \(the graph derived"
                       r" at read.*reads version 2.*re-record") as refused:
        load_bundle(RETIRED / "format-3")
    assert refused.value.found == 3 and refused.value.exit_code == 91
    done = subprocess.run([sys.executable, "-m", "symtrace", "verify",
                           str(RETIRED / "format-3")], capture_output=True, text=True)
    assert done.returncode == 91 and "format_version 3" in done.stderr


@pytest.mark.parametrize("version", [1, 4, "2", None])
def test_other_versions_are_refused_naming_them(tmp_path, version):
    """Format 1 (a blobs/ directory, no seal), a future version, a version of the wrong type:
    refused with the version named (a v2 bundle whose manifest says otherwise)."""
    root = synthetic(tmp_path / "b")
    manifest = orjson.loads((root / "manifest.json").read_bytes())
    manifest["format_version"] = version
    if version == 1:
        del manifest["digest"]
        (root / "blobs").mkdir()
    (root / "manifest.json").write_bytes(orjson.dumps(manifest))
    with pytest.raises(UnsupportedBundleVersion, match=f"format_version {version!r}") as refused:
        load_bundle(root)
    assert refused.value.exit_code == 91
    if version == 1:
        assert "no root digest" in str(refused.value)
