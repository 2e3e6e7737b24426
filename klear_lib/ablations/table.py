"""The ablation results table: one row per (experiment, condition, seed, benchmark, metric), its schema and upsert,
and the aggregation over seeds (mean ± 95% t-interval, per-seed values kept).

Long format, sorted by key, floats at fixed precision, no timestamps, so a rerun gives a byte-identical file.
Rerunning a (experiment, condition, seed) replaces all of its rows, whatever their config hash, so a table never
mixes results of two configurations of the same run.
"""
from __future__ import annotations

from pathlib import Path
from typing import Iterable, Sequence

import pandas as pd

from klear_lib.ablations.stats import t_interval
from klear_lib.results import validate_rows

RUN_KEY = ["experiment", "condition", "seed"]
KEY = RUN_KEY + ["benchmark", "metric"]
COLUMNS = KEY + ["k", "mean", "stderr", "ci_low", "ci_high", "n_problems", "n_samples", "n_train", "config_hash"]
INT_COLUMNS = ("seed", "k", "n_problems", "n_samples", "n_train")
GROUP = ["experiment", "condition", "benchmark", "metric", "k", "config_hash"]
FLOAT_FORMAT = "%.6f"


def validate(df: pd.DataFrame) -> pd.DataFrame:
    """Raise ``ValueError`` naming the rows with missing columns, empty keys, duplicate keys or bad values."""
    return validate_rows(df, COLUMNS, KEY, "ablation", required=("config_hash",))


def tidy(df: pd.DataFrame) -> pd.DataFrame:
    """Schema column order, integer columns as int, rows sorted by the key."""
    df = df[COLUMNS].copy()
    for col in INT_COLUMNS:
        df[col] = df[col].astype(int)
    df["config_hash"] = df["config_hash"].astype(str)
    return df.sort_values(KEY, ignore_index=True)


def empty() -> pd.DataFrame:
    """A table with the schema's columns and no rows."""
    return pd.DataFrame({c: pd.Series(dtype=int if c in INT_COLUMNS else object) for c in COLUMNS})


def read(path: Path | str) -> pd.DataFrame:
    """The table at ``path`` (validated), or an empty one when the file does not exist."""
    if not Path(path).exists():
        return empty()
    return validate(pd.read_csv(path, dtype={"config_hash": str}, keep_default_na=False))


def upsert(table: pd.DataFrame, rows: Iterable[dict] | pd.DataFrame) -> pd.DataFrame:
    """``table`` with ``rows`` added; every old row of a (experiment, condition, seed) in ``rows`` is replaced."""
    new = tidy(validate(pd.DataFrame(list(rows) if not isinstance(rows, pd.DataFrame) else rows)))
    runs = set(map(tuple, new[RUN_KEY].astype(str).values))
    keep = [tuple(r) not in runs for r in table[RUN_KEY].astype(str).values]
    return tidy(validate(pd.concat([table[keep], new], ignore_index=True) if len(table) else new))


def write(table: pd.DataFrame, path: Path | str) -> Path:
    """Write ``table`` sorted, floats at fixed precision; return the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tidy(validate(table)).to_csv(path, index=False, float_format=FLOAT_FORMAT, lineterminator="\n")
    return path


def has_run(table: pd.DataFrame, experiment: str, condition: str, seed: int, config_hash: str,
            benchmarks: Sequence[str]) -> bool:
    """Whether ``table`` holds rows of this run under ``config_hash`` for every benchmark."""
    sel = table[(table["experiment"] == experiment) & (table["condition"] == condition)
                & (table["seed"].astype(int) == int(seed)) & (table["config_hash"].astype(str) == config_hash)]
    return set(benchmarks) <= set(sel["benchmark"])


def aggregate(df: pd.DataFrame, order: Sequence[tuple[str, str]] = ()) -> pd.DataFrame:
    """Mean over seeds with a 95% t-interval, one row per (experiment, condition, benchmark, metric, k, hash).

    Columns: the group keys, ``n_seeds``, ``mean``, ``ci_low``, ``ci_high`` (±inf with one seed), ``seeds`` and
    ``values`` (tuples, per seed, in seed order). Rows follow ``order`` of (experiment, condition), then the rest.
    """
    out = []
    for key, grp in df.sort_values("seed").groupby(GROUP, sort=True):
        mean, low, high = t_interval(grp["mean"].astype(float).tolist())
        out.append({**dict(zip(GROUP, key)), "n_seeds": len(grp), "mean": mean, "ci_low": low, "ci_high": high,
                    "seeds": tuple(int(s) for s in grp["seed"]),
                    "values": tuple(float(v) for v in grp["mean"])})
    cols = GROUP + ["n_seeds", "mean", "ci_low", "ci_high", "seeds", "values"]
    res = pd.DataFrame(out, columns=cols)
    rank = {pair: i for i, pair in enumerate(order)}
    res["_rank"] = [rank.get((e, c), len(rank)) for e, c in zip(res["experiment"], res["condition"])]
    return res.sort_values(["experiment", "_rank", "condition", "benchmark", "metric"], ignore_index=True).drop(
        columns="_rank")


def flat(summary: pd.DataFrame) -> pd.DataFrame:
    """The summary with ``seeds`` and ``values`` as ';'-joined text (for CSV files and printing)."""
    out = summary.copy()
    out["seeds"] = [";".join(map(str, s)) for s in out["seeds"]]
    out["values"] = [";".join(f"{v:.4f}" for v in vals) for vals in out["values"]]
    return out
