"""Verdicts of ablations against the paper's claims, from ``table.aggregate`` rows (any ablation family).

An experiment here is any object with ``id``, ``table`` (as in ``results/reported.csv``), ``claim``,
``comparisons`` (pairs of condition labels: claimed better, claimed worse), ``primary`` (benchmarks the
experiment-level verdict reads) and ``condition(label).paper_setting`` (the reported.csv setting).
"""
from __future__ import annotations

from typing import Mapping, Sequence

import pandas as pd

from klear_lib.ablations.stats import verdict, welch_interval

VERDICT_COLUMNS = ["experiment", "benchmark", "metric", "better", "worse", "mean_better", "mean_worse", "diff",
                   "ci_low", "ci_high", "n_seeds", "paper_diff_pts", "verdict", "note"]


def _analogue(bench: str) -> str:
    from klear_lib.results import ANALOGUE

    return ANALOGUE.get(bench, bench)


def paper_value(reported: pd.DataFrame | None, exp, label: str, bench: str) -> float:
    """The paper's value (points) of condition ``label`` on the benchmark our ``bench`` stands for, or NaN."""
    if reported is None:
        return float("nan")
    sel = reported[(reported["table"] == exp.table) & (reported["benchmark"] == _analogue(bench))
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


def verdicts(summary: pd.DataFrame, experiments: Mapping[str, object], metric: str = "avg@k",
             reported: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per (experiment, claimed pair, benchmark) present in ``summary`` (from ``aggregate``).

    "replicated": the claimed-better condition is ahead and Welch's 95% interval over seeds excludes 0;
    "not replicated": behind with the interval excluding 0; "inconclusive" otherwise. ``paper_diff_pts`` is
    the paper's own difference on the analogous benchmark (``results/reported.csv``), in points.
    """
    cells, out = by_cell(summary[summary["metric"] == metric]), []
    for exp in experiments.values():
        benches = sorted({b for (e, _, b) in cells if e == exp.id})
        for better, worse in exp.comparisons:
            for bench in benches:
                b, w = cells.get((exp.id, better, bench)), cells.get((exp.id, worse, bench))
                if b and w:
                    out.append(comparison_row(exp, b, w, reported))
    return pd.DataFrame(out, columns=VERDICT_COLUMNS)


def contrast(summary: pd.DataFrame, exp, a: str, b: str, metric: str = "avg@k") -> pd.DataFrame:
    """Condition ``a`` minus ``b`` of ``exp`` per benchmark, with Welch's 95% interval over seeds: a comparison
    that is no paper claim, so it carries no verdict. Benchmarks where either condition is missing are skipped."""
    cells = by_cell(summary[summary["metric"] == metric])
    rows = [comparison_row(exp, cells[(e, c, bench)], cells[(e, b, bench)])
            for (e, c, bench) in cells if e == exp.id and c == a and (e, b, bench) in cells]
    return pd.DataFrame(rows, columns=VERDICT_COLUMNS).drop(columns=["paper_diff_pts", "verdict"])


def claim_verdict(labels: Sequence[str]) -> str:
    """One verdict from pairwise verdicts: all "replicated" -> "replicated"; some "not replicated" and none
    replicated -> "not replicated"; anything else (a mix, or no pair at all) -> "inconclusive"."""
    labels = list(labels)
    if labels and all(v == "replicated" for v in labels):
        return "replicated"
    if "not replicated" in labels and "replicated" not in labels:
        return "not replicated"
    return "inconclusive"


def experiment_verdicts(pairs: pd.DataFrame, experiments: Mapping[str, object]) -> pd.DataFrame:
    """Per experiment present in ``pairs``, on its primary benchmarks: counts of pairwise verdicts and one verdict."""
    out = []
    for exp in experiments.values():
        if exp.id not in set(pairs["experiment"]):
            continue
        sel = pairs[(pairs["experiment"] == exp.id) & pairs["benchmark"].isin(exp.primary)]["verdict"].tolist()
        out.append({"experiment": exp.id, "table": exp.table, "primary": "+".join(exp.primary), "pairs": len(sel),
                    "replicated": sel.count("replicated"), "not_replicated": sel.count("not replicated"),
                    "inconclusive": sel.count("inconclusive"), "verdict": claim_verdict(sel), "claim": exp.claim})
    return pd.DataFrame(out, columns=["experiment", "table", "primary", "pairs", "replicated", "not_replicated",
                                      "inconclusive", "verdict", "claim"])


def side_by_side(summary: pd.DataFrame, experiments: Mapping[str, object], reported: pd.DataFrame,
                 metric: str = "avg@k") -> pd.DataFrame:
    """Our mean ± 95% CI (in %) per condition and benchmark beside the paper's value of the same setting."""
    rows = []
    for r in summary[summary["metric"] == metric].to_dict("records"):
        exp = experiments[r["experiment"]]
        rows.append({"experiment": r["experiment"], "condition": r["condition"], "benchmark": r["benchmark"],
                     "n_seeds": r["n_seeds"], "ours_pct": 100 * r["mean"], "ci_low_pct": 100 * r["ci_low"],
                     "ci_high_pct": 100 * r["ci_high"], "paper_setting": exp.condition(r["condition"]).paper_setting,
                     "paper_benchmark": _analogue(r["benchmark"]),
                     "paper_pct": paper_value(reported, exp, r["condition"], r["benchmark"])})
    return pd.DataFrame(rows)
