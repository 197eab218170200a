"""Every committed reference bundle replays strictly; every divergent one fails where it says.

Replays run the recorded command from the repository root through the CLI, with no endpoint
running: a replay that tried a live call could not succeed.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

ROOT = Path(__file__).resolve().parents[2]
BUNDLES = sorted(p.parent for p in (ROOT / "bundles").glob("*/manifest.json"))
DIVERGENT = sorted(p.parent for p in (ROOT / "bundles" / "divergent").glob("*/manifest.json"))
pytestmark = pytest.mark.slow


def replay(bundle: Path, tmp_path: Path) -> tuple[subprocess.CompletedProcess, dict]:
    report = tmp_path / "report.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    result = subprocess.run(
        [sys.executable, "-m", "symtrace", "replay", str(bundle.relative_to(ROOT)),
         "--quiet", "--report-json", str(report)],
        cwd=ROOT, capture_output=True, text=True, env=env, timeout=300,
    )
    return result, orjson.loads(report.read_bytes()) if report.exists() else {}


def test_there_are_reference_bundles():
    assert BUNDLES and DIVERGENT


@pytest.mark.parametrize("bundle", BUNDLES, ids=lambda p: p.name)
def test_reference_bundle_replays(bundle, tmp_path):
    expected = orjson.loads((bundle / "manifest.json").read_bytes())["outcome"]["exit_code"]
    result, report = replay(bundle, tmp_path)
    assert result.returncode == expected, result.stderr[-3000:]
    assert report.get("status") == "replayed", result.stderr[-3000:]


@pytest.mark.parametrize("bundle", DIVERGENT, ids=lambda p: p.name)
def test_divergent_bundle_fails_at_the_stated_event(bundle, tmp_path):
    expected = orjson.loads((bundle / "expected_divergence.json").read_bytes())
    result, report = replay(bundle, tmp_path)
    assert result.returncode == 90, result.stderr[-3000:]
    found = report["report"]
    assert found["kind"] == expected["kind"]
    assert found["event_id"] == expected["event_id"]
    if "path" in expected:
        assert found["differences"][0]["path"] == expected["path"]
