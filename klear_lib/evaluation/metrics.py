"""Benchmark metrics: avg@k (mean pass@1 over k samples), the unbiased pass@k, and uncertainty over problems.

avg@k = (1/P) Σ_p c_p / n_p, the paper's metric (docs/paper.md §4: avg@64 AIME/HMMT, avg@8 LiveCodeBench).
pass@k = 1 - C(n-c, k) / C(n, k) per problem (Chen et al. 2021), averaged over problems.
Uncertainty treats problems as the sampling unit: standard error of the per-problem means, and a percentile
bootstrap over problems with an explicit seed. ``harness.summarize`` turns these into the rows of eval.csv (its
bootstrap seeded by seed, stage, benchmark and metric).
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from klear_lib.seeding import np_rng


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k of one problem with ``c`` correct among ``n`` samples: 1 - C(n-c,k)/C(n,k)."""
    if not 0 <= c <= n or k < 1 or k > n:
        raise ValueError(f"need 0 <= c <= n and 1 <= k <= n, got n={n} c={c} k={k}")
    if n - c < k:
        return 1.0
    return float(1.0 - np.prod(1.0 - k / np.arange(n - c + 1, n + 1)))


def per_problem_rates(correct: Sequence[Sequence[bool]]) -> np.ndarray:
    """``(P,)`` pass@1 estimates c_p / n_p from per-problem lists of sample verdicts."""
    if not len(correct) or any(len(c) == 0 for c in correct):
        raise ValueError("every problem needs at least one sample")
    return np.array([float(np.mean(c)) for c in correct])


def standard_error(values: Sequence[float]) -> float:
    """Standard error of the mean, sample std (ddof=1) / sqrt(P); 0 for a single value."""
    arr = np.asarray(values, dtype=float)
    return float(arr.std(ddof=1) / np.sqrt(len(arr))) if len(arr) > 1 else 0.0


def bootstrap_ci(values: Sequence[float], seed: int, n_boot: int = 2000, level: float = 0.95) -> tuple[float, float]:
    """Percentile bootstrap CI of the mean over problems, resampled with ``np_rng(seed, "bootstrap")``."""
    arr = np.asarray(values, dtype=float)
    if len(arr) < 2:
        return float(arr.mean()), float(arr.mean())
    idx = np_rng(seed, "bootstrap").integers(0, len(arr), size=(n_boot, len(arr)))
    means = arr[idx].mean(axis=1)
    tail = (1.0 - level) / 2.0
    return float(np.quantile(means, tail)), float(np.quantile(means, 1.0 - tail))


def paired_gain(before: Sequence[Sequence[bool]], after: Sequence[Sequence[bool]], seed: int) -> dict[str, float]:
    """avg@k gain of ``after`` over ``before`` on the same problems (same order): the mean per-problem difference
    of pass@1 estimates, with a percentile bootstrap CI over problems. Pairing removes the between-problem
    variance that both stages share, so this CI is far narrower than either stage's own."""
    if len(before) != len(after):
        raise ValueError(f"paired gain needs the same problems: {len(before)} before, {len(after)} after")
    diff = per_problem_rates(after) - per_problem_rates(before)
    low, high = bootstrap_ci(diff, seed)
    return {"gain": float(diff.mean()), "ci_low": low, "ci_high": high, "n_problems": len(diff)}
