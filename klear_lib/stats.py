"""Statistics over seeds, shared by the ablations, the evaluation and the figures: t-intervals, paired and Welch
differences, p-values, multiplicity, power, and the decision rule of the verdict protocol (docs/design.md, "Verdicts").

Pure functions of per-seed values (one value per independent training run). Seeds are the sampling unit. The
interval of a condition is mean ± t_{0.975, n-1} · s / √n. Two conditions run on the same seeds are compared by
their per-seed differences (paired: one seed gives both the same start, data order and sampling stream, so what
the seed does to both cancels); otherwise by Welch's interval with the exact Welch-Satterthwaite degrees of
freedom. Every t quantile is exact (Student's t, any real df).

A paper's difference is carried to our base rate on the log-odds scale (``carry``); a claim is decided from its
interval at the family-wise level (``adjusted_interval``: Bonferroni within the claim's paper table or figure)
against 0, the carried claim and an equivalence margin (``decide``). Power is exact (noncentral t) at the carried
claim; the seeds 80% power would take use an upper confidence bound on the spread, not the spread observed.
"""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np
from scipy import integrate
from scipy import stats as _st

ALPHA, POWER = 0.05, 0.80
# ``decide``'s outcomes, mutually exclusive, tested in this order; ``verdict`` keeps the stability map's sign-only rule
DECISIONS = REPLICATED, OPPOSITE, EQUIVALENT, SMALLER, UNDECIDED = ("replicated", "opposite", "equivalent",
                                                                    "smaller than claimed", "undecided")
EQUIVALENCE = 0.5   # the equivalence margin as a fraction of the carried claim: "less than half the claimed effect"
SD_UPPER = 0.80     # one-sided confidence of the spread's upper bound that sizes a future design (Browne 1995)
BASE_CLIP = 0.001   # base rates are clipped into [BASE_CLIP, 1 - BASE_CLIP] before the logit (a 0% run is finite)


def t_quantile(q: float, df: float) -> float:
    """Student's t quantile at probability ``q`` with ``df`` (real, > 0) degrees of freedom; inf for df <= 0."""
    return float(_st.t.ppf(q, df)) if df > 0 else math.inf


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
    """mean(a) - mean(b) with its 95% interval, the test used and its df, its standard error and two-sided p.

    Paired over the seeds both sides ran when there are at least two (a side's runs on other seeds are left out:
    a sweep cut short leaves them unpaired); Welch over all runs otherwise. Keys: ``test`` ("paired" | "welch" |
    "one seed": a side has one run, no interval), ``diff``, ``low``, ``high``, ``df``, ``se``, ``p``, ``n`` (pairs,
    or the smaller side), ``sd`` (of the per-seed differences; for Welch √(s_a² + s_b²), so se = sd/√n at equal
    arms) and ``mean_a``/``mean_b`` (over the runs the test used).
    """
    pa, pb = paired(a, seeds_a, b, seeds_b)
    if len(pa) >= 2:
        a_, b_ = np.asarray(pa), np.asarray(pb)
        diff, low, high = t_interval(a_ - b_)
        test, n, sd = "paired", len(pa), float((a_ - b_).std(ddof=1))
        se, df = sd / math.sqrt(n), float(n - 1)
    else:
        a_, b_ = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
        diff, low, high = welch_interval(a_, b_)
        n, df = int(min(a_.size, b_.size)), welch_df(a_, b_)
        test = "welch" if n >= 2 else "one seed"
        sd = math.sqrt(a_.var(ddof=1) + b_.var(ddof=1)) if n >= 2 else math.nan
        se = math.sqrt(a_.var(ddof=1) / a_.size + b_.var(ddof=1) / b_.size) if n >= 2 else math.nan
    return {"test": test, "diff": diff, "low": low, "high": high, "df": df, "se": se, "p": p_value(diff, se, df),
            "n": n, "sd": sd, "mean_a": float(a_.mean()), "mean_b": float(b_.mean())}


def p_value(diff: float, se: float, df: float) -> float:
    """Two-sided p of the t-test of no difference; 0 for a nonzero difference without spread, NaN without df."""
    if not df > 0 or math.isnan(se):
        return math.nan
    if se == 0:
        return 1.0 if diff == 0 else 0.0
    return float(2 * _st.t.sf(abs(diff) / se, df))


def holm(p: Sequence[float]) -> np.ndarray:
    """Holm's step-down adjusted p-values (family-wise error); NaN entries stay NaN and do not count."""
    return _step_adjusted(p, lambda x, m: np.maximum.accumulate((m - np.arange(m)) * x))


def bh(p: Sequence[float]) -> np.ndarray:
    """Benjamini-Hochberg adjusted p-values (q, false discovery rate); NaN entries stay NaN and do not count."""
    # largest first: q_(i) = min over j >= i of m p_(j) / j
    return _step_adjusted(p, lambda x, m: np.minimum.accumulate(x * m / (m - np.arange(m))), largest_first=True)


def _step_adjusted(p: Sequence[float], step, largest_first: bool = False) -> np.ndarray:
    """``step(x, m)`` of the m non-NaN entries of ``p`` sorted (smallest first unless ``largest_first``), capped at
    1 and put back in place; NaN entries stay NaN."""
    p = np.asarray(p, dtype=float)
    out, ok = np.full(p.shape, np.nan), np.flatnonzero(~np.isnan(p))
    order = np.argsort(p[ok])[::-1] if largest_first else np.argsort(p[ok])
    out[ok[order]] = np.minimum(step(p[ok][order], ok.size), 1.0)
    return out


def adjusted_interval(diff: float, se: float, df: float, family_size: int) -> tuple[float, float]:
    """The interval of ``diff`` at level 1 - α/``family_size`` (Bonferroni: simultaneous 95% over the family, the
    interval whose exclusion of 0 implies Holm's rejection); infinite without df, a point without spread."""
    if not df > 0 or math.isnan(se):
        return -math.inf, math.inf
    half = t_quantile(1 - ALPHA / (2 * max(family_size, 1)), df) * se
    return diff - half, diff + half


def logit(p: float) -> float:
    """log(p / (1 - p)) of a rate clipped into [BASE_CLIP, 1 - BASE_CLIP]."""
    p = min(max(p, BASE_CLIP), 1 - BASE_CLIP)
    return math.log(p / (1 - p))


def carry(paper_better: float, paper_worse: float, base: float) -> float:
    """The paper's difference (rates in [0, 1]) carried to our base rate ``base`` on the log-odds scale: the
    paper's log-odds ratio L placed symmetrically around ``base``, expit(logit(base) + L/2) - expit(logit(base) - L/2).

    A treatment that shifts every problem's log-odds by the same amount moves a rate of 50% by the most points and
    one near 0 or 100% by few: this is the difference the paper's effect would make where our models sit."""
    ratio, mid = logit(paper_better) - logit(paper_worse), logit(base)
    return float(_st.logistic.cdf(mid + ratio / 2) - _st.logistic.cdf(mid - ratio / 2))


def power(effect: float, sd: float, n: int, alpha: float = ALPHA, paired_design: bool = True) -> float:
    """Exact power of the two-sided t-test at level ``alpha`` to detect a true difference ``effect`` with ``n``
    seeds per arm and spread ``sd`` (of the per-seed differences; two arms: √(s_a² + s_b²)); noncentral t with df
    n - 1 (paired) or 2(n - 1). NaN without spread or effect."""
    if n < 2 or math.isnan(sd) or math.isnan(effect):
        return math.nan
    if sd == 0:
        return 1.0 if effect != 0 else alpha
    df = n - 1 if paired_design else 2 * (n - 1)
    crit, ncp = t_quantile(1 - alpha / 2, df), effect * math.sqrt(n) / sd
    out = float(_st.nct.sf(crit, df, ncp) + _st.nct.cdf(-crit, df, ncp))
    return out if not math.isnan(out) else _power_by_quadrature(crit, df, ncp)


def _power_by_quadrature(crit: float, df: float, ncp: float) -> float:
    """P(|T| > crit) for T noncentral t(df, ncp), as an integral over the chi-square of its denominator:
    T = (Z + ncp) / √(V / df), so P(T > c) = E_V[Φ̄(c √(V/df) − ncp)] and P(T < −c) = E_V[Φ(−c √(V/df) − ncp)].
    SciPy's ``nct`` returns NaN where a tail underflows (at df 4 from a noncentrality of about 8 on), which is where a
    claim's power is read when its spread is small beside the claimed size."""
    def density(v: float) -> float:
        s = crit * math.sqrt(v / df)
        return (_st.norm.sf(s - ncp) + _st.norm.cdf(-s - ncp)) * _st.chi2.pdf(v, df)
    lo, hi = _st.chi2.ppf([1e-12, 1 - 1e-12], df)
    return float(min(max(integrate.quad(density, lo, hi, limit=200)[0], 0.0), 1.0))


def sd_upper(sd: float, df: float, conf: float = SD_UPPER) -> float:
    """The one-sided ``conf`` upper confidence bound of a spread estimated with ``df`` degrees of freedom:
    sd · √(df / χ²_{1-conf, df}). At 3 seeds the true spread can be several times the observed one."""
    if not df > 0 or math.isnan(sd):
        return math.nan
    return float(sd * math.sqrt(df / _st.chi2.ppf(1 - conf, df)))


def seeds_for_power(effect: float, sd: float, alpha: float = ALPHA, paired_design: bool = True,
                    target: float = POWER, cap: int = 10_000) -> int | None:
    """The fewest seeds per arm (>= 2) with ``power`` >= ``target`` at ``effect``; None when the effect or the
    spread is unknown, the effect is 0, or even ``cap`` seeds fall short."""
    if math.isnan(sd) or math.isnan(effect) or effect == 0:
        return None
    n = 2
    while power(abs(effect), sd, n, alpha, paired_design) < target:
        n = n + 1 if n < 64 else int(n * 1.05) + 1
        if n > cap:
            return None
    return n


def decide(low: float, high: float, claimed: float, direction: int = 1) -> str:
    """The decision on a claim from its family-wise interval [``low``, ``high``] (better - worse), the carried
    claimed size ``claimed`` (> 0 on the claimed side; NaN or <= 0 where the paper's own readings give no positive
    size) and the claimed ``direction`` (+1: better > worse; -1: the paper's own number has the other sign).

    In the claimed direction, first match wins: *replicated* (interval above 0), *opposite* (below 0),
    *equivalent* (inside ±EQUIVALENCE·claimed), *smaller than claimed* (holds 0, excludes the claimed size),
    *undecided* (holds both 0 and the claimed size, or the paper gives no size).
    """
    if direction not in (1, -1):
        raise ValueError(f"direction must be +1 or -1, got {direction}")
    lo, hi = sorted((direction * low, direction * high))
    if lo > 0:
        return REPLICATED
    if hi < 0:
        return OPPOSITE
    if not claimed > 0:
        return UNDECIDED
    if -EQUIVALENCE * claimed < lo and hi < EQUIVALENCE * claimed:
        return EQUIVALENT
    return SMALLER if hi < claimed else UNDECIDED


def verdict(diff: float, low: float, high: float, claimed_sign: int = 1) -> str:
    """The sign-only verdict (the stability map's ranking cells): "replicated" when the 95% interval excludes 0
    on the claimed side, "not replicated" on the other side, "inconclusive" when it holds 0."""
    if claimed_sign not in (1, -1):
        raise ValueError(f"claimed_sign must be +1 or -1, got {claimed_sign}")
    sign_only = decide(low, high, math.nan, claimed_sign)  # no claimed size: only the sign can decide
    return {REPLICATED: "replicated", OPPOSITE: "not replicated"}.get(sign_only, "inconclusive")
