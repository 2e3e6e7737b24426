"""The ablation results table: one row per (experiment, condition, seed, benchmark, metric), its schema
(``ABLATION``, read and written by ``klear_lib.tables``), and the aggregation over seeds (mean ± 95% t-interval,
per-seed values kept) with the schemas of the summary and verdict files.

Long format, sorted by key, floats at fixed precision, no timestamps, so a rerun gives a byte-identical file.
Rerunning a (experiment, condition, seed) replaces all of its rows, whatever their config hash, so a table never
mixes results of two configurations of the same run.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd

from klear_lib.stats import t_interval
from klear_lib.tables import MEAN_IN_CI, PROVENANCE, Table, drawn_by

RUN_KEY = ["experiment", "condition", "seed"]
KEY = RUN_KEY + ["benchmark", "metric"]
COLUMNS = KEY + ["k", "mean", "stderr", "ci_low", "ci_high", "n_problems", "n_samples", "n_train", "config_hash"]
GROUP = ["experiment", "condition", "benchmark", "metric", "k", "config_hash"]
ABLATION = Table("ablation", tuple(COLUMNS), tuple(KEY), run_key=tuple(RUN_KEY), required=("config_hash",),
                 checks=(MEAN_IN_CI,), provenance=True,
                 types=tuple((c, int) for c in ("seed", "k", "n_problems", "n_samples", "n_train"))
                 + (("config_hash", str),))
SUMMARY_COLUMNS = GROUP + ["n_seeds", "mean", "ci_low", "ci_high", "eval_se", "seeds", "values"]
# ``flat(aggregate(...))``, rows in definition order (``<family>_summary.csv``)
SUMMARY = Table("ablation summary", tuple(SUMMARY_COLUMNS), tuple(GROUP), sort=False, provenance=True)


def aggregate(df: pd.DataFrame, order: Sequence[tuple[str, str]] = ()) -> pd.DataFrame:
    """Mean over seeds with a 95% t-interval, one row per (experiment, condition, benchmark, metric, k, hash).

    Columns: the group keys, ``n_seeds``, ``mean``, ``ci_low``, ``ci_high`` (±inf with one seed), ``eval_se`` (one
    run's evaluation standard error, root mean square over the runs), ``seeds`` and ``values`` (tuples, per seed,
    in seed order), then what drew the group's runs (``tables.drawn_by``). Rows follow ``order`` of (experiment,
    condition), then the rest.
    """
    out = []
    for key, grp in df.sort_values("seed").groupby(GROUP, sort=True):
        mean, low, high = t_interval(grp["mean"].astype(float).tolist())
        out.append({**dict(zip(GROUP, key)), "n_seeds": len(grp), "mean": mean, "ci_low": low, "ci_high": high,
                    "eval_se": float(np.sqrt(np.mean(np.square(grp["stderr"].astype(float))))),
                    "seeds": tuple(int(s) for s in grp["seed"]),
                    "values": tuple(float(v) for v in grp["mean"]), **drawn_by(grp)})
    res = pd.DataFrame(out, columns=SUMMARY_COLUMNS + list(PROVENANCE))
    rank = {pair: i for i, pair in enumerate(order)}
    res["_rank"] = [rank.get((e, c), len(rank)) for e, c in zip(res["experiment"], res["condition"])]
    return res.sort_values(["experiment", "_rank", "condition", "benchmark", "metric"], ignore_index=True).drop(
        columns="_rank")


def flat(summary: pd.DataFrame) -> pd.DataFrame:
    """The summary with ``seeds`` and ``values`` (where present) as ';'-joined text (for CSV files and printing)."""
    out = summary.copy()
    if "seeds" in out:
        out["seeds"] = [";".join(map(str, s)) for s in out["seeds"]]
    out["values"] = [";".join(f"{v:.4f}" for v in vals) for vals in out["values"]]
    return out
