"""The committed labelled set (bundles/labelled/, made by bundles/make_labelled.py): recorded
AG2, CrewAI, AgentChat and Magentic-One runs with one injected fault each. The anchor must
beat every baseline on step and agent accuracy — computed here from the bundles, not stored."""

from __future__ import annotations

import importlib.util
import json
import sys
from collections import Counter
from pathlib import Path

import pytest

from symtrace.bundle import load_bundle
from symtrace.diagnosis import diagnose
from symtrace.diagnosis.evaluate import evaluate, load_labels

ROOT = Path(__file__).resolve().parents[2]
LABELS = ROOT / "bundles" / "labelled" / "labels.json"
BASELINES = ("random_expected", "random_seeded", "first", "last")


@pytest.fixture(scope="module")
def report():
    return evaluate(load_labels(LABELS), diagnose, seed=0, name=str(LABELS))


def test_the_set_covers_every_framework_with_at_least_eight_runs():
    entries = json.loads(LABELS.read_text())["traces"]
    counts = Counter(entry["framework"] for entry in entries)
    assert set(counts) == {"ag2", "crewai", "autogen_agentchat", "magentic_one"}
    assert min(counts.values()) >= 8
    for entry in entries:
        bundle = load_bundle(LABELS.parent / entry["trace"])
        assert bundle.manifest["replayable"] is not False  # recorded runs, not imports
        assert bundle.manifest["config"]["user"]["labelled_set"] == entry["scenario"]


def test_the_anchor_beats_every_baseline(report):
    summary = report.summary()
    anchor = summary["anchor"]
    for baseline in BASELINES:
        for metric in ("step_0", "agent"):
            assert anchor[metric] > summary[baseline][metric], (baseline, metric, summary)


@pytest.mark.parametrize("framework", ["ag2", "crewai", "autogen_agentchat", "magentic_one"])
def test_per_framework(report, framework):
    """Not carried by one framework: the anchor wins in each, over the first/last baselines
    and the random expectation."""
    mine = [t for t in report.traces if t.label.trace.name.startswith(f"{framework}-")]
    n = len(mine)
    anchor = sum(t.scores("anchor")["step_0"] for t in mine) / n
    for baseline in ("random_expected", "first", "last"):
        assert anchor > sum(t.scores(baseline)["step_0"] for t in mine) / n


def _generator():
    spec = importlib.util.spec_from_file_location("make_labelled", ROOT / "bundles" /
                                                  "make_labelled.py")  # fmt: skip
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["make_labelled"] = module
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
@pytest.mark.parametrize(
    ("framework", "scenario"),
    [("ag2", "wrong_fact_city"), ("crewai", "ignored_error_researcher"),
     ("autogen_agentchat", "wrong_argument_currency"), ("magentic_one", "wrong_fact_city")],
)  # fmt: skip
def test_the_generator_reproduces_a_committed_run(framework, scenario, tmp_path, monkeypatch):
    """Re-record one labelled run per framework in-process: same label, same anchor."""
    pytest.importorskip({"ag2": "autogen", "crewai": "crewai"}.get(framework, "autogen_agentchat"))
    make = _generator()
    monkeypatch.setattr(make, "OUT", tmp_path)
    fresh = make.record(framework, make.BY_NAME[scenario], tmp_path / f"{framework}-{scenario}")
    committed = next(
        e
        for e in json.loads(LABELS.read_text())["traces"]
        if e["trace"] == f"{framework}-{scenario}"
    )
    assert fresh == committed
    new = diagnose(load_bundle(tmp_path / f"{framework}-{scenario}"))
    old = diagnose(load_bundle(LABELS.parent / committed["trace"]))
    # Parallel tool calls may finish in either order, so their results' ids (numbered by
    # completion) swap between runs: compare the target and the symptom by what they are.
    assert new.anchor.anchor == old.anchor.anchor
    assert node(new, new.anchor.target) == node(old, old.anchor.target)
    assert symptom(new) == symptom(old)
    assert new.anchor.anchor == committed["mistake_event"]


def node(diagnosis, event_id):
    view = diagnosis.context.by_id[event_id]
    return view.type, view.agent, sorted(c.fingerprint for c in view.calls)


def symptom(diagnosis):
    view = diagnosis.context.by_id[diagnosis.anchor.symptom]
    return view.type, [c.name for c in view.calls], diagnosis.anchor.categories
