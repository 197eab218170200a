"""Honest statistics for repair-vs-resample comparisons (the paper's §5.1 and App. C–E).

Every function takes per-case binary outcomes; a case (one source failure) contributes one
outcome per method, never one per internal call or retry. Pure Python, deterministic (the
bootstrap is seeded). Holm and the Wilson formula are shared with counterfactual attribution
(symtrace/diagnosis/attribution_stats.py).
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations

from symtrace.diagnosis.attribution_stats import holm as holm  # re-exported: the study uses it
from symtrace.diagnosis.attribution_stats import wilson as wilson_rate

BOOTSTRAP_SEED = 20260701  # the paper's seed (App. C.3)
BOOTSTRAP_RESAMPLES = 10_000
Z95 = 1.959963984540054


@dataclass(frozen=True, slots=True)
class Interval:
    estimate: float
    low: float
    high: float


def wilson(successes: int, n: int, z: float = Z95) -> Interval:
    """Wilson score interval for a proportion (95% by default)."""
    if n <= 0:
        raise ValueError("wilson() needs at least one case")
    rate = wilson_rate(successes, n, z)  # one Wilson formula in the project
    return Interval(rate.estimate, rate.low, rate.high)


def mcnemar_exact(a: Sequence[bool], b: Sequence[bool]) -> float:
    """Two-sided exact McNemar p-value for paired binary outcomes of methods a and b."""
    _check_paired(a, b)
    only_a = sum(1 for x, y in zip(a, b, strict=True) if x and not y)
    only_b = sum(1 for x, y in zip(a, b, strict=True) if y and not x)
    discordant = only_a + only_b
    if discordant == 0:
        return 1.0
    tail = sum(math.comb(discordant, i) for i in range(min(only_a, only_b) + 1))
    return min(1.0, 2 * tail / 2**discordant)


def paired_bootstrap_difference(
    a: Sequence[bool],
    b: Sequence[bool],
    *,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
) -> Interval:
    """Δ = 100·(p̂_a − p̂_b) in percentage points, with a 95% paired bootstrap interval.

    Cases are resampled with replacement; a case's two outcomes move together (pairing).
    """
    _check_paired(a, b)
    n = len(a)
    diffs = [int(x) - int(y) for x, y in zip(a, b, strict=True)]
    rng = random.Random(seed)
    estimates = sorted(
        100 * sum(diffs[rng.randrange(n)] for _ in range(n)) / n for _ in range(resamples)
    )
    low = estimates[int(0.025 * resamples)]
    high = estimates[min(resamples - 1, int(0.975 * resamples))]
    return Interval(100 * sum(diffs) / n, low, high)


def rep_k(outcomes: Sequence[Sequence[bool]], k: int) -> float:
    """Eq. 2: share of k-subsets of each case's attempts in which every attempt reproduces."""
    if not outcomes:
        raise ValueError("rep_k() needs at least one case")
    total = 0.0
    for attempts in outcomes:
        subsets = list(combinations(attempts, k))
        if not subsets:
            raise ValueError(f"a case has {len(attempts)} attempts, fewer than k={k}")
        total += sum(all(s) for s in subsets) / len(subsets)
    return total / len(outcomes)


def pass_at_k(outcomes: Sequence[Sequence[bool]], k: int) -> float:
    """Eq. 3: share of cases with at least one accepted attempt among the first k."""
    if not outcomes:
        raise ValueError("pass_at_k() needs at least one case")
    return sum(any(attempts[:k]) for attempts in outcomes) / len(outcomes)


def _check_paired(a: Sequence[bool], b: Sequence[bool]) -> None:
    if len(a) != len(b) or not a:
        raise ValueError("paired outcomes need the same, non-zero number of cases")
