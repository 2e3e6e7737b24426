"""The main job's claims (results/tiny/preregistration.md, section 4): recomputed here from per-problem counts
with NumPy and SciPy alone, and stated in the README's headline as the file says."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats as st

from klear_lib.ablations import claims as C
from klear_lib.configs import config_hash, recipe

R = recipe("ci")  # the main job reads tiny_aime and tiny_lcb at ci (no Study.main_eval)
SEEDS = [0, 1, 2, 3, 4]
PROBLEMS = 30


def _counts(seed: int = 7, hash_: str | None = None, r=R) -> pd.DataFrame:
    """Per-problem counts of the SFT model (eval seed 0), the final stage and its control for 5 RL seeds, k = 4:
    RL a little above SFT, the control far below it (``r``: the main job's recipe, whose reading they carry)."""
    rng = np.random.default_rng(seed)
    rows = []
    for bench in r.eval.benchmarks:
        base = rng.uniform(0.1, 0.7, PROBLEMS)
        runs = [("sft", 0, base)] + [(cond, s, np.clip(base + shift + rng.normal(0, 0.05), 0, 1))
                                     for s in SEEDS for cond, shift in (("rl_code", 0.15), ("random_rl_code", -0.3))]
        for cond, s, p in runs:
            rows += [{"experiment": "main", "condition": cond, "seed": s, "benchmark": bench, "problem": f"{bench}-{i}",
                      "k": 4, "correct": int(rng.binomial(4, p[i])), "config_hash": hash_ or config_hash(r.eval)}
                     for i in range(PROBLEMS)]
    return pd.DataFrame(rows)


def _by_hand(counts: pd.DataFrame, bench: str, worse: str, family: int) -> tuple[float, float, float]:
    """(mean per-seed difference, low, high) in points at level 1 - 0.05/family, from the counts alone."""
    rate = counts[counts.benchmark == bench].assign(p=lambda d: d.correct / d.k)
    table = rate.pivot_table(index="problem", columns=["condition", "seed"], values="p")
    d = np.array([(table[("rl_code", s)] - (table[("sft", 0)] if worse == "sft" else table[(worse, s)])).mean()
                  for s in SEEDS])
    half = st.t.ppf(1 - 0.05 / (2 * family), len(d) - 1) * d.std(ddof=1) / np.sqrt(len(d))
    return 100 * d.mean(), 100 * (d.mean() - half), 100 * (d.mean() + half)


def test_main_claims_recompute_from_the_counts_alone():
    counts = _counts()
    claims = C.main_claims(R, counts)
    assert list(claims["claim_id"]) == [f"main:{b}:rl_code>{w}" for b in R.eval.benchmarks
                                        for w in ("sft", "random_rl_code")]
    assert (claims["family_size"] == 4).all() and (claims["n_seeds"] == 5).all() and (claims["df"] == 4).all()
    for r in claims.itertuples():
        diff, lo, hi = _by_hand(counts, r.benchmark, r.worse, 4)
        assert r.ours_diff_pts == pytest.approx(diff)
        assert (r.adj_ci_low_pts, r.adj_ci_high_pts) == pytest.approx((lo, hi))
        assert r.verdict == ("replicated" if lo > 0 else "opposite" if hi < 0 else r.verdict)
        assert r.claimed_pts > 0 and r.paper_readings.count(";") == 1  # Table 1 on both releases of the benchmark
        assert r.in_band == str(25 <= r.ours_better_pct <= 75 and 25 <= r.ours_worse_pct <= 75)
    holm = np.minimum(1, np.maximum.accumulate(np.sort(claims["p_value"]) * np.arange(4, 0, -1)))
    assert sorted(claims["p_holm"]) == pytest.approx(list(holm))


def test_main_claims_leave_out_a_pair_with_a_seed_missing_and_rows_of_another_reading():
    counts = _counts()
    gone = counts[~((counts.condition == "random_rl_code") & (counts.seed == 3) & (counts.benchmark == "tiny_lcb"))]
    claims = C.main_claims(R, gone)
    assert "main:tiny_lcb:rl_code>random_rl_code" not in set(claims["claim_id"]) and len(claims) == 3
    assert (claims["family_size"] == 3).all()
    stale = pd.concat([counts, _counts(seed=8, hash_="another-eval")])  # another eval config: not this reading
    pd.testing.assert_frame_equal(C.main_claims(R, stale), C.main_claims(R, counts))
    assert C.main_claims(R, counts, seeds=[0, 1])["n_seeds"].eq(2).all()


def test_headline_states_each_main_claim_with_its_family_interval(monkeypatch, tmp_path):
    from klear_lib import report, tables
    from klear_lib.results import EVAL_SEED_GAINS

    monkeypatch.setattr("klear_lib.paths.results_dir", lambda preset: tmp_path)
    counts = _counts()
    path = C.write_main_claims(R, counts)
    claims = tables.read(C.MAIN_CLAIMS, path)
    move = "-0.3000;-0.2800;-0.3100;-0.2900;-0.3200"
    tables.write(EVAL_SEED_GAINS, pd.DataFrame([{
        "benchmark": "tiny_aime", "before": "sft", "after": "random_rl_code", "n_seeds": 5, "gain": -0.3,
        "ci_low": 0.0, "ci_high": 0.0, "seed_ci_low": 0.0, "seed_ci_high": 0.0, "n_problems": PROBLEMS,
        "per_seed": move, "significant": True}]), tmp_path / "eval_seed_gains.csv")
    text = report.standing_section(R)
    assert text.startswith("- **The main job over 5 RL seeds**, its 4 claims decided as one family")
    for r in claims.itertuples():
        pts = f"{r.ours_diff_pts:+.1f}".replace("-", "−")
        assert f"**{pts} points [" in text and f"*{r.verdict}***" in text
    vals = [float(v) for v in move.split(";")]
    half = st.t.ppf(1 - 0.05 / 8, 4) * np.std(vals, ddof=1) / np.sqrt(5)
    lo, hi = (f"{100 * x:+.1f}".replace("-", "−") for x in (np.mean(vals) - half, np.mean(vals) + half))
    assert f"the control alone moving it by −30.0 [{lo}, {hi}] from the SFT model" in text
    assert "coin flip" in text and "can exceed the RL gain itself" in text
    (tmp_path / "rerun").mkdir()
    path.rename(tmp_path / "rerun" / "main_claims.csv")  # the study re-run's registered read, before the swap
    text = report.standing_section(R)
    assert text.startswith("- **The main job over 5 RL seeds**") and "the control alone" not in text
    assert f"(`{tmp_path / 'rerun' / 'main_claims.csv'}`)" in text  # and no other run's gains beside it


def test_the_main_sweep_counts_a_seed_stored_only_with_both_arms_read_on_every_benchmark(monkeypatch, tmp_path):
    from klear_lib import tables
    from klear_lib.results import PROBLEMS

    rerun = _rerun_script()
    monkeypatch.setattr("klear_lib.paths.results_dir", lambda preset: tmp_path)
    main = rerun.rerun_recipe("tiny").main_job
    assert main.eval.benchmarks == ("math_eval_t23", "code_eval_t45")
    assert (main.eval.k_math, main.eval.k_code) == (16, 4)
    assert rerun.main_progress("tiny") == {"experiment": "main", "arms": 2, "seeds_registered": 5, "seeds_stored": 0,
                                           "runs_stored": 0, "runs_registered": 10}

    def rows(stages, seed, benches=main.eval.benchmarks, hash_=config_hash(main.eval)):
        return [{"experiment": "main", "condition": st, "seed": seed, "benchmark": b, "problem": "p0", "k": 4,
                 "correct": 1, "config_hash": hash_} for st in stages for b in benches]
    both = ("rl_math", "rl_code", "random_rl_math", "random_rl_code")
    stored = (rows(both, 0) + rows(both, 1) + rows(("rl_math", "rl_code"), 2)  # seed 2: the task's arm only
              + rows(both, 3, benches=("math_eval_t23",))                       # seed 3: one benchmark read
              + rows(both, 4, hash_="another-reading"))                         # seed 4: another eval config
    tables.write(PROBLEMS, pd.DataFrame(stored), tmp_path / "rerun" / "problems" / "main.csv")
    assert rerun.main_progress("tiny") == {"experiment": "main", "arms": 2, "seeds_registered": 5, "seeds_stored": 2,
                                           "runs_stored": 5, "runs_registered": 10}


def test_a_reused_rl_stage_leaves_its_run_record_where_the_reusing_recipe_reads_it(monkeypatch, tmp_path):
    # scripts/rerun.py sweep main trains under results/<preset>/rerun/; notebook 03 then reuses the checkpoint and
    # reads its run record under results/<preset>/runs/, where the earlier design's record of that name sat
    import dataclasses

    from klear_lib import artifacts, pipeline

    monkeypatch.setenv("KLEAR_ARTIFACTS", str(tmp_path / "store"))
    monkeypatch.setattr("klear_lib.paths.results_dir", lambda preset: tmp_path / "results")
    trained = []

    def fake_train(cfg, init, rows, reward, out, record):
        trained.append(record)
        record.write_text("rl_step,reward_mean\n1,0.5\n")
        (out / "final").mkdir(parents=True)
        artifacts.mark_complete(out / "final")

    monkeypatch.setattr(pipeline, "train_rl", fake_train)
    sweep, notebook = dataclasses.replace(recipe("ci"), results_subdir="rerun"), recipe("ci")
    rows = [{"id": "p0"}]
    notebook.runs.mkdir(parents=True, exist_ok=True)
    (notebook.runs / "rl_math-s1.csv").write_text("rl_step,reward_mean\n1,0.1\n")  # an earlier design's record
    first = pipeline.rl_stage(sweep, tmp_path / "sft", "math", rows=rows, name="rl_math-s1")
    again = pipeline.rl_stage(notebook, tmp_path / "sft", "math", rows=rows, name="rl_math-s1")
    assert first == again and len(trained) == 1  # trained once
    assert (notebook.runs / "rl_math-s1.csv").read_text() == (sweep.runs / "rl_math-s1.csv").read_text() != ""


def test_a_reused_sft_stage_brings_its_own_run_record_over_a_stale_one(monkeypatch, tmp_path):
    import dataclasses

    from klear_lib import artifacts, pipeline

    monkeypatch.setenv("KLEAR_ARTIFACTS", str(tmp_path / "store"))
    monkeypatch.setattr("klear_lib.paths.results_dir", lambda preset: tmp_path / "results")
    trained = []

    def fake_train(cfg, base, rows, out, record_path):
        if not artifacts.is_complete(out / "final"):
            trained.append(out)
            record_path.write_text("step,loss\n1,4.6\n")
            (out / "final").mkdir(parents=True)
            artifacts.mark_complete(out / "final")
        return out / "final"

    monkeypatch.setattr(pipeline, "train_sft", fake_train)
    monkeypatch.setattr(pipeline, "load_or_build", lambda recipe: "base-model")
    sweep, notebook = dataclasses.replace(recipe("ci"), results_subdir="rerun"), recipe("ci")
    notebook.runs.mkdir(parents=True, exist_ok=True)
    (notebook.runs / "sft.csv").write_text("step,loss\n1,9.9\n")  # an earlier design's record
    rows = [{"id": "p0"}]
    assert pipeline.sft_stage(sweep, rows) == pipeline.sft_stage(notebook, rows) and len(trained) == 1
    assert (notebook.runs / "sft.csv").read_text() == (sweep.runs / "sft.csv").read_text() == "step,loss\n1,4.6\n"


def test_two_arms_at_zero_everywhere_decide_nothing():
    counts = _counts().assign(correct=0)
    claims = C.main_claims(R, counts)
    assert len(claims) == 4 and (claims["verdict"] == "undecided").all() and (claims["ours_diff_pts"] == 0).all()


def test_rl_seeds_refuses_an_arm_its_control_does_not_have():
    from klear_lib.pipeline import rl_seeds

    with pytest.raises(ValueError, match="arms="):
        rl_seeds(R, "sft-ckpt", [0], control=None, arms=("random_",))  # raises before any training
    with pytest.raises(ValueError, match="arms="):
        rl_seeds(R, "sft-ckpt", [0], control="format", arms=("task",))


def _bh_by_hand(p) -> np.ndarray:
    p = np.asarray(p, float)
    order, m = np.argsort(p), len(p)
    q = np.minimum.accumulate((p[order] * m / np.arange(1, m + 1))[::-1])[::-1]
    return np.minimum(1, q)[np.argsort(order)]


def test_one_claims_table_holds_the_main_claims_with_bh_across_every_family(tmp_path):
    from klear_lib import tables

    ablations = C.build_claims(R, paths={"sft": tmp_path / "none.csv", "rl": tmp_path / "none.csv"})
    ablations.loc[0, "p_value"] = 0.004  # one ablation claim with a p: BH spans both families
    main = C.main_claims(R, _counts())
    table = C.with_main(ablations, main)
    assert len(table) == len(ablations) + 4 and list(table.columns) == C.COLUMNS + list(tables.PROVENANCE)
    rows = table[table["experiment"] == "main"].set_index("claim_id")
    for m in main.itertuples():
        r = rows.loc[m.claim_id]
        assert (r["verdict"], r["p_holm"], r["family_size"]) == (m.verdict, m.p_holm, 4)
        assert r["multiplicity_family"] == r["family"] == C.MAIN_FAMILY and r["table"] == "Table 1"
        half = st.t.ppf(0.975, 4) * m.sd_diff_pts / np.sqrt(5)  # the unadjusted 95% interval beside the family's
        assert (r["ci_low_pts"], r["ci_high_pts"]) == pytest.approx((m.ours_diff_pts - half, m.ours_diff_pts + half))
        assert r["paper_benchmarks"] in ("aime24;aime25", "lcb_v5;lcb_v6") and r["paper_readings"].count(";") == 1
        assert r["carried_low_pts"] == pytest.approx(m.claimed_pts) and r["claim"] == C.MAIN_CLAIM_TEXT[m.worse]
    tested = table["p_value"].notna()
    assert tested.sum() == 5 and table["q_bh"].notna().sum() == 5
    assert list(table.loc[tested, "q_bh"]) == pytest.approx(list(_bh_by_hand(table.loc[tested, "p_value"])))
    assert C.with_main(ablations, main, q_bh=False)["q_bh"].isna().all()
    back = tables.read(C.CLAIMS, tables.write(C.CLAIMS, table, tmp_path / "claims.csv"))
    assert list(back["claim_id"]) == list(table["claim_id"])
    assert list(C.readme_table(back)["verdict"][-4:]) == list(main["verdict"])


def test_a_claim_names_the_machines_that_drew_the_rows_it_reads_not_the_one_computing_it(tmp_path):
    counts = _counts().assign(cpu="CPU A", numerics="pinned", torch="2.13.0+cpu", mkl="2024.2")
    counts.loc[(counts.condition == "random_rl_code") & (counts.seed == 1), "cpu"] = "CPU B"
    claims = C.main_claims(R, counts).set_index("claim_id")
    for bench in R.eval.benchmarks:
        assert claims.loc[f"main:{bench}:rl_code>sft", "cpu"] == "CPU A"
        assert claims.loc[f"main:{bench}:rl_code>random_rl_code", "cpu"] == "CPU A;CPU B"
    assert set(claims["numerics"]) == {"pinned"}
    none = {"sft": tmp_path / "none.csv", "rl": tmp_path / "none.csv"}
    table = C.with_main(C.build_claims(R, paths=none), claims.reset_index())
    assert list(table.loc[table["experiment"] == "main", "cpu"]) == list(claims["cpu"])


def test_an_ablation_claim_names_the_machines_of_both_arms_runs():
    from klear_lib import tables
    from klear_lib.ablations import table as T
    from klear_lib.ablations import verdicts as V

    rows = pd.DataFrame([{"experiment": "fig2", "condition": cond, "benchmark": "b", "metric": "avg@k", "k": 4,
                          "config_hash": "h", "seed": s, "mean": 0.3 + 0.1 * (cond == "gppo") + 0.01 * s,
                          "stderr": 0.02, "cpu": cpu, "numerics": "pinned", "torch": "t", "mkl": "m"}
                         for cond, cpu in (("gppo", "CPU A"), ("grpo", "CPU B")) for s in range(3)])
    rows.loc[2, "cpu"] = "CPU C"  # gppo's seed 2 drawn elsewhere
    summary = T.aggregate(rows)
    assert list(summary["cpu"]) == ["CPU A;CPU C", "CPU B"]
    cells = V.by_cell(summary)
    pair = V.comparison_row(type("E", (), {"id": "fig2"}), cells[("fig2", "gppo", "b")], cells[("fig2", "grpo", "b")])
    assert (pair["cpu"], pair["numerics"]) == ("CPU A;CPU B;CPU C", "pinned")
    assert tables.drawn_by([{"cpu": "CPU B;CPU A"}, {"cpu": "CPU A"}])["cpu"] == "CPU A;CPU B"


def _rerun_script():
    import importlib.util

    from klear_lib.paths import REPO

    spec = importlib.util.spec_from_file_location("rerun", REPO / "scripts" / "rerun.py")
    rerun = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(rerun)
    return rerun


def test_the_reruns_claims_read_an_experiment_only_once_all_its_runs_are_stored(monkeypatch, tmp_path, capsys):
    from klear_lib import tables
    from klear_lib.results import PROBLEMS

    rerun = _rerun_script()
    monkeypatch.setattr("klear_lib.paths.results_dir", lambda preset: tmp_path)
    main = rerun.rerun_recipe("tiny").main_job
    counts = _counts(r=main)
    stages = pd.concat([counts] + [counts[counts.condition == c].assign(condition=c.replace("code", "math"))
                                   for c in ("rl_code", "random_rl_code")])
    path = tmp_path / "rerun" / "problems" / "main.csv"
    tables.write(PROBLEMS, stages[stages.seed != 4], path)  # seed 4 missing: the main job is not read
    rerun.claims("tiny")
    out = tables.read(C.CLAIMS, tmp_path / "rerun" / "claims.csv")
    assert (out["verdict"] == C.NOT_RUN).all() and out["q_bh"].isna().all() and "main" not in set(out["experiment"])
    said = capsys.readouterr().out
    assert "main: not read, 8 of 10 registered runs stored" in said and "fig2: not read, 0 of 240" in said
    extra = stages[stages.seed == 4].assign(seed=5)  # a sixth seed stored beside the five registered: not read
    tables.write(PROBLEMS, pd.concat([stages, extra]), path)  # all five seeds of both arms: read, ablations not
    rerun.claims("tiny")
    out = tables.read(C.CLAIMS, tmp_path / "rerun" / "claims.csv")
    read = out[out["verdict"] != C.NOT_RUN]
    assert list(read["claim_id"]) == list(C.main_claims(main, stages)["claim_id"]) and len(read) == 4
    assert list(read["ours_diff_pts"]) == pytest.approx(list(C.main_claims(main, stages)["ours_diff_pts"]))
    assert (read["n_seeds"] == 5).all()
    assert out["q_bh"].isna().all()  # no q-value while a registered experiment is missing
    assert "no q-values until every registered experiment is stored" in capsys.readouterr().out


def test_figures_3_and_4_are_read_only_once_both_are_stored():
    """Pre-registration section 2: no Fig. 3 or Fig. 4 claim before all four arms are in (Fig. 3 was complete first,
    with Fig. 4 at 0 of 80); the other experiments are read alone."""
    rerun = _rerun_script()

    def counts(**stored):
        return [{"experiment": e, "runs_stored": stored.get(e, 80), "runs_registered": 80}
                for e in ("fig2", "fig3", "fig4", "main")]

    done, held = rerun.readable(counts(fig4=0))
    assert done == {"fig2", "main"}
    assert held == ["fig3: not read, all its runs stored, but read only together with fig3 and fig4",
                    "fig4: not read, 0 of 80 registered runs stored"]
    assert rerun.readable(counts())[0] == {"fig2", "fig3", "fig4", "main"}
    assert rerun.readable(counts(fig2=79))[0] == {"fig3", "fig4", "main"}


def test_the_main_sweep_still_starts_a_task_arm_where_a_control_no_longer_fits():
    rerun = _rerun_script()
    todo = [("random_", 3), ("random_", 4), ("", 0)]
    assert rerun._next_run(todo, {}, 100.0, 99.0) == ("random_", 3)  # nothing timed yet: the first starts
    assert rerun._next_run(todo, {}, None, 1e9) == ("random_", 3)  # no deadline
    timed = {"random_": 7200.0}  # a control took 2 h; the task arm, not timed yet, is guessed at that too
    assert rerun._next_run(todo, timed, 10_000.0, 0.0) == ("random_", 3)
    assert rerun._next_run(todo, timed, 7_000.0, 0.0) is None
    timed[""] = 3000.0  # a task arm took 50 min: it still fits where a control does not
    assert rerun._next_run(todo, timed, 7_000.0, 0.0) == ("", 0)
    assert rerun._next_run(todo, timed, 2_000.0, 0.0) is None


def test_the_main_sweep_can_run_one_arm_only():
    rerun = _rerun_script()
    done, arms, seeds = {("random_", 0), ("random_", 1)}, ("", "random_"), [0, 1, 2]
    assert rerun._main_todo(done, arms, seeds) == [("", 0), ("", 1), ("", 2), ("random_", 2)]
    assert rerun._main_todo(done, arms, seeds, "task") == [("", 0), ("", 1), ("", 2)]
    assert rerun._main_todo(done, arms, seeds, "control") == [("random_", 2)]


def test_an_ablation_sweep_shrinks_its_chunk_to_what_fits_before_stop_by():
    rerun = _rerun_script()
    missing = {19: 2, 20: 6, 21: 6}  # seed -> its runs not stored
    assert rerun._next_chunk(missing, 2, None, 1_000.0, 0.0) == [19]  # nothing timed yet: one seed measures it
    assert rerun._next_chunk(missing, 2, None, None, 0.0) == [19, 20]  # nor a deadline: a whole chunk
    assert rerun._next_chunk(missing, 2, 600.0, None, 0.0) == [19, 20]  # no deadline
    assert rerun._next_chunk(missing, 2, 600.0, 2_400.0, 0.0) == [19, 20]  # 8 runs: 4 rounds of 10 min
    assert rerun._next_chunk(missing, 2, 600.0, 2_399.0, 0.0) == [19]  # only seed 19's 2 runs fit
    assert rerun._next_chunk(missing, 2, 600.0, 599.0, 0.0) == []
    assert rerun._next_chunk({21: 6}, 2, 600.0, 1_800.0, 0.0) == [21]  # the last seed alone


def test_experiments_swept_together_hand_on_the_time_per_round(monkeypatch):
    """``sweep fig3 fig4 --stop-by``: fig4's first chunk is judged by fig3's time per round, so a sweep near its
    end starts nothing rather than a one-seed chunk that runs past the hour; a finished experiment passes it on."""
    from klear_lib.ablations.rl import RL

    rerun = _rerun_script()
    stored = {"fig3": {("hard", 0), ("soft", 0)}, "fig4": set()}
    monkeypatch.setattr(rerun, "rerun_recipe", lambda preset: None)
    monkeypatch.setattr(rerun, "_stored_runs", lambda preset, e: (["hard", "soft"], [0], stored[e]))
    monkeypatch.setattr(rerun, "progress", lambda preset, e: e)
    monkeypatch.setattr(rerun, "_to_train", lambda r, todo: {s: len(c) for s, c in todo.items()})  # none reused
    ran = []
    monkeypatch.setattr(type(RL), "run_experiment", lambda self, r, e, seeds, workers: ran.append((e, seeds)))
    soon = (rerun.datetime.now(rerun.timezone.utc) + rerun.timedelta(minutes=10)).strftime("%H:%M")
    assert rerun.sweep("tiny", "fig3", 2, soon, per_round=780.0) == 780.0  # nothing missing: handed on unchanged
    assert rerun.sweep("tiny", "fig4", 2, soon, per_round=780.0) == 780.0 and ran == []  # 13 min > 10: not started
    with pytest.raises(SystemExit, match="stored no run"):  # no time handed on: the one-seed chunk starts
        rerun.sweep("tiny", "fig4", 2, soon)
    assert ran == [("fig4", [0])]


def test_a_sweep_times_its_rounds_by_the_runs_that_train(monkeypatch):
    """Fig. 4's filtered arm reuses Fig. 3's soft checkpoint and is stored in a minute: a chunk of two seeds with
    one run to train each is one round, not two, so the round measured is the whole chunk's time, and a chunk of
    reused runs only leaves the time per round as it was."""
    from klear_lib.ablations.rl import RL

    rerun = _rerun_script()
    stored, clock = set(), [0.0]
    monkeypatch.setattr(rerun, "rerun_recipe", lambda preset: None)
    arms = ["filtered", "unfiltered"]
    monkeypatch.setattr(rerun, "_stored_runs", lambda preset, e: (arms, [0, 1, 2, 3], set(stored)))
    monkeypatch.setattr(rerun, "progress", lambda preset, e: e)
    monkeypatch.setattr(rerun, "_to_train", lambda r, todo: {s: sum(c == "unfiltered" and s < 2 for c in conds)
                                                            for s, conds in todo.items()})
    monkeypatch.setattr(rerun.time, "time", lambda: clock[0])

    def run(self, r, e, seeds, workers):
        stored.update((c, s) for s in seeds for c in ("filtered", "unfiltered"))
        clock[0] += 600.0 if any(s < 2 for s in seeds) else 60.0  # a round of training: 10 min; reuse: 1 min

    monkeypatch.setattr(type(RL), "run_experiment", run)
    assert rerun.sweep("tiny", "fig4", 2, None, per_round=300.0) == 600.0  # seeds 0-1: one round; 2-3: reused


def test_a_stop_by_hour_already_past_is_tomorrows():
    rerun = _rerun_script()
    from datetime import datetime, timezone
    now = datetime(2026, 12, 5, 22, 0, tzinfo=timezone.utc)
    assert rerun._deadline("23:30", now) == datetime(2026, 12, 5, 23, 30, tzinfo=timezone.utc).timestamp()
    assert rerun._deadline("00:30", now) == datetime(2026, 12, 6, 0, 30, tzinfo=timezone.utc).timestamp()
    assert rerun._deadline("22:00", now) == datetime(2026, 12, 6, 22, 0, tzinfo=timezone.utc).timestamp()
    assert rerun._deadline(None, now) is None


def test_the_cpu_check_splits_each_paired_claim_by_the_model_that_drew_both_arms():
    import pandas as pd
    rerun = _rerun_script()
    drew = {0: ("A", "A"), 1: ("A", "A"), 2: ("B", "B"), 3: ("A", "B"), 4: ("B", "B"), 9: ("B", "B")}
    rows = pd.DataFrame([{"experiment": "fig2", "condition": arm, "benchmark": "m", "seed": s, "cpu": cpus[i],
                          "metric": metric} for s, cpus in drew.items() for i, arm in enumerate(("gppo", "grpo"))
                         for metric in ("avg@k", "pass@k")])
    claim = {"claim_id": "c1", "experiment": "fig2", "benchmark": "m", "better": "gppo", "worse": "grpo",
             "test": "paired", "seed_diffs_pts": "1.00;3.00;2.00;-50.00;4.00"}  # seeds 0-4 in order
    welch = {**claim, "claim_id": "c2", "test": "welch", "seed_diffs_pts": ""}
    out = rerun.by_cpu(pd.DataFrame([claim, welch]), rows, {"fig2": [0, 1, 2, 3, 4]})
    assert list(out["cpu"]) == ["A", "B"] and list(out["seeds"]) == ["0;1", "2;4"]  # seed 3's arms: two models
    assert list(out["n_seeds"]) == [2, 2] and list(out["mean_pts"]) == [2.0, 3.0]
    assert (out["ci_low_pts"] < out["mean_pts"]).all() and (out["mean_pts"] < out["ci_high_pts"]).all()
    with pytest.raises(ValueError, match="c1: 4 seed differences but 5 seeds"):
        rerun.by_cpu(pd.DataFrame([{**claim, "seed_diffs_pts": "1;3;2;4"}]), rows, {"fig2": [0, 1, 2, 3, 4]})


def test_the_readme_lists_names_as_a_sentence_does():
    from klear_lib.report import _and

    assert [_and(x) for x in ([], ["a"], ["a", "b"], ["a", "b", "c"])] == ["", "a", "a and b", "a, b and c"]


def test_the_readme_states_a_rerun_experiment_once_it_is_read(monkeypatch, tmp_path):
    """Fig. 2's registered rows, synthetic: ``rerun.py claims`` reads them, and the README's bullet states each
    claim's family-wise interval and verdict, the arms without a claim as paired differences, and the CPU split."""
    from klear_lib import report, tables
    from klear_lib.ablations.rl import RL
    from klear_lib.configs import recipe as _recipe

    rerun = _rerun_script()
    monkeypatch.setattr("klear_lib.paths.results_dir", lambda preset: tmp_path)
    r = rerun.rerun_recipe("tiny")
    rng = np.random.default_rng(3)
    shift = {"gppo": 0.40, "clip_higher": 0.38, "cispo": 0.40, "grpo": 0.41, "gppo_b0.25": 0.30, "dgpo": 0.40}
    seeds, rows = RL.seeds(r, "fig2"), []
    for c in RL.conditions_for(r, "fig2"):
        for s in seeds:
            for bench in RL.benchmarks_at(r, c):
                m = shift[c.label] + 0.01 * ((s % 5) - 2) + rng.normal(0, 0.004)
                rows += [{"experiment": "fig2", "condition": c.label, "seed": s, "benchmark": bench, "metric": metric,
                          "k": 16, "mean": m, "stderr": 0.01, "ci_low": m - 0.02, "ci_high": m + 0.02,
                          "n_problems": 400, "n_samples": 6400, "n_train": 700, "config_hash": RL.key(r, c),
                          "cpu": "Intel" if s >= 20 else "AMD", "numerics": "pinned", "torch": "t", "mkl": "m"}
                         for metric in ("avg@k", "pass@k")]
    tables.write(RL.table, pd.DataFrame(rows), RL.csv(r.results))
    rerun.claims("tiny")
    claims = tables.read(C.CLAIMS, tmp_path / "rerun" / "claims.csv").set_index("claim_id")
    assert (claims.loc[claims["experiment"] == "fig2", "n_seeds"] == len(seeds)).all()
    text = report.standing_section(_recipe("tiny"))
    bullet = next(line for line in text.splitlines() if line.startswith("- **The re-run's Figure 2**"))
    assert f"over {len(seeds)} paired seeds, avg@16 on `math_eval_t23`" in bullet
    assert "`gppo_b0.25` 30." in bullet and "(all inside the 25–75% band)" in bullet
    for cid in ("fig2:gppo>clip_higher@math_eval_t23", "fig2:grpo>gppo@math_eval_t23"):
        c = claims.loc[cid]
        pts = [f"{v:+.1f}".replace("-", "−") for v in (c.ours_diff_pts, c.adj_ci_low_pts, c.adj_ci_high_pts)]
        assert (f"{c.better} > {c.worse} ({c.multiplicity_family}): **{pts[0]} points [{pts[1]}, {pts[2]}], "
                f"*{c.verdict}***") in bullet
    assert "(no positive size claimed: only *replicated* or *opposite* can decide it)" in bullet  # gppo > cispo
    assert "*replicated*** (carried 4.8; the whole interval below it)" in bullet  # gppo > clip_higher: +2 of 4.8
    diff = [100 * (g - p) for g, p in zip(*(
        [x["mean"] for x in rows if x["condition"] == arm and x["metric"] == "avg@k"]
        for arm in ("gppo_b0.25", "gppo")))]
    assert f"`gppo_b0.25` − `gppo` −{abs(np.mean(diff)):.1f} [" in bullet and "`dgpo` − `gppo`" in bullet
    assert "the 2 CPU models that drew the seeds (descriptive): the models' intervals overlap" in bullet
    assert "runs shared with" not in bullet  # gppo trains as Fig. 5's filtered arm, but that holds no seed yet
    split = tmp_path / "rerun" / "claims_by_cpu.csv"
    amd = pd.read_csv(split)
    amd[amd["cpu"] == "AMD"].to_csv(split, index=False)  # every seed from one model: nothing to split
    one = next(line for line in report.standing_section(_recipe("tiny")).splitlines() if "Figure 2**" in line)
    assert "Every seed drawn on one CPU model (AMD)." in one and "Split by" not in one
    assert "Figure 2's arms**, held-out" not in text  # the earlier design's arms: superseded
    assert "claims_by_cpu.csv" in bullet and "ablations_rl_summary.csv" in bullet
    forest = tmp_path / "rerun" / "figures" / "tiny_claims_forest_fig2.png"
    assert forest.is_file() and f"[Forest plot]({forest})." in bullet and report.RERUN == rerun.SUBDIR
    # the earlier design's claims file beside it: its Figure 2 rows leave the README, the others stay
    old = tables.read(C.CLAIMS, tmp_path / "rerun" / "claims.csv")
    tables.write(C.CLAIMS, old.assign(experiment=old["experiment"].replace("fig3", "fig2"), verdict="undecided"),
                 tmp_path / "claims.csv")
    section = report.claims_section(_recipe("tiny"))
    assert "| Figure 2 |" not in section and "| Figure 3 |" not in section  # both now name fig2
    assert "| Table 2 |" in section and "Figure 2: the re-run's, in the README's \"What was found\"" in section
    summary = report.standing_section(_recipe("tiny"))
    n = int((old["experiment"] != "main").sum())
    assert f"(of the earlier design's {n}; Figure 2 re-run above)" in summary


def test_the_sft_tables_of_sections_6_to_8_are_swept_and_counted_as_sft_runs(monkeypatch, tmp_path):
    """Tables 2 and 4 are registered (section 6), Table 3 (section 7) and Table 5 (section 8) too, and swept by the
    SFT family, every run missing counted as one to train (no SFT run shares a checkpoint with another
    experiment's); an experiment without a section is refused."""
    from klear_lib.ablations.rl import RL
    from klear_lib.ablations.sft import SFT

    rerun = _rerun_script()
    assert rerun.family_of("table2") is SFT and rerun.family_of("table6") is RL
    with pytest.raises(SystemExit, match="table9 is no ablation experiment"):
        rerun.family_of("table9")
    monkeypatch.setattr("klear_lib.paths.results_dir", lambda preset: tmp_path)
    assert rerun.progress("tiny", "table2") == {"experiment": "table2", "arms": 4, "seeds_registered": 16,
                                                "seeds_stored": 0, "runs_stored": 0, "runs_registered": 64}
    assert rerun.progress("tiny", "table4")["runs_registered"] == 48
    assert rerun.progress("tiny", "table3") == {"experiment": "table3", "arms": 3, "seeds_registered": 16,
                                                "seeds_stored": 0, "runs_stored": 0, "runs_registered": 48}
    assert rerun.progress("tiny", "table5") == {"experiment": "table5", "arms": 3, "seeds_registered": 8,
                                                "seeds_stored": 0, "runs_stored": 0, "runs_registered": 24}
    monkeypatch.setattr(rerun, "REGISTERED", tuple(e for e in rerun.REGISTERED if e != "table5"))
    with pytest.raises(SystemExit, match="table5 has no section"):
        rerun.sweep("tiny", "table5", 2, None)
    stored, ran = set(), []
    monkeypatch.setattr(rerun, "_stored_runs", lambda preset, e: (["top1", "top6"], [0, 1, 2], set(stored)))
    monkeypatch.setattr(rerun, "progress", lambda preset, e: e)
    monkeypatch.setattr(rerun, "_to_train", lambda r, todo: pytest.fail("RL's reuse check on an SFT experiment"))

    def run(self, r, e, seeds, workers):
        assert self is SFT and e == "table4"
        ran.append(seeds)
        stored.update((c, s) for s in seeds for c in ("top1", "top6"))

    monkeypatch.setattr(type(SFT), "run_experiment", run)
    rerun.sweep("tiny", "table4", 2, None)
    assert ran == [[0, 1], [2]]
