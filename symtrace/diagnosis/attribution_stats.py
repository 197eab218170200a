"""The statistics of counterfactual attribution: pure functions over binary rollout outcomes.

* `wilson`: the Wilson score interval of a success rate (95 % by default);
* `paired_sign_test`: the exact one-sided McNemar test of paired rollouts (rollout i of the
  repair arm is paired with rollout i of the resample arm: same index, same seed). Under
  H0 "repair and resample succeed equally often" each discordant pair is a fair coin, so
  p = P(Bin(b + c, 1/2) >= b) with b = pairs only the repair passed, c = only the resample;
* `holm`: Holm's step-down adjustment over the candidates tested in one attribution;
* `edge_effect`: EDGE's validated-edge rule (App. Table 7): Δ(A→B) is the mean over the
  verified repairs of A (A's symptom gone from the rollout) of X_B(original) − X_B(rollout),
  X_B(original) = 1; the edge is kept when Δ > τ = 0.15 with at least `min_support` verified
  repairs.

Pure Python, no dependencies; tests check them against scipy when it is installed and
against hand-computed values.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

Z95 = 1.959963984540054
EDGE_TAU = 0.15  # EDGE App. Table 7: tau_val
EDGE_MIN_SUPPORT = 3  # EDGE App. A.2: min_joint = 3


@dataclass(frozen=True, slots=True)
class Rate:
    """A success rate with its Wilson interval."""

    successes: int
    n: int
    low: float
    high: float

    @property
    def estimate(self) -> float:
        return self.successes / self.n if self.n else 0.0

    def to_json(self) -> dict[str, float | int]:
        return {"successes": self.successes, "n": self.n, "rate": round(self.estimate, 6),
                "low": round(self.low, 6), "high": round(self.high, 6)}


def wilson(successes: int, n: int, z: float = Z95) -> Rate:
    """Wilson score interval of successes/n; n = 0 gives the uninformative [0, 1]."""
    if not 0 <= successes <= n:
        raise ValueError(f"successes must be within 0..{n}, got {successes}")
    if n == 0:
        return Rate(0, 0, 0.0, 1.0)
    p = successes / n
    denominator = 1 + z * z / n
    center = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    return Rate(successes, n, max(0.0, center - half), min(1.0, center + half))


@dataclass(frozen=True, slots=True)
class PairedTest:
    """The exact one-sided McNemar (sign) test of repair > resample on paired rollouts."""

    pairs: int
    repair_only: int  # b: the repair passed, its paired resample failed
    resample_only: int  # c
    p_value: float

    def to_json(self) -> dict[str, float | int]:
        return {"pairs": self.pairs, "repair_only": self.repair_only,
                "resample_only": self.resample_only, "p_value": self.p_value}


def paired_sign_test(repair: Sequence[bool], resample: Sequence[bool]) -> PairedTest:
    """One-sided exact McNemar p-value of "repair succeeds more often than resample"."""
    if len(repair) != len(resample):
        raise ValueError("paired outcomes need the same number of rollouts per arm")
    b = sum(1 for x, y in zip(repair, resample, strict=True) if x and not y)
    c = sum(1 for x, y in zip(repair, resample, strict=True) if y and not x)
    n = b + c
    tail = sum(math.comb(n, i) for i in range(b, n + 1))
    return PairedTest(len(repair), b, c, min(1.0, tail / 2**n))


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm step-down adjusted p-values, in the input order."""
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    adjusted = [0.0] * m
    running = 0.0
    for rank, index in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p_values[index]))
        adjusted[index] = running
    return adjusted


@dataclass(frozen=True, slots=True)
class EdgeEffect:
    """Δ(A→B) over the verified repairs of A, and whether the edge is validated."""

    verified: int  # repairs of A whose rollout no longer shows A's symptom (the support)
    b_present: int  # of those, rollouts still showing B's symptom
    delta: float
    validated: bool

    def to_json(self) -> dict[str, float | int | bool]:
        return {"verified": self.verified, "b_present": self.b_present,
                "delta": round(self.delta, 6), "validated": self.validated}


def edge_effect(a_resolved: Sequence[bool], b_present: Sequence[bool], *,
                tau: float = EDGE_TAU, min_support: int = EDGE_MIN_SUPPORT) -> EdgeEffect:
    """EDGE's Boolean risk difference of B's presence when A is repaired (B was present in
    the original run). Rollouts where A's symptom persisted are not verified repairs."""
    if len(a_resolved) != len(b_present):
        raise ValueError("one A and one B indicator per repair rollout")
    kept = [b for a, b in zip(a_resolved, b_present, strict=True) if a]
    if not kept:
        return EdgeEffect(0, 0, 0.0, False)
    present = sum(kept)
    delta = sum(1 - int(b) for b in kept) / len(kept)
    return EdgeEffect(len(kept), present, delta, len(kept) >= min_support and delta > tau)
