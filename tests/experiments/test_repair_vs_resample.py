"""The experiment runner end to end on the stochastic stub (plumbing and statistics)."""

from __future__ import annotations

import importlib.util
import io
import sys
from pathlib import Path

import orjson
import pytest
from rich.console import Console

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


def load_runner():
    spec = importlib.util.spec_from_file_location(
        "repair_vs_resample", ROOT / "experiments" / "repair_vs_resample.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while it executes
    spec.loader.exec_module(module)
    return module


def test_runs_every_arm_and_writes_results(tmp_path, monkeypatch):
    runner = load_runner()
    monkeypatch.chdir(ROOT)
    config_path = tmp_path / "config.json"
    config_path.write_bytes(orjson.dumps({
        "endpoint": {"stub": "stochastic", "seed": 3},
        "cases": [{"collect": 2, "command": ["python", "examples/trip_planner.py"],
                   "task": "Plan a trip"}],
        "evaluator": {"contains": "TERMINATE"},
        "task_command": ["python", "examples/trip_planner.py", "{prompt}"],
        "methods": ["suspicious", "last", "rerun"],
        "attempts": 2,
        "out": str(tmp_path / "out"),
    }))
    config = runner.Config.load(config_path)
    summary = runner.run(config, Console(file=io.StringIO(), width=150))
    rows = [orjson.loads(line) for line in
            (tmp_path / "out" / "results.jsonl").read_bytes().splitlines()]
    assert set(summary["methods"]) == {"suspicious", "last", "rerun"}
    counted = len(summary["cases"]) + len(summary["excluded"])
    assert counted == len({r["case"] for r in rows}) >= 1
    for case in summary["cases"]:
        rerun = [r for r in rows if r["case"] == case and r["method"] == "rerun"]
        assert 1 <= len(rerun) <= 2  # stops at the first success, at most `attempts`
        last = [r for r in rows if r["case"] == case and r["method"] == "last"]
        assert len(last) == 1 and last[0]["anchor"]  # one intervention
    if summary["cases"]:
        assert {c["method"] for c in summary["comparisons"]} == {"last", "rerun"}
    assert (tmp_path / "out" / "pass_rates.svg").read_text().startswith("<svg")


def test_bad_configs_are_typed_errors(tmp_path):
    runner = load_runner()
    path = tmp_path / "c.json"
    for bad in ({"cases": []}, {"cases": [], "evaluator": {}, "task_command": ["x"]},
                {"cases": [], "evaluator": {}, "task_command": ["{prompt}"],
                 "methods": ["magic"]}):
        path.write_bytes(orjson.dumps(bad))
        with pytest.raises(runner.ExperimentConfigError):
            runner.Config.load(path)
    path.write_text("{not json")
    with pytest.raises(runner.ExperimentConfigError):
        runner.Config.load(path)
    with pytest.raises(runner.ExperimentConfigError):
        runner.evaluator_from({"python": "no.such.module:f"})
