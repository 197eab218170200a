"""Every committed reference bundle replays strictly; every divergent one fails where it says.

Replays run the recorded command from the repository root through the CLI, with no endpoint
running: a replay that tried a live call could not succeed. Framework bundles are replayed by
their adapter's own tests (tests/adapters/<framework>/), which also compare the program's
output and isolate the framework's side effects; here the framework-free bundles are replayed,
and every framework bundle is checked to be named by a replaying test its adapter's suite collects.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

ROOT = Path(__file__).resolve().parents[2]
ALL = sorted(p.parent for p in (ROOT / "bundles").glob("**/manifest.json"))


def adapters_of(bundle: Path) -> list[str]:
    return orjson.loads((bundle / "manifest.json").read_bytes())["config"]["adapters"]


BUNDLES = [b for b in ALL if b.parent.name == "bundles" and not adapters_of(b)]
DIVERGENT = [b for b in ALL if b.parent.name == "divergent" and not adapters_of(b)]
pytestmark = pytest.mark.slow


def replay(bundle: Path, tmp_path: Path) -> tuple[subprocess.CompletedProcess, dict]:
    report = tmp_path / "report.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    result = subprocess.run(
        [sys.executable, "-m", "symtrace", "replay", str(bundle.relative_to(ROOT)),
         "--cwd", ".", "--trust", "--quiet", "--report-json", str(report)],
        cwd=ROOT, capture_output=True, text=True, env=env, timeout=300,
    )
    return result, orjson.loads(report.read_bytes()) if report.exists() else {}


def test_there_are_reference_bundles():
    assert BUNDLES and DIVERGENT


# Reference bundles only: bundles/labelled/ is diagnosis data (recordings with injected
# faults), checked by tests/diagnosis/test_diag_labelled.py, not a replay reference.
REFERENCE = [b for b in ALL if b.parent.name in ("bundles", "divergent")]


@pytest.fixture(scope="module")
def adapter_test_ids() -> list[str]:
    """Node ids of every test the adapter suites collect (pytest --collect-only)."""
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
         "tests/adapters"],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
        env={**os.environ, "PYTEST_ADDOPTS": ""},  # a caller's -v would print a tree, not ids
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return [line for line in result.stdout.splitlines() if "::" in line]


def _replayed_by(bundle: Path, adapter: str, ids: list[str]) -> list[str]:
    """Tests of the adapter's suite that replay this very bundle, by their parametrization.

    A reference bundle is named by its directory (`crewai-sequential`), or — in a test whose
    name says it replays reference bundles — by its scenario (`sequential`). A divergent
    bundle is named by its directory in a test about divergent bundles.
    """
    scenario = bundle.name.removeprefix(f"{adapter}-")
    divergent = bundle.parent.name == "divergent"
    out = []
    for node in ids:
        if not node.startswith(f"tests/adapters/{adapter}/") or not node.endswith("]"):
            continue
        function, _, param = node.rpartition("::")[2][:-1].partition("[")
        if divergent:
            if "divergent" in function and param == bundle.name:
                out.append(node)
        elif "replay" in function and (
            param == bundle.name or ("reference_bundle" in function and param == scenario)
        ):
            out.append(node)
    return out


@pytest.mark.parametrize("bundle", [b for b in REFERENCE if adapters_of(b)],
                         ids=lambda p: p.name)
def test_framework_bundles_are_replayed_by_their_adapter_tests(bundle, adapter_test_ids):
    (adapter,) = adapters_of(bundle)
    assert bundle.name.startswith(f"{adapter}-")
    assert _replayed_by(bundle, adapter, adapter_test_ids), (
        f"no test under tests/adapters/{adapter}/ replays {bundle.relative_to(ROOT)}"
    )


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
