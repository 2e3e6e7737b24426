"""RL ablations (Figs. 2-5, Table 6), the stability map (issue 8) and the claims table: conditions as config
overrides, reuse by config hash, curves and run records, the collapse criterion, and one real ci run."""
from __future__ import annotations

import dataclasses
import json
import os
from contextlib import contextmanager
from functools import partial
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from klear_lib import artifacts, paths, stats, tables
from klear_lib.ablations import claims as C
from klear_lib.ablations import family as F
from klear_lib.ablations import rl, sft, table
from klear_lib.ablations import rl_runs as R
from klear_lib.ablations import stability as S
from klear_lib.configs import recipe
from klear_lib.configs.study import RL_ABLATIONS, RLScale
from klear_lib.data import load_split
from klear_lib.results import PROBLEMS, load_reported
from klear_lib.seeding import torch_threads


CI, TINY, FULL = recipe("ci"), recipe("tiny"), recipe("full")


def _with(r, **study):
    """``r`` with some of its study's fields replaced (a family's scale)."""
    return r.replace(study=study)


def _row(exp, cond, seed, bench, mean, cfg_hash="h1", metric="avg@k"):
    return {"experiment": exp, "condition": cond, "seed": seed, "benchmark": bench, "metric": metric, "k": 4,
            "mean": mean, "stderr": 0.01, "ci_low": max(0.0, mean - 0.02), "ci_high": min(1.0, mean + 0.02),
            "n_problems": 100, "n_samples": 400, "n_train": 40, "config_hash": cfg_hash}


# --- conditions as RL config overrides -------------------------------------------------------------------------

def test_conditions_map_to_their_config_overrides():
    fig2, fig3, fig5, t6 = (rl.EXPERIMENTS[e] for e in ("fig2", "fig3", "fig5", "table6"))
    assert rl.rl_config(CI, fig2.condition("cispo")).loss_type == "cispo"
    assert rl.rl_config(CI, fig2.condition("clip_higher"), seed=3).seed == 3
    assert rl.rl_config(CI, fig3.condition("hard")).code_reward_mode == "hard"
    assert rl.rl_config(CI, fig5.condition("unfiltered")).filter_zero_adv is False
    assert rl.rl_config(CI, t6.condition("a0.05")).sft_alpha == 0.05
    assert rl.EXPERIMENTS["fig4"].condition("unfiltered").rows == rl.UNFILTERED
    assert not t6.condition(rl.START).train
    grpo, beta = rl.rl_config(CI, fig2.condition("grpo")), rl.rl_config(CI, fig2.condition("gppo_b0.25"))
    assert (grpo.loss_type, grpo.clip_low, grpo.clip_high) == ("clip_higher", 0.2, 0.2)  # DGPO's symmetric clip
    assert (beta.loss_type, beta.beta_low, beta.beta_high) == ("gppo", 0.25, 1.0)
    assert fig2.external[0].better == "grpo" and ("grpo", "gppo") in fig2.pairs
    default = rl.rl_config(CI, fig2.condition("gppo"))  # the recipe itself: shared by Fig. 5 and Table 6
    assert rl.rl_config(CI, fig5.condition("filtered")) == default == rl.rl_config(CI, t6.condition("a0.1"))


def test_tiny_reads_math_on_the_pooled_tiers_at_avg16_and_a_capped_tiny_lcb_in_calls_of_their_own():
    # the re-run's reading (docs/design.md, "Where the re-run reads its claims"): tiny_aime maps to tiers 2-3 pooled
    gppo = rl.EXPERIMENTS["fig2"].condition("gppo")
    assert rl.RL.benchmarks_at(TINY, gppo) == ("math_eval_t23",)
    calls = rl.eval_calls(TINY, ["math_eval_t23", "tiny_lcb"], seed=2)
    assert [c[0] for c in calls] == [["math_eval_t23"], ["tiny_lcb"]]
    assert (calls[0][1].eval.max_problems, calls[0][1].eval.k_math) == (None, 16)
    assert (calls[1][1].eval.max_problems, calls[1][1].eval.k_code) == (100, 4)
    assert all(c[1].eval.seed == 2 for c in calls)  # one sampling seed for every condition of a seed
    assert rl.eval_calls(CI, ["tiny_aime", "tiny_lcb"], seed=0) == [(["tiny_aime", "tiny_lcb"],
                                                                     rl.eval_recipe(CI, 0))]


def test_scales_set_steps_curves_and_the_papers_full_settings():
    fig2, fig3 = rl.EXPERIMENTS["fig2"].condition("gppo"), rl.EXPERIMENTS["fig3"].condition("soft")
    tiny2, tiny3 = rl.rl_config(TINY, fig2), rl.rl_config(TINY, fig3)
    assert (tiny2.max_steps, tiny2.save_steps, tiny2.updates_per_step) == (30, 30, 8)  # Fig. 2: read at its end
    # Fig. 5 and Table 6 at their end too: their claimed arm (the RL default) is then Fig. 2's gppo run, trained and
    # read once (results/tiny/preregistration.md, section 3)
    shared = [rl.EXPERIMENTS[e].condition(c) for e, c in (("fig5", "filtered"), ("table6", "a0.1"))]
    assert all(rl.rl_config(TINY, c).save_steps == 30 for c in shared)
    assert {rl.trains_as(TINY, c) for c in (fig2, *shared)} == {rl.trains_as(TINY, fig2)}
    assert rl.trains_as(TINY, rl.EXPERIMENTS["fig5"].condition("unfiltered")) != rl.trains_as(TINY, fig2)
    assert (tiny3.max_steps, tiny3.save_steps, tiny3.updates_per_step) == (10, 10, 4)  # Figs. 3-4: at their end
    full2, full3 = rl.rl_config(FULL, fig2), rl.rl_config(FULL, fig3)
    assert (full2.max_steps, full2.learning_rate, full2.updates_per_step) == (250, 1e-6, 8)
    assert (full3.max_steps, full3.learning_rate, full3.updates_per_step) == (100, 5e-7, 4)
    assert full3.max_completion_length == 16384
    assert rl.RL.benchmarks_at(FULL, fig2) == ("aime24", "aime25", "lcb_v5")


@pytest.mark.parametrize("family", [sft.SFT, rl.RL], ids=["sft", "rl"])
def test_every_comparison_names_defined_conditions_and_paper_settings(family):
    reported = load_reported()
    for exp in family.experiments.values():
        labels = {c.label for c in exp.conditions}
        assert all(b in labels and w in labels for b, w in exp.comparisons), exp.id
        settings = set(reported[reported["table"] == exp.table]["model_or_setting"])
        beyond = {c.label for c in exp.conditions if c.paper_setting == sft.NOT_IN_PAPER}
        assert {c.paper_setting for c in exp.conditions if c.label not in beyond} <= settings, exp.id
        assert not beyond & {label for pair in exp.comparisons for label in pair}, exp.id  # no verdict on them


@pytest.mark.parametrize("family", [sft.SFT, rl.RL], ids=["sft", "rl"])
def test_ci_runs_the_first_pair_only_and_tiny_runs_the_registered_arms(family):
    for exp in family.experiments.values():
        assert {c.label for c in family.conditions_for(CI, exp)} == set(exp.comparisons[0])
        # tiny: all, except Table 3's condition beyond the paper, which its registration does not run (section 7)
        beyond = {"rank1/no_checks"} if exp.id == "table3" else set()
        assert family.conditions_for(TINY, exp) == tuple(c for c in exp.conditions if c.label not in beyond)
    with pytest.raises(KeyError, match="known"):
        family.get_experiment("table9")
    if family is rl.RL:  # gpu runs Fig. 2's arena only (tests/test_gpu_notebooks.py)
        assert [e for e in family.experiments if family.conditions_for(recipe("gpu"), e)] == ["fig2"]
        return
    with pytest.raises(KeyError, match="runs no"):
        family.get_scale(recipe("gpu"))


def test_tiny_reads_secondary_benchmarks_at_the_last_curve_point_only():
    gppo, soft = rl.EXPERIMENTS["fig2"].condition("gppo"), rl.EXPERIMENTS["fig3"].condition("soft")
    assert rl.curve_benchmarks(TINY, gppo, last=False) == ("math_eval_t23",)
    assert rl.curve_benchmarks(TINY, gppo, last=True) == ("math_eval_t23",)  # tiny: Fig. 2 reads its primary only
    assert rl.curve_benchmarks(CI, gppo, last=True) == ("tiny_aime", "tiny_lcb")
    assert rl.curve_benchmarks(TINY, soft, last=True) == ("code_eval_t4",)  # tiny_lcb's reading at tiny
    assert rl.curve_benchmarks(TINY, soft, last=False) == ("code_eval_t4",)  # the primary benchmark is kept
    assert rl.curve_benchmarks(CI, gppo, last=False) == ("tiny_aime", "tiny_lcb")
    assert rl.curve_benchmarks(FULL, gppo, last=False) == ("aime24", "aime25", "lcb_v5")  # curve_primary_only off


def test_rl_seeds_resolve_per_preset():
    # Fig. 2: the N of results/tiny/preregistration.md
    assert rl.RL.seeds(TINY, "fig2") == list(range(40)) and rl.RL.seeds(CI, "fig2") == [0]
    assert rl.RL.seeds(TINY, "fig3") == rl.RL.seeds(TINY, "fig4") == list(range(40))  # paired across both
    assert rl.RL.seeds(TINY, "fig5") == rl.RL.seeds(TINY, "table6") == list(range(40))  # paired with Fig. 2's gppo
    assert rl.RL.seeds(TINY, "fig2", 2) == [0, 1] and rl.RL.seeds(TINY, "fig2", [4]) == [4]


def test_condition_hash_ignores_the_seed_and_text_but_not_overrides_or_scale(monkeypatch):
    cond = rl.EXPERIMENTS["fig2"].condition("gppo")
    h = rl.condition_hash(CI, cond)
    assert h == rl.condition_hash(CI, cond) and h != rl.condition_hash(TINY, cond)
    assert rl.condition_hash(CI, dataclasses.replace(cond, claim="reworded", paper_setting="x")) == h
    assert rl.condition_hash(CI, dataclasses.replace(cond, overrides=(("loss_type", "cispo"),))) != h
    assert rl.condition_hash(CI, dataclasses.replace(cond, rows=rl.UNFILTERED)) != h
    assert rl.condition_hash(_with(CI, rl_ablations=RLScale(seeds=1, reduced=True, eval={"k_math": 3})), cond) != h


def test_a_code_reading_changes_no_key_of_a_math_experiment_read_on_its_primary_only():
    # Figs. 3-4 were registered while Fig. 2's re-run was being drawn: their reading (scale.benchmarks' tiny_lcb
    # entry) must leave every stored Fig. 2 row under its key, and still change the code experiments' own keys
    scale = RL_ABLATIONS["tiny"]
    other = _with(TINY, rl_ablations=dataclasses.replace(
        scale, benchmarks={**scale.benchmarks, "tiny_lcb": ("code_eval_t5",)}))
    for cond in rl.RL.conditions_for(TINY, "fig2"):
        assert rl.condition_hash(other, cond) == rl.condition_hash(TINY, cond), cond.label
    for cond in rl.RL.conditions_for(TINY, "fig3"):
        assert rl.condition_hash(other, cond) != rl.condition_hash(TINY, cond), cond.label
    assert rl.RL.benchmarks_at(TINY, rl.EXPERIMENTS["fig3"].condition("soft")) == ("code_eval_t4",)


def test_the_main_jobs_reading_moves_no_key_of_an_ablation():
    # the main job's benchmarks (Study.main_eval) were registered while the RL ablations' re-run was being drawn:
    # every RL and SFT ablation condition and stability cell keeps its key with or without them
    bare = TINY.replace(study={"main_eval": {}})
    assert TINY.study.main_eval and TINY.main_job.eval != TINY.eval and bare.main_job.eval == TINY.eval
    for family in (rl.RL, sft.SFT):
        for exp in family.experiments.values():
            for cond in exp.conditions:
                assert family.key(bare, cond) == family.key(TINY, cond), (exp.id, cond.label)
    assert [S.cell_hash(bare, c) for c in S.cells(bare.study.stability)] == \
        [S.cell_hash(TINY, c) for c in S.cells(TINY.study.stability)]


def test_run_key_hashes_each_config_and_keeps_the_stored_keys():
    cfg = CI.eval
    assert F.run_key(eval=cfg, n=1) == F.run_key(n=1, eval=cfg) != F.run_key(eval=CI.sft, n=1)
    assert F.run_key(own={"b": cfg}) == F.run_key(own={"b": dataclasses.replace(cfg)})
    for preset in ("ci", "tiny"):  # every stored row of every family is found under its condition's identity
        recipe_ = recipe(preset)
        for family in (sft.SFT, rl.RL):
            stored = tables.read(family.table, family.csv(recipe_.results))
            if preset == "tiny":
                # the earlier design's rows, all drawn before the numerics mode (the SFT table has no provenance
                # columns at all): the study re-run replaces them (results/tiny/preregistration.md), and every row
                # it draws, in results/tiny/rerun/, is current
                assert set(stored.get("numerics", ["unknown"])) == {"unknown"}
                rerun = dataclasses.replace(recipe_, results_subdir="rerun")
                assert len(family.current_rows(rerun)) == len(tables.read(family.table, family.csv(rerun.results)))
                continue
            assert len(family.current_rows(recipe_)) == len(stored)
        keys = {tuple(c.fields(0).values())[:3]: S.cell_hash(recipe_, c) for c in S.cells(recipe_.study.stability)}
        stored = tables.read(S.TABLE, S.STABILITY.csv(recipe_.results))
        assert [keys[k] for k in zip(stored["loss"], stored["learning_rate"], stored["updates_per_step"])] == \
            stored["config_hash"].tolist()


# --- reuse, curves and run records -------------------------------------------------------------------------------

def test_run_experiment_reuses_rows_and_builds_the_start_only_when_needed(monkeypatch, tmp_path):
    calls, starts, prepared = [], [], []

    def fake_run(recipe_, cond, seed, context):
        calls.append((cond.label, seed, context))
        h = rl.condition_hash(recipe_, cond)
        scores = pd.DataFrame([_row(cond.experiment, cond.label, seed, "tiny_aime", 0.25)])
        rows = [_row(cond.experiment, cond.label, seed, b, 0.25, h) for b in rl.RL.benchmarks_at(recipe_, cond)]
        return F.RunRows(rows, F.tagged(scores.to_dict("records"), cond.fields(seed), h, R.CURVE_KEEP, rl_step=2))

    def fake_setup(recipe_, todo, workers):
        starts.append(recipe_.preset)
        prepared.append((len(todo), "sft-ckpt"))
        return "sft-ckpt"

    monkeypatch.setattr(rl, "RL", dataclasses.replace(rl.RL, run=fake_run, setup=fake_setup))
    path = tmp_path / "ablations_rl.csv"
    first = rl.RL.run_experiment(CI, "fig2", seeds=[0, 1], path=path)
    assert sorted(calls) == [("clip_higher", s, "sft-ckpt") for s in (0, 1)] + [("gppo", s, "sft-ckpt")
                                                                               for s in (0, 1)]
    assert len(first) == 2 * 2 * 2 and starts == ["ci"]  # 2 conditions x 2 seeds x 2 benchmarks
    assert prepared == [(4, "sft-ckpt")]  # the start's shared work, once, for the due runs only
    curves = tables.read(R.CURVES, F.side_csv(path))  # written beside the table by this process
    assert len(curves) == 4 and path.with_name("ablations_rl_curves.csv") == F.side_csv(path)
    calls.clear()
    assert rl.RL.run_experiment(CI, "fig2", seeds=[0, 1], path=path).equals(first)
    assert calls == [] and starts == ["ci"]
    rl.RL.run_experiment(CI, "fig2", seeds=[1], path=path, retrain=True)
    assert sorted(c[:2] for c in calls) == [("clip_higher", 1), ("gppo", 1)] and prepared[-1] == (2, "sft-ckpt")


def test_a_run_trains_unless_the_store_holds_its_checkpoint(monkeypatch, tmp_path):
    """``rl.trains`` (what scripts/rerun.py times its chunks by) agrees with ``rl_stage``'s reuse: Fig. 4's
    filtered arm trains as Fig. 3's soft one, so once ``rl_stage`` has stored that it trains nothing, while its
    other arm and another seed still do; before the SFT checkpoint they start from is there, every run trains."""
    from klear_lib import pipeline

    monkeypatch.setenv("KLEAR_ARTIFACTS", str(tmp_path))
    soft = rl.RL.get_experiment("fig3").condition("soft")
    filtered, unfiltered = (rl.RL.get_experiment("fig4").condition(c) for c in ("filtered", "unfiltered"))
    def fake_train(*args, **kwargs):  # train_sft(cfg, base, rows, out, ...), train_rl(cfg, init, rows, reward, out, ...)
        final = args[3 if len(args) < 6 else 4] / "final"
        final.mkdir(parents=True)
        artifacts.mark_complete(final)
        return final

    monkeypatch.setattr(pipeline, "train_sft", fake_train)
    monkeypatch.setattr(pipeline, "train_rl", fake_train)
    assert pipeline.trained_sft(CI) is None and rl.trains(CI, filtered, 0, None)  # no SFT checkpoint: all train
    sft_final = pipeline.sft_stage(CI)
    assert pipeline.trained_sft(CI) == sft_final  # read where sft_stage put it, without training
    trains = partial(rl.trains, CI, init=sft_final)
    assert trains(filtered, 0) and trains(soft, 0)
    pipeline.rl_stage(rl.rl_recipe(CI, soft, 0), sft_final, "code", rl.train_rows(CI, soft), name="soft-s0")
    assert not trains(filtered, 0) and not trains(soft, 0)
    assert trains(unfiltered, 0) and trains(filtered, 1)
    start = next(c for c in rl.RL.get_experiment("table6").conditions if not c.train)
    assert not trains(start, 0)  # Table 6's first row evaluates the start: nothing to train


def test_runs_draw_the_fixed_seeds_once_and_resume_from_the_stored_rows(monkeypatch, tmp_path):
    # no optional stopping: SEEDS=None runs the experiment's fixed seeds whatever the results say
    calls, seeds_run = [], 3

    def fake_run(recipe_, cond, seed, context):
        calls.append((cond.label, seed))
        h = rl.condition_hash(recipe_, cond)
        mean = 0.3 + (0.30 if cond.label == "gppo" else 0.0)  # decided at the first seed: still 3 seeds
        rows = [_row(cond.experiment, cond.label, seed, b, mean, h) for b in rl.RL.benchmarks_at(recipe_, cond)]
        counts = [{"benchmark": "tiny_aime", "problem": f"p{i}", "k": 4, "correct": i % 5} for i in range(3)]
        return F.RunRows(rows, F.tagged(rows[:1], cond.fields(seed), h, R.CURVE_KEEP, rl_step=2),
                         F.tagged(counts, cond.fields(seed), h))

    ci = _with(CI, rl_ablations=dataclasses.replace(CI.study.rl_ablations, seeds=1, fixed_seeds={"fig2": seeds_run}))
    monkeypatch.setattr(rl, "RL", dataclasses.replace(rl.RL, run=fake_run, setup=lambda recipe_, todo, workers: "sft-ckpt"))
    monkeypatch.setattr(F.Family, "csv", lambda self, results: tmp_path / "t.csv")
    assert rl.RL.seeds(ci, "fig2") == list(range(seeds_run)) and rl.RL.seeds(ci, "fig3") == [0]
    runs = rl.RL.run_experiment(ci, "fig2")
    assert sorted(set(runs["seed"])) == list(range(seeds_run))
    assert sorted(calls) == sorted((c, s) for c in ("clip_higher", "gppo") for s in range(seeds_run))  # once each
    problems = tables.read(PROBLEMS, tmp_path / "problems" / "fig2.csv")  # one file per experiment, every run
    assert len(problems) == 3 * 2 * seeds_run and problems["correct"].tolist()[:3] == [0, 1, 2]
    calls.clear()
    again = rl.RL.run_experiment(ci, "fig2")
    assert calls == [], calls
    pd.testing.assert_frame_equal(again, runs)  # resumes from the stored rows
    # seeds="stored": the seeds held in full, nothing trains; a seed missing one arm's rows is not one of them
    pd.testing.assert_frame_equal(rl.RL.run_experiment(ci, "fig2", "stored", path=tmp_path / "t.csv"), runs)
    stored = tables.read(rl.RL.table, tmp_path / "t.csv")
    cut = stored[~((stored["seed"] == 1) & (stored["condition"] == "gppo"))]
    tables.write(rl.RL.table, cut, tmp_path / "cut.csv")
    assert rl.RL.stored_seeds(ci, "fig2", tmp_path / "cut.csv") == [s for s in range(seeds_run) if s != 1]
    assert rl.RL.seeds(ci, "fig2", "stored", tmp_path / "cut.csv") == [s for s in range(seeds_run) if s != 1]
    assert calls == []
    with pytest.raises(ValueError, match="no seed of fig3"):
        rl.RL.stored_seeds(ci, "fig3", tmp_path / "t.csv")


def test_setup_evaluates_the_start_once_per_seed_on_what_its_runs_read_there(monkeypatch):
    calls = []
    monkeypatch.setattr(rl, "eval_stage", lambda run, stage, path, benchmarks, write_csv:
                        calls.append((stage, path, tuple(benchmarks), run.eval.seed, write_csv)))
    monkeypatch.setattr(rl, "sft_stage", lambda recipe_: "sft-ckpt")
    fig2, fig3, t6 = (rl.EXPERIMENTS[e] for e in ("fig2", "fig3", "table6"))
    todo = [(fig2.condition("gppo"), 0), (fig3.condition("soft"), 0), (fig2.condition("cispo"), 0),
            (t6.condition(rl.START), 1)]
    assert rl.setup(TINY, todo) == "sft-ckpt"
    assert calls == [(rl.START_STAGE, "sft-ckpt", ("code_eval_t4",), 0, False),  # one call per eval config
                     (rl.START_STAGE, "sft-ckpt", ("math_eval_t23",), 0, False),
                     (rl.START_STAGE, "sft-ckpt", ("math_eval_t23",), 1, False)]
    assert rl.curve_benchmarks(TINY, fig2.condition("gppo"), last=False) == ("math_eval_t23",)  # tiny_lcb: at the end
    assert rl.curve_benchmarks(TINY, t6.condition(rl.START), last=True) == ("math_eval_t23",)


def test_checkpoints_map_optimizer_updates_to_rl_steps(tmp_path):
    for name in ("checkpoint-2", "checkpoint-4", "checkpoint-6", "final"):
        (tmp_path / name).mkdir()
    got = R.checkpoints(tmp_path / "final", updates_per_step=2, max_steps=3)
    assert got == [(1, tmp_path / "checkpoint-2"), (2, tmp_path / "checkpoint-4"), (3, tmp_path / "final")]


def test_record_from_state_rebuilds_what_run_record_writes(tmp_path):
    from klear_lib.configs import config_hash
    from klear_lib.training.run_record import record_row

    cfg = CI.rl_math
    logs = [{"loss": 0.5, "grad_norm": 0.1, "gen/accuracy": 0.25, "gppo/clip_frac": 0.01, "step": s}
            for s in (1, 2, 3, 4)] + [{"train_loss": 0.4, "step": 4}]
    (tmp_path / "checkpoint-4").mkdir()
    (tmp_path / "checkpoint-4" / "trainer_state.json").write_text(json.dumps({"global_step": 4, "log_history": logs}))
    rows = R.record_from_state(tmp_path / "final", cfg)
    assert rows == [record_row(e, e["step"], 2, config_hash(cfg)) for e in logs[:4]]
    assert [r["rl_step"] for r in rows] == ["1", "1", "2", "2"]
    path = R.ensure_record(tmp_path / "rec" / "r.csv", tmp_path / "final", cfg)
    assert pd.read_csv(path)["accuracy"].tolist() == [0.25] * 4
    with pytest.raises(FileNotFoundError, match="no checkpoint"):
        R.record_from_state(tmp_path / "none" / "final", cfg)


def test_curves_upsert_replaces_a_rerun_and_selects_current_runs(tmp_path):
    scores, run = [_row("fig5", "filtered", 0, "tiny_aime", 0.1)], rl.EXPERIMENTS["fig5"].condition("filtered").fields(0)
    curves = tables.upsert(R.CURVES, tables.read(R.CURVES, tmp_path / "c.csv"),
                           [r for s in (0, 1, 2) for r in F.tagged(scores, run, "h1", R.CURVE_KEEP, rl_step=s)])
    rerun = F.tagged([{**scores[0], "mean": 0.3, "ci_high": 0.32}], run, "h2", R.CURVE_KEEP, rl_step=2)
    curves = tables.upsert(R.CURVES, curves, rerun)
    assert curves[["rl_step", "mean", "config_hash"]].values.tolist() == [[2, 0.3, "h2"]]
    path = tables.write(R.CURVES, curves, tmp_path / "c.csv")
    runs = pd.DataFrame([_row("fig5", "filtered", 0, "tiny_aime", 0.3, cfg_hash="h2")])
    assert len(R.curves_of(runs, tables.read(R.CURVES, path))) == 1
    assert len(R.curves_of(runs.assign(config_hash="h1"), tables.read(R.CURVES, path))) == 0


def test_dynamics_reads_the_last_window_of_each_run_then_averages_seeds():
    rec = pd.DataFrame({"experiment": "fig2", "condition": "gppo", "seed": [0] * 10 + [1] * 10,
                        "entropy": list(range(10)) + list(range(10, 20))})
    got = R.dynamics(rec, ["entropy"], fraction=0.2)
    assert got["entropy"].tolist() == [(8.5 + 18.5) / 2]


@pytest.fixture(scope="module")
def ci_world():
    from klear_lib.data import load_split
    from klear_lib.data.world import EVAL_SPLITS

    return load_split("code_rl", recipe("ci")), {r["extra_info"]["id"] for s in EVAL_SPLITS for r in load_split(s, recipe("ci"))}


def test_unfiltered_code_rows_keep_what_the_test_case_filter_drops(ci_world):
    filtered, heldout = ci_world
    rows = load_split(rl.UNFILTERED, recipe("ci"))
    ids = {r["extra_info"]["id"] for r in rows}
    assert len(rows) == len(filtered) and not ids & heldout
    assert any(r["extra_info"]["noise"] for r in rows) and not any(r["extra_info"]["noise"] for r in filtered)
    assert ids & {r["extra_info"]["id"] for r in filtered}  # same candidates, before the filter


# --- the collapse criterion and the stability grid ----------------------------------------------------------------

def _record(acc=(0.4, 0.4), length=(100.0, 100.0), n=20, grad=0.1):
    return pd.DataFrame({"accuracy": np.linspace(*acc, n), "response_length": np.linspace(*length, n),
                         "entropy": 1.0, "loss": 0.1, "grad_norm": grad, **{c: 0.01 for c in S.CASES}})


@pytest.mark.parametrize("record, start, final, reasons", [
    (_record(), 0.30, 0.30, []),
    (_record(length=(100.0, 30.0)), 0.30, 0.30, ["length"]),
    (_record(acc=(0.4, 0.05)), 0.30, 0.30, ["train_acc"]),
    (_record(), 0.30, 0.10, ["heldout"]),
    (_record(acc=(0.01, 0.0)), 0.01, 0.0, []),          # starts below min_acc: accuracy tests do not apply
    (_record(grad=float("nan")), 0.30, 0.30, ["nonfinite"]),
    (_record(acc=(0.4, 0.0), length=(100.0, 20.0)), 0.30, 0.0, ["heldout", "train_acc", "length"]),
])
def test_collapse_criterion_on_synthetic_records(record, start, final, reasons):
    assert S.collapse_reasons(S.run_summary(record, start, final)) == reasons


def test_collapse_is_recomputed_from_stored_columns_under_another_criterion():
    row = S.run_summary(_record(length=(100.0, 60.0)), 0.3, 0.3)
    df = S.mark_collapse(pd.DataFrame([row]))
    assert df["collapsed"].tolist() == [0]
    strict = S.mark_collapse(df, S.Collapse(length_fraction=0.7))
    assert strict[["collapsed", "collapse_reasons"]].values.tolist() == [[1, "length"]]


def test_grid_derives_mini_batches_and_maps_each_loss():
    assert len(S.cells(CI.study.stability)) == 6 * 2 * 2 and len(S.cells(TINY.study.stability)) == 6 * 4 * 2
    by = {(c.loss.label, c.updates): c for c in S.cells(TINY.study.stability) if c.learning_rate == 1e-4}
    assert S.run_recipe(TINY, by[("gppo", 4)]).rl_math.mini_batch_prompts == 1
    assert S.run_recipe(TINY, by[("gppo", 2)]).rl_math.mini_batch_prompts == 2
    dual = S.run_recipe(TINY, by[("gppo_dual10", 2)], seed=2).rl_math
    assert (dual.dual_clip, dual.loss_type, dual.learning_rate, dual.seed) == (10.0, "gppo", 1e-4, 2)
    assert S.run_recipe(TINY, by[("gppo_b0.25", 4)]).rl_math.beta_low == 0.25
    with pytest.raises(ValueError, match="3 updates per step do not divide 4"):
        S.run_recipe(TINY, S.Cell(S.study_losses(["cispo"])[0], 1e-4, 3))
    with pytest.raises(KeyError, match="known"):
        S.study_losses(["ppo"])
    cell = S.cells(CI.study.stability)[0]
    assert S.cell_hash(CI, cell) != S.cell_hash(CI, dataclasses.replace(cell, learning_rate=2e-3))


def _stab_row(loss, lr, updates, seed, mean, cfg_hash="h", **kw):
    row = {"loss": loss, "learning_rate": lr, "updates_per_step": updates, "seed": seed, "benchmark": "tiny_aime",
           "metric": "avg@k", "k": 4, "mean": mean, "ci_low": max(0.0, mean - 0.05), "ci_high": min(1, mean + 0.05),
           **S.run_summary(_record(), 0.3, mean), "config_hash": cfg_hash, **kw}
    return S.mark_collapse(pd.DataFrame([row])).iloc[0].to_dict()


def test_stability_table_round_trip_and_reuse(monkeypatch, tmp_path):
    calls = []

    def fake_cell(recipe_, cell, seed, init=None):
        calls.append((cell.loss.label, cell.learning_rate, cell.updates, seed))
        return [_stab_row(cell.loss.label, cell.learning_rate, cell.updates, seed, 0.2, S.cell_hash(recipe_, cell))]

    monkeypatch.setattr(S, "STABILITY", dataclasses.replace(S.STABILITY, run=fake_cell))
    monkeypatch.setattr(S, "evaluated_start",
                        lambda recipe_, todo, threads, workers: calls.extend(("start", run.eval.seed)
                                                                             for _, run in todo))
    path = tmp_path / "stability.csv"
    first = S.run_grid(CI, path=path, losses=["gppo", "cispo"])
    assert calls[0] == ("start", 0) and len(calls) == 9  # the start is evaluated once before any run
    assert len(first) == 8 and list(first["loss"].unique()) == ["gppo", "cispo"]
    calls.clear()
    assert S.run_grid(CI, path=path, losses=["gppo", "cispo"]).equals(first) and calls == []
    text = path.read_bytes()
    tables.write(S.TABLE, tables.read(S.TABLE, path), path)
    assert path.read_bytes() == text
    assert "0.0001," in text.decode()  # learning rates keep their digits


def test_safe_region_and_the_papers_ranking():
    means = {"gppo": (0.50, 0.52, 0.54), "cispo": (0.40, 0.42, 0.44), "clip_higher": (0.30, 0.32, 0.34)}
    rows = [_stab_row(loss, 1e-4, 8, s, m) for loss, ms in means.items() for s, m in enumerate(ms)]
    rows += [_stab_row(loss, 4e-4, 8, s, 0.1 * (loss != "gppo")) for loss in means for s in range(3)]
    rows += [_stab_row("gppo", 2e-4, 8, 0, 0.0)]
    summary = S.aggregate(pd.DataFrame(rows))
    rank = S.ranking(summary).set_index("learning_rate")
    assert rank.loc[1e-4, "paper_order"] == "holds" and rank.loc[4e-4, "gppo>cispo"] == "not replicated"
    assert S.ranking_verdict(S.ranking(summary)) == "somewhere (1 holds, 1 reversed, 0 inconclusive, of 2 cells)"
    safe = S.safe_region(summary).set_index("loss")
    assert safe.loc["gppo", "safe_lrs"] == "0.0001" and safe.loc["gppo", "collapsed_cells"] == 2  # held-out 0
    assert safe.loc["cispo", "largest_safe_lr"] == 0.0001
    text = S.reading(summary, S.ranking(summary)).splitlines()
    assert text[0] == "gppo: no seed collapsed at LR 0.0001 with 8 updates/step (of 3 LRs each)"
    assert any(t.startswith("best held-out avg@k at 8 updates/step: gppo at LR 0.0001, 52.0% [") for t in text)
    assert sum(t.startswith("training accuracy over the last quarter") for t in text) == 3  # one per LR
    assert all("LR none" not in t for t in text)  # a loss with no safe LR says "no LR"
    assert text[-1].endswith("holds somewhere (1 holds, 1 reversed, 0 inconclusive, of 2 cells)")


# --- the claims table --------------------------------------------------------------------------------------------

def test_claims_mark_missing_runs_not_run_and_carry_the_papers_numbers(tmp_path):
    cond = {c.label: c for c in sft.EXPERIMENTS["table4"].conditions}
    rows = [_row("table4", label, s, "tiny_aime", m + 0.01 * s, sft.condition_hash(CI, cond[label]))
            for label, m in (("top1", 0.5), ("top4", 0.2)) for s in range(3)]
    rows += [_row("table4", "top2", 0, "tiny_aime", 0.9, cfg_hash="stale")]  # an old config does not count
    tables.write(table.ABLATION, rows, tmp_path / "sft.csv")
    got = C.build_claims(CI, paths={"sft": tmp_path / "sft.csv", "rl": tmp_path / "rl.csv"}).set_index("claim_id")
    assert len(got) == len(C.expected())
    hit = got.loc["table4:top1>top4@tiny_aime"]
    assert hit["verdict"] == "replicated" and hit["ours_diff_pts"] == pytest.approx(30.0) and hit["n_seeds"] == 3
    # docs/paper.md §3 Table 4: AIME 2024 and 2025 both read, the effect carried to our base rate of 36%
    assert hit["paper_benchmarks"] == "aime24;aime25" and hit["paper_statistic"] == "table"
    assert (hit["paper_diff_low_pts"], hit["paper_diff_high_pts"]) == pytest.approx((40.83 - 37.29, 36.04 - 29.79))
    assert hit["ours_base_pct"] == pytest.approx(36.0)
    assert hit["carried_low_pts"] == pytest.approx(100 * stats.carry(0.4083, 0.3729, 0.36))
    assert hit["claimed_pts"] == pytest.approx(hit["carried_low_pts"]) and hit["direction"] == 1
    assert hit["family_size"] == 1 and hit["p_holm"] == pytest.approx(hit["p_value"])
    assert got.loc["table4:top2>top4@tiny_aime", "verdict"] == C.NOT_RUN
    # an experiment left out (the re-run's, until all its registered runs are stored) is not read, rows or not
    paths = {"sft": tmp_path / "sft.csv", "rl": tmp_path / "rl.csv"}
    only = C.build_claims(CI, paths=paths, experiments={"table3": range(3)})
    assert (only["verdict"] == C.NOT_RUN).all() and only["ours_diff_pts"].isna().all()
    two = C.build_claims(CI, paths=paths, experiments={"table4": (0, 1)}).set_index("claim_id")  # registered seeds
    assert two.loc["table4:top1>top4@tiny_aime", "n_seeds"] == 2
    rl_rows = got[got["family"] == "rl"]
    assert set(rl_rows["verdict"]) == {C.NOT_RUN} and rl_rows["ours_diff_pts"].isna().all()
    assert got.loc["fig3:soft>hard@tiny_lcb", "paper_diff_pts"] == pytest.approx(61.0 - 59.2)  # best vs best
    assert got.loc["fig3:soft>hard@tiny_lcb", "paper_statistic"] == "best"
    # a figure's range stays a range: CISPO 79.5-81.2 against GPPO's end point 81.0
    cispo = got.loc["fig2:gppo>cispo@tiny_aime"]
    assert (cispo["paper_diff_low_pts"], cispo["paper_diff_high_pts"]) == pytest.approx((-0.2, 1.5))
    assert cispo["paper_statistic"] == "final (range)"
    dgpo = got.loc["fig2:grpo>gppo@tiny_aime"]  # DGPO's two model sizes
    assert (dgpo["paper_diff_low_pts"], dgpo["paper_diff_high_pts"]) == pytest.approx((2.8, 3.9))
    t5 = got.loc["table5:top1>top4@tiny_lcb"]  # the paper's own Table 5 number on LiveCodeBench is negative
    assert t5["direction"] == -1 and t5["paper_diff_high_pts"] < 0
    assert hit["seed_diffs_pts"] == "30.00;30.00;30.00"  # the paired differences the interval rests on, in seed order
    assert got.loc["table4:top2>top4@tiny_aime", "seed_diffs_pts"] == ""
    path = C.write_claims(CI, paths={"sft": tmp_path / "sft.csv", "rl": tmp_path / "rl.csv"},
                          path=tmp_path / "claims.csv")
    md = C.readme_table(tables.read(C.CLAIMS, path))
    assert (md.loc[md["verdict"] == C.NOT_RUN, "ours Δ pts"] == "—").all()


def test_multiplicity_is_holm_within_a_table_and_bh_across_all():
    base = {"source": "paper", "test": "paired", "df": 9.0, "n_seeds": 10, "note": "", "direction": 1,
            "mean_better": 0.5, "mean_worse": 0.5, "sd_diff": 0.01, "_readings": [("aime24", 51.0, 50.0)]}
    rows = [{**base, "table": "Figure 2", "p_value": 0.01, "diff": 0.02, "se": 0.005},
            {**base, "table": "Figure 2", "p_value": 0.04, "diff": 0.01, "se": 0.004},
            {**base, "table": "Table 6", "p_value": 0.03, "diff": 0.01, "se": 0.004},
            {**base, "table": "Figure 2", "p_value": 0.5, "diff": 0.0, "se": 0.004, "source": "DGPO"}]
    got = C.decide_all(pd.DataFrame(rows))
    assert got["multiplicity_family"].tolist() == ["Figure 2", "Figure 2", "Table 6", "DGPO"]
    assert got["family_size"].tolist() == [2, 2, 1, 1]
    assert got["p_holm"].tolist() == pytest.approx([0.02, 0.04, 0.03, 0.5])
    assert got["q_bh"].tolist() == pytest.approx([0.04, 0.04 * 4 / 3, 0.04 * 4 / 3, 0.5])
    lo, hi = stats.adjusted_interval(0.02, 0.005, 9.0, 2)
    assert (got.loc[0, "adj_ci_low_pts"], got.loc[0, "adj_ci_high_pts"]) == pytest.approx((100 * lo, 100 * hi))
    assert got.loc[0, "verdict"] == "replicated"
    assert got.loc[3, "verdict"] in ("equivalent", "smaller than claimed", "undecided")


def test_a_stored_verdict_never_contradicts_its_own_interval():
    claims = tables.read(C.CLAIMS, C.claims_csv(TINY.results))
    run = claims[claims["verdict"] != C.NOT_RUN]
    for r in run.itertuples():
        lo, hi = sorted((r.direction * r.adj_ci_low_pts, r.direction * r.adj_ci_high_pts))
        claimed = r.claimed_pts if r.claimed_pts > 0 else float("nan")
        assert (r.verdict == "replicated") == (lo > 0), r.claim_id
        assert (r.verdict == "opposite") == (hi < 0), r.claim_id
        if r.verdict == "undecided" and claimed == claimed:
            assert lo <= 0 <= hi and (hi >= claimed or lo <= -claimed), r.claim_id
        if r.verdict in ("equivalent", "smaller than claimed"):
            assert hi < claimed, r.claim_id
    assert run["p_holm"].notna().all() and run["q_bh"].notna().all()


def test_forest_plot_draws_the_margin_the_base_rates_and_ranges(monkeypatch, tmp_path):
    from klear_lib import plots
    from klear_lib import report

    base = {"family": "rl", "benchmark": "tiny_aime", "source": "paper", "paper_benchmarks": "aime24",
            "test": "paired", "df": 2.0, "shares_runs": "", "claim": "", "paper_better": 50.0, "paper_worse": 48.0,
            "paper_base_pct": 49.0, "ours_base_pct": 8.0, "direction": 1}
    rows = [{**base, "claim_id": "fig2:gppo>cispo@tiny_aime", "table": "Figure 2", "experiment": "fig2",
             "better": "gppo", "worse": "cispo", "paper_statistic": "final (range)", "paper_diff_low_pts": -0.2,
             "paper_diff_high_pts": 1.5, "carried_low_pts": -0.1, "carried_high_pts": 0.7, "margin_pts": None,
             "ours_diff_pts": -1.0, "ci_low_pts": -4.0, "ci_high_pts": 3.0, "adj_ci_low_pts": -float("inf"),
             "adj_ci_high_pts": 5.0, "n_seeds": 3, "seed_diffs_pts": "-2.00;0.00;-1.00", "verdict": "undecided"},
            {**base, "claim_id": "table6:a0.1>a0@tiny_aime", "table": "Table 6", "experiment": "table6",
             "better": "a0.1", "worse": "a0", "paper_statistic": "table", "paper_diff_low_pts": 1.2,
             "paper_diff_high_pts": 1.2, "carried_low_pts": 0.5, "carried_high_pts": 0.5, "margin_pts": 0.25,
             "ours_diff_pts": 4.0, "ci_low_pts": 2.0, "ci_high_pts": 6.0, "adj_ci_low_pts": 1.5,
             "adj_ci_high_pts": 6.5, "n_seeds": 3, "seed_diffs_pts": "3.00;4.00;5.00", "verdict": "replicated"},
            {**base, "claim_id": "fig3:soft>hard@tiny_lcb", "table": "Figure 3", "experiment": "fig3",
             "better": "soft", "worse": "hard", "paper_statistic": "best", "paper_diff_low_pts": 1.8,
             "paper_diff_high_pts": 1.8, "n_seeds": 0, "verdict": C.NOT_RUN}]
    claims = pd.DataFrame(rows).reindex(columns=C.COLUMNS)
    fig = plots.claims_forest(claims)
    axes = [ax for ax in fig.axes if ax.get_yticklabels()]
    assert [ax.get_title(loc="left") for ax in axes] == ["Figure 2", "Table 6"]  # the claim not run: no panel
    fig2, t6 = axes
    assert [t.get_text() for t in fig2.get_yticklabels()] == ["gppo > cispo · tiny_aime (3 seeds)"]
    assert fig2.get_xlim() != t6.get_xlim()  # an axis per family
    assert any(ln.get_marker() == "<" for ln in fig2.lines)  # the infinite end leaves the frame as an arrow
    diamonds = [ln for ln in t6.lines if ln.get_marker() == "D"]
    assert sorted(d.get_xdata()[0] for d in diamonds) == [0.5, 1.2]  # carried and as printed
    assert all(d.get_markerfacecolor() != "none" for d in diamonds)  # from a table: filled
    bars = [ln for ln in fig2.lines if ln.get_linewidth() == 5 and ln.get_alpha() == 0.55]
    assert sorted(tuple(b.get_xdata()) for b in bars) == [(-0.2, 1.5), (-0.1, 0.7)]  # ranges stay ranges
    texts = " ".join(t.get_text() for ax in axes for t in ax.texts)
    assert "base 49% → 8.0%" in texts and "replicated" in texts

    monkeypatch.setattr(C, "claims_csv", lambda results: tmp_path / "claims.csv")
    monkeypatch.setattr(report, "REPO", tmp_path)
    monkeypatch.setattr("klear_lib.paths.FIGURES", tmp_path / "results" / "figures")
    tables.write(C.CLAIMS, claims, tmp_path / "claims.csv")
    paths = C.write_forests(CI)  # a smoke run's figures sit in their own folder
    assert [p.relative_to(tmp_path).as_posix() for p in paths] == [
        f"results/figures/ci/ci_claims_forest{s}.png" for s in ("", "_fig2", "_table6")]
    assert recipe("tiny").figure("claims_forest") == tmp_path / "results" / "figures" / "tiny_claims_forest.png"
    text = report.claims_section(CI)
    assert "![Every claim run at ci" in text and "[Table 6](../results/figures/ci/ci_claims_forest_table6.png)" in text
    assert "[glossary](../README.md#glossary)" in text  # links as docs/claims.md, the section's page, writes them


def test_claims_section_renders_the_stored_table(monkeypatch, tmp_path):
    from klear_lib import report
    from klear_lib.ablations import claims

    monkeypatch.setattr(claims, "claims_csv", lambda results: tmp_path / "claims.csv")
    assert "No `results/ci/claims.csv` yet" in report.claims_section(CI)
    C.write_claims(CI, paths={"sft": tmp_path / "none.csv", "rl": tmp_path / "none.csv"},
                   path=tmp_path / "claims.csv")
    text = report.claims_section(CI)
    assert f"{len(C.expected())} not run" in text and "| Figure 2 | gppo > clip_higher |" in text


# --- figures, and one real ci run ---------------------------------------------------------------------------------

def test_figures_read_on_their_own():
    from klear_lib import plots

    # an RL record logs several updates per step: the curve averages them, one point per step
    rec = pd.DataFrame({"rl_step": [1, 1, 2, 2], "accuracy": [0.0, 1.0, 0.5, 0.5]})
    ax = plots.training_curves(rec, ["accuracy"], x="rl_step").axes[0]
    assert list(ax.lines[0].get_ydata()) == [0.5, 0.5] and ax.get_xlabel() == "RL step"
    assert ax.get_title() == "training accuracy (share correct)"
    # held-out curves in %, with a band over seeds and a tick at each checkpoint
    held = pd.DataFrame({"condition": ["a"] * 4, "seed": [0, 1, 0, 1], "rl_step": [0, 0, 15, 15],
                         "tiny_aime": [0.05, 0.07, 0.10, 0.12]})
    ax = plots.condition_curves(held, ["tiny_aime"], band=True, scale=100, ylabel="%").axes[0]
    assert list(ax.lines[-1].get_ydata()) == pytest.approx([6.0, 11.0]) and list(ax.get_xticks()) == [0, 15]
    assert len(ax.collections) == 1  # the band
    # ablation bars in %, and a benchmark where every run scored 0 gets no panel space
    rows = [_row("table2", c, s, b, 0.0 if b == "tiny_lcb" else 0.2 + 0.1 * (c == "x"))
            for c in ("x", "y") for s in range(2) for b in ("tiny_aime", "tiny_lcb")]
    ax = plots.ablation_bars(table.aggregate(pd.DataFrame(rows), [("table2", "x"), ("table2", "y")])).axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["tiny_aime\navg@4"] and "tiny_lcb left out" in ax.get_title()
    assert sorted(p.get_height() for p in ax.patches) == pytest.approx([20.0, 30.0])
    # small fractions keep three significant digits as %
    assert plots.percent_format([0.0042, 0.001]).format(0.42) == "0.420%"
    assert plots.percent_format([0.37]).format(37.0) == "37.0%"


def test_figures_draw_one_line_per_condition_and_one_panel_per_setting():
    from klear_lib import plots

    rec = pd.DataFrame({"condition": ["a"] * 4 + ["b"] * 4, "seed": [0, 0, 1, 1] * 2, "rl_step": [1, 2] * 4,
                        "entropy": np.arange(8.0)})
    fig = plots.condition_curves(rec, ["entropy"])
    assert len(fig.axes[0].lines) == 2 * (2 + 1)  # per condition: two seeds and the mean
    summary = S.aggregate(pd.DataFrame([_stab_row(l, lr, u, 0, 0.2) for l in ("gppo", "cispo")
                                        for lr in (1e-4, 1e-3) for u in (1, 2)]))
    assert len(plots.stability_map(summary, "mean").axes) == 2 + 1  # two panels and the colour bar
    rows = [_stab_row(l, lr, u, s, 0.0 if (l, lr) == ("gppo", 1e-3) else 0.2 + 0.01 * s)
            for l in ("gppo", "cispo") for lr in (1e-4, 1e-3) for u in (1, 2) for s in range(2)]
    fig = plots.stability_lines(S.aggregate(pd.DataFrame(rows)))
    assert len(fig.axes) == 2 and all(len(ax.containers) == 2 for ax in fig.axes)  # a line per loss per panel
    assert max(max(c[0].get_ydata()) for ax in fig.axes for c in ax.containers) == pytest.approx(20.5)  # in %
    from matplotlib.collections import PathCollection

    crosses = [len(c.get_offsets()) for ax in fig.axes for c in ax.collections
               if isinstance(c, PathCollection) and len(c.get_offsets())]
    assert sorted(crosses) == [1, 1]  # gppo at 1e-3 collapsed (held-out 0), once per panel


@pytest.mark.slow
def test_one_ci_run_end_to_end(monkeypatch, tmp_path):
    monkeypatch.setattr("klear_lib.paths.runs_dir", lambda preset: tmp_path)
    cond = rl.EXPERIMENTS["table6"].condition("a0")
    result = rl.run_condition(CI, cond, 0)
    tables.write(R.CURVES, result.side, tmp_path / "curves.csv")
    df = tables.validate(table.ABLATION, pd.DataFrame(result.rows))
    assert set(df["benchmark"]) == {"tiny_aime"} and set(df["metric"]) == {"avg@k", "pass@k"}
    assert set(df["config_hash"]) == {rl.condition_hash(CI, cond)} and set(df["n_train"]) == {40}
    problems = pd.DataFrame(result.problems)  # the last point's per-problem counts give its avg@k back
    avg = df[df["metric"] == "avg@k"].iloc[0]
    assert len(problems) == avg["n_problems"] and set(problems["seed"]) == {0}
    assert (problems["correct"] / problems["k"]).mean() == pytest.approx(avg["mean"], abs=1e-6)
    record = pd.read_csv(tmp_path / "ablations_rl" / "table6" / "a0-s0.csv")
    assert record["rl_step"].max() == 2 and (record["sft_loss"] == 0).all()  # α = 0: no SFT term
    assert (record["loss"] == record["policy_loss"]).all()
    curves = tables.read(R.CURVES, tmp_path / "curves.csv")
    assert sorted(curves["rl_step"].unique()) == [0, 1, 2]
    monkeypatch.setattr(F.Family, "csv", lambda self, results: tmp_path / "table.csv")
    monkeypatch.setattr(rl, "side_csv", lambda path: tmp_path / "curves.csv")
    figs = rl.figures(CI, df, panels=("heldout", "dynamics", "clipping"))
    assert [len(f.axes) for f in figs.values()] == [1, len(R.DYNAMICS), len(R.CLIPPING)]


# --- parallel sweeps ---------------------------------------------------------------------------------------------

def _pid_row(cond, seed, context):
    return [{"cond": cond, "seed": seed, "context": context, "pid": os.getpid()}]


def test_run_missing_in_worker_processes_saves_every_run_in_this_process():
    saved = []

    def save(stored, rows):
        saved.append(os.getpid())
        return stored + rows

    pairs = [(c, s) for c in ("a", "b") for s in (0, 1)]
    rows = F.run_missing(pairs[1:], _pid_row, save, [], setup=lambda: "ckpt", workers=2)
    assert sorted((r["cond"], r["seed"]) for r in rows) == pairs[1:] and {r["context"] for r in rows} == {"ckpt"}
    assert os.getpid() not in {r["pid"] for r in rows} and set(saved) == {os.getpid()}
    serial = F.run_missing(pairs, _pid_row, lambda st, r: st + r, [])
    assert [r["pid"] for r in serial] == [os.getpid()] * 4


@contextmanager
def _results_in(results: Path):
    """Run records under ``results`` instead of the repository's results/, in whichever process runs the block."""
    before, paths.RESULTS = paths.RESULTS, results
    try:
        yield
    finally:
        paths.RESULTS = before


def _run_recording_in(results: Path, recipe_, condition, seed, init):
    """``rl.run_condition`` with its run record under ``results``: spawned workers do not see monkeypatches."""
    with _results_in(results):
        return rl.run_condition(recipe_, condition, seed, init)


@pytest.mark.slow
def test_rl_runs_in_two_workers_give_the_files_of_runs_one_at_a_time(monkeypatch, tmp_path):
    monkeypatch.setattr(paths, "RESULTS", tmp_path / "results")  # a missing SFT checkpoint's record goes there
    real, init = artifacts.root(), rl.sft_stage(CI)
    cond, out = rl.EXPERIMENTS["table6"].condition("a0.1"), {}
    for workers in (1, 2):
        # a fresh store each (RL checkpoints and eval samples), sharing only the ci world: both sweeps train
        store, results = tmp_path / f"store{workers}", tmp_path / f"results{workers}"
        (store / "ci").mkdir(parents=True)
        (store / "ci" / "data").symlink_to(real / "ci" / "data")
        monkeypatch.setenv("KLEAR_ARTIFACTS", str(store))  # spawned workers inherit the environment
        monkeypatch.setattr(paths, "RESULTS", results)
        family = dataclasses.replace(rl.RL, run=partial(_run_recording_in, results),
                                     setup=lambda recipe_, todo, workers: init)  # the SFT checkpoint of the real store
        with torch_threads(1):  # one at a time under another count than the workers' default
            rows = family.run_experiment(CI, "table6", seeds=[0, 1], path=results / "ablations_rl.csv",
                                         workers=workers, conditions=[cond])
        out[workers] = rows, {str(p.relative_to(results)): p.read_bytes() for p in sorted(results.rglob("*.csv"))}
        assert len(list((store / "ci" / "rl_math").glob("*/final"))) == 2  # each sweep trained both seeds
    assert sorted(out[2][1]) == ["ablations_rl.csv", "ablations_rl_curves.csv",
                                 "ci/runs/ablations_rl/table6/a0.1-s0.csv", "ci/runs/ablations_rl/table6/a0.1-s1.csv",
                                 "problems/table6.csv"]  # the per-problem counts, beside the table
    curves = tables.read(R.CURVES, tmp_path / "results2" / "ablations_rl_curves.csv")
    assert sorted(set(zip(curves["seed"], curves["rl_step"]))) == [(s, t) for s in (0, 1) for t in (0, 1, 2)]
    assert out[2][0].equals(out[1][0]) and len(out[2][0]) == 2 * 2  # 2 seeds x (avg@k, pass@k) on tiny_aime
    assert out[2][1] == out[1][1]  # table, curves and run records, byte for byte


@pytest.mark.slow
def test_the_start_evaluated_in_two_workers_gives_the_samples_of_one_at_a_time(monkeypatch, tmp_path):
    monkeypatch.setattr(paths, "RESULTS", tmp_path / "results")  # its run record, not over results/ci/runs/sft.csv
    rl.sft_stage(CI)  # the ci SFT checkpoint in the real store (trained there if missing)
    real, fig2 = artifacts.root(), rl.EXPERIMENTS["fig2"]
    todo = [(fig2.condition(label), seed) for seed in (0, 1, 2) for label in ("gppo", "clip_higher")]
    out = {}
    for workers in (1, 2):  # a fresh store each, sharing the ci world and SFT checkpoint: each evaluates afresh
        store = tmp_path / f"store{workers}"
        (store / "ci").mkdir(parents=True)
        for part in ("data", "sft"):
            (store / "ci" / part).symlink_to(real / "ci" / part)
        monkeypatch.setenv("KLEAR_ARTIFACTS", str(store))  # spawned workers inherit the environment
        rl.setup(CI, todo, workers=workers)
        out[workers] = {str(p.relative_to(store)): p.read_bytes() for p in sorted((store / "ci").rglob("*"))
                        if p.is_file() and not p.is_relative_to(store / "ci" / "data")
                        and not p.is_relative_to(store / "ci" / "sft")}
    assert len([p for p in out[1] if p.endswith(".jsonl")]) >= 3  # a samples file per seed
    assert out[2] == out[1]


def test_torch_threads_pins_the_count_and_restores_it():
    import torch

    before = torch.get_num_threads()
    with torch_threads(1):
        assert torch.get_num_threads() == 1
    with torch_threads(None):
        assert torch.get_num_threads() == before
    assert torch.get_num_threads() == before
