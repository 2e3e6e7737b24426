"""The RL ablations in miniature (docs/paper.md §3, Figures 2-5 and Table 6): conditions as RL config overrides, one RL
stage + evaluation per (condition, seed) from the preset's SFT checkpoint, results reused by config hash, held-out
curves over the saved checkpoints, and a verdict per paper claim: the family ``RL``
(``klear_lib.ablations.family.Family``), whose own parts are the conditions and ``run_condition``.

Every run starts from the same SFT checkpoint (``sft_stage(preset)``, like the paper's "earlier SFT model");
seeds vary the RL data order, the rollouts and the evaluation samples. Two conditions whose RL config, data and
start are the same (e.g. Fig. 2's GPPO, Fig. 5's filtered arm and Table 6's α = 0.1) train once: the second
reuses the checkpoint (``rl_stage`` keys it by config, data and start) and gets its run record rebuilt from the
checkpoint's trainer state; evaluation samples are reused per checkpoint too. Runs may go ``workers`` at a time:
each returns its curve points with its table rows and the parent process writes both tables, and the start
checkpoint, which every run with a seed evaluates, is evaluated once before any run starts (``prepare``).
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import pandas as pd

from klear_lib import plots, tables
from klear_lib.ablations import rl_runs as R
from klear_lib.ablations import table
from klear_lib.ablations.family import (
    NOT_IN_PAPER,
    Experiment,
    ExternalClaim,
    Family,
    RunRows,
    mapped_benchmarks,
    problem_rows,
    result_rows,
)
from klear_lib.configs import config_hash, get_config, rl_stage_name, to_dict
from klear_lib.data import load_split
from klear_lib.paths import runs_dir
from klear_lib.pipeline import eval_stage, rl_stage, sft_stage
from klear_lib.seeding import torch_threads

log = logging.getLogger(__name__)
FAMILY = "ablations_rl"
UNFILTERED = "code_rl_unfiltered"  # Fig. 4: code RL problems before the test-case filter (klear_lib.data.world)
START = "start"                    # the label of a condition that evaluates the start checkpoint untrained
START_STAGE = f"{FAMILY}--{START}"  # the stage label of the start's samples, shared by every run of a seed


@dataclass(frozen=True)
class Condition:
    """One RL condition: ``overrides`` of the RL config, the stage (``reward``) and the RL rows it trains on."""

    experiment: str                              # "fig2"
    label: str                                   # "gppo"
    overrides: tuple[tuple[str, object], ...]    # (("loss_type", "gppo"),)
    reward: str                                  # "math" | "code": the stage (its reward, LR and mini-batch)
    rows: str                                    # RL split: "math_rl" | "code_rl" | UNFILTERED
    benchmarks: tuple[str, ...]                  # miniature benchmarks (mapped at full, see Scale)
    paper_setting: str                           # model_or_setting in results/reported.csv
    claim: str
    train: bool = True                           # False: evaluate the start checkpoint (Table 6's first row)

    @property
    def kwargs(self) -> dict:
        """The RL config overrides."""
        return dict(self.overrides)


@dataclass(frozen=True)
class Scale:
    """Sizes of the RL ablations at one preset; the conditions' overrides are the same at every preset."""

    seeds: int = 3                                       # default number of seeds
    reduced: bool = False                                # only the conditions of each first comparison
    rl: dict = field(default_factory=dict)               # RL config overrides for every run
    per_experiment: dict = field(default_factory=dict)   # experiment -> RL overrides (steps, lengths)
    curve_every: int | None = None                       # RL steps between held-out points (sets save_steps)
    curve_primary_only: bool = False                     # points before the last: only the primary benchmarks
    primary_only: tuple[str, ...] = ()                   # experiments whose runs read their primary benchmarks only
    eval: dict = field(default_factory=dict)             # eval config overrides
    eval_per_benchmark: dict = field(default_factory=dict)  # benchmark -> further eval overrides (its own call)
    benchmarks: dict = field(default_factory=dict)       # miniature benchmark -> the benchmarks evaluated instead
    torch_threads: int | None = None                     # pinned per run (None: the process's count)
    fixed_seeds: dict = field(default_factory=dict)      # experiment -> seeds per arm, fixed before any row is drawn


def _steps(math: int, code: int, code_extra: dict | None = None) -> dict:
    """Per-experiment RL overrides: ``math`` steps for the math-RL figures, ``code`` (+ ``code_extra``) for code."""
    return {e: ({"max_steps": code, **(code_extra or {})} if e in ("fig3", "fig4") else {"max_steps": math})
            for e in ("fig2", "fig3", "fig4", "fig5", "table6")}


SCALES = {
    # ci: a smoke test of the whole path (the ci RL preset: 2 steps, a checkpoint per step); one seed, first pairs.
    "ci": Scale(seeds=1, reduced=True),
    # tiny: a quarter of the main run's 120 math steps and half its 20 code steps; a held-out point every 15 math /
    # 5 code steps; transformers backend (no vLLM start-up per checkpoint; perf.csv). Every condition of a seed is
    # read on the same problems with the same sampling seed (common random numbers): all 200 tiny_aime problems
    # at k=4, whose sampling noise (within-problem binomial, the part that does not cancel between two models on
    # the same problems) is ~0.7 points against 1.8-3.2 points between seeds (docs/design.md, "Verdicts");
    # tiny_lcb keeps 100 problems at k=4. Fig. 2 reads tiny_aime only: at one thread a tiny_lcb point (generation
    # plus sandboxed tests) was ~100 s of a ~480 s run, and 50 runs (5 arms x 10 seeds) are the sweep's bulk; held-
    # out code after math RL is read by the main job (notebook 03, rl_math on tiny_lcb).
    "tiny": Scale(seeds=3, per_experiment=_steps(math=30, code=10, code_extra={"save_steps": 5}), curve_every=15,
                  curve_primary_only=True, primary_only=("fig2",),
                  eval={"k_math": 4, "k_code": 4, "backend": "transformers"},
                  eval_per_benchmark={"tiny_lcb": {"max_problems": 100}},
                  torch_threads=1,  # a run's numbers do not depend on how many run at once (WORKERS)
                  # 10 paired seeds per arm for every RL experiment, the count the stored rows hold (the earlier
                  # design added seeds between looks up to 10; docs/design.md, "Verdicts", says why that stopped)
                  fixed_seeds=dict.fromkeys(("fig2", "fig3", "fig4", "fig5", "table6"), 10)),
    "full": Scale(
        seeds=1,                                  # UNVERIFIED: the paper shows one run per setting
        per_experiment={
            "fig2": {"max_steps": 250},           # docs/paper.md §3 Fig. 2 (~250 steps, 32K)
            "fig3": {"max_steps": 100, "max_completion_length": 16384},  # docs/paper.md §3 Fig. 3 (100 steps, 16K)
            "fig4": {"max_steps": 100, "max_completion_length": 16384},  # docs/paper.md §3 Fig. 4 (100 steps, 16K)
            "fig5": {"max_steps": 100},           # docs/paper.md §3 Fig. 5 (to step ~100; UNVERIFIED: the paper starts
                                                  # from an intermediate RL checkpoint, we start from SFT)
            "table6": {"max_steps": 100},         # docs/paper.md §3 Table 6 (100 steps math RL, 32K)
        },
        curve_every=25,                           # UNVERIFIED: the scripts test every 5 steps (docs/paper.md §2.4);
                                                  # 25 bounds the checkpoint storage of an 8B model
        eval={"k_math": 32, "k_code": 4},         # docs/paper.md §4: ablations use avg@32 (AIME), avg@4 (LCB)
        benchmarks={"tiny_aime": ("aime24", "aime25"), "tiny_lcb": ("lcb_v5",)},  # docs/paper.md §3 (Figs 2-5, Tab. 6)
    ),
}

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


# Fig. 2's arena: the paper's three losses, then two arms beyond the paper. "grpo" is DGPO's baseline, GRPO with
# the symmetric clip ε_l = ε_h = 0.2 (docs/paper.md §8); "gppo_b0.25" is GPPO with β_low = 0.25, the default of
# the authors' later general-β code and the low end of their advice (docs/paper.md §1.5).
FIG2_ARMS = (("gppo", {"loss_type": "gppo"}, "GPPO (end)"),
             ("clip_higher", {"loss_type": "clip_higher"}, "GRPO w/ Clip-Higher (end)"),
             ("cispo", {"loss_type": "cispo"}, "CISPO (range low)"),  # Fig. 2 gives CISPO as a range: its low end
             ("grpo", {"loss_type": "clip_higher", "clip_high": 0.2}, NOT_IN_PAPER),
             ("gppo_b0.25", {"loss_type": "gppo", "beta_low": 0.25}, NOT_IN_PAPER))
DGPO_CLAIM = ("GRPO with the symmetric clip beats GPPO on math (DGPO, arXiv 2603.14389, avg@32 on "
              "R1-Distill-Qwen-1.5B and 7B; docs/paper.md §8)")


def _fig2() -> Experiment:
    """GPPO vs GRPO with clip-higher vs CISPO, math RL; held-out math and code (the paper's Fig. 2a-b); with the
    DGPO baseline and a β_low < 1 arm, and DGPO's claim that GRPO beats GPPO."""
    conds = tuple(_cond("fig2", label, over, "math", "math_rl", MATH + CODE, paper, CLAIM2)
                  for label, over, paper in FIG2_ARMS)
    dgpo = ExternalClaim("grpo", "gppo", "DGPO", ("GRPO (R1-Distill-Qwen-1.5B)", "GPPO (R1-Distill-Qwen-1.5B)"),
                         "math_avg@32", DGPO_CLAIM,
                         more_settings=(("GRPO (R1-Distill-Qwen-7B)", "GPPO (R1-Distill-Qwen-7B)"),))
    return Experiment("fig2", "Figure 2", CLAIM2, conds,
                      (("gppo", "clip_higher"), ("gppo", "cispo"), ("cispo", "clip_higher")), MATH, (dgpo,))


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


def rl_benchmarks(scale: Scale, condition: Condition) -> tuple[str, ...]:
    """The benchmarks a run of ``condition`` is read on: its own, or its experiment's primary ones where the scale
    says so (``Scale.primary_only``); each as the scale maps it (at full: the paper's benchmarks)."""
    names = EXPERIMENTS[condition.experiment].primary if condition.experiment in scale.primary_only else None
    cond = condition if names is None else dataclasses.replace(condition, benchmarks=tuple(names))
    return mapped_benchmarks(scale, cond)


def rl_overrides(preset: str, condition: Condition, seed: int = 0) -> dict:
    """The RL config overrides of one run: scale, then experiment sizes, then the condition, then the seed."""
    scale = RL.get_scale(preset)
    curve = {"save_steps": scale.curve_every} if scale.curve_every else {}
    return {**scale.rl, **curve, **scale.per_experiment.get(condition.experiment, {}), **condition.kwargs,
            "seed": seed}


def rl_config(preset: str, condition: Condition, seed: int = 0):
    """The ``RLConfig`` of one run: its condition's RL stage with the condition's overrides."""
    return get_config(rl_stage_name(condition.reward), preset, **rl_overrides(preset, condition, seed))


def eval_overrides(preset: str, seed: int = 0, benchmark: str | None = None) -> dict:
    """The eval config overrides of every RL ablation run (of its reading of ``benchmark``, where the scale sets
    that benchmark's own)."""
    scale = RL.get_scale(preset)
    return {**scale.eval, **scale.eval_per_benchmark.get(benchmark, {}), "seed": seed}


def eval_calls(preset: str, benchmarks: Sequence[str], seed: int) -> list[tuple[list[str], dict]]:
    """``benchmarks`` grouped by their eval overrides: one (benchmarks, overrides) per ``eval_stage`` call."""
    calls: dict[str, tuple[list[str], dict]] = {}
    for bench in benchmarks:
        over = eval_overrides(preset, seed, bench)
        calls.setdefault(json.dumps(over, sort_keys=True), ([], over))[0].append(bench)
    return list(calls.values())


def condition_hash(preset: str, condition: Condition) -> str:
    """A stable hash of everything a condition's result depends on except the seed."""
    rule = {k: v for k, v in to_dict(condition).items() if k not in ("claim", "paper_setting")}  # text only
    scale = RL.get_scale(preset)
    payload = {"condition": rule, "benchmarks": RL.benchmarks_at(condition, preset),
               "rl": config_hash(rl_config(preset, condition)) if condition.train else None,
               "eval": config_hash(get_config("eval", preset, **eval_overrides(preset))),
               **({"eval_per_benchmark": {b: config_hash(get_config("eval", preset, **eval_overrides(preset, 0, b)))
                                          for b in sorted(scale.eval_per_benchmark)}}
                  if scale.eval_per_benchmark else {}),
               "sft": config_hash(get_config("sft", preset)), "data": config_hash(get_config("data", preset)),
               "model": config_hash(get_config("model", preset)), "curve_every": scale.curve_every,
               **({"curve_primary_only": True} if scale.curve_primary_only else {})}
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=list).encode()).hexdigest()[:12]


def start_checkpoint(preset: str) -> Path:
    """The checkpoint every RL ablation starts from: the preset's SFT model (trained once, then reused)."""
    return sft_stage(preset)


def curve_benchmarks(preset: str, condition: Condition, last: bool) -> tuple[str, ...]:
    """The benchmarks read at one curve point: all of the condition's at the last point (or at every point), else
    only those of its experiment's primary benchmarks (``Scale.curve_primary_only``)."""
    every, scale = RL.benchmarks_at(condition, preset), RL.get_scale(preset)
    if last or not scale.curve_primary_only:
        return every
    primary = tuple(b for name in RL.get_experiment(condition.experiment).primary
                    for b in scale.benchmarks.get(name, (name,)))
    return tuple(b for b in every if b in primary)


def evaluate(preset: str, condition: Condition, seed: int, path: Path, stage: str,
             benchmarks: Sequence[str] | None = None, problems: list | None = None) -> pd.DataFrame:
    """``eval_stage`` rows of one checkpoint on ``benchmarks`` (default: the condition's); samples are reused per
    stage and path; ``problems``, a list, receives the per-problem counts."""
    bench = RL.benchmarks_at(condition, preset) if benchmarks is None else benchmarks
    return pd.concat([eval_stage(preset, stage, path, group, write_csv=False, problems=problems, **over)
                      for group, over in eval_calls(preset, bench, seed)], ignore_index=True)


def record_path(preset: str, condition: Condition, seed: int) -> Path:
    """``results/<preset>/runs/ablations_rl/<experiment>/<label>-s<seed>.csv``."""
    return runs_dir(preset) / f"{RL.run_name(condition, seed)}.csv"


def train(preset: str, condition: Condition, seed: int, init: Path, rows: list[dict]) -> list[tuple[int, Path]]:
    """Train (or reuse) the condition's RL stage; its curve points (RL step, checkpoint), start at step 0."""
    if not condition.train:
        return [(0, Path(init))]
    cfg, name = rl_config(preset, condition, seed), RL.run_name(condition, seed)
    final = rl_stage(preset, init, condition.reward, rows, name=name, **rl_overrides(preset, condition, seed))
    R.ensure_record(record_path(preset, condition, seed), final, cfg)
    return [(0, Path(init))] + R.checkpoints(final, cfg.updates_per_step, cfg.max_steps)


def start_benchmarks(preset: str, condition: Condition) -> tuple[str, ...]:
    """The benchmarks a run of ``condition`` reads the start checkpoint on (its first curve point; the only one,
    so also its last, when it does not train)."""
    return curve_benchmarks(preset, condition, last=not condition.train)


def run_condition(preset: str, condition: Condition, seed: int, init: Path | None = None) -> RunRows:
    """Train (or reuse) one condition with one seed from ``init`` (default: ``start_checkpoint``) and evaluate
    every curve point, under the scale's pinned torch threads. Returns the rows of the last point (one per
    benchmark and metric) and the held-out curve; the caller writes both (``Family._save``)."""
    init = start_checkpoint(preset) if init is None else init
    rows = load_split(condition.rows, preset) if condition.train else []
    cfg_hash, curve, scores = condition_hash(preset, condition), [], None
    with torch_threads(RL.get_scale(preset).torch_threads):
        points = train(preset, condition, seed, init, rows)
        for i, (step, path) in enumerate(points):
            # samples are stored per stage label and checkpoint path: one label per step lets conditions that
            # share a stage (or the start) share its samples, while another checkpoint never reuses them
            last, counts = i == len(points) - 1, []
            scores = evaluate(preset, condition, seed, path, START_STAGE if step == 0 else f"{FAMILY}--step{step}",
                              curve_benchmarks(preset, condition, last=last), problems=counts)
            curve += R.curve_rows(scores, condition.experiment, condition.label, seed, step, cfg_hash)
    return RunRows(result_rows(scores, condition.experiment, condition.label, seed, cfg_hash, len(rows)), curve,
                   problem_rows(counts, condition.experiment, condition.label, seed, cfg_hash))


def curves_csv(preset: str, path: Path | str | None = None) -> Path:
    """``results/<preset>/ablations_rl_curves.csv`` (or the curves table beside the ablation table ``path``):
    held-out avg@k / pass@k per saved checkpoint."""
    return RL.side_csv(path or RL.csv(preset))


def setup(preset: str, seeds, path: Path | str) -> Path:
    """What every RL run shares: the start checkpoint."""
    return start_checkpoint(preset)


def prepare(preset: str, todo: Sequence[tuple[Condition, int]], init: Path) -> None:
    """Evaluate the start checkpoint ``init`` for every seed of ``todo`` on the benchmarks its runs read there,
    before they start: the runs of one seed share that samples file, and parallel runs must not all write it.
    The runs then read the stored samples, so their rows are those of runs made one at a time."""
    need: dict[int, set[str]] = {}
    for condition, seed in todo:
        need.setdefault(int(seed), set()).update(start_benchmarks(preset, condition))
    with torch_threads(RL.get_scale(preset).torch_threads):
        for seed, benchmarks in sorted(need.items()):
            for group, over in eval_calls(preset, sorted(benchmarks), seed):
                eval_stage(preset, START_STAGE, init, group, write_csv=False, **over)


def records(preset: str, runs: pd.DataFrame) -> pd.DataFrame:
    """The per-update run records of ``runs`` (one per (experiment, condition, seed) that trained), labelled."""
    out = []
    for exp, label, seed in runs[table.RUN_KEY].drop_duplicates().itertuples(index=False):
        cond = RL.get_experiment(exp).condition(label)
        if cond.train:
            rec = pd.read_csv(record_path(preset, cond, int(seed)))
            out.append(rec.assign(experiment=exp, condition=label, seed=int(seed)))
    return pd.concat(out, ignore_index=True) if out else pd.DataFrame()


def figures(preset: str, runs: pd.DataFrame, panels: Sequence[str] = ("heldout", "dynamics")) -> dict:
    """Figures of one experiment's runs, from stored files only: held-out avg@k per saved checkpoint
    ("heldout"), training dynamics ("dynamics") and clipping-case fractions ("clipping") from the run records."""
    exp = RL.get_experiment(runs["experiment"].iloc[0])
    curves = R.curves_of(runs, tables.read(R.CURVES, curves_csv(preset)))
    wide = R.heldout_wide(curves)
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
            out[p] = plots.condition_curves(records(preset, runs), columns, scale=percent, ylabel=ylabel,
                                            panel_titles={c: plots.PERCENT_COLUMNS.get(c, plots.label(c))
                                                          for c in columns},
                                            notes=notes if clipping else None,
                                            title=f"{exp.table} in miniature: {what}, mean over {seeds} seeds "
                                                  "(thin: one seed)")
    return out


def describe(preset: str) -> pd.DataFrame:
    """The conditions run at ``preset``: stage, RL rows, overrides, RL steps, updates per step and benchmarks."""
    out = []
    for e in EXPERIMENTS.values():
        for c in RL.conditions_for(e, preset):
            cfg = rl_config(preset, c) if c.train else None
            out.append({"experiment": e.id, "condition": c.label, "stage": c.reward if c.train else "none",
                        "rows": c.rows if c.train else "-", "overrides": ", ".join(f"{k}={v}" for k, v in c.overrides),
                        "steps": cfg.max_steps if cfg else 0, "updates": cfg.updates_per_step if cfg else 0,
                        "benchmarks": " ".join(RL.benchmarks_at(c, preset))})
    return pd.DataFrame(out)


def run_identity(preset: str, condition: Condition) -> str:
    """What a condition's runs are, seed aside: its RL config and rows (two conditions with the same train once,
    ``rl_stage`` reusing the checkpoint), or the start checkpoint."""
    return f"{config_hash(rl_config(preset, condition))}|{condition.rows}" if condition.train else START


RL = Family(FAMILY, "RL", EXPERIMENTS, SCALES, condition_hash, run_condition, setup, prepare=prepare,
            side=R.CURVES, side_suffix="_curves", identity=run_identity, benchmarks=rl_benchmarks)
