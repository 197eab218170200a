"""The word-level excerpt a divergence report shows for each side of a changed text."""

from __future__ import annotations

import pytest

from symtrace.model.textdiff import first_difference, word_excerpts

PROMPT = "You are a careful travel researcher. " * 20


def marked(a: str, b: str, budget: int = 60) -> tuple[str, str]:
    left, right = word_excerpts(a, b, budget)
    return left.marked("[-", "-]"), right.marked("{+", "+}")


def test_a_change_at_the_end_of_a_long_text_is_in_both_excerpts():
    left, right = marked(PROMPT + "Answer in euros.", PROMPT + "Answer in dollars.")
    assert left.endswith("Answer in [-euros-].") and right.endswith("Answer in {+dollars+}.")
    assert left.startswith("…") and right.startswith("…")  # the long start is cut


@pytest.mark.parametrize("budget", [30, 47, 80, 120])
def test_excerpts_keep_to_their_budget(budget):
    left, right = marked(PROMPT + "x " * 200, PROMPT + "y " * 200, budget)
    assert len(left) <= budget and len(right) <= budget


def test_changed_words_separated_by_spaces_read_as_one_change():
    left, right = marked("take the red bus now", "take a blue tram now")
    assert left == "take [-the red bus-] now" and right == "take {+a blue tram+} now"


def test_insertions_and_deletions_mark_one_side_only():
    left, right = marked("stub-model", "stub-model-old")
    assert left == "stub-model" and right == "stub-model{+-old+}"


def test_newlines_are_shown_on_one_line():
    left, right = marked("line one\nline two", "line one\nline 2")
    assert "\n" not in left + right and "⏎" in left


def test_first_difference_is_a_character_index():
    assert first_difference("abcdef", "abcxef") == 3
    assert first_difference("abc", "abcdef") == 3
