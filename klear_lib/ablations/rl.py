"""The RL ablations in miniature (docs/paper.md §3, Figures 2-5 and Table 6): conditions as RL config overrides, one RL
stage + evaluation per (condition, seed) from the preset's SFT checkpoint, results reused by config hash, held-out
curves over the saved checkpoints, and a verdict per paper claim: the family ``RL``
(``klear_lib.ablations.family.Family``), whose own parts are the conditions and ``run_condition``.

Every run starts from the same SFT checkpoint (``sft_stage(recipe)``, like the paper's "earlier SFT model");
seeds vary the RL data order, the rollouts and the evaluation samples. Two conditions whose RL config, data and
start are the same (e.g. Fig. 2's GPPO, Fig. 5's filtered arm and Table 6's α = 0.1) train once: the second
reuses the checkpoint (``rl_stage`` keys it by config, data and start) and gets its run record rebuilt from the
checkpoint's trainer state; evaluation samples are reused per checkpoint too. Runs may go ``workers`` at a time:
each returns its curve points with its table rows and the parent process writes both tables, and the start
checkpoint, which every run with a seed evaluates, is evaluated once before any run starts (``setup``).
"""
from __future__ import annotations

import multiprocessing
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Sequence

import pandas as pd
from tqdm.auto import tqdm

from klear_lib import artifacts, plots, tables
from klear_lib.ablations import rl_runs as R
from klear_lib.ablations import table
from klear_lib.ablations.family import (EVAL_KEEP, NOT_IN_PAPER, Experiment, ExternalClaim, Family, Named, RunRows,
                                       primary_benchmarks, rule, run_key, side_csv, stage_configs, tagged)
from klear_lib.configs import Recipe, config_hash, rl_stage_name
from klear_lib.data import load_split
from klear_lib.pipeline import RL_SPLITS, eval_stage, rl_rows, rl_stage, rl_stage_dir, sft_stage
from klear_lib.seeding import torch_threads

FAMILY = "ablations_rl"
UNFILTERED = "code_rl_unfiltered"  # Fig. 4: code RL problems before the test-case filter (klear_lib.data.world)
START = "start"                    # the label of a condition that evaluates the start checkpoint untrained
START_STAGE = f"{FAMILY}--{START}"  # the stage label of the start's samples, shared by every run of a seed


@dataclass(frozen=True)
class Condition(Named):
    """One RL condition: ``overrides`` of the RL config, the stage (``reward``) and the RL rows it trains on."""

    experiment: str                              # "fig2"
    label: str                                   # "gppo"
    overrides: tuple[tuple[str, object], ...]    # (("loss_type", "gppo"),)
    reward: str                                  # "math" | "code": the stage (its reward, LR and mini-batch)
    rows: str                                    # RL split: "math_rl" | "code_rl" | UNFILTERED
    benchmarks: tuple[str, ...]                  # miniature benchmarks (mapped at full: RLScale.benchmarks)
    paper_setting: str                           # model_or_setting in results/reported.csv
    claim: str
    train: bool = True                           # False: evaluate the start checkpoint (Table 6's first row)


MATH = ("tiny_aime",)
CODE = ("tiny_lcb",)
CLAIM2 = "GPPO beats CISPO, which beats GRPO with clip-higher, on held-out math (docs/paper.md §3 Fig. 2)"
CLAIM3 = "the soft (pass-rate) code reward beats the hard (all tests pass) one (docs/paper.md §3 Fig. 3)"
CLAIM4 = "code RL on test-case-filtered problems beats RL on unfiltered ones (docs/paper.md §3 Fig. 4)"
CLAIM5 = "dropping zero-advantage groups beats keeping them (docs/paper.md §3 Fig. 5)"
CLAIM6 = "the SFT-loss weight α = 0.1 beats 0, 0.05 and 0.2 (docs/paper.md §3 Table 6)"


def _cond(exp: str, label: str, overrides: dict, reward: str, rows: str, benchmarks, paper: str, claim: str,
          train: bool = True) -> Condition:
    return Condition(exp, label, tuple(sorted(overrides.items())), reward, rows, tuple(benchmarks), paper, claim,
                     train)


# Fig. 2's arena: the paper's three losses, then three arms beyond the paper. "grpo" is DGPO's baseline, GRPO with
# the symmetric clip ε_l = ε_h = 0.2 (docs/paper.md §8); "gppo_b0.25" is GPPO with β_low = 0.25, the default of
# the authors' later general-β code and the low end of their advice (docs/paper.md §1.5); "dgpo" is DGPO's own loss
# (n = 1, m = 2, its authors' scripts; klear_lib/losses/dgpo.py).
FIG2_ARMS = (("gppo", {"loss_type": "gppo"}, "GPPO (end)"),
             ("clip_higher", {"loss_type": "clip_higher"}, "GRPO w/ Clip-Higher (end)"),
             ("cispo", {"loss_type": "cispo"}, "CISPO (range low)"),  # Fig. 2 gives CISPO as a range: its low end
             ("grpo", {"loss_type": "clip_higher", "clip_high": 0.2}, NOT_IN_PAPER),
             ("gppo_b0.25", {"loss_type": "gppo", "beta_low": 0.25}, NOT_IN_PAPER),
             ("dgpo", {"loss_type": "dgpo"}, NOT_IN_PAPER))
# A control beyond the paper, run only where a scale names it (``RLScale.arms``): RL whose rewards are drawn at random
# (``RLConfig.random_reward``), everything else equal; what the other arms gain over it is what the reward teaches.
FIG2_CONTROLS = (("random_reward", {"random_reward": True}, NOT_IN_PAPER),)
DGPO_CLAIM = ("GRPO with the symmetric clip beats GPPO on math (DGPO, arXiv 2603.14389, avg@32 on "
              "R1-Distill-Qwen-1.5B and 7B; docs/paper.md §8)")


def _fig2() -> Experiment:
    """GPPO vs GRPO with clip-higher vs CISPO, math RL; held-out math and code (the paper's Fig. 2a-b); with the
    DGPO baseline and a β_low < 1 arm, and DGPO's claim that GRPO beats GPPO."""
    conds, controls = (tuple(_cond("fig2", label, over, "math", "math_rl", MATH + CODE, paper, CLAIM2)
                             for label, over, paper in arms) for arms in (FIG2_ARMS, FIG2_CONTROLS))
    dgpo = ExternalClaim("grpo", "gppo", "DGPO", ("GRPO (R1-Distill-Qwen-1.5B)", "GPPO (R1-Distill-Qwen-1.5B)"),
                         "math_avg@32", DGPO_CLAIM,
                         more_settings=(("GRPO (R1-Distill-Qwen-7B)", "GPPO (R1-Distill-Qwen-7B)"),))
    return Experiment("fig2", "Figure 2", CLAIM2, conds,
                      (("gppo", "clip_higher"), ("gppo", "cispo"), ("cispo", "clip_higher")), MATH, (dgpo,),
                      extra=controls)


def _pair(exp: str, table_: str, claim: str, reward: str, arms: Sequence[tuple]) -> Experiment:
    """A two-arm figure: ``arms`` = ((label, overrides, rows, paper setting), ...), the first claimed better."""
    bench = MATH if reward == "math" else CODE
    conds = tuple(_cond(exp, label, over, reward, rows, bench, paper, claim) for label, over, rows, paper in arms)
    return Experiment(exp, table_, claim, conds, ((arms[0][0], arms[1][0]),), bench)


def _table6() -> Experiment:
    """SFT-loss weight α ∈ {0, 0.05, 0.1, 0.2} in math RL, and the start checkpoint for reference."""
    alphas = {0.1: "α = 0.1", 0.0: 'α = 0 ("standard GRPO loss")', 0.05: "α = 0.05", 0.2: "α = 0.2"}
    conds = tuple(_cond("table6", f"a{a:g}", {"sft_alpha": a}, "math", "math_rl", MATH, p, CLAIM6)
                  for a, p in alphas.items())
    start = _cond("table6", START, {}, "math", "math_rl", MATH, "Starting checkpoint", CLAIM6, train=False)
    return Experiment("table6", "Table 6", CLAIM6, conds + (start,),
                      (("a0.1", "a0"), ("a0.1", "a0.05"), ("a0.1", "a0.2")), MATH)


EXPERIMENTS = {e.id: e for e in (
    _fig2(),
    _pair("fig3", "Figure 3", CLAIM3, "code",
          (("soft", {"code_reward_mode": "soft"}, "code_rl", "soft reward (best)"),     # ours: the final point
           ("hard", {"code_reward_mode": "hard"}, "code_rl", "hard reward (best)"))),
    _pair("fig4", "Figure 4", CLAIM4, "code",
          (("filtered", {}, "code_rl", "test-case filtered (end)"),
           ("unfiltered", {}, UNFILTERED, "unfiltered (end)"))),
    _pair("fig5", "Figure 5", CLAIM5, "math",
          (("filtered", {"filter_zero_adv": True}, "math_rl", "zero-advantage filtered (peak)"),  # best points:
           ("unfiltered", {"filter_zero_adv": False}, "math_rl", "unfiltered (range high)"))),  # no end value given
    _table6(),
)}


def rl_recipe(recipe: Recipe, condition: Condition, seed: int = 0) -> Recipe:
    """The recipe of one run's RL stage: scale, then experiment sizes, then the condition, then the seed."""
    scale = RL.get_scale(recipe)
    curve = {"save_steps": scale.curve_every} if scale.curve_every else {}
    overrides = {**scale.rl, **curve, **scale.per_experiment.get(condition.experiment, {}), **dict(condition.overrides),
                 "seed": seed}
    return recipe.replace(**{rl_stage_name(condition.reward): overrides})


def rl_config(recipe: Recipe, condition: Condition, seed: int = 0):
    """The ``RLConfig`` of one run: its condition's RL stage with the condition's overrides."""
    return rl_recipe(recipe, condition, seed).rl(condition.reward)


def eval_recipe(recipe: Recipe, seed: int = 0, benchmark: str | None = None) -> Recipe:
    """``recipe`` with the eval config of every RL ablation run (of its reading of ``benchmark``, where the scale
    sets that benchmark's own)."""
    scale = RL.get_scale(recipe)
    return recipe.replace(eval={**scale.eval, **scale.eval_per_benchmark.get(benchmark, {}), "seed": seed})


def eval_calls(recipe: Recipe, benchmarks: Sequence[str], seed: int) -> list[tuple[list[str], Recipe]]:
    """``benchmarks`` grouped by their eval config: one (benchmarks, recipe) per ``eval_stage`` call."""
    calls: dict[str, tuple[list[str], Recipe]] = {}
    for bench in benchmarks:
        run = eval_recipe(recipe, seed, bench)
        calls.setdefault(config_hash(run.eval), ([], run))[0].append(bench)
    return list(calls.values())


def condition_hash(recipe: Recipe, condition: Condition) -> str:
    """A condition's identity (``run_key``): its run's configs (the RL one where it trains, the eval one of each
    benchmark with its own), its rule and benchmarks, and the curve's points."""
    scale, run = RL.get_scale(recipe), eval_recipe(rl_recipe(recipe, condition))
    own = {b: eval_recipe(recipe, 0, b).eval for b in sorted(scale.eval_per_benchmark)}
    return run_key(**stage_configs(run), rl=run.rl(condition.reward) if condition.train else None,
                   condition=rule(condition), benchmarks=RL.benchmarks_at(recipe, condition),
                   curve_every=scale.curve_every, **({"eval_per_benchmark": own} if own else {}),
                   **({"curve_primary_only": True} if scale.curve_primary_only else {}))


def curve_benchmarks(recipe: Recipe, condition: Condition, last: bool) -> tuple[str, ...]:
    """The benchmarks read at one curve point: all of the condition's at the last point (or at every point), else
    only those of its experiment's primary benchmarks (``RLScale.curve_primary_only``)."""
    every, scale = RL.benchmarks_at(recipe, condition), RL.get_scale(recipe)
    if last or not scale.curve_primary_only:
        return every
    primary = tuple(m for b in EXPERIMENTS[condition.experiment].primary for m in scale.benchmarks.get(b, (b,)))
    return tuple(b for b in every if b in primary)


def record_path(runs: Path, condition: Condition, seed: int) -> Path:
    """``<runs>/ablations_rl/<experiment>/<label>-s<seed>.csv`` (``runs``: a recipe's ``runs`` folder)."""
    return Path(runs) / f"{RL.run_name(condition, seed)}.csv"


def run_condition(recipe: Recipe, condition: Condition, seed: int, init: Path | None = None) -> RunRows:
    """Train (or reuse) one condition with one seed from ``init`` (default: the recipe's SFT checkpoint) and
    evaluate every curve point (RL step, checkpoint; the start at step 0), under the scale's pinned torch threads.
    Returns the rows of the last point (one per benchmark and metric) and the held-out curve; the caller writes
    both (``Family._save``)."""
    init = sft_stage(recipe) if init is None else init
    rows = train_rows(recipe, condition) if condition.train else []
    points = [(0, Path(init))]
    key, fields, curve, scores = condition_hash(recipe, condition), condition.fields(seed), [], None
    with torch_threads(RL.get_scale(recipe).torch_threads):
        if condition.train:
            run = rl_recipe(recipe, condition, seed)
            cfg = run.rl(condition.reward)
            final = rl_stage(run, init, condition.reward, rows, name=RL.run_name(condition, seed))
            R.ensure_record(record_path(recipe.runs, condition, seed), final, cfg)
            points += R.checkpoints(final, cfg.updates_per_step, cfg.max_steps)
        for i, (step, path) in enumerate(points):
            # samples are stored per stage label and checkpoint path: one label per step lets conditions that
            # share a stage (or the start) share its samples, while another checkpoint never reuses them
            stage, counts = START_STAGE if step == 0 else f"{FAMILY}--step{step}", []
            benchmarks = curve_benchmarks(recipe, condition, last=i == len(points) - 1)
            scores = pd.concat([eval_stage(run, stage, path, group, write_csv=False, problems=counts)
                                for group, run in eval_calls(recipe, benchmarks, seed)], ignore_index=True)
            curve += tagged(scores.to_dict("records"), fields, key, R.CURVE_KEEP, rl_step=step)
    return RunRows(tagged(scores.to_dict("records"), fields, key, EVAL_KEEP, n_train=len(rows)), curve,
                   tagged(counts, fields, key))


def train_rows(recipe: Recipe, condition: Condition) -> list[dict]:
    """The RL rows a condition trains on: the stage's own split through ``rl_rows`` (at ``gpu``, ``make
    data-full``'s file), any other split (Fig. 4's unfiltered problems) from the data world."""
    own = condition.rows == RL_SPLITS[condition.reward]
    return rl_rows(recipe, condition.reward) if own else load_split(condition.rows, recipe)


def trains(recipe: Recipe, condition: Condition, seed: int, init: Path | str | None) -> bool:
    """Whether the run of ``condition`` with ``seed`` trains here: it has an RL stage, and this machine's artifact
    store does not yet hold that stage's checkpoint (trained by another condition that trains the same, e.g. Fig.
    3's soft arm for Fig. 4's filtered one, or by a run killed after training) nor ``init``, the SFT checkpoint it
    starts from (``trained_sft(recipe)``: None where not trained yet). Trains nothing: ``scripts/rerun.py`` times
    its chunks by the runs that train, as a reused run is stored in a minute."""
    if not condition.train:
        return False
    if init is None:
        return True
    out = rl_stage_dir(rl_recipe(recipe, condition, seed), init, condition.reward, train_rows(recipe, condition))
    return not artifacts.is_complete(out / "final")


def _evaluate(init: Path, calls: Sequence[tuple[list[str], Recipe]], threads: int | None) -> None:
    with torch_threads(threads):
        for benchmarks, run in calls:
            eval_stage(run, START_STAGE, init, benchmarks, write_csv=False)


def evaluated_start(recipe: Recipe, calls: Sequence[tuple[list[str], Recipe]], threads: int | None,
                    workers: int = 1) -> Path:
    """The start checkpoint of every RL run (the recipe's SFT model, like the paper's "earlier SFT model"), with
    each (benchmarks, run recipe) of ``calls`` evaluated on it before any run starts: the runs of one seed share
    that samples file, and parallel runs must not all write it. The runs then read the stored samples, so their
    rows are those of runs made one at a time. ``workers`` > 1 evaluates the calls that many at a time, each in a
    spawned process: every call has a samples file of its own (its eval seed), and each pins ``threads``, so the
    samples are those of one at a time."""
    init = sft_stage(recipe)
    if workers > 1 and len(calls) > 1:
        with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
            for done in tqdm(as_completed([pool.submit(_evaluate, init, [call], threads) for call in calls]),
                             total=len(calls), desc="start evaluations", unit="call"):
                done.result()
    else:
        _evaluate(init, calls, threads)
    return init


def setup(recipe: Recipe, todo: Sequence[tuple[Condition, int]], workers: int = 1) -> Path:
    """What every due RL run shares: the start checkpoint, evaluated for every seed of ``todo`` on the benchmarks
    its runs read there (``evaluated_start``, ``workers`` at a time)."""
    need: dict[int, set[str]] = {}
    for condition, seed in todo:  # the start is a run's first curve point, and its last where it does not train
        need.setdefault(int(seed), set()).update(curve_benchmarks(recipe, condition, last=not condition.train))
    calls = [call for seed, benchmarks in sorted(need.items()) for call in eval_calls(recipe, sorted(benchmarks), seed)]
    return evaluated_start(recipe, calls, RL.get_scale(recipe).torch_threads, workers)


def records(runs_dir: Path, runs: pd.DataFrame) -> pd.DataFrame:
    """The per-update run records (in ``runs_dir``, a recipe's ``runs``) of ``runs`` (one per (experiment,
    condition, seed) that trained), labelled."""
    keys = runs[table.RUN_KEY].drop_duplicates().itertuples(index=False)
    out = [pd.read_csv(record_path(runs_dir, cond, int(seed))).assign(experiment=exp, condition=label, seed=int(seed))
           for exp, label, seed in keys if (cond := RL.get_experiment(exp).condition(label)).train]
    return pd.concat(out, ignore_index=True) if out else pd.DataFrame()


def figures(recipe: Recipe, runs: pd.DataFrame, panels: Sequence[str] = ("heldout", "dynamics")) -> dict:
    """Figures of one experiment's runs, from stored files only: held-out avg@k per saved checkpoint
    ("heldout"), training dynamics ("dynamics") and clipping-case fractions ("clipping") from the run records."""
    exp = RL.get_experiment(runs["experiment"].iloc[0])
    curves = R.curves_of(runs, tables.read(R.CURVES, side_csv(RL.csv(recipe.results))))
    wide = curves.pivot_table(index=["experiment", "condition", "seed", "rl_step"], columns="benchmark",
                              values="mean", sort=False).reset_index()
    benches = [b for b in wide.columns if b not in R.CURVE_KEY]
    seeds = runs["seed"].nunique()
    sizes = runs.drop_duplicates("benchmark").set_index("benchmark")
    read = {b: f"{b}: avg@{int(sizes.loc[b, 'k'])} on {int(sizes.loc[b, 'n_problems'])} problems" for b in benches
            if b in sizes.index}
    out = {}
    for p in panels:
        if p == "heldout":
            out[p] = plots.condition_curves(
                wide, benches, band=True, scale=100, ylabel="held-out avg@k (%)", panel_titles=read,
                title=f"{exp.table} in miniature: held-out accuracy per saved checkpoint, mean and 95% CI over "
                      f"{seeds} seeds (thin: one seed)")
        else:
            clipping = p == "clipping"
            columns, what = (R.CLIPPING, "clipping cases") if clipping else (R.DYNAMICS, "training")
            percent = {c: 100 for c in columns} if clipping else {c: 100 for c in plots.PERCENT_COLUMNS}
            ylabel = ({c: "% of response tokens" for c in columns} | {"clipped_grad_share": "% of Σ|F·A| (all tokens)"}
                      if clipping else None)
            notes = {"clipped_grad_share": "clip_higher, grpo: 0 by construction\n(no gradient through a clipped token)"}
            out[p] = plots.condition_curves(records(recipe.runs, runs), columns, scale=percent, ylabel=ylabel,
                                            panel_titles={c: plots.PERCENT_COLUMNS.get(c, plots.label(c))
                                                          for c in columns},
                                            notes=notes if clipping else None,
                                            title=f"{exp.table} in miniature: {what}, mean over {seeds} seeds "
                                                  "(thin: one seed)")
    return out


def describe(recipe: Recipe) -> pd.DataFrame:
    """The conditions run: stage, RL rows, overrides, RL steps, updates per step and benchmarks."""
    out = []
    for e in EXPERIMENTS.values():
        for c in RL.conditions_for(recipe, e):
            cfg = rl_config(recipe, c) if c.train else None
            out.append({"experiment": e.id, "condition": c.label, "stage": c.reward if c.train else "none",
                        "rows": c.rows if c.train else "-", "overrides": ", ".join(f"{k}={v}" for k, v in c.overrides),
                        "steps": cfg.max_steps if cfg else 0, "updates": cfg.updates_per_step if cfg else 0,
                        "benchmarks": " ".join(RL.benchmarks_at(recipe, c))})
    return pd.DataFrame(out)


def trains_as(recipe: Recipe, condition: Condition) -> str:
    """What a condition trains, seed aside: its RL config and rows (two conditions with the same train once,
    ``rl_stage`` reusing the checkpoint), or the start checkpoint."""
    return run_key(rl=rl_config(recipe, condition), rows=condition.rows) if condition.train else START


RL = Family(FAMILY, EXPERIMENTS, "rl_ablations", condition_hash, run_condition, setup,
            partial(primary_benchmarks, EXPERIMENTS), side=R.CURVES, trains_as=trains_as)
