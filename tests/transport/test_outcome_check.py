"""The outcome comparison: exit code, final result, stdout after documented normalisation."""

from __future__ import annotations

import pytest

from symtrace.replay.outcome_check import compare, compile_volatile, normalised_lines


def outcome(**overrides):
    base = {"recorded_exit": 0, "recorded_value": {"a": 1}, "recorded_stdout": b"x\ny\n",
            "exit_code": 0, "value": {"a": 1}, "stdout": b"x\ny\n"}
    return compare(**{**base, **overrides})


def test_identical_outcomes_match():
    assert outcome() is None


def test_the_first_difference_is_reported_in_a_fixed_order():
    assert outcome(exit_code=3, value={"a": 2}).what == "exit_code"
    assert outcome(value={"a": 2}).what == "final_result"
    diff = outcome(stdout=b"x\nz\n")
    assert (diff.what, diff.line, diff.expected, diff.actual) == ("stdout", 2, "y", "z")
    assert "line 2" in diff.describe()


def test_lines_printed_in_another_order_are_not_a_difference():
    """Worker threads interleave their output by timing; the lines themselves must match."""
    assert outcome(stdout=b"y\nx\n") is None
    diff = outcome(recorded_stdout=b"a\nb\nc\n", stdout=b"b\na\nz\n")
    assert (diff.line, diff.expected, diff.actual) == (3, "c", "z")


def test_a_missing_or_extra_line_is_a_difference():
    assert outcome(stdout=b"x\n").line == 2
    assert outcome(stdout=b"x\ny\nextra\n").actual == "extra"


@pytest.mark.parametrize(("recorded", "replayed"), [
    ("<Agent object at 0x7f3a2b1c9d00>", "<Agent object at 0x7f11aa22bb33>"),
    ("started 2026-12-03T14:05:01.123Z", "started 2026-12-04T09:00:00.000Z"),
    ("at 14:05:01", "at 09:59:59"),
    ("took 1.23s", "took 0.5s"),
    ("took 12 ms", "took 7 ms"),
])
def test_volatile_substrings_are_normalised(recorded, replayed):
    assert normalised_lines(recorded.encode()) == normalised_lines(replayed.encode())


@pytest.mark.parametrize(("recorded", "replayed"), [
    ("id 3f2a9c1e-0b7d-4a55-9c1e-1b2c3d4e5f60", "id 9b1d7a55-2c3e-4f60-8a77-0c1d2e3f4a5b"),
    ("token 9f8e7d6c5b4a", "token 0a1b2c3d4e5f"),
])
def test_entropy_is_not_normalised_away(recorded, replayed):
    assert normalised_lines(recorded.encode()) != normalised_lines(replayed.encode())


def test_volatile_stdout_lines_are_left_out():
    volatile = compile_volatile([r"^TOKEN: "])
    assert outcome(recorded_stdout=b"x\nTOKEN: 1\ny\n", stdout=b"x\nTOKEN: 2\ny\n",
                   volatile=volatile) is None


def test_a_bad_volatile_pattern_names_itself():
    with pytest.raises(ValueError, match=r"\(unclosed"):
        compile_volatile(["(unclosed"])
