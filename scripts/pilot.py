"""Pilots of the study re-run (issue 40): runs drawn before its pre-registration, to choose the benchmarks each
claim is read on (the models in the 25-75% band) and the seeds per arm (from the spread between seeds). No verdict
reads a pilot row: the pilots' RL seeds (1000 and up) are none of the sweep's, and their rows live apart.

    .venv/bin/python scripts/pilot.py stages                      # pilot 1: the main job's stages, seed 0
    .venv/bin/python scripts/pilot.py fig2 --seeds 1000 1001 1002 1003 --workers 2   # pilot 2: Fig. 2 over seeds
    .venv/bin/python scripts/pilot.py spread                      # pilot 2's spread and the seeds it implies
    .venv/bin/python scripts/pilot.py code --seeds 1000 1001 1002 1003 --workers 2   # pilot 3: Figs. 3-4 over seeds
    .venv/bin/python scripts/pilot.py spread --of code            # pilot 3's spread
    .venv/bin/python scripts/pilot.py math --seeds 1000 1001 1002 1003 --workers 2   # pilot 4: Fig. 5, Table 6
    .venv/bin/python scripts/pilot.py spread --of math            # pilot 4's spread
    .venv/bin/python scripts/pilot.py main --seeds 1000 1001 1002 1003 --workers 2   # pilot 5: main job + control
    .venv/bin/python scripts/pilot.py spread --of main            # pilot 5's spread
    .venv/bin/python scripts/pilot.py sft --seeds 1000 1001 --workers 2   # pilot 6: the SFT Tables 2-5
    .venv/bin/python scripts/pilot.py spread --of sft             # pilot 6's spread (math readings; sft_code: code)
    .venv/bin/python scripts/pilot.py sft --epochs 20 --seeds 1000 1001 --workers 2   # pilot 6 at 20 epochs
    .venv/bin/python scripts/pilot.py spread --of sft --epochs 20   # its spread, beside its rows

``stages`` trains the main job's SFT, math RL and code RL (RL seed 0) and reads each on every held-out split;
``fig2`` runs Fig. 2's arms of the GPPO-vs-GRPO dispute (gppo, clip_higher, grpo) from that SFT model, as the RL
ablations run them at tiny, read on the candidate benchmarks at the start and the end (step 30). Rows go to
``results/<preset>/pilot/`` (per-problem counts in ``problems/<experiment>.csv``, with the machine and numerics mode
that drew them); checkpoints, samples and run records stay in the artifact store (a scratch recipe), so none of the
study's committed files changes. Both resume: a finished stage, run or evaluation is reused. ``spread`` reads only
the committed per-problem counts of pilot 2 (no model): for each candidate reading, the arms' rates, the paired
differences per seed and their spread, the evaluation noise in it, the paper's effect carried to the pilot's base
rate and the seeds per arm for 80% power, at the pilot's avg@4 and projected to the re-run's avg@16
(``fig2_spread.csv``). ``code`` is pilot 3, the same for the code claims (Fig. 3: soft against hard code reward;
Fig. 4: test-filtered against unfiltered problems), read on the held-out code tiers 4 and 5 that pilot 1's reading
of ``tiny_lcb`` called for; ``spread --of code`` writes ``code_spread.csv``. ``math`` is pilot 4, for the other
math claims (Fig. 5: zero-advantage groups dropped against kept; Table 6: the SFT-loss weight α = 0.1 against 0, 0.05
and 0.2), read like pilot 2. Their claimed arm (filtered, α = 0.1) is the RL default, so it trains as pilot 2's
``gppo`` and reuses its runs; ``spread --of math`` writes ``math_spread.csv``. ``main`` is pilot 5, for the main
job's headline: its math RL then code RL from the SFT model, with the task's reward and with the random-reward
control, every stage read on math tiers 2-3 and code tier 4; ``spread --of main`` writes ``main_spread.csv``.
``sft`` is pilot 6, for the SFT data ablations (Tables 2-5) as the tiny SFT scale trains them (the same rows and SFT
config, at the 10 epochs the scale had when pilot 6 was first drawn; ``--epochs`` sets another count), read on every
problem of easier candidates than the earlier design's (math tiers 1 and 2, code ``tiny_lcb`` and tier 4, avg@4),
because its models sat at 1-14% there; the math-trained models of Tables 2 and 4 are read on math only.
``spread --of sft`` (math: Tables 2-4) and ``--of sft_code`` (code: Tables 3 and 5) write ``sft_spread.csv`` and
``sft_code_spread.csv``.
"""
from __future__ import annotations

import argparse
import dataclasses
import math

import klear_lib  # noqa: F401  (first: the numerics mode is set before torch, MKL or NumPy load)

PILOT1 = "pilot1"
SPLITS = ("math_eval_t1", "math_eval_t2", "math_eval_t3", "math_eval_t4", "tiny_aime", "tiny_lcb",
          "code_eval_t4", "code_eval_t5")  # the code ones added after a first reading put tiny_lcb at the ceiling
FIG2_ARMS = ("gppo", "clip_higher", "grpo")     # the two disputes: GPPO vs clip-higher (paper), GRPO vs GPPO (DGPO)
FIG2_READ = ("math_eval_t2", "math_eval_t3")  # pilot 1: tiers 2-3 in band at every stage (tiny_aime, below it,
                                              # is what the stored Fig. 2 rows read; its spread is known from them)


def scratch_recipe(preset: str, **stages):
    from klear_lib.configs import recipe
    return dataclasses.replace(recipe(preset, **stages), scratch=True)


def stages(preset: str, k: int) -> None:
    """Pilot 1: SFT, then math RL and code RL with RL seed 0 (the main job's recipe), each read on ``SPLITS`` at
    avg@``k`` on every problem of the split."""
    from klear_lib import tables
    from klear_lib.configs import config_hash
    from klear_lib.pipeline import eval_stage, rl_stage, sft_stage
    from klear_lib.results import PROBLEMS, problems_csv

    r = scratch_recipe(preset, eval={"k_math": k, "k_code": k, "max_problems": None})
    sft = sft_stage(r)
    rl_math = rl_stage(r, sft, "math")
    models = {"sft": sft, "rl_math": rl_math, "rl_code": rl_stage(r, rl_math, "code")}
    out = problems_csv(_pilot_dir(preset), PILOT1)
    for stage, path in models.items():
        counts: list[dict] = []
        eval_stage(r, stage, path, SPLITS, write_csv=False, problems=counts)  # the label seeds the sampling
        tables.upsert_file(PROBLEMS, [{"experiment": PILOT1, "condition": stage, "seed": r.eval.seed, **c,
                                       "config_hash": config_hash(r.eval)} for c in counts], out)
    print(f"wrote {out}")


def fig2(preset: str, seeds: list[int], workers: int) -> None:
    """Pilot 2: Fig. 2's disputed arms for ``seeds``, each read at the start and after its 30 steps on
    ``FIG2_READ`` (every problem, avg@4, the tiny RL ablations' evaluation)."""
    # the tiny scale's runs, with one held-out point at the end (save_steps = 30, the run's length) read on the
    # candidate benchmarks, and these arms only
    _run_arms(preset, {"fig2": FIG2_ARMS}, seeds, workers, curve_every=30, benchmarks={"tiny_aime": FIG2_READ})


def _run_arms(preset: str, arms: dict, seeds: list[int], workers: int, **scale) -> None:
    """Each experiment of ``arms`` (its arms only) for ``seeds``, on the tiny RL ablations' scale with ``scale``'s
    changes, in a scratch recipe; rows to ``<pilot dir>/<experiment>.csv``."""
    from klear_lib.ablations.rl import RL
    from klear_lib.configs.study import RL_ABLATIONS

    changed = dataclasses.replace(RL_ABLATIONS[preset], arms=arms, **scale)
    r = scratch_recipe(preset, study={"rl_ablations": changed})
    for experiment in arms:
        path = _pilot_dir(preset) / f"{experiment}.csv"
        rows = RL.run_experiment(r, experiment, seeds=seeds, path=path, workers=workers)
        print(f"wrote {path}: {len(rows)} rows")


CODE_ARMS = {"fig3": ("soft", "hard"), "fig4": ("filtered", "unfiltered")}
CODE_READ = ("code_eval_t4", "code_eval_t5")


def code(preset: str, seeds: list[int], workers: int) -> None:
    """Pilot 3: the arms of Figs. 3 and 4 for ``seeds``, each read at the start and after its 10 code steps on
    ``CODE_READ`` (every problem, avg@4, the tiny RL ablations' evaluation)."""
    from klear_lib.configs.study import RL_ABLATIONS

    # the tiny scale's code runs (10 steps), with one held-out point at the end, read on the candidate benchmarks
    base = RL_ABLATIONS[preset]
    per = {**base.per_experiment, **{e: {**base.per_experiment.get(e, {}), "save_steps": 10} for e in CODE_ARMS}}
    _run_arms(preset, CODE_ARMS, seeds, workers, curve_every=10, per_experiment=per,
              benchmarks={"tiny_lcb": CODE_READ})


# pilot 4: the arms of Fig. 5 and Table 6; "filtered" and "a0.1" are the RL defaults, so they are pilot 2's gppo runs
MATH_ARMS = {"fig5": ("filtered", "unfiltered"), "table6": ("a0.1", "a0", "a0.05", "a0.2")}


def math_claims(preset: str, seeds: list[int], workers: int) -> None:
    """Pilot 4: the arms of Fig. 5 and Table 6 for ``seeds``, read like pilot 2 (start and step 30, ``FIG2_READ``,
    every problem, avg@4); the runs their claimed arm shares with pilot 2's ``gppo`` are reused, not redrawn."""
    _run_arms(preset, MATH_ARMS, seeds, workers, curve_every=30, benchmarks={"tiny_aime": FIG2_READ})


# pilot 5: the main job (math RL, then code RL, from the SFT model) with the task's reward and with the random-reward
# control, as notebook 03 trains them (klear_lib.pipeline.rl_seeds with a control); the control's rows are condition
# "random/<stage>" (blind coin flips) or "format/<stage>" (the task reward's format scores kept)
# the in-band candidates of the math and code readings (code_eval_t5 added in session 30: code RL lifts tier 4 past 75%)
MAIN_READ = ("math_eval_t2", "math_eval_t3", "code_eval_t4", "code_eval_t5")
MAIN_PILOT = "main"


MAIN_CONTROLS = {"blind": "random", "format": "format"}  # control -> its rows' condition prefix


def main_job(preset: str, seeds: list[int], workers: int, k: int, control: str = "blind") -> None:
    """Pilot 5: the main job's RL and its random-reward control for ``seeds``, ``workers`` seeds at a time (one
    torch thread each), every stage read on ``MAIN_READ`` (every problem, avg@``k``). The SFT model is read once
    (pilot 1's reading, reused); both arms of a seed are read under the same stage labels, so the same sampling
    seeds. Conditions ``reward/<stage>`` and ``MAIN_CONTROLS[control]/<stage>``."""
    from concurrent.futures import ProcessPoolExecutor, as_completed
    import multiprocessing

    from klear_lib import tables
    from klear_lib.pipeline import sft_stage
    from klear_lib.results import PROBLEMS, problems_csv

    r = _main_recipe(preset, k)
    sft = sft_stage(r)
    out = problems_csv(_pilot_dir(preset), MAIN_PILOT)
    tables.upsert_file(PROBLEMS, _read(r, "sft", sft, condition="sft", seed=r.eval.seed), out)
    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        runs = {pool.submit(_main_run, preset, k, seed, str(sft), control): seed for seed in seeds}
        for done in as_completed(runs):
            tables.upsert_file(PROBLEMS, done.result(), out)  # stored as each seed ends: a killed pilot resumes
            print(f"seed {runs[done]} read", flush=True)
    print(f"wrote {out}")


def _main_recipe(preset: str, k: int):
    return scratch_recipe(preset, eval={"k_math": k, "k_code": k, "max_problems": None})


def _read(r, label: str, path, condition: str, seed: int) -> list[dict]:
    from klear_lib.configs import config_hash
    from klear_lib.pipeline import eval_stage

    counts: list[dict] = []
    eval_stage(r, label, path, MAIN_READ, write_csv=False, problems=counts)  # the label seeds the sampling
    return [{"experiment": MAIN_PILOT, "condition": condition, "seed": seed, **c, "config_hash": config_hash(r.eval)}
            for c in counts]


def _main_run(preset: str, k: int, seed: int, sft: str, control: str) -> list[dict]:
    """One seed, both arms: ``rl_seeds`` (no main seed: no stage of a pilot is registered as the pipeline's own),
    one torch thread, each stage read on ``MAIN_READ`` under its task-reward stage's label."""
    from klear_lib.pipeline import rl_seeds
    from klear_lib.results import CONTROL
    from klear_lib.seeding import torch_threads

    r = _main_recipe(preset, k)
    with torch_threads(1):
        stages = rl_seeds(r, sft, [seed], main_seed=None, control=control)[seed]
        return [row for stage, path in stages.items() for row in _read(
            r, f"{stage.removeprefix(CONTROL)}-s{seed}", path, seed=seed,
            condition=f"{MAIN_CONTROLS[control] if stage.startswith(CONTROL) else 'reward'}/{stage.removeprefix(CONTROL)}")]


# pilot 6: the SFT ablations at the tiny SFT scale, read on candidates easier than the earlier design's (tier 2 and
# tiny_aime, where its models sat at 1-14%); models trained for math (Tables 2 and 4) are read on math only. Tier 3
# added in session 51: at 20 epochs the models trained on hard rows sit near 0 on tier 1 but at 16-24% on tier 2.
SFT_MATH_READ = ("math_eval_t1", "math_eval_t2", "math_eval_t3")
SFT_CODE_READ = ("tiny_lcb", "code_eval_t4")
SFT_GROUPS = {("table2", "table4"): {"tiny_aime": SFT_MATH_READ, "tiny_lcb": ()},
              ("table3", "table5"): {"tiny_aime": SFT_MATH_READ, "tiny_lcb": SFT_CODE_READ}}
SFT_PILOT_EVAL = {"k_math": 4, "k_code": 4, "max_problems": None}  # every problem, 4 samples on both abilities
# the epochs pilot 6 trained without --epochs: the tiny SFT scale's until section 6 of the pre-registration moved it
# to 20 (pilot 6 at 20 epochs, its rows in sft_epochs20/), kept so that the same command redraws the same runs
PILOT6_EPOCHS = {"tiny": 10.0}


def sft_claims(preset: str, seeds: list[int], workers: int, epochs: float | None = None,
               experiments: list[str] | None = None, conditions: list[str] | None = None) -> None:
    """Pilot 6: every condition of Tables 2-5 for ``seeds`` (SFT seeds: subset, data order and sampling), as the
    preset's SFT scale trains them, read on ``SFT_GROUPS``' candidates; rows to ``<pilot dir>/<experiment>.csv``.
    ``epochs`` probes another number of SFT epochs over the same rows (rows to ``<pilot dir>/sft_epochs<E>/``, apart
    from pilot 6's), on ``experiments`` and the condition labels ``conditions`` only when given."""
    from klear_lib.ablations.sft import SFT
    from klear_lib.configs.study import SFT_ABLATIONS

    base = SFT_ABLATIONS[preset]
    first = epochs is None  # pilot 6 as first drawn: its rows in the pilot folder
    epochs = PILOT6_EPOCHS.get(preset) if first else float(epochs)
    sft = base.sft if epochs is None else {**base.sft, "num_epochs": epochs}
    out = _pilot_dir(preset) if first else _sft_epochs_dir(preset, epochs)
    known = {e for group in SFT_GROUPS for e in group}
    if unknown := set(experiments or ()) - known:
        raise SystemExit(f"--experiments: {sorted(unknown)} are not SFT experiments ({sorted(known)})")
    for group, benchmarks in SFT_GROUPS.items():
        # the pilot's own reading and every condition, whatever a registration later gave the scale per experiment
        scale = dataclasses.replace(base, benchmarks=benchmarks, eval={**base.eval, **SFT_PILOT_EVAL}, sft=sft,
                                    per_experiment={}, arms={})
        r = scratch_recipe(preset, study={"sft_ablations": scale})
        for experiment in (e for e in group if not experiments or e in experiments):
            exp = SFT.get_experiment(experiment)
            conds = None if not conditions else [exp.condition(c) for c in conditions]
            path = out / f"{experiment}.csv"
            rows = SFT.run_experiment(r, experiment, seeds=seeds, path=path, workers=workers, conditions=conds)
            print(f"wrote {path}: {len(rows)} rows", flush=True)
            avg = rows[rows.metric == "avg@k"].pivot_table(index=["condition", "seed"], columns="benchmark",
                                                           values="mean")
            print((100 * avg).round(1).to_string(), flush=True)


SWEEP_K = 16  # samples per problem of the re-run's math reading (docs/design.md, "Where the re-run reads its claims")
# Candidate readings of Fig. 2's claims: each held-out split, and tiers 2 and 3 pooled (400 problems)
READINGS = {"math_eval_t2": ("math_eval_t2",), "math_eval_t3": ("math_eval_t3",),
            "math_eval_t23": ("math_eval_t2", "math_eval_t3")}
CODE_READINGS = {"code_eval_t4": ("code_eval_t4",), "code_eval_t5": ("code_eval_t5",),
                 "code_eval_t45": ("code_eval_t4", "code_eval_t5")}
# (better, worse, source table, the source's settings of the two arms (each pair one reading), its benchmarks, the
# size of the claim's Holm family when each claim is read on one benchmark): Fig. 2's three pairs are one family,
# DGPO's claim one of its own (its 1.5B and 7B tables are two readings, as in claims.csv)
DISPUTES = (("gppo", "clip_higher", "Figure 2", (("GPPO (end)", "GRPO w/ Clip-Higher (end)"),), ("aime24", "aime25"),
             3),
            ("grpo", "gppo", "DGPO", (("GRPO (R1-Distill-Qwen-1.5B)", "GPPO (R1-Distill-Qwen-1.5B)"),
                                      ("GRPO (R1-Distill-Qwen-7B)", "GPPO (R1-Distill-Qwen-7B)")), ("math_avg@32",), 1))
# Figs. 3 and 4 are one pair each, read on LiveCodeBench v5 (the analogue of the miniature's code benchmark)
CODE_DISPUTES = (("soft", "hard", "Figure 3", (("soft reward (best)", "hard reward (best)"),), ("lcb_v5",), 1),
                 ("filtered", "unfiltered", "Figure 4", (("test-case filtered (end)", "unfiltered (end)"),),
                  ("lcb_v5",), 1))
# Fig. 5 is one pair read on AIME 2024 (the only benchmark of the figure); Table 6's three pairs are one family, read
# on AIME 2024 and 2025
ALPHA0 = 'α = 0 ("standard GRPO loss")'
MATH_DISPUTES = (("filtered", "unfiltered", "Figure 5",
                  (("zero-advantage filtered (peak)", "unfiltered (range high)"),), ("aime24",), 1),
                 *(("a0.1", worse, "Table 6", (("α = 0.1", setting),), ("aime24", "aime25"), 3)
                   for worse, setting in (("a0", ALPHA0), ("a0.05", "α = 0.05"), ("a0.2", "α = 0.2"))))
# Pilot 5's pairs, each read on math (tiers 2-3) and code (tiers 4, 5 and both pooled): the reward's part of the RL gain (the task's reward
# against each random-reward control, the same stages from the same SFT model) and the RL gain itself (over the SFT
# model, read once for every seed). The paper has no control; both are sized by its RL gain (Table 1: SFT model to
# Klear-Reasoner-8B at 32K), the size they would have if all of the gain came from the reward. Each pair's two
# readings are one Holm family; the paper's benchmarks follow the reading.
MAIN_READINGS = {"math_eval_t23": ("math_eval_t2", "math_eval_t3"), **CODE_READINGS}
RL_GAIN = (("Klear-Reasoner-8B (32K)", "Klear-Reasoner-8B-SFT"),)
MAIN_BENCHES = {"math_eval_t23": ("aime24", "aime25"), **{r: ("lcb_v5", "lcb_v6") for r in CODE_READINGS}}
MAIN_DISPUTES = tuple((f"reward/{stage}", worse, "Table 1", RL_GAIN, MAIN_BENCHES, 2)
                      for stage in ("rl_code", "rl_math")
                      for worse in (*(f"{c}/{stage}" for c in MAIN_CONTROLS.values()), "sft"))
# Pilot 6's pairs: each table's claimed pairs, the paper's readings of its two settings on the analogue's releases,
# the Holm family its claims would form (the table's pairs, once per ability the claim is read on: Table 3 reads
# math and code). Tables 4 and 5 share labels (top1, ...), so math (Tables 2-4) and code (Tables 3, 5) spread apart.
def _sft_disputes(experiments: tuple[str, ...], benches: tuple[str, ...]) -> tuple:
    from klear_lib.ablations.sft import SFT

    return tuple((better, worse, e.table, ((e.condition(better).paper_setting, e.condition(worse).paper_setting),),
                  benches, len(e.pairs) * len(e.primary))
                 for e in map(SFT.get_experiment, experiments) for better, worse in e.pairs)


SFT_READINGS = {**{b: (b,) for b in SFT_MATH_READ}, "math_eval_t12": ("math_eval_t1", "math_eval_t2"),
                "math_eval_t23": ("math_eval_t2", "math_eval_t3")}
SFT_CODE_READINGS = {b: (b,) for b in SFT_CODE_READ}
# pilot -> (the experiments whose per-problem counts it reads, its candidate readings, its pairs, the CSV it writes)
SPREADS = {"fig2": (("fig2",), READINGS, DISPUTES, "fig2_spread.csv"),
           "code": (tuple(CODE_ARMS), CODE_READINGS, CODE_DISPUTES, "code_spread.csv"),
           "math": (tuple(MATH_ARMS), READINGS, MATH_DISPUTES, "math_spread.csv"),
           "main": ((MAIN_PILOT,), MAIN_READINGS, MAIN_DISPUTES, "main_spread.csv"),
           "sft": (("table2", "table3", "table4"), SFT_READINGS, lambda: _sft_disputes(
               ("table2", "table3", "table4"), ("aime24", "aime25")), "sft_spread.csv"),
           "sft_code": (("table3", "table5"), SFT_CODE_READINGS, lambda: _sft_disputes(
               ("table3", "table5"), ("lcb_v5", "lcb_v6")), "sft_code_spread.csv")}


def spread(preset: str, of: str = "fig2", sweep_k: int = SWEEP_K, epochs: float | None = None) -> None:
    """A pilot's spread (``of``: pilot 2, ``fig2``, 3, ``code``, 4, ``math``, 5, ``main``, or 6, ``sft`` and
    ``sft_code``): per candidate reading and pair, the paired differences over seeds and what they imply (the design
    of docs/design.md, "Verdicts": the paper's smallest reading carried to our base rate, Bonferroni within the
    claim's family, the spread at its one-sided 80% upper bound), at the pilot's k and projected to ``sweep_k``
    samples per problem. ``epochs``: pilot 6's rows at that SFT epoch count (``sft --epochs``), read and written in
    their own folder."""
    import numpy as np
    import pandas as pd

    from klear_lib import stats as S
    from klear_lib import tables
    from klear_lib.ablations.claims import paper_readings
    from klear_lib.results import PROBLEMS, load_reported, problems_csv

    experiments, readings, disputes, name = SPREADS[of]
    disputes = disputes() if callable(disputes) else disputes  # pilot 6's pairs come from the SFT family
    if epochs is not None and not of.startswith("sft"):
        raise SystemExit(f"--epochs: only pilot 6 (sft, sft_code) probes epoch counts, not {of}")
    folder = _pilot_dir(preset) if epochs is None else _sft_epochs_dir(preset, epochs)
    files = [problems_csv(folder, e) for e in experiments]
    counts = pd.concat([tables.read(PROBLEMS, f) for f in files if f.exists()])  # a pilot still running: its part
    reported = load_reported()
    rows = []
    for reading, splits in readings.items():
        mine = counts[counts["benchmark"].isin(splits)]
        if missing := set(splits) - set(mine["benchmark"]):
            if not mine.empty:  # a pooled reading is never read on part of its splits under its own name
                print(f"{reading}: left out, the pilot has not read {', '.join(sorted(missing))}")
            continue  # a split the pilot has not read yet
        rate = mine.assign(p=mine["correct"] / mine["k"])
        # per (arm, seed): avg@k over the reading's problems and the variance of that estimate from sampling alone
        # (within-problem binomial, unbiased: p(1-p)/(k-1) per problem, over n² problems)
        per_run = rate.groupby(["condition", "seed"]).apply(
            lambda g: pd.Series({"avg": g["p"].mean(), "n": len(g), "k": g["k"].iloc[0],
                                 "noise_var": (g["p"] * (1 - g["p"]) / (g["k"] - 1)).sum() / len(g) ** 2}),
            include_groups=False)
        # a run read on only part of the reading (a stage whose checkpoints were gone when a split was added to
        # the pilot's reading) is left out of it, counted
        partial = per_run["n"] < per_run["n"].max()
        if partial.any():
            print(f"{reading}: {int(partial.sum())} run(s) read on part of it left out: "
                  f"{', '.join(f'{c} s{s}' for c, s in per_run.index[partial])}")
            per_run = per_run[~partial]
        for better, worse, table, settings, benches, family in disputes:
            if not {better, worse} <= set(per_run.index.get_level_values("condition")):
                continue  # an experiment of the pilot not drawn yet
            a, b = per_run.loc[better], per_run.loc[worse]
            if len(b) == 1 and not set(a.index) & set(b.index):  # one reading for every seed: the SFT model
                # its sampling noise shifts every seed's gain alike, so none of it is in the spread between seeds
                b = pd.DataFrame([b.iloc[0].copy()] * len(a), index=a.index).assign(noise_var=0.0)
            seeds = sorted(set(a.index) & set(b.index))
            d = (a.loc[seeds, "avg"] - b.loc[seeds, "avg"]).to_numpy()
            sd = float(np.std(d, ddof=1)) if len(d) > 1 else float("nan")
            noise = float(np.sqrt((a.loc[seeds, "noise_var"] + b.loc[seeds, "noise_var"]).mean()))
            base = float((a.loc[seeds, "avg"].mean() + b.loc[seeds, "avg"].mean()) / 2)
            benches = benches.get(reading, ()) if isinstance(benches, dict) else benches  # per reading (pilot 5)
            reads = [r for pair in settings for r in paper_readings(reported, table, pair, benches)[1]]
            carried = min(S.carry(x / 100, y / 100, base) for _, x, y in reads)
            most = max(S.carry(x / 100, y / 100, base) for _, x, y in reads)  # sizes the power where carried is 0
            alpha = S.ALPHA / family
            upper = S.sd_upper(sd, len(d) - 1)
            # the spread between seeds less the sampling noise in it, and the samples per problem that would bring
            # the noise down to a quarter of the spread (noise² ≤ (train² + noise²)/16, noise² ∝ 1/k)
            train = float(np.sqrt(max(sd ** 2 - noise ** 2, 0.0)))
            k = int(a["k"].iloc[0])
            k_quarter = math.ceil(k * 15 * noise ** 2 / train ** 2) if train > 0 else None
            # the same spread read at the re-run's sweep_k samples per problem (its noise scaled by k/sweep_k), the
            # spread that sizes the pre-registered N (results/tiny/preregistration.md)
            sweep_sd = float(np.hypot(train, noise * math.sqrt(k / sweep_k)))
            sweep_upper = S.sd_upper(sweep_sd, len(d) - 1)
            rows.append({"reading": reading, "better": better, "worse": worse, "seeds": len(d),
                         "problems": int(a["n"].iloc[0]), "k": k,
                         "better_pct": 100 * a.loc[seeds, "avg"].mean(), "worse_pct": 100 * b.loc[seeds, "avg"].mean(),
                         "diff_pts": 100 * d.mean(), "diffs_pts": ";".join(f"{100 * x:+.2f}" for x in d),
                         "sd_pts": 100 * sd, "sd_upper_pts": 100 * upper, "eval_noise_pts": 100 * noise,
                         "noise_share": noise / sd if sd else float("nan"), "sd_train_pts": 100 * train,
                         "k_for_quarter_noise": k_quarter,
                         "paper_readings": ";".join(f"{x:.1f}/{y:.1f}" for _, x, y in reads),
                         "carried_pts": 100 * carried, "family_alpha": alpha,
                         "seeds_80_observed_sd": S.seeds_for_power(carried, sd, alpha),
                         "seeds_80_upper_sd": S.seeds_for_power(carried, upper, alpha),
                         "sweep_k": sweep_k, "sweep_sd_pts": 100 * sweep_sd, "sweep_sd_upper_pts": 100 * sweep_upper,
                         "sweep_noise_share": noise * math.sqrt(k / sweep_k) / sweep_sd if sweep_sd else float("nan"),
                         "sweep_seeds_80_upper_sd": S.seeds_for_power(carried, sweep_upper, alpha),
                         "carried_most_pts": 100 * most,
                         "sweep_seeds_80_upper_sd_most": S.seeds_for_power(most, sweep_upper, alpha)})
    out = pd.DataFrame(rows)
    path = folder / name
    out.to_csv(path, index=False, float_format="%.4g")
    with pd.option_context("display.width", 250, "display.max_columns", 30):
        print(out.drop(columns=["paper_readings"]).to_string(index=False))
    print(f"wrote {path}")


def _pilot_dir(preset: str):
    from klear_lib import paths
    return paths.results_dir(preset) / "pilot"


def _sft_epochs_dir(preset: str, epochs: float):
    return _pilot_dir(preset) / f"sft_epochs{epochs:g}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("pilot", choices=("stages", "fig2", "code", "math", "main", "sft", "spread"))
    ap.add_argument("--of", choices=tuple(SPREADS), default="fig2", help="the pilot whose spread (spread)")
    ap.add_argument("--sweep-k", type=int, default=SWEEP_K, help="samples per problem to project to (spread)")
    ap.add_argument("--preset", default="tiny")
    ap.add_argument("--k", type=int, default=4, help="samples per problem (stages, main)")
    ap.add_argument("--seeds", type=int, nargs="+", default=[1000, 1001, 1002, 1003],
                    help="RL seeds (fig2, code, math, main) or SFT seeds (sft)")
    ap.add_argument("--control", choices=tuple(MAIN_CONTROLS), default="blind",
                    help="the random-reward control (main): coin flips, or the task reward's format scores kept")
    ap.add_argument("--epochs", type=float, help="SFT epochs to probe instead of the preset's (sft; spread of it)")
    ap.add_argument("--experiments", nargs="+", help="only these SFT experiments (sft), e.g. table2")
    ap.add_argument("--conditions", nargs="+", help="only these condition labels (sft), e.g. easy/mixed")
    ap.add_argument("--workers", type=int, default=2,
                    help="runs at a time (fig2, code, math, main, sft; one torch thread each)")
    args = ap.parse_args()
    if args.pilot == "stages":
        stages(args.preset, args.k)
    elif args.pilot == "fig2":
        fig2(args.preset, args.seeds, args.workers)
    elif args.pilot == "code":
        code(args.preset, args.seeds, args.workers)
    elif args.pilot == "math":
        math_claims(args.preset, args.seeds, args.workers)
    elif args.pilot == "main":
        main_job(args.preset, args.seeds, args.workers, args.k, args.control)
    elif args.pilot == "sft":
        sft_claims(args.preset, args.seeds, args.workers, args.epochs, args.experiments, args.conditions)
    else:
        spread(args.preset, args.of, args.sweep_k, args.epochs)


if __name__ == "__main__":  # spawned sweep workers re-import this file
    main()
