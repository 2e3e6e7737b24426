"""Checkpoints, run records and held-out curves of RL ablation runs: the files the RL ablation notebooks read.

A finished RL stage (``klear_lib.pipeline.rl_stage``) leaves ``checkpoint-<update>`` folders beside ``final``; the
held-out curve evaluates each of them (``CURVE_COLUMNS``, long format, reruns replace a run's rows). A stage that
``rl_stage`` reused under another name wrote no run record: ``ensure_record`` rebuilds it from the last
checkpoint's ``trainer_state.json``, which holds the same logs ``RunRecord`` writes.
"""
from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Sequence

import pandas as pd

from klear_lib.ablations import table
from klear_lib.configs import config_hash

log = logging.getLogger(__name__)
CURVE_KEY = table.RUN_KEY + ["rl_step", "benchmark", "metric"]
CURVE_COLUMNS = CURVE_KEY + ["k", "mean", "ci_low", "ci_high", "config_hash"]
DYNAMICS = ["reward_mean", "accuracy", "entropy", "grad_norm", "response_length"]
CLIPPING = ["frac_adv_pos_ratio_high", "frac_adv_pos_ratio_low", "frac_adv_neg_ratio_low", "frac_adv_neg_ratio_high",
            "clipped_grad_share"]


def checkpoints(final: Path, updates_per_step: int, max_steps: int) -> list[tuple[int, Path]]:
    """(RL step, path) of a finished RL stage: its saved intermediate checkpoints, then ``final`` at ``max_steps``.

    TRL names checkpoints by optimizer update: ``checkpoint-<n>`` holds RL step ``n // updates_per_step``."""
    saved = sorted((int(p.name.split("-")[-1]) // updates_per_step, p) for p in Path(final).parent.glob("checkpoint-*"))
    return [(s, p) for s, p in saved if s < max_steps] + [(max_steps, Path(final))]


def record_from_state(final: Path, cfg) -> list[dict[str, str]]:
    """The run record of a finished RL stage rebuilt from its last checkpoint's ``trainer_state.json`` (the same
    logs ``RunRecord`` writes); for a stage trained under another name, e.g. an identical condition of another
    experiment (``rl_stage`` then reuses the checkpoint and writes no record)."""
    from klear_lib.training.run_record import record_row

    saved = sorted(Path(final).parent.glob("checkpoint-*"), key=lambda p: int(p.name.split("-")[-1]))
    if not saved:
        raise FileNotFoundError(f"{Path(final).parent} has no checkpoint to rebuild the run record from")
    state = json.loads((saved[-1] / "trainer_state.json").read_text())
    if state["global_step"] < cfg.max_steps * cfg.updates_per_step:
        log.warning("%s: the last checkpoint is at update %d of %d; the rebuilt record stops there", final,
                    state["global_step"], cfg.max_steps * cfg.updates_per_step)
    return [record_row(e, e["step"], cfg.updates_per_step, config_hash(cfg)) for e in state["log_history"]
            if "loss" in e]


def ensure_record(path: Path, final: Path, cfg) -> Path:
    """``path``, written from the checkpoint's trainer state when the stage was reused and wrote none."""
    from klear_lib.training.run_record import write_rows

    if not Path(path).exists():
        write_rows(Path(path), record_from_state(final, cfg))
    return Path(path)


def curve_rows(scores: pd.DataFrame, experiment: str, label: str, seed: int, rl_step: int,
               cfg_hash: str) -> list[dict]:
    """Held-out curve rows (``CURVE_COLUMNS``) from the ``eval_stage`` rows of one checkpoint."""
    keep = ["benchmark", "metric", "k", "mean", "ci_low", "ci_high"]
    return [{"experiment": experiment, "condition": label, "seed": int(seed),
             "rl_step": int(rl_step), **{k: r[k] for k in keep}, "config_hash": cfg_hash}
            for r in scores.to_dict("records")]


def read_curves(path: Path | str) -> pd.DataFrame:
    """The curves table at ``path`` (validated), empty when absent."""
    from klear_lib.results import validate_rows

    if not Path(path).exists():
        return pd.DataFrame(columns=CURVE_COLUMNS)
    df = pd.read_csv(path, dtype={"config_hash": str}, keep_default_na=False)
    return validate_rows(df, CURVE_COLUMNS, CURVE_KEY, "RL curve", required=("config_hash",))


def upsert_curves(curves: pd.DataFrame, rows: list[dict]) -> pd.DataFrame:
    """``curves`` with every old row of the runs in ``rows`` replaced; sorted by key."""
    new = pd.DataFrame(rows, columns=CURVE_COLUMNS)
    runs = set(map(tuple, new[table.RUN_KEY].astype(str).values))
    keep = curves[[tuple(r) not in runs for r in curves[table.RUN_KEY].astype(str).values]] if len(curves) else curves
    out = pd.concat([keep, new], ignore_index=True) if len(keep) else new
    return out.sort_values(CURVE_KEY, ignore_index=True)


def write_curves(curves: pd.DataFrame, path: Path | str) -> Path:
    """Write the curves table (floats at fixed precision)."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    curves[CURVE_COLUMNS].to_csv(path, index=False, float_format=table.FLOAT_FORMAT, lineterminator="\n")
    return Path(path)


def curves_of(runs: pd.DataFrame, curves: pd.DataFrame, metric: str = "avg@k") -> pd.DataFrame:
    """The held-out curve rows of ``runs`` (same experiment, condition, seed and config hash), one metric."""
    keys = set(map(tuple, runs[table.RUN_KEY + ["config_hash"]].astype(str).values))
    sel = pd.Series([tuple(r) in keys for r in curves[table.RUN_KEY + ["config_hash"]].astype(str).values],
                    index=curves.index, dtype=bool)
    return curves[sel & (curves["metric"] == metric)].reset_index(drop=True)


def heldout_wide(curves: pd.DataFrame) -> pd.DataFrame:
    """Held-out curve rows of one metric as one column per benchmark (for ``plots.condition_curves``)."""
    return curves.pivot_table(index=["experiment", "condition", "seed", "rl_step"], columns="benchmark",
                              values="mean", sort=False).reset_index()


def dynamics(records_: pd.DataFrame, columns: Sequence[str], fraction: float = 0.1) -> pd.DataFrame:
    """Per (experiment, condition): the mean over seeds of each column over the last ``fraction`` of each run."""
    rows = []
    for (exp, label, _seed), rec in records_.groupby(["experiment", "condition", "seed"], sort=False):
        rows.append({"experiment": exp, "condition": label,
                     **rec.tail(max(1, int(len(rec) * fraction)))[list(columns)].mean().to_dict()})
    return pd.DataFrame(rows).groupby(["experiment", "condition"], sort=False).mean().reset_index()

