"""Known-answer tests for the statistics of App. C (worked out by hand)."""

from __future__ import annotations

import pytest
from symtrace_study.stats import (
    holm,
    mcnemar_exact,
    paired_bootstrap_difference,
    pass_at_k,
    rep_k,
    wilson,
)


def test_wilson_textbook_value():
    interval = wilson(8, 10)
    assert interval.estimate == 0.8
    assert interval.low == pytest.approx(0.4902, abs=1e-4)
    assert interval.high == pytest.approx(0.9433, abs=1e-4)
    assert wilson(0, 5).low == 0.0
    with pytest.raises(ValueError):
        wilson(1, 0)


def test_mcnemar_exact():
    a = [True] * 1 + [False] * 9 + [True] * 5
    b = [False] * 1 + [True] * 9 + [True] * 5
    # b=1, c=9: p = 2 * (C(10,0) + C(10,1)) / 2^10
    assert mcnemar_exact(a, b) == pytest.approx(2 * 11 / 1024)
    assert mcnemar_exact([True, False], [True, False]) == 1.0


def test_holm():
    assert holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert holm([0.5, 0.9]) == [1.0, 1.0]


def test_paired_bootstrap_is_seeded_and_centred():
    a = [True] * 30 + [False] * 70
    b = [True] * 10 + [False] * 90
    first = paired_bootstrap_difference(a, b, resamples=2000)
    again = paired_bootstrap_difference(a, b, resamples=2000)
    assert first == again
    assert first.estimate == pytest.approx(20.0)
    assert first.low < 20.0 < first.high


def test_rep_k_and_pass_at_k():
    outcomes = [[True, True, False], [True, True, True], [False, False, False]]
    assert rep_k(outcomes, 1) == pytest.approx((2 / 3 + 1 + 0) / 3)
    assert rep_k(outcomes, 3) == pytest.approx(1 / 3)
    assert rep_k(outcomes, 2) == pytest.approx((1 / 3 + 1 + 0) / 3)
    assert pass_at_k(outcomes, 1) == pytest.approx(2 / 3)
    assert pass_at_k([[False, True]], 1) == 0.0
    assert pass_at_k([[False, True]], 2) == 1.0
