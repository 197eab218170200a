"""`symtrace attribute`: typed refusals before anything runs (nothing written), the plan
printed before the first rollout, JSON output, and resuming an interrupted attribution."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from symtrace.cli import main
from symtrace.diagnosis import attribution_run
from symtrace.diagnosis.attribution import RolloutResult

REPO = Path(__file__).resolve().parents[2]
FAILED = REPO / "bundles" / "ag2-tool_error"
IN_PROCESS = REPO / "bundles" / "labelled" / "ag2-wrong_argument_city"


@pytest.mark.parametrize(("argv", "needle"), [
    ([str(IN_PROCESS)], "recorded in-process"),
    ([str(FAILED)], "already succeeds"),  # exit code 0 is the default outcome
    ([str(FAILED), "--success-exit", "0", "--success-match", "x"], "give one outcome"),
    ([str(FAILED), "--outcome", "no_such_module_x:f"], "cannot load"),
    ([str(FAILED), "--success-match", "(", ], "--success-match"),
    ([str(FAILED), "--success-match", "x", "--k", "0"], "--k must be"),
    ([str(FAILED), "--success-match", "x", "--jobs", "0"], "--jobs must be"),
    ([str(FAILED), "--success-match", "x", "--control-text", " "], "--control-text"),
])
def test_bad_input_is_a_usage_error_and_writes_nothing(argv, needle, tmp_path, capsys):
    out = tmp_path / "attr"
    code = main(["attribute", *argv, "-o", str(out)])
    assert code == 2
    assert needle in capsys.readouterr().err
    assert not out.exists() or not any((out / "rollouts").glob("*"))


class FakeRollouts:
    """Stands in for the replays: the repair passes, the resample fails; counts the runs."""

    def __init__(self) -> None:
        self.ran: list[str] = []

    def __call__(self, bundle_path, rollout, hold_tools, options) -> RolloutResult:
        self.ran.append(rollout.key)
        child = options.out / attribution_run.ROLLOUTS_DIR / rollout.key
        child.mkdir(parents=True)
        return RolloutResult(rollout.node, rollout.arm, rollout.index,
                             rollout.arm == "repair", str(child), held_tools=1)


def test_plan_then_json_then_resume_runs_only_what_is_missing(tmp_path, capsys, monkeypatch):
    fake = FakeRollouts()
    monkeypatch.setattr(attribution_run, "run_rollout", fake)
    out = tmp_path / "attr"
    argv = ["attribute", str(FAILED), "-o", str(out), "--k", "2", "--budget", "1",
            "--success-match", "270.0 USD", "--json"]
    assert main(argv) == 0
    captured = capsys.readouterr()
    err = " ".join(captured.err.split())
    assert "2 arms × k=2 = 4 rollouts" in err
    assert "smallest Holm-adjusted p is 0.25" in err and "raise --k" in err  # warned up front
    data = json.loads(captured.out)
    assert data["plan"]["planned_rollouts"] == 4 and len(data["rollouts"]) == 4
    assert data["nodes"][0]["repair"]["successes"] == 2
    assert data["tools"]["held"] == 4
    assert (out / "attribution.json").exists()
    assert len(fake.ran) == 4

    # an interruption: the last line torn, one rollout lost; running again redoes only it
    lines = (out / "rollouts.jsonl").read_bytes().splitlines()
    (out / "rollouts.jsonl").write_bytes(b"\n".join(lines[:3]) + b"\n" + lines[3][:20])
    lost = json.loads(lines[3])["node"] + "-" + json.loads(lines[3])["arm"] + "-" + str(
        json.loads(lines[3])["index"])
    import shutil

    shutil.rmtree(out / "rollouts" / lost)
    fake.ran.clear()
    assert main(argv) == 0
    assert fake.ran == [lost]
    assert len(json.loads(capsys.readouterr().out)["rollouts"]) == 4

    # another plan in the same directory is refused
    other = [*argv[:5], "3", *argv[6:]]
    assert main(other) == 2
    assert "another attribution plan" in capsys.readouterr().err


def test_table_says_none_found_and_counts_held_tools(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(attribution_run, "run_rollout", FakeRollouts())
    code = main(["attribute", str(FAILED), "-o", str(tmp_path / "a"), "--k", "1",
                 "--budget", "1", "--success-match", "270.0 USD"])
    assert code == 0
    text = capsys.readouterr().out
    assert "Critical step: none found" in text
    assert "2 held to the recording" in text
