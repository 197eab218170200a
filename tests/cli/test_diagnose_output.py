"""Issue 21, points 4 and 7: `symtrace diagnose` in plain words by default (what looks wrong,
where, why, what to try), fitting the terminal; the coefficients behind `--explain`/`--json`;
`--help` without the paper's notation."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from symtrace.cli import build_parser, main

from .conftest import ANSI, run_cli, too_wide

ROOT = Path(__file__).resolve().parents[2]
TOOL_ERROR = str(ROOT / "bundles" / "ag2-tool_error")
LABELLED = str(ROOT / "bundles" / "labelled" / "ag2-ignored_error_writer")
NOTATION = ("L^r", "L^f", "c_l", "c_r", "S_r", "S_s", "c_f", "θ", "Table 10", "equation",
            "Algorithm")


@pytest.mark.parametrize("width", [80, 120])
def test_default_output_is_plain_words_that_fit(width, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", str(width))
    assert main(["diagnose", TOOL_ERROR]) == 0
    out = capsys.readouterr().out
    assert not too_wide(out, width), out
    for notation in NOTATION:
        assert notation not in out, notation
    for heading in ("What looks wrong", "Where", "Why", "What to try"):
        assert heading in out, heading
    # the symptom is where it shows; the repair goes where it started
    assert "tool_result_0000" in out and "agent_action_0000" in out
    assert "UnsupportedCurrency" in out
    assert f"symtrace repair {TOOL_ERROR}" in out


def test_default_output_names_the_symptom_and_the_anchor_apart(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")
    assert main(["diagnose", LABELLED]) == 0
    out = capsys.readouterr().out
    where = out[out.index("Where"):out.index("Why")]
    assert "tool_result_0001" in where  # the failed tool result the run went on from
    assert "agent_action_0002" in where  # the LLM call a repair resumes at


def test_explain_without_node_shows_the_coefficient_table(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "160")
    assert main(["diagnose", TOOL_ERROR, "--explain"]) == 0
    out = capsys.readouterr().out
    assert "L^r" in out and "c_f" in out and "S_s" in out


def test_explain_node_keeps_the_equations(capsys):
    assert main(["diagnose", TOOL_ERROR, "--explain", "tool_result_0000"]) == 0
    out = capsys.readouterr().out
    assert "S_s = clip" in out


def test_json_is_unchanged_by_the_plain_view(capsys):
    assert main(["diagnose", TOOL_ERROR, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["anchor"]["anchor"] == "agent_action_0000"
    assert data["anchor"]["symptom"] == "tool_result_0000"
    assert "c_f" in data["nodes"][2]["scores"]


def test_help_is_in_plain_words():
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "subcommand")
    text = sub.choices["diagnose"].format_help() + sub.choices["repair"].format_help()
    for notation in ("Table 10", "equations", "Algorithm 4", "L^r", "c_f"):
        assert notation not in text, notation
    assert "what looks wrong" in text.lower()


@pytest.mark.slow
def test_non_tty_no_color_at_80_columns():
    done = run_cli("diagnose", TOOL_ERROR, columns=80)
    assert done.returncode == 0, done.stderr
    assert not ANSI.search(done.stdout)
    assert not too_wide(done.stdout, 80), done.stdout
