"""The SFT data ablations in miniature (docs/paper.md §3, Tables 2-5): experiments as data, one SFT + eval per
(condition, seed), results reused by config hash, and a verdict per paper claim: the family ``SFT``
(``klear_lib.ablations.family.Family``), whose own parts are the conditions and ``run_condition``.

Each condition is a rule over the teacher pool (``klear_lib.data.sft_subset``); every condition of an experiment
gets the same row budget (K-Center Greedy), trains the preset's base model with the same SFT config, and is
evaluated with the same (cheaper) eval config. Seeds vary the subset selection, the SFT data order and the
evaluation sampling; the base model's initialisation is the preset's, shared by every run.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from functools import partial
from typing import Sequence

import pandas as pd

from klear_lib.ablations.family import (EVAL_KEEP, NOT_IN_PAPER, Experiment, Family, Named, RunRows,
                                       primary_benchmarks, rule, run_key, stage_configs, tagged)
from klear_lib.configs import Recipe
from klear_lib.configs.study import SFTScale
from klear_lib.data import load_split, sft_subset
from klear_lib.data.teachers import without_checks
from klear_lib.pipeline import eval_stage, sft_stage
from klear_lib.seeding import py_rng, torch_threads

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Condition(Named):
    """One SFT data condition: ``subset`` holds the ``sft_subset`` kwargs except ``budget`` and ``seed``, and
    optionally ``strip_checks`` (the selected rows' traces without their self-checks, ``teachers.without_checks``)."""

    experiment: str                           # "table2"
    label: str                                # "hard/mixed"
    subset: tuple[tuple[str, object], ...]    # (("ability", "math"), ("difficulty", "hard"), ...)
    benchmarks: tuple[str, ...]               # miniature benchmark names (mapped at full: SFTScale.benchmarks)
    paper_setting: str                        # model_or_setting of this condition in results/reported.csv
    claim: str                                # the paper's claim the condition takes part in
    fixed_prompts: bool = False               # Table 3: every teacher answers the same prompts

    @property
    def kwargs(self) -> dict:
        """The ``sft_subset`` keyword arguments."""
        return dict(self.subset)


BOTH = ("tiny_aime", "tiny_lcb")  # math-trained models are evaluated on both, like the paper (docs/paper.md §3)
CLAIM2 = ("easy prompts: only-correct traces beat mixed; hard prompts: mixed (correct + incorrect) traces beat "
          "only-correct (docs/paper.md §3 Table 2)")
CLAIM3 = "the strongest teacher gives the best student on the same prompts (docs/paper.md §3 Table 3)"
CLAIM4 = "math: the top-1/top-2 sources beat mixing in lower-ranked ones at a fixed budget (docs/paper.md §3 Table 4)"
CLAIM5 = "code: the top-1/top-2 sources beat mixing in lower-ranked ones at a fixed budget (docs/paper.md §3 Table 5)"
# Miniature teacher pairs (math, code) by rank, standing in for the paper's teachers, strongest first.
TEACHER_PAIRS = {"rank1": ("reflective", "code_reflective", "DeepSeek-R1-0528"),
                 "rank2": ("careful", "code_stepwise", "DeepSeek-R1-0120"),
                 "rank3": ("mixed", "code_mixed", "QwQ-32B")}


def _table2() -> Experiment:
    """Easy vs hard prompts x only-correct vs mixed traces, math, the top-3 math teachers (miniature scale)."""
    conds = tuple(
        Condition("table2", f"{d}/{c}", (("ability", "math"), ("top_k", 3), ("difficulty", d), ("correctness", c)),
                  BOTH, f"{d.title()}: {'Only True' if c == 'only_correct' else 'Mixed'}", CLAIM2)
        for d in ("easy", "hard") for c in ("only_correct", "mixed"))
    return Experiment("table2", "Table 2", CLAIM2, conds,
                      (("easy/only_correct", "easy/mixed"), ("hard/mixed", "hard/only_correct")), ("tiny_aime",))


def _table3() -> Experiment:
    """One teacher pair per condition (math + code), all answering the same fixed prompts; beyond the paper,
    ``rank1/no_checks``: the rank-1 traces with their self-checks taken out (not in any verdict; notebook 05)."""
    conds = tuple(Condition("table3", name, (("teachers", (m, c)),), BOTH, paper, CLAIM3, fixed_prompts=True)
                  for name, (m, c, paper) in TEACHER_PAIRS.items())
    m, c, _ = TEACHER_PAIRS["rank1"]
    no_checks = Condition("table3", "rank1/no_checks", (("teachers", (m, c)), ("strip_checks", True)), BOTH,
                          NOT_IN_PAPER, CLAIM3, fixed_prompts=True)
    return Experiment("table3", "Table 3", CLAIM3, conds + (no_checks,), (("rank1", "rank2"), ("rank1", "rank3")),
                      BOTH)


def _top_k(exp: str, ability: str, ks: Sequence[int], benchmarks, claim: str) -> tuple[Condition, ...]:
    return tuple(Condition(exp, f"top{k}", (("ability", ability), ("top_k", k), ("correctness", "all")),
                           benchmarks, f"Top{k}", claim) for k in ks)


EXPERIMENTS = {e.id: e for e in (
    _table2(),
    _table3(),
    Experiment("table4", "Table 4", CLAIM4, _top_k("table4", "math", (1, 2, 4, 6), BOTH, CLAIM4),
               (("top1", "top4"), ("top1", "top6"), ("top2", "top4"), ("top2", "top6")), ("tiny_aime",)),
    # A code-only miniature model cannot answer math prompts, so Table 5 is read on tiny_lcb only.
    Experiment("table5", "Table 5", CLAIM5, _top_k("table5", "code", (1, 2, 4), ("tiny_lcb",), CLAIM5),
               (("top1", "top4"), ("top2", "top4")), ("tiny_lcb",)),
)}


def run_recipe(recipe: Recipe, seed: int = 0, experiment: str | None = None) -> Recipe:
    """The recipe of an SFT ablation run of ``experiment``: the scale's SFT and eval overrides (with the
    experiment's own, ``SFTScale.per_experiment``), and the run's seed."""
    scale = SFT.get_scale(recipe, experiment)
    return recipe.replace(sft={**scale.sft, "seed": seed}, eval={**scale.eval, "seed": seed})


def condition_hash(recipe: Recipe, condition: Condition) -> str:
    """A condition's identity (``run_key``): its run's configs, its rows' rule and budget, its benchmarks."""
    scale = SFT.get_scale(recipe, condition.experiment)
    return run_key(**stage_configs(run_recipe(recipe, experiment=condition.experiment)), condition=rule(condition),
                   budget=scale.budget.get(condition.experiment),
                   prompts=scale.prompts if condition.fixed_prompts else None,
                   benchmarks=SFT.benchmarks_at(recipe, condition))


def fixed_prompt_rows(pool: Sequence[dict], prompts: dict, seed: int) -> list[dict]:
    """The pool rows of ``prompts[ability]`` prompts per ability, drawn with ``py_rng(seed, "ablation", ...)``."""
    chosen: set[str] = set()
    for ability, n in sorted(prompts.items()):
        items = sorted({r["item_id"] for r in pool if r["ability"] == ability})
        if n > len(items):
            raise ValueError(f"fixed prompts: {n} {ability} prompts asked, the pool has {len(items)}")
        chosen |= set(py_rng(seed, "ablation", "fixed_prompts", ability).sample(items, n))
    return [r for r in pool if r["item_id"] in chosen]


def condition_rows(pool: Sequence[dict], condition: Condition, scale: SFTScale, seed: int) -> list[dict]:
    """The SFT rows of ``condition`` at ``scale``; fewer rows than the budget raises (budgets must be equal)."""
    pool = fixed_prompt_rows(pool, scale.prompts, seed) if condition.fixed_prompts else pool
    budget, kwargs = scale.budget.get(condition.experiment), condition.kwargs
    strip = kwargs.pop("strip_checks", False)
    rows = sft_subset(pool, **kwargs, budget=budget, seed=seed)
    rows = [_without_checks(r) for r in rows] if strip else rows
    if budget is not None and len(rows) < budget:
        raise ValueError(f"{condition.experiment} {condition.label}: {len(rows)} rows left for a budget of "
                         f"{budget}; lower the budget in klear_lib.configs.study.SFT_ABLATIONS")
    if not rows:
        raise ValueError(f"{condition.experiment} {condition.label}: no rows")
    return rows


def _without_checks(row: dict) -> dict:
    """``row`` with its trace stripped of self-checks, under a new id: checkpoints are keyed by the ids of their
    rows (``pipeline.rows_fingerprint``), so a changed row must not keep its id."""
    *context, answer = row["messages"]
    content = without_checks(answer["content"], row["ability"])
    return {**row, "id": f"{row['id']}/no_checks", "messages": [*context, {**answer, "content": content}]}


def run_condition(recipe: Recipe, condition: Condition, seed: int, pool: Sequence[dict] | None = None) -> RunRows:
    """Train (or reuse the checkpoint of) one condition with one seed, evaluate it: one row per benchmark/metric,
    and the per-problem counts."""
    pool = load_split("sft_pool", recipe) if pool is None else pool
    scale, run = SFT.get_scale(recipe, condition.experiment), run_recipe(recipe, seed, condition.experiment)
    rows = condition_rows(pool, condition, scale, seed)
    name = SFT.run_name(condition, seed)
    log.info("%s: %d SFT rows", name, len(rows))
    counts, key, fields = [], condition_hash(recipe, condition), condition.fields(seed)
    with torch_threads(scale.torch_threads):
        ckpt = sft_stage(run, rows, name=name)
        scores = eval_stage(run, name.replace("/", "--"), ckpt, SFT.benchmarks_at(recipe, condition),
                            write_csv=False, problems=counts)
    return RunRows(tagged(scores.to_dict("records"), fields, key, EVAL_KEEP, n_train=len(rows)),
                   problems=tagged(counts, fields, key))


def describe(recipe: Recipe) -> pd.DataFrame:
    """The conditions run: subset rule, budget (or fixed prompts) and benchmarks."""
    scale = SFT.get_scale(recipe)
    return pd.DataFrame([{
        "experiment": c.experiment, "condition": c.label,
        "subset": ", ".join(f"{k}={'+'.join(v) if isinstance(v, tuple) else v}" for k, v in c.subset),
        "budget": (f"prompts {'+'.join(f'{v} {k}' for k, v in sorted(scale.prompts.items()))}" if c.fixed_prompts
                   else str(scale.budget.get(c.experiment))),
        "benchmarks": " ".join(SFT.benchmarks_at(recipe, c)), "paper": c.paper_setting,
    } for e in EXPERIMENTS.values() for c in SFT.conditions_for(recipe, e)])


# The context every SFT run shares (``Family.setup``): the teacher pool of the recipe's world.
SFT = Family("ablations_sft", EXPERIMENTS, "sft_ablations", condition_hash, run_condition,
             lambda recipe, todo, workers=1: load_split("sft_pool", recipe), partial(primary_benchmarks, EXPERIMENTS))
