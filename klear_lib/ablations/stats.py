"""Statistics over seeds for the ablations: t-intervals, paired and Welch differences, power, and the verdicts.

Pure functions of per-seed values (one value per independent training run). Seeds are the sampling unit. The
interval of a condition is mean ± t_{0.975, n-1} · s / √n. Two conditions run on the same seeds are compared by
their per-seed differences (paired: one seed gives both the same start, data order and sampling stream, so what
the seed does to both cancels); otherwise by Welch's interval with the exact Welch-Satterthwaite degrees of
freedom. Every t quantile is exact (Student's t, any real df).

Power (``mde``, ``seeds_needed``): the smallest true difference a two-sided test at α = 0.05 detects with 80%
power is (t_{1-α/2, df} + t_{0.8, df}) · sd / √n, with sd the spread of the per-seed differences (paired) or
√(s_a² + s_b²) (two independent arms of n seeds each).
"""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np
from scipy import stats as _st

ALPHA, POWER = 0.05, 0.80
# ``decide``'s outcomes; ``verdict`` keeps the sign-only rule of the stability map
REPLICATED, OPPOSITE, NO_EFFECT, UNDERPOWERED = ("replicated", "opposite", "no effect of the paper's size",
                                                 "underpowered")
DECISIONS = (REPLICATED, OPPOSITE, NO_EFFECT, UNDERPOWERED)
VERDICTS = ("replicated", "not replicated", "inconclusive")


def t_quantile(q: float, df: float) -> float:
    """Student's t quantile at probability ``q`` with ``df`` (real, > 0) degrees of freedom; inf for df <= 0."""
    if not df > 0:
        return math.inf
    return float(_st.t.ppf(q, df))


def t_crit95(df: float) -> float:
    """t_{0.975, df} (two-sided 95%), exact for any real df > 0; inf otherwise."""
    return t_quantile(1 - ALPHA / 2, df)


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


def welch_df(a: Sequence[float], b: Sequence[float]) -> float:
    """The Welch-Satterthwaite degrees of freedom of mean(a) - mean(b) (NaN without spread or with one value)."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.size < 2 or b.size < 2:
        return math.nan
    va, vb = a.var(ddof=1) / a.size, b.var(ddof=1) / b.size
    if va + vb == 0:
        return math.nan
    return float((va + vb) ** 2 / (va ** 2 / (a.size - 1) + vb ** 2 / (b.size - 1)))


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
    se = math.sqrt(a.var(ddof=1) / a.size + b.var(ddof=1) / b.size)
    if se == 0.0:
        return diff, diff, diff
    half = t_crit95(welch_df(a, b)) * se
    return diff, diff - half, diff + half


def paired(a: Sequence[float], seeds_a: Sequence[int], b: Sequence[float],
           seeds_b: Sequence[int]) -> tuple[list[float], list[float]]:
    """The values of ``a`` and ``b`` on the seeds both have, in seed order."""
    va, vb = dict(zip(map(int, seeds_a), a)), dict(zip(map(int, seeds_b), b))
    common = sorted(set(va) & set(vb))
    return [float(va[s]) for s in common], [float(vb[s]) for s in common]


def compare(a: Sequence[float], seeds_a: Sequence[int], b: Sequence[float], seeds_b: Sequence[int]) -> dict:
    """mean(a) - mean(b) with its 95% interval, the test used and its df, the spread and the power figures.

    Paired over the seeds both sides ran when there are at least two (a side's runs on other seeds are left out:
    a sweep cut short leaves them unpaired); Welch over all runs otherwise. Keys: ``test`` ("paired" | "welch" |
    "one seed": a side has one run, no interval), ``diff``, ``low``, ``high``, ``df``,
    ``n`` (pairs, or the smaller side), ``sd`` (of the per-seed differences; for Welch √(s_a² + s_b²)), ``mde``
    (at ``n``) and ``mean_a``/``mean_b`` (over the runs the test used).
    """
    pa, pb = paired(a, seeds_a, b, seeds_b)
    if len(pa) >= 2:
        d = np.asarray(pa) - np.asarray(pb)
        diff, low, high = t_interval(d)
        sd, n, df = float(d.std(ddof=1)), d.size, float(d.size - 1)
        if sd == 0.0:
            low = high = diff
        return {"test": "paired", "diff": diff, "low": low, "high": high, "df": df, "n": n, "sd": sd,
                "mde": mde(sd, n, paired_design=True), "mean_a": float(np.mean(pa)), "mean_b": float(np.mean(pb))}
    a_, b_ = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    diff, low, high = welch_interval(a_, b_)
    n = int(min(a_.size, b_.size))
    sd = math.sqrt(a_.var(ddof=1) + b_.var(ddof=1)) if n >= 2 else math.nan
    return {"test": "welch" if n >= 2 else "one seed", "diff": diff, "low": low, "high": high,
            "df": welch_df(a_, b_), "n": n, "sd": sd,
            "mde": mde(sd, n, paired_design=False), "mean_a": float(a_.mean()), "mean_b": float(b_.mean())}


def mde(sd: float, n: int, paired_design: bool = True, alpha: float = ALPHA, power: float = POWER) -> float:
    """The minimum detectable difference at ``n`` seeds (per arm): (t_{1-α/2} + t_{power}) · sd / √n, with df
    n - 1 (paired) or 2(n - 1) (two arms, equal variances); inf below 2 seeds, NaN without an ``sd``."""
    if n < 2:
        return math.inf
    if math.isnan(sd):
        return math.nan
    df = n - 1 if paired_design else 2 * (n - 1)
    return (t_quantile(1 - alpha / 2, df) + t_quantile(power, df)) * sd / math.sqrt(n)


def seeds_needed(sd: float, effect: float, paired_design: bool = True, cap: int = 10_000) -> int | None:
    """The fewest seeds per arm (>= 2) whose ``mde`` is at most |``effect``|; None when ``sd`` or ``effect`` is
    unknown or zero-effect, or when even ``cap`` seeds do not reach it."""
    effect = abs(effect)
    if math.isnan(sd) or math.isnan(effect) or effect == 0:
        return None
    if sd == 0:
        return 2
    n = 2
    while mde(sd, n, paired_design) > effect:
        n = n + 1 if n < 64 else int(n * 1.05) + 1
        if n > cap:
            return None
    return n


def decide(diff: float, low: float, high: float, paper_effect: float, claimed_sign: int = 1) -> str:
    """The decision on a claim that the difference has sign ``claimed_sign``, of the size ``paper_effect``.

    "replicated": the 95% interval excludes 0 on the claimed side; "opposite": it excludes 0 on the other side;
    "no effect of the paper's size": it holds 0 and lies inside ±|paper_effect|; "underpowered": it holds 0 and
    reaches past ±|paper_effect| (or the paper gives no size).
    """
    if claimed_sign not in (1, -1):
        raise ValueError(f"claimed_sign must be +1 or -1, got {claimed_sign}")
    lo, hi = sorted((claimed_sign * low, claimed_sign * high))
    if lo > 0:
        return REPLICATED
    if hi < 0:
        return OPPOSITE
    size = abs(paper_effect)
    if not math.isnan(size) and size > 0 and -size < lo and hi < size:
        return NO_EFFECT
    return UNDERPOWERED


def verdict(diff: float, low: float, high: float, claimed_sign: int = 1) -> str:
    """The sign-only verdict (the stability map's ranking cells): "replicated" when the 95% interval excludes 0
    on the claimed side, "not replicated" on the other side, "inconclusive" when it holds 0."""
    if claimed_sign not in (1, -1):
        raise ValueError(f"claimed_sign must be +1 or -1, got {claimed_sign}")
    lo, hi = sorted((claimed_sign * low, claimed_sign * high))
    if lo > 0:
        return "replicated"
    if hi < 0:
        return "not replicated"
    return "inconclusive"
