"""The pieces of a verdict against the paper's claims, from ``table.aggregate`` rows (any ablation family; the
verdict tables themselves are ``Family`` methods in ``klear_lib.ablations.family``).

An experiment here is any object with ``id``, ``table`` (as in ``results/reported.csv``), ``claim``,
``comparisons`` (pairs of condition labels: claimed better, claimed worse), ``primary`` (benchmarks the
experiment-level verdict reads) and ``condition(label).paper_setting`` (the reported.csv setting).
"""
from __future__ import annotations

from typing import Sequence

import pandas as pd

from klear_lib.ablations.stats import verdict, welch_interval
from klear_lib.results import ANALOGUE
from klear_lib.tables import Table

VERDICT_COLUMNS = ["experiment", "benchmark", "metric", "better", "worse", "mean_better", "mean_worse", "diff",
                   "ci_low", "ci_high", "n_seeds", "paper_diff_pts", "verdict", "note"]
# ``<family>_verdicts.csv``: one row per claimed pair and benchmark, in definition order
VERDICTS = Table("verdict", tuple(VERDICT_COLUMNS), ("experiment", "benchmark", "metric", "better", "worse"),
                 sort=False)


def analogue(bench: str) -> str:
    """The paper's benchmark our miniature ``bench`` stands for (``bench`` itself when it is the paper's)."""
    return ANALOGUE.get(bench, bench)


def paper_value(reported: pd.DataFrame | None, exp, label: str, bench: str) -> float:
    """The paper's value (points) of condition ``label`` on the benchmark our ``bench`` stands for, or NaN."""
    if reported is None:
        return float("nan")
    sel = reported[(reported["table"] == exp.table) & (reported["benchmark"] == analogue(bench))
                   & (reported["model_or_setting"] == exp.condition(label).paper_setting)]
    return float(sel["value"].iloc[0]) if len(sel) else float("nan")


def comparison_row(exp, better: dict, worse: dict, reported: pd.DataFrame | None = None) -> dict:
    """The verdict row of one claimed pair on one benchmark (two ``aggregate`` rows): Welch difference over seeds."""
    diff, low, high = welch_interval(better["values"], worse["values"])
    floor = max(better["values"]) == 0 and max(worse["values"]) == 0
    bench, b, w = better["benchmark"], better["condition"], worse["condition"]
    return {"experiment": exp.id, "benchmark": bench, "metric": better["metric"], "better": b, "worse": w,
            "mean_better": better["mean"], "mean_worse": worse["mean"], "diff": diff, "ci_low": low,
            "ci_high": high, "n_seeds": min(better["n_seeds"], worse["n_seeds"]),
            "paper_diff_pts": paper_value(reported, exp, b, bench) - paper_value(reported, exp, w, bench),
            "verdict": verdict(diff, low, high, +1), "note": "both at 0" if floor else ""}


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


def claim_verdict(labels: Sequence[str]) -> str:
    """One verdict from pairwise verdicts: all "replicated" -> "replicated"; some "not replicated" and none
    replicated -> "not replicated"; anything else (a mix, or no pair at all) -> "inconclusive"."""
    labels = list(labels)
    if labels and all(v == "replicated" for v in labels):
        return "replicated"
    if "not replicated" in labels and "replicated" not in labels:
        return "not replicated"
    return "inconclusive"


