"""Through the CLI, in child processes: zero-code wrapping of an unchanged CrewAI program, and
the committed reference bundles (strict replay from the repo root, no endpoint running)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
import pytest

import symtrace
from symtrace.stub import StubLLM

from ._support import ROOT, script, subprocess_env

pytestmark = [pytest.mark.framework("crewai"), pytest.mark.slow]
BUNDLES = sorted(p.parent for p in ROOT.glob("bundles/crewai-*/manifest.json"))
DIVERGENT = sorted(p.parent for p in ROOT.glob("bundles/divergent/crewai-*/manifest.json"))
CONCURRENT_CONSOLE = frozenset({"crewai-trip_flow"})


def symtrace_cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "symtrace", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)


def test_every_scenario_has_a_reference_bundle():
    names = {p.name for p in BUNDLES}
    for scenario in (ROOT / "examples" / "crewai").glob("[!_]*.py"):
        if scenario.stem != "crewai_common":
            assert f"crewai-{scenario.stem}" in names
    assert DIVERGENT


def test_symtrace_record_wraps_an_unchanged_crewai_program(crewai_home, tmp_path):
    """No --adapter: every installed framework's adapter is armed; crewai's picks this up."""
    bundle = tmp_path / "b"
    with StubLLM(mode="scripted", script=script("parallel_tools")) as stub:
        env = subprocess_env(crewai_home, OPENAI_BASE_URL=stub.url)
        done = symtrace_cli("record", "-o", str(bundle), "--",
                            "python", "examples/crewai/parallel_tools.py", env=env)
        assert done.returncode == 0, done.stderr[-3000:]
        served = stub.served
        replayed = symtrace_cli("replay", str(bundle), env=env)
        assert replayed.returncode == 0, replayed.stderr[-3000:]
        assert stub.served == served
    loaded = symtrace.load_bundle(bundle)
    assert "crewai" in loaded.config["adapters"]
    agents = {e.agent for e in loaded.events if e.type.value != "final_result"}
    assert agents == {"Planner"}
    assert replayed.stdout == done.stdout and "FINAL: Lisbon will be 19°C" in done.stdout


@pytest.mark.parametrize("bundle", BUNDLES, ids=lambda p: p.name)
def test_reference_bundle_replays_strictly_with_its_recorded_output(bundle, crewai_home):
    done = symtrace_cli("replay", str(bundle.relative_to(ROOT)), "--cwd", ".", "--trust",
                        env=subprocess_env(crewai_home))
    assert done.returncode == 0, done.stderr[-3000:]
    assert "replay matched every recorded boundary call" in done.stderr
    recorded = (bundle / "stdout.txt").read_text()
    if bundle.name not in CONCURRENT_CONSOLE:
        assert done.stdout == recorded
        return
    # CrewAI prints a Flow's step panels from its event bus as steps start and finish; for
    # steps running at once their order is thread timing (declared volatile): same panels,
    # same lines, and the program's own report identical
    assert sorted(done.stdout.splitlines()) == sorted(recorded.splitlines())
    assert done.stdout[done.stdout.index("== task"):] == recorded[recorded.index("== task"):]


@pytest.mark.parametrize("bundle", DIVERGENT, ids=lambda p: p.name)
def test_divergent_bundle_fails_exactly_where_it_says(bundle, crewai_home, tmp_path):
    expected = orjson.loads((bundle / "expected_divergence.json").read_bytes())
    report = tmp_path / "report.json"
    done = symtrace_cli("replay", str(bundle.relative_to(ROOT)), "--cwd", ".", "--trust", "--quiet",
                        "--report-json", str(report), env=subprocess_env(crewai_home))
    assert done.returncode == 90, done.stderr[-3000:]
    found = orjson.loads(report.read_bytes())["report"]
    assert (found["kind"], found["event_id"], found["lane"]) == (
        expected["kind"], expected["event_id"], expected["lane"])


def test_bundles_are_small():
    for bundle in [*BUNDLES, *DIVERGENT]:
        size = sum(f.stat().st_size for f in Path(bundle).rglob("*") if f.is_file())
        assert size < 300_000, f"{bundle.name} is {size} bytes"
