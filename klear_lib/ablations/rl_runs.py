"""Checkpoints, run records and held-out curves of RL ablation runs: the files the RL ablation notebooks read.

A finished RL stage (``klear_lib.pipeline.rl_stage``) leaves ``checkpoint-<update>`` folders beside ``final``; the
held-out curve evaluates each of them (``CURVES``, long format, reruns replace a run's rows). A stage that
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
from klear_lib.tables import MEAN_IN_CI, Table
from klear_lib.training.run_record import CLIP_CASES, record_row, write_rows

log = logging.getLogger(__name__)
CURVE_KEY = table.RUN_KEY + ["rl_step", "benchmark", "metric"]
CURVE_KEEP = ["benchmark", "metric", "k", "mean", "ci_low", "ci_high"]  # of an ``eval_stage`` row, at each point
# ``ablations_rl_curves.csv``: a rerun of a run (experiment, condition, seed) replaces all of its points
CURVES = Table("RL curve", (*CURVE_KEY, "k", "mean", "ci_low", "ci_high", "config_hash"), tuple(CURVE_KEY),
               run_key=tuple(table.RUN_KEY), required=("config_hash",), checks=(MEAN_IN_CI,), provenance=True,
               types=(("seed", int), ("rl_step", int), ("k", int), ("config_hash", str)))
DYNAMICS = ["reward_mean", "accuracy", "entropy", "grad_norm", "response_length"]
CLIPPING = [*CLIP_CASES, "clipped_grad_share"]
# DGPO's argument in the runs: the largest per-token |F·A| on clipped tokens beside the rest's, and the norms of
# dL/dlog π (run records written since the columns exist; older records lack them)
GRADIENTS = ["max_fa_clipped", "max_fa_rest", "clipped_logp_grad_norm", "logp_grad_norm"]


def checkpoints(final: Path, updates_per_step: int, max_steps: int) -> list[tuple[int, Path]]:
    """(RL step, path) of a finished RL stage: its saved intermediate checkpoints, then ``final`` at ``max_steps``.

    TRL names checkpoints by optimizer update: ``checkpoint-<n>`` holds RL step ``n // updates_per_step``."""
    saved = sorted((int(p.name.split("-")[-1]) // updates_per_step, p) for p in Path(final).parent.glob("checkpoint-*"))
    return [(s, p) for s, p in saved if s < max_steps] + [(max_steps, Path(final))]


def record_from_state(final: Path, cfg) -> list[dict[str, str]]:
    """The run record of a finished RL stage rebuilt from its last checkpoint's ``trainer_state.json`` (the same
    logs ``RunRecord`` writes); for a stage trained under another name, e.g. an identical condition of another
    experiment (``rl_stage`` then reuses the checkpoint and writes no record)."""
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
    if not Path(path).exists():
        write_rows(Path(path), record_from_state(final, cfg))
    return Path(path)


def curves_of(runs: pd.DataFrame, curves: pd.DataFrame, metric: str = "avg@k") -> pd.DataFrame:
    """The held-out curve rows of ``runs`` (same experiment, condition, seed and config hash), one metric."""
    keys = set(map(tuple, runs[table.RUN_KEY + ["config_hash"]].astype(str).values))
    sel = pd.Series([tuple(r) in keys for r in curves[table.RUN_KEY + ["config_hash"]].astype(str).values],
                    index=curves.index, dtype=bool)
    return curves[sel & (curves["metric"] == metric)].reset_index(drop=True)


def gradient_extremes(records_: pd.DataFrame) -> pd.DataFrame:
    """Per (experiment, condition): over its seeds, the mean of each run's clipped-token share and of its largest
    |F·A| on clipped tokens and on the rest, the largest of all, and the clipped tokens' share of the log-prob
    gradient norm. Each logged value is a mean over one update's micro-batches of their largest."""
    rows, logged = [], set(GRADIENTS) <= set(records_.columns)
    for (exp, label), rec in records_.groupby(["experiment", "condition"], sort=False) if logged else ():
        per_run = rec.groupby("seed").agg(clip_frac=("clip_frac", "mean"), max_fa_clipped=("max_fa_clipped", "max"),
                                          max_fa_rest=("max_fa_rest", "max"),
                                          clipped=("clipped_logp_grad_norm", "mean"), total=("logp_grad_norm", "mean"))
        rows.append({"experiment": exp, "condition": label, "seeds": len(per_run),
                     "clip_frac": per_run["clip_frac"].mean(), "max_fa_clipped": per_run["max_fa_clipped"].mean(),
                     "max_fa_rest": per_run["max_fa_rest"].mean(), "worst_fa_clipped": per_run["max_fa_clipped"].max(),
                     "worst_fa_rest": per_run["max_fa_rest"].max(),
                     "clipped_norm_share": (per_run["clipped"] / per_run["total"]).mean()})
    return pd.DataFrame(rows, columns=["experiment", "condition", "seeds", "clip_frac", "max_fa_clipped", "max_fa_rest",
                                       "worst_fa_clipped", "worst_fa_rest", "clipped_norm_share"])


def dynamics(records_: pd.DataFrame, columns: Sequence[str], fraction: float = 0.1) -> pd.DataFrame:
    """Per (experiment, condition): the mean over seeds of each column over the last ``fraction`` of each run."""
    runs = records_.groupby(["experiment", "condition", "seed"], sort=False)
    rows = [{"experiment": exp, "condition": label, **rec.tail(max(1, int(len(rec) * fraction)))[list(columns)].mean()}
            for (exp, label, _seed), rec in runs]
    return pd.DataFrame(rows).groupby(["experiment", "condition"], sort=False).mean().reset_index()

