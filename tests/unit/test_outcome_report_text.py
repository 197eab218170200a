"""Issue 40: SYM-R107 shows a stdout difference visibly, and blames the right cause."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from symtrace.model.events import EventType
from symtrace.process.verdict import outcome_hint
from symtrace.replay.outcome_check import OutcomeDifference, visible


@pytest.mark.parametrize(("line", "shown"), [
    ("│" + " " * 58 + "│", "'│⟨58 spaces⟩│'"),  # a wrapped report would cut the run
    ("│ │", "'│ │'"),
    ("a\tb", r"'a\tb'"),
    ("x\xa0y", r"'x\xa0y'"),  # a no-break space looks like a space
    ("zero\u200bwidth", r"'zero\u200bwidth'"),
    ("\x1b[1mbold", r"'\x1b[1mbold'"),
    ("it's ⟨2 spaces⟩ \\", r"'it\'s \⟨2 spaces\⟩ \\'"),  # the notation itself is escaped
    (None, "no line"),
])
def test_invisible_differences_are_shown_visibly(line, shown):
    assert visible(line) == shown


def test_two_lines_that_look_alike_are_told_apart():
    difference = OutcomeDifference("stdout", "│" + " " * 40 + "│", "│" + " " * 41 + "│", 3)
    assert difference.describe() == (
        "stdout differs at line 3: recorded '│⟨40 spaces⟩│', replayed '│⟨41 spaces⟩│'")


def _bundle(stdout: bytes, tool_calls: int) -> SimpleNamespace:
    events = [SimpleNamespace(type=EventType.TOOL_CALL)] * tool_calls
    return SimpleNamespace(boundary_events=lambda: events, stdout=lambda: stdout,
                           final_result=lambda: None, events=events)


def test_lines_missing_after_served_tool_calls_name_the_tool_body_not_entropy():
    hint = outcome_hint(_bundle(b"a\nChecking...\nb\n", 2), "D", b"a\nb\n", (), None)
    assert "2 tool call(s) were served without re-running their bodies" in hint
    assert "os.urandom" not in hint


@pytest.mark.parametrize(("recorded", "replayed", "tools"), [
    (b"id 1\n", b"id 2\n", 2),  # a changed line: entropy
    (b"a\nChecking...\n", b"a\n", 0),  # no tool was served: not a tool body
])
def test_other_differences_still_point_at_what_symtrace_does_not_pin(recorded, replayed, tools):
    assert "os.urandom" in outcome_hint(_bundle(recorded, tools), "D", replayed, (), None)


def test_a_line_printed_a_different_number_of_times_says_so():
    from symtrace.replay.outcome_check import compare

    panel = "│" + " " * 78 + "│"
    difference = compare(recorded_exit=0, recorded_value=None, exit_code=0, value=None,
                         recorded_stdout=f"a\n{panel}\n".encode(),
                         stdout=f"a\n\n{panel}\n{panel}\n{panel}\n".encode())
    assert difference is not None and difference.counts == (1, 3)
    assert difference.describe() == (
        "stdout differs: the line '│⟨78 spaces⟩│' (first at line 2) appears 1 times in the "
        "recording and 3 in the replay")


def test_blank_lines_are_spacing_not_outcome():
    from symtrace.replay.outcome_check import compare

    assert compare(recorded_exit=0, recorded_value=None, exit_code=0, value=None,
                   recorded_stdout=b"panel\n\nnext\n", stdout=b"panel\nnext\n\n\n") is None
    assert compare(recorded_exit=0, recorded_value=None, exit_code=0, value=None,
                   recorded_stdout=b"a\n", stdout=b"a\nb\n") is not None
