"""Results tables: the schema of ``results/<preset>/eval.csv``, a keyed upsert, and the paper's numbers beside ours.

``eval.csv`` is long-format, one row per (stage, benchmark, metric, k, config_hash); writing replaces rows with
the same key, sorts by it and fixes float precision, so reruns give byte-identical files.
``results/reported.csv`` holds the paper's numbers (Table 1, the ablation tables, values read off figures),
each with its source in docs/paper.md; README and notebooks put the two side by side, never typed by hand.
"""
from __future__ import annotations

from pathlib import Path
from typing import Iterable

import pandas as pd

from klear_lib.paths import RESULTS, results_dir

EVAL_KEY = ["stage", "benchmark", "metric", "k", "config_hash"]
EVAL_COLUMNS = EVAL_KEY[:4] + ["mean", "stderr", "ci_low", "ci_high", "n_problems", "n_samples", "seed",
                               "config_hash", "model"]
REPORTED_COLUMNS = ["table", "model_or_setting", "benchmark", "metric", "k", "value", "source", "note"]
FLOAT_FORMAT = "%.6f"
# Our miniature benchmarks and their paper analogues (for side-by-side tables).
ANALOGUE = {"tiny_aime": "aime24", "tiny_lcb": "lcb_v5"}
PAPER_MODEL_OF_STAGE = {"sft": "Klear-Reasoner-8B-SFT", "rl_code": "Klear-Reasoner-8B (32K)",
                        "Kwai-Klear/Klear-Reasoner-8B-SFT": "Klear-Reasoner-8B-SFT",
                        "Kwai-Klear/Klear-Reasoner-8B": "Klear-Reasoner-8B (32K)"}


def eval_csv(preset: str) -> Path:
    """``results/<preset>/eval.csv``."""
    return results_dir(preset) / "eval.csv"


def validate_rows(df: pd.DataFrame, columns: list[str], key: list[str], what: str,
                  required: tuple[str, ...] = ()) -> pd.DataFrame:
    """Raise ``ValueError`` naming the rows (by ``key``) with missing columns, an empty key or ``required`` field,
    duplicate keys, or a ``mean`` outside [0, 1] or its CI; return ``df``. Shared by the long-format tables."""
    where = lambda mask: df.loc[mask, key].to_dict("records")  # noqa: E731
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise ValueError(f"{what} rows miss columns {missing}")
    filled = key + list(required)
    empty = df[filled].isna().any(axis=1) | (df[filled].astype(str) == "").any(axis=1)
    if empty.any():
        raise ValueError(f"{what} rows with an empty key field: {where(empty)}")
    dup = df.duplicated(key, keep=False)
    if dup.any():
        raise ValueError(f"duplicate {what} keys: {where(dup)}")
    bad = ~df["mean"].between(0, 1) | (df["ci_low"] > df["mean"] + 1e-9) | (df["ci_high"] < df["mean"] - 1e-9)
    if bad.any():
        raise ValueError(f"{what} rows with mean outside [0, 1] or outside its CI: {where(bad)}")
    return df


def validate_eval(df: pd.DataFrame) -> pd.DataFrame:
    """``eval.csv`` rows checked by ``validate_rows`` (key: stage, benchmark, metric, k, config_hash)."""
    return validate_rows(df, EVAL_COLUMNS, EVAL_KEY, "eval")


def _tidy(df: pd.DataFrame) -> pd.DataFrame:
    """Schema column order, integer columns as int, rows sorted by the key."""
    df = df[EVAL_COLUMNS].copy()
    for col in ("k", "n_problems", "n_samples", "seed"):
        df[col] = df[col].astype(int)
    df["model"] = df["model"].fillna("").astype(str)
    return df.sort_values(EVAL_KEY, ignore_index=True)


def append_eval_rows(rows: Iterable[dict] | pd.DataFrame, path: Path | str) -> pd.DataFrame:
    """Upsert ``rows`` into the CSV at ``path`` (same key replaces), sorted, floats at fixed precision."""
    new = _tidy(validate_eval(pd.DataFrame(list(rows) if not isinstance(rows, pd.DataFrame) else rows)))
    path = Path(path)
    if path.exists():
        old = read_eval(path)
        keys = set(map(tuple, new[EVAL_KEY].astype(str).values))
        old = old[[tuple(r) not in keys for r in old[EVAL_KEY].astype(str).values]]
        new = pd.concat([old, new], ignore_index=True)
    out = _tidy(validate_eval(new))
    path.parent.mkdir(parents=True, exist_ok=True)
    out.to_csv(path, index=False, float_format=FLOAT_FORMAT, lineterminator="\n")
    return out


def read_eval(path: Path | str) -> pd.DataFrame:
    """An eval.csv, validated (config_hash kept as text)."""
    df = pd.read_csv(path, dtype={"config_hash": str, "model": str}, keep_default_na=False)
    return validate_eval(df)


def load_reported(path: Path | str = RESULTS / "reported.csv") -> pd.DataFrame:
    """The paper's numbers, one row per (table, model_or_setting, benchmark, metric)."""
    df = pd.read_csv(path, keep_default_na=False, na_values={"k": [""], "value": [""]})
    missing = [c for c in REPORTED_COLUMNS if c not in df.columns]
    if missing:
        raise ValueError(f"{path}: missing columns {missing}")
    return df


def side_by_side(ours: pd.DataFrame, reported: pd.DataFrame, metric: str = "avg@k") -> pd.DataFrame:
    """Our avg@k (in %) per stage and benchmark beside the paper's Table 1 value of the matching model."""
    table1 = reported[reported["table"] == "Table 1"]
    mine = ours[ours["metric"] == metric].copy()
    mine["ours_pct"] = 100 * mine["mean"]
    mine["ci_pct"] = [f"[{100 * lo:.1f}, {100 * hi:.1f}]" for lo, hi in zip(mine["ci_low"], mine["ci_high"])]
    mine["paper_benchmark"] = mine["benchmark"].map(lambda b: ANALOGUE.get(b, b))
    mine["paper_model"] = [PAPER_MODEL_OF_STAGE.get(m or s, PAPER_MODEL_OF_STAGE.get(s, ""))
                           for s, m in zip(mine["stage"], mine["model"])]
    paper = table1.rename(columns={"benchmark": "paper_benchmark", "model_or_setting": "paper_model",
                                   "value": "paper_pct", "k": "paper_k"})
    merged = mine.merge(paper[["paper_benchmark", "paper_model", "paper_pct", "paper_k"]],
                        on=["paper_benchmark", "paper_model"], how="left")
    cols = ["stage", "benchmark", "k", "ours_pct", "ci_pct", "paper_model", "paper_benchmark", "paper_k", "paper_pct"]
    return merged[cols].sort_values(["benchmark", "stage"], ignore_index=True)
