"""Beyond the paper: a stability map of GPPO (β_low = 1, 0.5, 0.25; dual clip c = 10), clip-higher and CISPO
across learning rates and off-policy updates per generation batch, in miniature (issue 8; docs/stack.md §8).

Every cell (loss × learning rate × updates per step) trains math RL from the preset's SFT checkpoint for each
seed, then records the final held-out avg@k, the clipping-case fractions of the run and whether it collapsed.
The collapse criterion (``Collapse``) reads only stored columns, so it can be changed and re-applied to
``results/<preset>/stability.csv`` without retraining. The map is the family ``STABILITY``
(``klear_lib.ablations.family.Family``) with one experiment whose conditions are the preset's grid cells.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

import pandas as pd

from klear_lib.ablations.family import Experiment, Family, Named, run_key, stage_configs
from klear_lib.ablations.rl import START_STAGE, evaluated_start
from klear_lib.ablations.rl_runs import ensure_record
from klear_lib.ablations.verdicts import claim_verdict
from klear_lib.configs import Recipe
from klear_lib.configs.study import Grid
from klear_lib.data import load_split
from klear_lib.losses import get_loss
from klear_lib.pipeline import eval_stage, rl_stage, sft_stage
from klear_lib.seeding import torch_threads
from klear_lib.stats import t_interval, verdict, welch_interval
from klear_lib.tables import MEAN_IN_CI, Table, drawn_by
from klear_lib.training.run_record import CLIP_COLUMNS

NAME = "stability"
CASES = list(CLIP_COLUMNS)
KEY = ["loss", "learning_rate", "updates_per_step", "seed"]
SUMMARY_COLUMNS = ["start_mean", "train_acc_first", "train_acc_last", "length_first", "length_last",
                   "entropy_last", "nonfinite"]
COLUMNS = (KEY + ["benchmark", "metric", "k", "mean", "ci_low", "ci_high"] + SUMMARY_COLUMNS + CASES
           + ["collapsed", "collapse_reasons", "config_hash"])
FLOAT_FORMAT = "%.6g"   # learning rates down to 5e-7 keep their digits


@dataclass(frozen=True)
class Loss:
    """A policy loss of the map: its label and RL config overrides."""

    label: str
    overrides: tuple[tuple[str, object], ...]


LOSSES = (
    Loss("gppo", (("loss_type", "gppo"),)),                                          # docs/paper.md §1.3, β1 = β2 = 1
    Loss("gppo_b0.5", (("beta_low", 0.5), ("loss_type", "gppo"))),                   # docs/paper.md §1.5 (advice)
    Loss("gppo_b0.25", (("beta_low", 0.25), ("loss_type", "gppo"))),                 # docs/paper.md §1.5 (default)
    Loss("gppo_dual10", (("dual_clip", 10.0), ("loss_type", "gppo"))),               # docs/paper.md §1.4 (scripts)
    Loss("clip_higher", (("loss_type", "clip_higher"),)),                            # docs/paper.md §1.2 Eq. 7
    Loss("cispo", (("loss_type", "cispo"),)),                                        # docs/paper.md §1.4, App. A.1
)
RANKING = ("gppo", "cispo", "clip_higher")  # the paper's order, best first (docs/paper.md §3 Fig. 2)


@dataclass(frozen=True)
class Collapse:
    """When a run counts as collapsed: any one of these, each reported by name in ``collapse_reasons``.

    * ``heldout``: final held-out avg@k below ``heldout_fraction`` × the start checkpoint's;
    * ``train_acc``: training accuracy over the last ``window`` of the run's updates below ``train_fraction`` ×
      over the first ``window`` (the start policy's own rollouts; a quarter of a 12-step run is 3 RL steps,
      192 rollouts, so sampling noise alone does not halve it);
    * ``length``: mean response length over the last window below ``length_fraction`` × over the first — the
      failure seen in miniature, where the policy stops closing ``</think>`` for the −0.5 reward (results/LOG.md);
    * ``nonfinite``: a NaN or infinite loss or gradient norm anywhere in the run.

    The two accuracy tests apply only when the reference accuracy is at least ``min_acc`` (a model that starts
    at 0 cannot lose half of it).
    """

    heldout_fraction: float = 0.5
    train_fraction: float = 0.5
    length_fraction: float = 0.5
    min_acc: float = 0.02
    window: float = 0.25


COLLAPSE = Collapse()


@dataclass(frozen=True)
class Cell(Named):
    """One point of the map (a run per seed); its runs are named ``stability/<loss>/<label>-s<seed>``."""

    loss: Loss
    learning_rate: float
    updates: int

    @property
    def label(self) -> str:
        """``lr<learning rate>-u<updates>`` (the run record's file stem, without the seed)."""
        return f"lr{self.learning_rate:g}-u{self.updates}"

    @property
    def group(self) -> str:
        return self.loss.label

    def fields(self, seed: int) -> dict:
        """The fields that name one run in stability.csv."""
        return {"loss": self.loss.label, "learning_rate": self.learning_rate, "updates_per_step": self.updates,
                "seed": int(seed)}


def study_losses(labels: Sequence[str] | None = None) -> tuple[Loss, ...]:
    """``LOSSES``, or those of ``labels`` in ``LOSSES`` order; a label not there names a registered loss
    (``klear_lib.losses``), run at ``RLConfig``'s defaults. An unknown name raises ``KeyError`` naming the known."""
    if labels is None:
        return LOSSES
    ours = {loss.label for loss in LOSSES}
    extra = tuple(Loss(get_loss(name).name, (("loss_type", name),)) for name in labels if name not in ours)
    return tuple(loss for loss in LOSSES if loss.label in set(labels)) + extra


def cells(grid: Grid, losses: Sequence[str] | None = None) -> list[Cell]:
    """Every cell of ``grid`` for ``study_losses(losses)``."""
    return [Cell(loss, lr, u) for loss in study_losses(losses) for lr in grid.learning_rates for u in grid.updates]


def run_recipe(recipe: Recipe, cell: Cell, seed: int = 0) -> Recipe:
    """The recipe of one run: the grid's RL and eval overrides, the cell's loss and learning rate, and the
    mini-batch derived from the updates per step."""
    grid = STABILITY.get_scale(recipe)
    prompts = recipe.replace(rl_math=grid.rl).rl_math.prompts_per_step
    if prompts % cell.updates:
        raise ValueError(f"{cell.updates} updates per step do not divide {prompts} prompts per step "
                         f"at {recipe.preset}")
    rl = {**grid.rl, **dict(cell.loss.overrides), "learning_rate": cell.learning_rate,
          "mini_batch_prompts": prompts // cell.updates, "seed": seed}
    return recipe.replace(eval={**grid.eval, "seed": seed}, rl_math=rl)


def cell_hash(recipe: Recipe, cell: Cell) -> str:
    """A cell's identity (``run_key``): its run's configs and the map's benchmark (not the collapse criterion)."""
    run = run_recipe(recipe, cell)
    return run_key(**stage_configs(run), rl=run.rl_math, benchmark=STABILITY.get_scale(recipe).benchmark)


# --- the collapse criterion (pure) ----------------------------------------------------------------------------

def run_summary(record: pd.DataFrame, start_acc: float, final_acc: float, window: float = COLLAPSE.window) -> dict:
    """What the collapse criterion and the map read from one run record (``klear_lib.training.run_record``)."""
    n = max(1, int(len(record) * window))
    first, last = record.head(n), record.tail(n)
    values = record[["loss", "grad_norm"]].astype(float).to_numpy()
    return {"start_mean": float(start_acc), "mean": float(final_acc),
            "train_acc_first": float(first["accuracy"].mean()), "train_acc_last": float(last["accuracy"].mean()),
            "length_first": float(first["response_length"].mean()),
            "length_last": float(last["response_length"].mean()),
            "entropy_last": float(last["entropy"].mean()), "nonfinite": int(not all(map(math.isfinite, values.flat))),
            **{c: float(record[c].mean()) for c in CASES}}


def collapse_reasons(row: Mapping, criterion: Collapse = COLLAPSE) -> list[str]:
    """The names of the collapse tests that ``row`` (a ``run_summary`` or a stability.csv row) fails."""
    c = criterion
    failed = {"heldout": row["start_mean"] >= c.min_acc and row["mean"] < c.heldout_fraction * row["start_mean"],
              "train_acc": row["train_acc_first"] >= c.min_acc
              and row["train_acc_last"] < c.train_fraction * row["train_acc_first"],
              "length": row["length_last"] < c.length_fraction * row["length_first"],
              "nonfinite": int(row["nonfinite"])}
    return [name for name, fails in failed.items() if fails]


def mark_collapse(df: pd.DataFrame, criterion: Collapse = COLLAPSE) -> pd.DataFrame:
    """``df`` with ``collapsed`` (0/1) and ``collapse_reasons`` ('+'-joined) recomputed under ``criterion``."""
    reasons = ["+".join(collapse_reasons(r, criterion)) for r in df.to_dict("records")]
    return df.assign(collapsed=[int(bool(r)) for r in reasons], collapse_reasons=reasons)


# --- the table ---------------------------------------------------------------------------------------------------

TABLE = Table("stability", tuple(COLUMNS), tuple(KEY), required=("config_hash",), checks=(MEAN_IN_CI,), provenance=True,
              float_format=FLOAT_FORMAT, rank=(("loss", tuple(loss.label for loss in LOSSES)),),
              types=(("learning_rate", float), ("updates_per_step", int), ("seed", int), ("k", int),
                     ("collapsed", int), ("nonfinite", int), ("collapse_reasons", str), ("config_hash", str)))
GROUP = ["loss", "learning_rate", "updates_per_step"]
TRAINING = ["train_acc_first", "train_acc_last", "length_last"]  # means over seeds in the summary
SUMMARY = Table("stability summary", tuple(GROUP + ["n_seeds", "mean", "ci_low", "ci_high", "start_mean",
                                                     "collapsed", "collapse_share"] + TRAINING + CASES + ["values"]),
                tuple(GROUP), float_format=FLOAT_FORMAT, sort=False, provenance=True)


# --- runs --------------------------------------------------------------------------------------------------------

def _heldout(run: Recipe, path: Path, stage: str) -> dict:
    """The avg@k row of one checkpoint on the map's benchmark (``run``: the run's recipe)."""
    scores = eval_stage(run, stage, path, [STABILITY.get_scale(run).benchmark], write_csv=False)
    return scores[scores["metric"] == "avg@k"].iloc[0].to_dict()


def _setup(recipe: Recipe, todo: Sequence[tuple[Cell, int]], workers: int = 1) -> Path:
    """The start checkpoint, evaluated once per seed of ``todo`` before any run (``rl.evaluated_start``)."""
    grid, seeds = STABILITY.get_scale(recipe), sorted({int(s) for _, s in todo})
    calls = [([grid.benchmark], recipe.replace(eval={**grid.eval, "seed": s})) for s in seeds]
    return evaluated_start(recipe, calls, grid.torch_threads, workers)


def run_cell(recipe: Recipe, cell: Cell, seed: int, init: Path | None = None) -> list[dict]:
    """Train (or reuse) one cell with one seed; its stability.csv row (final and start held-out avg@k, the run
    record's summary, the collapse verdict under ``COLLAPSE``)."""
    init = sft_stage(recipe) if init is None else init
    name, run = STABILITY.run_name(cell, seed), run_recipe(recipe, cell, seed)
    with torch_threads(STABILITY.get_scale(recipe).torch_threads):
        final = rl_stage(run, init, "math", load_split("math_rl", recipe), name=name)
        record = ensure_record(recipe.runs / f"{name}.csv", final, run.rl_math)
        start = _heldout(run, init, START_STAGE)
        end = _heldout(run, final, name.replace("/", "--"))
    row = {**cell.fields(seed), **{k: end[k] for k in ("benchmark", "metric", "k", "ci_low", "ci_high")},
           **run_summary(pd.read_csv(record), start["mean"], end["mean"]), "config_hash": cell_hash(recipe, cell)}
    return [mark_collapse(pd.DataFrame([row])).iloc[0].to_dict()]


def run_grid(recipe: Recipe, seeds: int | Sequence[int] | str | None = None, retrain: bool = False,
             path: Path | str | None = None, losses: Sequence[str] | None = None, workers: int = 1) -> pd.DataFrame:
    """Every cell × seed of the grid (``losses``: labels, ``study_losses``), ``workers`` runs at a time; rows stored
    under the same hash are reused unless ``retrain``. Returns the grid's rows for ``seeds``, collapse re-marked
    under ``COLLAPSE``. Runs pin the grid's torch threads, so the rows do not depend on ``workers``."""
    grid = cells(STABILITY.get_scale(recipe), losses)
    return mark_collapse(STABILITY.run_experiment(recipe, MAP, seeds, retrain, path, workers, conditions=grid))


MAP = Experiment("stability", "stability map (beyond the paper)",
                 f"{' > '.join(RANKING)} at every learning rate and updates setting (docs/paper.md §3 Fig. 2)",
                 (), tuple(zip(RANKING, RANKING[1:])), ())
STABILITY = Family(NAME, {MAP.id: MAP}, "stability", cell_hash, run_cell, _setup,
                   lambda grid, cell: (grid.benchmark,), table=TABLE, summary=SUMMARY)


# --- reading the map ----------------------------------------------------------------------------------------------


def aggregate(df: pd.DataFrame) -> pd.DataFrame:
    """Per cell: seeds, final avg@k mean ± 95% t-interval, collapsed runs and their share, mean training accuracy
    (first and last quarter) and response length (last quarter), mean clipping cases; what drew its runs."""
    out = []
    for key, grp in df.groupby(GROUP, sort=False):
        mean, low, high = t_interval(grp["mean"].astype(float).tolist())
        out.append({**dict(zip(GROUP, key)), "n_seeds": len(grp), "mean": mean, "ci_low": low, "ci_high": high,
                    "start_mean": grp["start_mean"].mean(), "collapsed": int(grp["collapsed"].sum()),
                    "collapse_share": grp["collapsed"].mean(), **grp[TRAINING + CASES].mean().to_dict(),
                    "values": tuple(float(v) for v in grp["mean"]), **drawn_by(grp)})
    return pd.DataFrame(out)


def safe_region(summary: pd.DataFrame) -> pd.DataFrame:
    """Per loss and updates setting: the learning rates where no seed collapsed, and the largest of them."""
    out = []
    for (loss, updates), grp in summary.groupby(["loss", "updates_per_step"], sort=False):
        safe = sorted(grp.loc[grp["collapsed"] == 0, "learning_rate"])
        out.append({"loss": loss, "updates_per_step": updates, "safe_lrs": " ".join(f"{lr:g}" for lr in safe),
                    "largest_safe_lr": max(safe) if safe else float("nan"),
                    "collapsed_cells": int((grp["collapsed"] > 0).sum()), "cells": len(grp)})
    return pd.DataFrame(out)


def ranking(summary: pd.DataFrame, order: Sequence[str] = RANKING) -> pd.DataFrame:
    """Per (learning rate, updates): Welch verdicts over seeds of each adjacent pair of ``order`` (claimed better
    first) and whether the whole order holds ("holds" only when every pair is replicated; "reversed" when some
    pair is not replicated and none is; "inconclusive" otherwise)."""
    out = []
    for (lr, updates), grp in summary.groupby(["learning_rate", "updates_per_step"], sort=True):
        vals = grp.set_index("loss")["values"]
        if not set(order) <= set(vals.index):
            continue
        pairs = {f"{a}>{b}": verdict(*welch_interval(vals[a], vals[b])) for a, b in zip(order, order[1:])}
        overall = {"replicated": "holds", "not replicated": "reversed"}.get(claim_verdict(pairs.values()),
                                                                            "inconclusive")
        out.append({"learning_rate": lr, "updates_per_step": updates, **pairs, "paper_order": overall})
    return pd.DataFrame(out)


def ranking_verdict(rank: pd.DataFrame) -> str:
    """Where the paper's order holds: "everywhere", "somewhere" or "nowhere", with the count of each cell outcome."""
    counts, n = rank["paper_order"].value_counts() if len(rank) else pd.Series(dtype=int), len(rank)
    holds = int(counts.get("holds", 0))
    where = "everywhere" if n and holds == n else ("somewhere" if holds else "nowhere")
    return (f"{where} ({holds} holds, {int(counts.get('reversed', 0))} reversed, "
            f"{int(counts.get('inconclusive', 0))} inconclusive, of {n} cells)")


def reading(summary: pd.DataFrame, rank: pd.DataFrame) -> str:
    """The map in sentences, from its tables only: per loss, where no seed collapsed; per setting, the best cell;
    where the paper's ranking holds."""
    lines = []
    for loss, grp in safe_region(summary).groupby("loss", sort=False):
        where = "; ".join((f"LR {r.safe_lrs.replace(' ', ', ')}" if r.safe_lrs else "no LR")
                          + f" with {r.updates_per_step} updates/step" for r in grp.itertuples())
        lines.append(f"{loss}: no seed collapsed at {where} (of {grp['cells'].iloc[0]} LRs each)")
    for updates, grp in summary.groupby("updates_per_step"):
        best = grp.loc[grp["mean"].idxmax()]
        lines.append(f"best held-out avg@k at {updates} updates/step: {best['loss']} at LR {best['learning_rate']:g}, "
                     f"{100 * best['mean']:.1f}% [{100 * max(best['ci_low'], 0):.1f}, {100 * best['ci_high']:.1f}] "
                     f"(start {100 * best['start_mean']:.1f}%)")
    for (updates, lr), grp in summary.groupby(["updates_per_step", "learning_rate"]):
        top = grp.sort_values("train_acc_last", ascending=False).iloc[:2]
        lines.append(f"training accuracy over the last quarter of the run, {updates} updates/step, LR {lr:g}: "
                     + ", ".join(f"{r.loss} {100 * r.train_acc_last:.1f}%" for r in top.itertuples())
                     + f" best; {100 * grp['train_acc_last'].min():.1f}% lowest "
                     f"(start {100 * grp['train_acc_first'].mean():.1f}%)")
    lines.append(f"the paper's order {' > '.join(RANKING)} holds {ranking_verdict(rank)}")
    return "\n".join(lines)
