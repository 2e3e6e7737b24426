"""The pieces of a verdict against the paper's claims, from ``table.aggregate`` rows (any ablation family; the
verdict tables themselves are ``Family`` methods in ``klear_lib.ablations.family``).

An experiment here is any object with ``id``, ``table`` (as in ``results/reported.csv``), ``claim``,
``comparisons`` (pairs of condition labels: claimed better, claimed worse), ``primary`` (benchmarks the
experiment-level verdict reads) and ``condition(label).paper_setting`` (the reported.csv setting).
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd

from klear_lib.ablations import stats as S
from klear_lib.results import ANALOGUE
from klear_lib.tables import Table

VERDICT_COLUMNS = ["experiment", "benchmark", "metric", "better", "worse", "source", "mean_better", "mean_worse",
                   "diff", "ci_low", "ci_high", "test", "df", "n_seeds", "sd_seed", "eval_se", "sd_diff", "mde",
                   "paper_diff_pts", "seeds_needed", "verdict", "note"]
# ``<family>_verdicts.csv``: one row per claimed pair and benchmark, in definition order
VERDICTS = Table("verdict", tuple(VERDICT_COLUMNS), ("experiment", "benchmark", "metric", "better", "worse"),
                 sort=False, provenance=True)


def analogue(bench: str) -> str:
    """The paper's benchmark our miniature ``bench`` stands for (``bench`` itself when it is the paper's)."""
    return ANALOGUE.get(bench, bench)


FLOOR = "both at 0"  # the note on a pair whose runs all score 0 (a floor effect, not a measurement)
PAPER = "paper"  # ``source`` of a claim the paper makes (else the external claim's table, e.g. "DGPO")


def reported_value(reported: pd.DataFrame | None, table: str, setting: str, bench: str) -> float:
    """The value (points) of ``setting`` on ``bench`` in table ``table`` of ``results/reported.csv``, or NaN."""
    if reported is None:
        return float("nan")
    sel = reported[(reported["table"] == table) & (reported["benchmark"] == bench)
                   & (reported["model_or_setting"] == setting)]
    return float(sel["value"].iloc[0]) if len(sel) else float("nan")


def paper_value(reported: pd.DataFrame | None, exp, label: str, bench: str) -> float:
    """The paper's value (points) of condition ``label`` on the benchmark our ``bench`` stands for, or NaN."""
    return reported_value(reported, exp.table, exp.condition(label).paper_setting, analogue(bench))


def claimed_diff(reported: pd.DataFrame | None, exp, better: str, worse: str, bench: str) -> tuple[str, float]:
    """(source, claimed difference in points) of the pair (better, worse) on the benchmark ``bench`` stands for:
    the paper's, or an external claim's on its own benchmark."""
    ext = exp.external_claim(better, worse)
    if ext is None:
        return PAPER, paper_value(reported, exp, better, bench) - paper_value(reported, exp, worse, bench)
    b, w = (reported_value(reported, ext.table, s, ext.benchmark) for s in ext.settings)
    return ext.table, b - w


def comparison_row(exp, better: dict, worse: dict, reported: pd.DataFrame | None = None) -> dict:
    """The verdict row of one claimed pair on one benchmark (two ``aggregate`` rows): the difference over seeds
    (paired by seed where both ran the same seeds, else Welch; ``stats.compare``), its power and the decision.

    ``sd_seed``: the spread of one condition's per-seed values (root mean of the two variances); ``eval_se``: one
    run's evaluation standard error (root mean square over both conditions' runs); ``sd_diff``: the spread the
    test uses; ``mde``: the difference it detects with 80% power at these seeds; ``seeds_needed``: seeds per arm
    to detect the claimed |Δ| at that spread (blank where it cannot be estimated).
    """
    bench, b, w = better["benchmark"], better["condition"], worse["condition"]
    c = S.compare(better["values"], better["seeds"], worse["values"], worse["seeds"])
    floor = max(better["values"]) == 0 and max(worse["values"]) == 0
    source, claimed = claimed_diff(reported, exp, b, w, bench)
    var = [np.var(x["values"], ddof=1) if len(x["values"]) > 1 else np.nan for x in (better, worse)]
    se = [x.get("eval_se", np.nan) for x in (better, worse)]
    need = S.seeds_needed(c["sd"], claimed / 100, paired_design=c["test"] == "paired")
    return {"experiment": exp.id, "benchmark": bench, "metric": better["metric"], "better": b, "worse": w,
            "source": source, "mean_better": c["mean_a"], "mean_worse": c["mean_b"], "diff": c["diff"],
            "ci_low": c["low"], "ci_high": c["high"], "test": c["test"], "df": c["df"], "n_seeds": c["n"],
            "sd_seed": float(np.sqrt(np.mean(var))), "eval_se": float(np.sqrt(np.mean(np.square(se)))),
            "sd_diff": c["sd"], "mde": c["mde"], "paper_diff_pts": claimed,
            "seeds_needed": np.nan if need is None else need,
            "verdict": decision(c, claimed, floor), "note": FLOOR if floor else ""}


def decision(compared: dict, claimed_pts: float, floor: bool) -> str:
    """``stats.decide`` on a comparison (``stats.compare``) against the claimed size in points; two conditions
    that both score 0 everywhere measured nothing, so they are "underpowered" whatever the interval says."""
    if floor:
        return S.UNDERPOWERED
    return S.decide(compared["diff"], compared["low"], compared["high"], claimed_pts / 100)


def by_cell(summary: pd.DataFrame) -> dict[tuple, dict]:
    """``aggregate`` rows keyed by (experiment, condition, benchmark); one cell under two config hashes raises."""
    cells: dict[tuple, dict] = {}
    for row in summary.to_dict("records"):
        key = (row["experiment"], row["condition"], row["benchmark"])
        if key in cells:
            raise ValueError(f"{key} appears under two config hashes ({cells[key]['config_hash']}, "
                             f"{row['config_hash']}): aggregate the rows of one configuration")
        cells[key] = row
    return cells


def experiment_decision(labels: Sequence[str]) -> str:
    """One decision from the pairs' decisions (``stats.decide``): all alike -> that one; any "opposite" and no
    "replicated" -> "opposite"; otherwise (a mix, or no pair) "underpowered" when any pair is, else "mixed"."""
    labels = list(labels)
    if labels and len(set(labels)) == 1:
        return labels[0]
    if S.OPPOSITE in labels and S.REPLICATED not in labels:
        return S.OPPOSITE
    return S.UNDERPOWERED if not labels or S.UNDERPOWERED in labels else "mixed"


def claim_verdict(labels: Sequence[str]) -> str:
    """One verdict from pairwise verdicts: all "replicated" -> "replicated"; some "not replicated" and none
    replicated -> "not replicated"; anything else (a mix, or no pair at all) -> "inconclusive"."""
    labels = list(labels)
    if labels and all(v == "replicated" for v in labels):
        return "replicated"
    if "not replicated" in labels and "replicated" not in labels:
        return "not replicated"
    return "inconclusive"


