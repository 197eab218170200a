"""Issue 21, point 3: usage mistakes exit 2 (the documented usage code), and a diagnosis that
finds nothing wrong says so in words and exits 0 (`docs/diagnosis.md`, README exit codes)."""

from __future__ import annotations

from pathlib import Path

import pytest

from symtrace.cli import main

ROOT = Path(__file__).resolve().parents[2]
HEALTHY = str(ROOT / "bundles" / "autogen_agentchat-magentic_one")  # no rule fires on it
TOOL_ERROR = str(ROOT / "bundles" / "ag2-tool_error")


@pytest.mark.parametrize(("argv", "message"), [
    (["replay", TOOL_ERROR, "--anchor", "agent_action_0000", "-o", "D"],
     "--anchor needs --guidance"),
    (["replay", TOOL_ERROR, "--guidance", "check the rate"], "--guidance needs --anchor"),
    (["replay", TOOL_ERROR, "--anchor", "agent_action_0000", "--guidance-file",
      "/nonexistent/guidance.txt"], "/nonexistent/guidance.txt"),
])
def test_replay_usage_mistakes_exit_2(argv, message, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err
    assert "Traceback" not in err
    assert not (tmp_path / "D").exists()  # nothing written half-way


def test_healthy_run_diagnosed_says_no_symptom_found_and_exits_0(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    assert main(["diagnose", HEALTHY]) == 0
    out = capsys.readouterr()
    text = out.out + out.err
    assert "No symptom found" in text
    for notation in ("θ", "c_f", "L^r", "S_s", "eligible anchor"):
        assert notation not in text
    assert len(text.splitlines()) <= 6  # a verdict, not a wall of rows


def test_healthy_run_json_still_says_anchor_null_and_exits_0(capsys):
    import json

    assert main(["diagnose", HEALTHY, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["anchor"] is None


def test_symptoms_below_the_threshold_are_named_and_exit_0(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    assert main(["diagnose", TOOL_ERROR, "--theta", "0.99"]) == 0
    out = capsys.readouterr().out
    assert "tool_result_0000" in out
    assert "not strong enough" in out


def test_repair_with_nothing_to_repair_still_fails_92(capsys):
    assert main(["repair", HEALTHY, "--dry-run"]) == 92
    assert "No symptom found" in capsys.readouterr().err
