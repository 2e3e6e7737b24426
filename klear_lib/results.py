"""Results tables: the schema of ``results/<preset>/eval.csv``, a keyed upsert, and the paper's numbers beside ours.

``eval.csv`` (``EVAL``, a ``klear_lib.tables.Table``) is long-format, one row per (stage, benchmark, metric, k,
config_hash); ``tables.upsert_file`` replaces rows with the same key, sorts by it and fixes float precision, so
reruns give byte-identical files.
``results/reported.csv`` holds the paper's numbers (Table 1, the ablation tables, values read off figures),
each with its source in docs/paper.md; README and notebooks put the two side by side, never typed by hand.
"""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from klear_lib.paths import RESULTS
from klear_lib import tables
from klear_lib.tables import MEAN_IN_CI, Table

EVAL_KEY = ["stage", "benchmark", "metric", "k", "config_hash"]
# mean and its interval: numbers here, their range in MEAN_IN_CI
EVAL_COLUMNS = EVAL_KEY[:4] + ["mean", "stderr", "ci_low", "ci_high", "n_problems", "n_samples", "seed",
                               "config_hash", "model"]
EVAL = Table("eval", tuple(EVAL_COLUMNS), tuple(EVAL_KEY), checks=(MEAN_IN_CI,), provenance=True,
             types=(("k", int), ("n_problems", int), ("n_samples", int), ("seed", int), ("config_hash", str),
                    ("model", str)),
             bounds=(("k", 1, None), ("mean", None, None), ("stderr", 0, None), ("ci_low", None, None),
                     ("ci_high", None, None), ("n_problems", 1, None), ("n_samples", 1, None), ("seed", 0, None)))
REPORTED = Table("reported", ("table", "model_or_setting", "benchmark", "metric", "k", "value", "source", "note"),
                 ("table", "model_or_setting", "benchmark", "metric"), nullable=("k", "value"))
# Notebook 04's gains of each stage over the one before (``evaluation.stage_gains``), in the order computed.
EVAL_GAINS = Table("eval gains", ("benchmark", "before", "after", "gain", "ci_low", "ci_high", "n_problems",
                                  "significant"), ("benchmark", "before", "after"), sort=False, provenance=True)
# Notebook 03's gains of the RL stages over RL seeds (``evaluation.seed_gains``): the main job's headline.
EVAL_SEED_GAINS = Table("eval seed gains", ("benchmark", "before", "after", "n_seeds", "gain", "ci_low", "ci_high",
                                            "seed_ci_low", "seed_ci_high", "n_problems", "per_seed", "significant"),
                        ("benchmark", "before", "after"), sort=False, types=(("per_seed", str),), provenance=True)
# Per-problem results of every run, one file per experiment (``results/<preset>/problems/<experiment>.csv``): how
# many of the k samples of each problem were correct, so anyone can recompute a run's avg@k, a claim's verdict or a
# test of their own without our code. The main job's stages are experiment "main", condition = the stage label.
# Like every table of drawn results, each row names the machine and numerics mode that drew it.
PROBLEM_RUN = ("experiment", "condition", "seed", "benchmark")
PROBLEMS = Table("problems", PROBLEM_RUN + ("problem", "k", "correct", "config_hash"), PROBLEM_RUN + ("problem",),
                 run_key=PROBLEM_RUN, required=("config_hash",), provenance=True,
                 types=(("seed", int), ("problem", str), ("k", int), ("correct", int), ("config_hash", str)))
MAIN = "main"  # the experiment name of the main job's evaluations in the problems files


def problems_csv(folder: Path, experiment: str) -> Path:
    """``<folder>/problems/<experiment>.csv``: the per-problem file of ``experiment`` beside the tables of a run
    (``folder``: ``results/<preset>`` or the folder of an ablation table)."""
    return Path(folder) / "problems" / f"{experiment}.csv"


# Our miniature benchmarks and their paper analogues (for side-by-side tables): the world's held-out splits (one tier,
# or tiers pooled, as the re-run reads its claims) stand for the same benchmark as their ability's miniature one.
ANALOGUE = {"tiny_aime": "aime24", "tiny_lcb": "lcb_v5",
            **{f"math_eval_t{t}": "aime24" for t in ("1", "2", "3", "4", "5", "23")},
            **{f"code_eval_t{t}": "lcb_v5" for t in ("4", "5", "45")}}
PAPER_MODEL_OF_STAGE = {"sft": "Klear-Reasoner-8B-SFT", "rl_code": "Klear-Reasoner-8B (32K)",
                        "Kwai-Klear/Klear-Reasoner-8B-SFT": "Klear-Reasoner-8B-SFT",
                        "Kwai-Klear/Klear-Reasoner-8B": "Klear-Reasoner-8B (32K)"}


def eval_csv(results: Path) -> Path:
    """``<results>/eval.csv`` (``Recipe.results``: ``results/<preset>/``)."""
    return Path(results) / "eval.csv"


def load_reported(path: Path | str = RESULTS / "reported.csv") -> pd.DataFrame:
    """The paper's numbers, one row per (table, model_or_setting, benchmark, metric)."""
    return tables.read(REPORTED, path)


STAGE_ORDER = ("base", "sft", "rl_math", "rl_code")  # the pipeline's stages in order: checkpoints, tables, figures
CONTROL = "random_"  # the prefix of the main job's random-reward control stages (random_rl_math, random_rl_code)


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
    order = {stage: i for i, stage in enumerate(STAGE_ORDER)}  # the pipeline's order, further RL seeds after theirs
    rank = merged["stage"].map(lambda s: order.get(s.split("-s")[0], len(order)))
    return merged.assign(_rank=rank).sort_values(["benchmark", "_rank", "stage"], ignore_index=True)[cols]
