"""Statistics over seeds for the ablations: Student-t intervals, Welch differences and a verdict per claim.

Pure functions of per-seed values (one value per independent training run). Seeds are the sampling unit: the
interval of a condition is mean ± t_{0.975, n-1} · s / √n; the interval of a difference between two conditions
is Welch's (unequal variances, Welch-Satterthwaite degrees of freedom, rounded down: conservative).
"""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np

# Two-sided 95% Student-t critical values t_{0.975, df} for df = 1..30 (standard tables).
T975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131,
        2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042)
Z975 = 1.959964
VERDICTS = ("replicated", "not replicated", "inconclusive")


def t_crit95(df: float) -> float:
    """t_{0.975, df}: the table for df <= 30 (df rounded down), a Cornish-Fisher expansion above; inf for df < 1."""
    if not df >= 1:
        return math.inf
    if df <= 30:
        return T975[int(df) - 1]
    z = Z975
    return z + (z ** 3 + z) / (4 * df) + (5 * z ** 5 + 16 * z ** 3 + 3 * z) / (96 * df ** 2)


def t_interval(values: Sequence[float]) -> tuple[float, float, float]:
    """(mean, low, high) of the 95% t-interval over ``values``; one value gives an infinite interval."""
    x = np.asarray(values, dtype=float)
    if x.size == 0:
        raise ValueError("t_interval needs at least one value")
    mean = float(x.mean())
    if x.size == 1:
        return mean, -math.inf, math.inf
    half = t_crit95(x.size - 1) * float(x.std(ddof=1)) / math.sqrt(x.size)
    return mean, mean - half, mean + half


def welch_interval(a: Sequence[float], b: Sequence[float]) -> tuple[float, float, float]:
    """(diff, low, high): mean(a) - mean(b) with Welch's 95% interval; infinite when either side has one value.

    Both sides without spread give the point interval [diff, diff].
    """
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.size == 0 or b.size == 0:
        raise ValueError("welch_interval needs values on both sides")
    diff = float(a.mean() - b.mean())
    if a.size < 2 or b.size < 2:
        return diff, -math.inf, math.inf
    va, vb = a.var(ddof=1) / a.size, b.var(ddof=1) / b.size
    se = math.sqrt(va + vb)
    if se == 0.0:
        return diff, diff, diff
    df = (va + vb) ** 2 / (va ** 2 / (a.size - 1) + vb ** 2 / (b.size - 1))
    half = t_crit95(df) * se
    return diff, diff - half, diff + half


def verdict(diff: float, low: float, high: float, claimed_sign: int = 1) -> str:
    """The verdict on a claim that ``diff`` has sign ``claimed_sign`` (+1 or -1).

    "replicated": the 95% interval excludes 0 on the claimed side; "not replicated": it excludes 0 on the other
    side; "inconclusive": it contains 0 (including a zero difference with no spread, e.g. both at the floor).
    """
    if claimed_sign not in (1, -1):
        raise ValueError(f"claimed_sign must be +1 or -1, got {claimed_sign}")
    lo, hi = sorted((claimed_sign * low, claimed_sign * high))
    if lo > 0:
        return "replicated"
    if hi < 0:
        return "not replicated"
    return "inconclusive"
