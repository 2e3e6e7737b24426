"""The pieces of a verdict against the paper's claims, from ``table.aggregate`` rows (any ablation family): our
comparison of a claimed pair, and the paper's readings of the same pair (the verdicts themselves are made once, for
every claim, in ``klear_lib.ablations.claims``).

An experiment here is any object with ``id``, ``table`` (as in ``results/reported.csv``), ``claim``,
``comparisons`` (pairs of condition labels: claimed better, claimed worse), ``primary`` (benchmarks the
experiment-level verdict reads) and ``condition(label).paper_setting`` (the reported.csv setting).
"""
from __future__ import annotations

import re
from typing import Sequence

import numpy as np
import pandas as pd

from klear_lib import stats as S
from klear_lib.tables import PROVENANCE, Table, drawn_by

PAIR_COLUMNS = ["experiment", "benchmark", "metric", "better", "worse", "mean_better", "mean_worse", "diff",
                "ci_low", "ci_high", "test", "df", "p_value", "se", "n_seeds", "sd_seed", "eval_se", "sd_diff", "note"]
# ``<family>_pairs.csv``: one row per claimed pair and benchmark, in definition order; no verdict (those are made
# once, for every claim together, in ``klear_lib.ablations.claims``)
PAIRS = Table("pair", tuple(PAIR_COLUMNS), ("experiment", "benchmark", "metric", "better", "worse"), sort=False,
              provenance=True)


FLOOR = "both at 0"  # the note on a pair whose runs all score 0 (a floor effect, not a measurement)
PAPER = "paper"  # ``source`` of a claim the paper makes (else the external claim's table, e.g. "DGPO")
# the releases of one benchmark the paper reports side by side: a claim reads every one of them
VERSIONS = {"aime24": ("aime24", "aime25"), "lcb_v5": ("lcb_v5", "lcb_v6")}
# a setting read off a figure names its statistic: "GPPO (end)", "CISPO (range low)", "soft reward (best)"
_READ_OFF = re.compile(r"^(.*) \((end|peak|best|range low|range high)\)$")
FINAL, BEST = ("end", "range low", "range high"), ("peak", "best")


def reported_value(reported: pd.DataFrame | None, table: str, setting: str, bench: str) -> float:
    """The value (points) of ``setting`` on ``bench`` in table ``table`` of ``results/reported.csv``, or NaN."""
    if reported is None:
        return float("nan")
    sel = reported[(reported["table"] == table) & (reported["benchmark"] == bench)
                   & (reported["model_or_setting"] == setting)]
    return float(sel["value"].iloc[0]) if len(sel) else float("nan")


def statistics_of(reported: pd.DataFrame | None, table: str, setting: str, bench: str) -> dict[str, float]:
    """Every reading of ``setting``'s curve on ``bench``: {statistic: value} ("end", "peak", "range low", ...) for
    a setting read off a figure, {"table": value} for a table entry; {} where the paper gives none."""
    m = _READ_OFF.match(setting)
    if reported is None or m is None:
        value = reported_value(reported, table, setting, bench)
        return {} if np.isnan(value) else {"table": value}
    sel = reported[(reported["table"] == table) & (reported["benchmark"] == bench)]
    found = {name: float(v) for name, v in zip(sel["model_or_setting"], sel["value"])}
    return {stat: found[f"{m.group(1)} ({stat})"] for stat in FINAL + BEST if f"{m.group(1)} ({stat})" in found}


def pair_readings(better: dict[str, float], worse: dict[str, float]) -> tuple[str, list[float], list[float]]:
    """(statistic, the better side's values, the worse side's): the same statistic on both sides — a table's
    entries; final against final (an end point, or a range kept as its two ends); else best against best; a
    side with neither is "mixed" (each side's final, else best)."""
    if "table" in better and "table" in worse:
        return "table", [better["table"]], [worse["table"]]

    def _pick(stats: dict[str, float], kinds: tuple[str, ...]) -> list[float]:  # the end point before a range's ends
        return [stats["end"]] if "end" in kinds and "end" in stats else [stats[k] for k in kinds if k in stats]
    for name, kinds in (("final", FINAL), ("best", BEST)):
        b, w = _pick(better, kinds), _pick(worse, kinds)
        if b and w:
            ranged = len(b) > 1 or len(w) > 1
            return name + (" (range)" if ranged else ""), b, w
    b, w = (_pick(s, FINAL) or _pick(s, BEST) for s in (better, worse))
    return "mixed", b, w


def comparison_row(exp, better: dict, worse: dict) -> dict:
    """The comparison of one claimed pair on one benchmark (two ``aggregate`` rows): the difference over seeds
    (paired by seed where both ran the same seeds, else Welch; ``stats.compare``) with its two-sided p.

    ``sd_seed``: the spread of one condition's per-seed values (root mean of the two variances); ``eval_se``: one
    run's evaluation standard error (root mean square over both conditions' runs); ``sd_diff``: the spread the
    test uses. Then what drew both conditions' runs (``tables.drawn_by``).
    """
    bench, b, w = better["benchmark"], better["condition"], worse["condition"]
    c = S.compare(better["values"], better["seeds"], worse["values"], worse["seeds"])
    floor = max(better["values"]) == 0 and max(worse["values"]) == 0
    var = [np.var(x["values"], ddof=1) if len(x["values"]) > 1 else np.nan for x in (better, worse)]
    se = [x.get("eval_se", np.nan) for x in (better, worse)]
    return {"experiment": exp.id, "benchmark": bench, "metric": better["metric"], "better": b, "worse": w,
            "mean_better": c["mean_a"], "mean_worse": c["mean_b"], "diff": c["diff"], "ci_low": c["low"],
            "ci_high": c["high"], "test": c["test"], "df": c["df"], "p_value": c["p"], "se": c["se"],
            "n_seeds": c["n"], "sd_seed": float(np.sqrt(np.mean(var))),
            "eval_se": float(np.sqrt(np.mean(np.square(se)))), "sd_diff": c["sd"], "note": FLOOR if floor else "",
            **drawn_by([{k: x[k] for k in PROVENANCE if k in x} for x in (better, worse)])}


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


