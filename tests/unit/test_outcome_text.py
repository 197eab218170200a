"""Issue 38: how a recorded run ended, said in the words of what ran. A bundle of the pytest
plugin is a test that passed or failed, a `symtrace.record` block has no exit code, a program
has one; nothing says "exit None"."""

from __future__ import annotations

from pathlib import Path

import pytest

import symtrace
from symtrace.bundle import load_bundle
from symtrace.bundle.inspect import outcome_text
from symtrace.bundle.reader import Bundle
from symtrace.cli import main

PYTEST = {"user": {"pytest": {"nodeid": "tests/test_x.py::test_y", "test_module": None}}}


def bundle(outcome: dict | None, config: dict | None = None) -> Bundle:
    manifest = {"outcome": outcome, "config": config or {}}
    return Bundle(Path("b"), manifest, (), ())


@pytest.mark.parametrize(("outcome", "config", "said"), [
    ({"status": "ok", "exit_code": None, "error": None}, PYTEST, "test passed"),
    ({"status": "error", "exit_code": None, "error": "AssertionError: 1 != 2"}, PYTEST,
     "test failed (AssertionError)"),
    ({"status": "ok", "exit_code": None, "error": None}, None,
     "outcome ok (symtrace.record block ended normally)"),
    ({"status": "error", "exit_code": None, "error": "ValueError: no"}, None,
     "outcome error (symtrace.record block raised ValueError)"),
    ({"status": "ok", "exit_code": 0, "error": None}, None, "outcome ok (exit 0)"),
    ({"status": "killed", "exit_code": 137, "error": None}, None, "outcome killed (exit 137)"),
    (None, None, "no outcome (the recording did not finish)"),
])
def test_outcome_is_said_in_the_words_of_what_ran(outcome, config, said):
    assert outcome_text(bundle(outcome, config)) == said


def test_an_in_process_recording_shows_no_exit_none(tmp_path, capsys):
    with symtrace.record(tmp_path / "b", task="t.py::t", config={"pytest": {"nodeid": "t.py::t"}}):
        pass
    assert main(["show", str(tmp_path / "b"), "--width", "100"]) == 0
    out = capsys.readouterr().out
    assert "test passed" in out and "exit None" not in out
    assert "test: t.py::t" in out
    assert "no declared answer" in out
    assert load_bundle(tmp_path / "b").manifest["outcome"]["exit_code"] is None
