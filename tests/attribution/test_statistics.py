"""The attribution statistics against independent computations: hand-computed values, the
defining equations solved numerically, and exhaustive enumeration (scipy is not a
dependency; where it is installed, it is asked too)."""

from __future__ import annotations

import itertools
import math

import pytest

from symtrace.diagnosis.attribution_stats import (
    Z95,
    edge_effect,
    holm,
    paired_sign_test,
    wilson,
)


def _wilson_by_bisection(successes: int, n: int) -> tuple[float, float]:
    """The Wilson bounds as the roots of |p̂ − p| = z·sqrt(p(1 − p)/n), found numerically."""
    p_hat = successes / n

    def outside(p: float) -> float:
        return abs(p_hat - p) - Z95 * math.sqrt(p * (1 - p) / n)

    def root(lo: float, hi: float) -> float:
        for _ in range(200):
            mid = (lo + hi) / 2
            if (outside(lo) > 0) == (outside(mid) > 0):
                lo = mid
            else:
                hi = mid
        return (lo + hi) / 2

    low = 0.0 if successes == 0 else root(0.0, p_hat)
    high = 1.0 if successes == n else root(p_hat, 1.0)
    return low, high


@pytest.mark.parametrize(("successes", "n"), [(0, 2), (2, 2), (1, 5), (8, 10), (13, 40)])
def test_wilson_matches_the_defining_equation(successes, n):
    rate = wilson(successes, n)
    low, high = _wilson_by_bisection(successes, n)
    assert rate.low == pytest.approx(low, abs=1e-9)
    assert rate.high == pytest.approx(high, abs=1e-9)


def test_wilson_textbook_values():
    rate = wilson(8, 10)  # Newcombe (1998) / Agresti–Coull: 0.4902 .. 0.9433
    assert (round(rate.low, 4), round(rate.high, 4)) == (0.4902, 0.9433)
    assert wilson(0, 2).high == pytest.approx(0.6576, abs=1e-4)
    assert (wilson(0, 0).low, wilson(0, 0).high) == (0.0, 1.0)  # no rollouts: no information
    with pytest.raises(ValueError):
        wilson(3, 2)


def _sign_test_by_enumeration(repair, resample) -> float:
    """P(b' >= b) under H0, by flipping every discordant pair both ways (2^n worlds)."""
    pairs = [(x, y) for x, y in zip(repair, resample, strict=True) if x != y]
    observed = sum(1 for x, _ in pairs if x)
    worlds = list(itertools.product((True, False), repeat=len(pairs)))
    return sum(1 for w in worlds if sum(w) >= observed) / len(worlds)


@pytest.mark.parametrize(("repair", "resample"), [
    ([1, 1, 1, 1, 1], [0, 0, 0, 0, 0]),
    ([1, 1, 1, 1, 0], [0, 0, 0, 0, 1]),
    ([1, 0, 1, 1, 0, 1], [1, 0, 0, 0, 0, 1]),
    ([0, 0, 1], [1, 1, 0]),
    ([1, 1], [1, 1]),
])
def test_sign_test_matches_enumeration(repair, resample):
    repair, resample = [bool(x) for x in repair], [bool(x) for x in resample]
    test = paired_sign_test(repair, resample)
    assert test.p_value == pytest.approx(_sign_test_by_enumeration(repair, resample))
    try:
        from scipy.stats import binomtest
    except ImportError:  # not a dependency: enumeration above is the independent check
        return
    n = test.repair_only + test.resample_only
    if n:
        expected = binomtest(test.repair_only, n, 0.5, alternative="greater").pvalue
        assert test.p_value == pytest.approx(expected)


def test_sign_test_hand_values():
    assert paired_sign_test([True] * 5, [False] * 5).p_value == 1 / 32
    assert paired_sign_test([True] * 4 + [False], [False] * 4 + [True]).p_value == 6 / 32
    assert paired_sign_test([True, False], [True, False]).p_value == 1.0  # no discordance
    with pytest.raises(ValueError):
        paired_sign_test([True], [True, False])


def test_holm_hand_values():
    assert holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert holm([0.5]) == [0.5]
    assert holm([0.02, 0.02, 0.9]) == pytest.approx([0.06, 0.06, 0.9])


def test_edge_rule_is_edges_risk_difference_with_support():
    # 4 repairs of A, 3 verified (A's symptom gone), B still present in 1 of those 3
    effect = edge_effect([True, True, True, False], [False, True, False, True])
    assert (effect.verified, effect.b_present) == (3, 1)
    assert effect.delta == pytest.approx(2 / 3) and effect.validated
    # the same effect with too little support is not validated
    assert not edge_effect([True, True, False], [False, False, True]).validated
    # Δ must exceed τ = 0.15: B gone in 1 of 7 verified repairs is Δ ≈ 0.143
    assert not edge_effect([True] * 7, [True] * 6 + [False]).validated
    assert edge_effect([True] * 6, [True] * 5 + [False]).validated  # Δ ≈ 0.167
    assert edge_effect([False, False], [False, False]).verified == 0
