"""The quote index (model/quotes.py) answers exactly what a scan of the joined request does,
whatever the order of additions and questions, and whatever window `lo` each question asks
for: moving up (the graph's, as producers accumulate) or back down."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from symtrace.model.quotes import QuoteIndex

# few short words: texts land inside parts, across the space between two, or partly in a word
WORD = st.sampled_from(["a", "ab", "b", "ba", "abc", "c"])
TEXT = st.lists(WORD, min_size=1, max_size=5).map(" ".join)
STEP = st.one_of(
    st.tuples(st.just("add"), TEXT),
    st.tuples(st.just("ask"), st.lists(TEXT, min_size=1, max_size=5), st.integers(0, 12)),
)


@settings(max_examples=400, deadline=None)
@given(st.lists(STEP, max_size=30))
def test_quoted_equals_the_scan_of_the_joined_parts(steps):
    index = QuoteIndex()
    for step in steps:
        if step[0] == "add":
            index.add(step[1])
            continue
        parts, lo = step[1], step[2]
        joined = " ".join(parts)
        expected = {i for i in range(lo, len(index.texts)) if index.texts[i] in joined}
        assert index.quoted(parts, lo) == expected
        # what the graph skips settling relies on: scan() names every text found
        inside, maybe, _, _ = index.scan(parts, lo)
        assert expected <= inside | maybe


def test_a_window_moved_up_past_a_part_then_back_checks_the_gap():
    """Asked with lo beyond what a part was checked for, the texts skipped are not counted as
    checked: asked again with a lower lo, the part finds them."""
    index = QuoteIndex()
    assert index.quoted(["a b"], 0) == set()
    index.add("a b")
    index.add("b")
    assert index.quoted(["a b"], 1) == {1}
    assert index.quoted(["a b"], 0) == {0, 1}


def test_a_part_after_another_part_checks_the_junction_it_has_now():
    """A part keeps the junction entry of the part before it when last asked about (a
    conversation re-sends it after the same message); after another part, it is that
    junction that is checked."""
    index = QuoteIndex()
    assert index.quoted(["a b", "x y"]) == set()
    spanning = index.add("d x y")  # covers the space between "c d" and "x y" only
    assert index.quoted(["a b", "x y"]) == set()
    assert index.quoted(["c d", "x y"]) == {spanning}
    assert index.quoted(["a b", "x y"]) == set()


def test_apart_texts_are_those_sharing_no_part_or_junction():
    """quoted_apart(): texts in messages of their own are apart; a text inside another's
    message, or one that may cover the space next to a message holding another, is near."""
    index = QuoteIndex()
    first, second, inner, spanning = (index.add(text) for text in (
        "one two three", "four five six", "five six", "three four"))
    assert index.quoted_apart(["one two three", "x", "four five six"]) == (
        {first, second, inner}, {second, inner})
    assert index.quoted_apart(["one two three", "four five"]) == (
        {first, spanning}, {first, spanning})
    assert index.quoted_apart(["one two three", "x y", "z"]) == ({first}, set())


def test_marked_are_the_texts_holding_the_unnesting_mark():
    """The graph asks own_quotes() to unnest every text found when one holds "\x00" (the
    mark it writes); it learns which texts do from `marked`, kept as texts are added."""
    index = QuoteIndex()
    plain = index.add("a b")
    marked = index.add("a\x00 b")
    index.add("b")
    assert index.marked == {marked}
    assert plain not in index.marked


def test_a_part_as_long_as_the_shortest_text_is_still_searched():
    """A part shorter than every text skips the search (it can hold none); one exactly as
    long may be that text."""
    index = QuoteIndex()
    index.add("one two three")
    index.add("ab cd")
    assert index.quoted(["ab c"]) == set()
    assert index.quoted(["ab cd"]) == {1}
    assert index.quoted(["x ab cd"]) == {1}
