"""SFT data ablations: the statistics over seeds, the verdict rule, the results table with reuse by config hash,
the subsets each condition trains on (ci world), and one real ci run end to end."""
from __future__ import annotations

import dataclasses
import math

import numpy as np
import pandas as pd
import pytest

from klear_lib import stats, tables
from klear_lib.ablations import sft, table
from klear_lib.results import PROBLEMS, load_reported
from klear_lib.ablations.verdicts import claim_verdict
from klear_lib.configs import recipe
from klear_lib.configs.study import SFTScale

CI, TINY = recipe("ci"), recipe("tiny")

# --- statistics and the verdict rule -------------------------------------------------------------------------

def test_t_critical_values_are_exact_at_any_real_df():
    assert stats.t_crit95(2) == pytest.approx(4.303, abs=5e-4)  # the printed tables, to their 3 decimals
    assert stats.t_crit95(4) == pytest.approx(2.776, abs=5e-4)
    assert stats.t_crit95(1000) == pytest.approx(1.9623, abs=1e-4)
    assert stats.t_crit95(4) > stats.t_crit95(4.9) > stats.t_crit95(5)  # Welch's df is not rounded down
    assert stats.t_crit95(4.9) == pytest.approx(2.5864, abs=1e-4)
    assert stats.t_crit95(0.0) == math.inf


def test_t_interval_over_seeds():
    mean, low, high = stats.t_interval([1.0, 2.0, 3.0])
    assert mean == 2.0 and high - mean == pytest.approx(stats.t_crit95(2) / math.sqrt(3))
    assert low == pytest.approx(2 * mean - high)
    assert stats.t_interval([0.4]) == (0.4, -math.inf, math.inf)
    with pytest.raises(ValueError):
        stats.t_interval([])


def test_welch_interval_matches_hand_computation():
    diff, low, high = stats.welch_interval([1.0, 2.0, 3.0], [4.0, 5.0, 6.0])  # se = sqrt(2/3), df = 4
    assert diff == -3.0 and high - diff == pytest.approx(stats.t_crit95(4) * math.sqrt(2 / 3))
    assert stats.welch_df([1.0, 2.0, 3.0], [4.0, 5.0, 6.0]) == pytest.approx(4.0)
    assert stats.welch_interval([1.0, 1.0], [0.0, 0.0]) == (1.0, 1.0, 1.0)
    assert stats.welch_interval([0.5], [0.1, 0.2])[1:] == (-math.inf, math.inf)


@pytest.mark.parametrize("interval, sign, expected", [
    ((0.10, 0.05, 0.20), 1, "replicated"),
    ((-0.10, -0.20, -0.05), 1, "not replicated"),
    ((0.10, -0.01, 0.20), 1, "inconclusive"),
    ((0.0, 0.0, 0.0), 1, "inconclusive"),
    ((-0.10, -0.20, -0.05), -1, "replicated"),
    ((0.3, -math.inf, math.inf), 1, "inconclusive"),
])
def test_verdict_rule(interval, sign, expected):
    assert stats.verdict(*interval, claimed_sign=sign) == expected


def test_verdict_rejects_a_bad_sign():
    with pytest.raises(ValueError, match="claimed_sign"):
        stats.verdict(0.1, 0.0, 0.2, claimed_sign=0)


@pytest.mark.parametrize("interval, claimed, direction, expected", [
    ((0.05, 0.20), 0.03, 1, "replicated"),
    ((-0.20, -0.05), 0.03, 1, "opposite"),
    ((-0.20, -0.05), 0.03, -1, "replicated"),            # the paper's own number has the other sign
    ((-0.01, 0.01), 0.03, 1, "equivalent"),              # inside ± half the claimed 3 points
    ((-0.01, 0.02), 0.03, 1, "smaller than claimed"),    # holds 0, excludes +3 points, not inside ±1.5
    ((-0.01, 0.04), 0.03, 1, "undecided"),               # holds both 0 and the claim
    ((-0.01, 0.01), float("nan"), 1, "undecided"),       # no size to rule out
    ((-0.01, 0.01), -0.002, 1, "undecided"),             # the paper's own readings reach below 0
    ((-math.inf, math.inf), 0.03, 1, "undecided"),
])
def test_decision_rule_is_one_of_five_mutually_exclusive_outcomes(interval, claimed, direction, expected):
    assert stats.decide(*interval, claimed, direction) == expected
    with pytest.raises(ValueError, match="direction"):
        stats.decide(*interval, claimed, 0)


def test_carry_moves_the_papers_effect_to_our_base_rate_on_the_log_odds_scale():
    assert stats.carry(0.55, 0.45, 0.5) == pytest.approx(0.10, abs=1e-9)   # at the paper's own base: unchanged
    small = stats.carry(0.4083, 0.3396, 0.014)   # Table 4 top1 > top6, 6.9 points at 37%, carried to 1.4%
    assert 0.003 < small < 0.005                 # a fraction of a point (the issue's +0.4)
    assert stats.carry(0.30, 0.40, 0.9) < 0 and stats.carry(0.5, 0.5, 0.2) == 0.0
    assert math.isfinite(stats.carry(1.0, 0.0, 0.0))  # rates at 0 or 1 are clipped, never infinite


def test_holm_and_bh_match_their_definitions():
    p = [0.01, 0.04, 0.03, float("nan"), 0.20]
    holm, bh = stats.holm(p), stats.bh(p)
    assert holm[:3].tolist() == pytest.approx([0.04, 0.09, 0.09]) and holm[4] == pytest.approx(0.20)
    assert math.isnan(holm[3]) and math.isnan(bh[3])
    assert bh[[0, 1, 2, 4]].tolist() == pytest.approx([0.04, 0.04 * 4 / 3, 0.04 * 4 / 3, 0.20])
    assert (holm[~np.isnan(holm)] >= np.array(p)[~np.isnan(holm)]).all()


def test_family_wise_interval_widens_with_the_family_and_matches_bonferroni():
    lo1, hi1 = stats.adjusted_interval(0.02, 0.01, 9, 1)
    lo4, hi4 = stats.adjusted_interval(0.02, 0.01, 9, 4)
    assert hi1 - 0.02 == pytest.approx(stats.t_crit95(9) * 0.01)
    assert hi4 - 0.02 == pytest.approx(stats.t_quantile(1 - 0.05 / 8, 9) * 0.01) and lo4 < lo1
    assert stats.adjusted_interval(0.02, float("nan"), 9, 1) == (-math.inf, math.inf)


def test_power_is_exact_against_a_simulation_and_sizes_seeds_on_an_upper_bound():
    rng = np.random.default_rng(0)
    effect, sd, n = 0.02, 0.03, 10
    draws = rng.normal(effect, sd, size=(20000, n))
    t = draws.mean(axis=1) / (draws.std(axis=1, ddof=1) / math.sqrt(n))
    simulated = float((np.abs(t) > stats.t_crit95(n - 1)).mean())
    assert stats.power(effect, sd, n) == pytest.approx(simulated, abs=0.01)
    need = stats.seeds_for_power(effect, sd)
    assert stats.power(effect, sd, need) >= 0.8 > stats.power(effect, sd, need - 1)
    upper = stats.sd_upper(sd, 2)
    assert upper > 1.5 * sd and stats.seeds_for_power(effect, upper) > need  # 3 seeds say little about the spread
    assert stats.seeds_for_power(0.0, sd) is None and stats.seeds_for_power(effect, float("nan")) is None


def test_power_far_in_the_noncentral_tail_is_a_number_that_matches_a_simulation():
    # SciPy's noncentral t gives NaN where its lower tail underflows (from a noncentrality of about 8 at df 4: the main
    # job's math claim, a claimed 6.7 points against a spread of 0.4, sits at 39); the quadrature takes over there and
    # agrees with nct where nct is defined
    from scipy import stats as st
    crit = stats.t_quantile(1 - 0.0125 / 2, 4)
    assert math.isnan(st.nct.sf(crit, 4, 20) + st.nct.cdf(-crit, 4, 20))  # the case the fallback is for
    for ncp in (0.5, 1.0, 3.0, 6.0):
        exact = st.nct.sf(crit, 4, ncp) + st.nct.cdf(-crit, 4, ncp)
        assert stats._power_by_quadrature(crit, 4, ncp) == pytest.approx(exact, abs=1e-6)
    rng = np.random.default_rng(1)
    for effect, sd, n, alpha in ((6.7, 0.38, 5, 0.0125), (0.6, 0.01, 2, 0.0125)):  # ncp 39 at df 4, 85 at df 1
        got = stats.power(effect, sd, n, alpha)
        draws = rng.normal(effect, sd, size=(40000, n))
        t = draws.mean(axis=1) / (draws.std(axis=1, ddof=1) / math.sqrt(n))
        simulated = float((np.abs(t) > stats.t_quantile(1 - alpha / 2, n - 1)).mean())
        assert not math.isnan(got) and got == pytest.approx(simulated, abs=0.01)
    assert stats.seeds_for_power(6.7, 0.38, 0.0125) == min(n for n in range(2, 10)
                                                           if stats.power(6.7, 0.38, n, 0.0125) >= 0.8)


def test_paired_comparison_uses_the_common_seeds_and_beats_welch_when_seeds_share_a_shift():
    # a seed effect (+0.1 on seed 1) moves both arms alike: paired sees a constant +0.02, Welch sees noise
    a, b = [0.30, 0.40, 0.32, 0.50], [0.28, 0.38, 0.30, 0.9]
    got = stats.compare(a[:3], [0, 1, 2], b, [0, 1, 2, 7])  # seed 7 ran on one side only: left out
    assert got["test"] == "paired" and got["n"] == 3 and got["df"] == 2
    assert got["diff"] == pytest.approx(0.02)
    assert got["low"] == pytest.approx(0.02, abs=1e-9) and got["high"] == pytest.approx(0.02, abs=1e-9)
    welch = stats.compare(a[:3], [0, 1, 2], b[:3], [3, 4, 5])  # no common seed: Welch
    assert welch["test"] == "welch" and welch["low"] < 0 < welch["high"]
    assert welch["df"] == pytest.approx(stats.welch_df(a[:3], b[:3]))


def test_claim_verdict_combines_pairs():
    assert claim_verdict(["replicated", "replicated"]) == "replicated"
    assert claim_verdict(["replicated", "inconclusive"]) == "inconclusive"
    assert claim_verdict(["not replicated", "inconclusive"]) == "not replicated"
    assert claim_verdict(["replicated", "not replicated"]) == "inconclusive"
    assert claim_verdict([]) == "inconclusive"


# --- the results table, aggregation and verdicts on synthetic runs -------------------------------------------

def _row(exp, cond, seed, bench, mean, cfg_hash="h1", metric="avg@k"):
    return {"experiment": exp, "condition": cond, "seed": seed, "benchmark": bench, "metric": metric, "k": 4,
            "mean": mean, "stderr": 0.01, "ci_low": max(0.0, mean - 0.02), "ci_high": min(1.0, mean + 0.02),
            "n_problems": 100, "n_samples": 400, "n_train": 2000, "config_hash": cfg_hash}


def _table2_runs():
    means = {"easy/only_correct": (0.50, 0.55, 0.60), "easy/mixed": (0.20, 0.25, 0.30),
             "hard/only_correct": (0.60, 0.62, 0.64), "hard/mixed": (0.10, 0.12, 0.14)}
    rows = [_row("table2", c, s, "tiny_aime", m) for c, ms in means.items() for s, m in enumerate(ms)]
    rows += [_row("table2", c, s, "tiny_lcb", 0.0) for c in means for s in range(3)]
    return pd.DataFrame(rows)


def test_aggregate_t_interval_seed_values_and_definition_order():
    summary = sft.SFT.aggregate(_table2_runs())
    aime = summary[summary["benchmark"] == "tiny_aime"]
    assert list(aime["condition"]) == ["easy/only_correct", "easy/mixed", "hard/only_correct", "hard/mixed"]
    first = aime.iloc[0]
    assert first["n_seeds"] == 3 and first["seeds"] == (0, 1, 2) and first["values"] == (0.5, 0.55, 0.6)
    assert first["mean"] == pytest.approx(0.55)
    assert first["ci_high"] - first["mean"] == pytest.approx(stats.t_crit95(2) * 0.05 / math.sqrt(3))


def test_pairs_are_paired_differences_with_p_and_no_verdict():
    pairs = sft.SFT.pairs(sft.SFT.aggregate(_table2_runs()))
    aime = pairs[pairs["benchmark"] == "tiny_aime"].set_index("better")
    assert "verdict" not in pairs and aime.loc["easy/only_correct", "diff"] == pytest.approx(0.30)
    assert (aime["test"] == "paired").all() and (aime["df"] == 2).all()
    assert aime.loc["easy/only_correct", "sd_diff"] == pytest.approx(0.0, abs=1e-12)  # +0.30 on every seed
    assert aime.loc["easy/only_correct", "p_value"] < 1e-6 and aime.loc["hard/mixed", "diff"] < 0
    lcb = pairs[pairs["benchmark"] == "tiny_lcb"]
    assert set(lcb["note"]) == {"both at 0"}


def test_contrast_is_a_difference_with_an_interval_and_no_verdict():
    rows = [_row("table3", c, s, "tiny_lcb", m) for c, ms in {"rank1/no_checks": (0.2, 0.22, 0.24),
                                                                "rank1": (0.04, 0.05, 0.06)}.items()
            for s, m in enumerate(ms)]
    got = sft.SFT.contrast(sft.SFT.aggregate(pd.DataFrame(rows)), "table3", "rank1/no_checks", "rank1")
    assert len(got) == 1 and "verdict" not in got and got["diff"].iloc[0] == pytest.approx(0.17)
    assert 0 < got["ci_low"].iloc[0] < 0.17 < got["ci_high"].iloc[0]
    assert sft.SFT.contrast(sft.SFT.aggregate(pd.DataFrame(rows)), "table3", "rank1/no_checks", "rank2").empty


def test_verdicts_refuse_two_configurations_of_one_cell():
    runs = _table2_runs()
    runs.loc[0, "config_hash"] = "h2"
    with pytest.raises(ValueError, match="two config hashes"):
        sft.SFT.pairs(sft.SFT.aggregate(runs))


def test_upsert_replaces_every_row_of_a_rerun(tmp_path):
    stored = tables.upsert(table.ABLATION, tables.empty(table.ABLATION), _table2_runs())
    rerun = [_row("table2", "easy/mixed", 0, "tiny_aime", 0.9, cfg_hash="h2")]
    out = tables.upsert(table.ABLATION, stored, rerun)
    sel = out[(out["condition"] == "easy/mixed") & (out["seed"] == 0)]
    assert sel[["benchmark", "mean", "config_hash"]].values.tolist() == [["tiny_aime", 0.9, "h2"]]
    assert len(out) == len(stored) - 1
    path = tables.write(table.ABLATION, out, tmp_path / "abl.csv")
    again = tables.read(table.ABLATION, path)
    assert len(again) == len(out) and again["config_hash"].tolist() == out["config_hash"].tolist()
    tables.write(table.ABLATION, again, tmp_path / "abl2.csv")
    assert (tmp_path / "abl2.csv").read_bytes() == path.read_bytes()


def test_bad_rows_are_named():
    bad = _table2_runs()
    bad.loc[3, "mean"] = 1.5
    with pytest.raises(ValueError, match="'easy/mixed', 'seed': 0"):
        tables.validate(table.ABLATION, bad)
    dup = pd.concat([_table2_runs().head(2), _table2_runs().head(1)])
    with pytest.raises(ValueError, match="duplicate"):
        tables.validate(table.ABLATION, dup)


# --- definitions and reuse --------------------------------------------------------------------------------------

def test_seeds_resolve_per_preset():  # the definitions of both families: tests/test_ablations_rl.py
    assert sft.SFT.seeds(CI, "table5") == [0] and sft.SFT.seeds(CI, "table2", [4, 7]) == [4, 7]
    assert sft.SFT.seeds(TINY, "table2") == list(range(16))  # fixed by its registration (section 6)
    assert sft.SFT.seeds(TINY, "table3") == list(range(16))  # section 7
    assert sft.SFT.seeds(TINY, "table5") == list(range(8))  # and section 8


def test_condition_hash_ignores_the_seed_but_not_the_scale(monkeypatch):
    cond = sft.EXPERIMENTS["table4"].conditions[0]
    h = sft.condition_hash(CI, cond)
    assert h == sft.condition_hash(CI, cond) and h != sft.condition_hash(TINY, cond)
    assert sft.condition_hash(CI, dataclasses.replace(cond, claim="reworded")) == h
    assert sft.condition_hash(CI, dataclasses.replace(cond, subset=(("ability", "math"), ("top_k", 2)))) != h
    assert sft.condition_hash(CI.replace(study={"sft_ablations": SFTScale(budget={"table4": 50}, reduced=True)}),
                              cond) != h


def test_run_experiment_reuses_rows_with_the_same_hash(monkeypatch, tmp_path):
    calls = []

    def fake_run(recipe_, cond, seed, pool):
        calls.append((cond.label, seed))
        return [_row(cond.experiment, cond.label, seed, b, 0.25, sft.condition_hash(recipe_, cond))
                for b in sft.SFT.benchmarks_at(recipe_, cond)]

    monkeypatch.setattr(sft, "SFT", dataclasses.replace(sft.SFT, run=fake_run, setup=lambda recipe_, todo, workers: []))
    path = tmp_path / "ablations_sft.csv"
    first = sft.SFT.run_experiment(CI, "table4", seeds=[0, 1], path=path)
    assert sorted(calls) == [("top1", 0), ("top1", 1), ("top4", 0), ("top4", 1)] and len(first) == 8
    calls.clear()
    assert sft.SFT.run_experiment(CI, "table4", seeds=[0, 1], path=path).equals(first) and calls == []
    sft.SFT.run_experiment(CI, "table4", seeds=[1], path=path, retrain=True)
    assert sorted(calls) == [("top1", 1), ("top4", 1)]
    calls.clear()
    ci = CI.replace(study={"sft_ablations": SFTScale(budget={"table4": 50}, seeds=1, reduced=True)})
    sft.SFT.run_experiment(ci, "table4", path=path)
    assert sorted(calls) == [("top1", 0), ("top4", 0)]


# --- the subsets each condition trains on (ci world) -------------------------------------------------------------

@pytest.fixture(scope="module")
def ci_pool():
    from klear_lib.data import load_split

    return load_split("sft_pool", recipe("ci"))


def test_every_ci_condition_fills_its_budget_by_its_rule(ci_pool):
    for exp in sft.EXPERIMENTS.values():
        for cond in exp.conditions:
            rows = sft.condition_rows(ci_pool, cond, CI.study.sft_ablations, seed=0)
            kw = cond.kwargs
            if not cond.fixed_prompts:
                assert len(rows) == CI.study.sft_ablations.budget[exp.id], cond.label
            assert all(r["ability"] == kw.get("ability", r["ability"]) for r in rows)
            assert all(r["teacher_rank"] <= kw.get("top_k", 99) for r in rows)
            assert all(r["difficulty"] == kw.get("difficulty", r["difficulty"]) for r in rows)
            if kw.get("correctness") == "only_correct":
                assert all(r["correct"] for r in rows)


def test_table2_mixed_keeps_incorrect_traces_and_seeds_change_the_subset(ci_pool):
    cond = sft.EXPERIMENTS["table2"].condition("hard/mixed")
    rows = sft.condition_rows(ci_pool, cond, CI.study.sft_ablations, seed=0)
    assert not all(r["correct"] for r in rows)
    other = sft.condition_rows(ci_pool, cond, CI.study.sft_ablations, seed=1)
    assert {r["id"] for r in rows} != {r["id"] for r in other}


def test_table3_teachers_answer_the_same_prompts(ci_pool):
    exp = sft.EXPERIMENTS["table3"]
    items = [sorted({r["item_id"] for r in sft.condition_rows(ci_pool, c, CI.study.sft_ablations, seed=0)}) for c in exp.conditions]
    assert items[0] == items[1] == items[2] and len(items[0]) == 12 + 6
    teachers = {r["teacher"] for r in sft.condition_rows(ci_pool, exp.condition("rank2"), CI.study.sft_ablations, seed=0)}
    assert teachers == {"careful", "code_stepwise"}


def test_table3_no_checks_is_rank1_without_its_check_lines(ci_pool):
    exp = sft.EXPERIMENTS["table3"]
    plain, stripped = (sft.condition_rows(ci_pool, exp.condition(label), CI.study.sft_ablations, seed=0)
                       for label in ("rank1", "rank1/no_checks"))
    assert [r["id"] + "/no_checks" for r in plain] == [r["id"] for r in stripped]  # a new id: a new checkpoint key
    answers = [(a["messages"][-1]["content"], b["messages"][-1]["content"]) for a, b in zip(plain, stripped)]
    assert any("check" in a for a, _ in answers) and not any("check" in b for _, b in answers)
    assert all(a.split("</think>")[1] == b.split("</think>")[1] for a, b in answers)
    assert "rank1/no_checks" not in {c.label for c in sft.SFT.conditions_for(CI, exp)}  # ci runs the claimed pair


def test_a_budget_the_pool_cannot_fill_raises_naming_the_condition(ci_pool, monkeypatch):
    with pytest.raises(ValueError, match="table2 easy/only_correct: .* budget of 10000"):
        sft.condition_rows(ci_pool, sft.EXPERIMENTS["table2"].conditions[0],
                           SFTScale(budget={"table2": 10_000}, reduced=True), seed=0)
    with pytest.raises(ValueError, match="fixed prompts"):
        sft.fixed_prompt_rows(ci_pool, {"math": 10_000}, seed=0)


# --- one real run at ci, and the figure ---------------------------------------------------------------------------

def test_one_ci_run_end_to_end(ci_pool, monkeypatch, tmp_path):
    monkeypatch.setattr("klear_lib.paths.runs_dir", lambda preset: tmp_path)
    monkeypatch.setenv("KLEAR_ARTIFACTS", str(tmp_path / "artifacts"))  # train afresh: a cached run writes no record
    cond = sft.EXPERIMENTS["table5"].condition("top1")
    result = sft.run_condition(CI, cond, seed=0, pool=ci_pool)
    df = tables.validate(table.ABLATION, pd.DataFrame(result.rows))
    assert set(df["benchmark"]) == {"tiny_lcb"} and set(df["metric"]) == {"avg@k", "pass@k"}
    assert set(df["config_hash"]) == {sft.condition_hash(CI, cond)} and set(df["n_train"]) == {96}
    assert (tmp_path / "ablations_sft" / "table5" / "top1-s0.csv").exists()
    # the per-problem counts give the run's avg@k back exactly
    problems = tables.validate(PROBLEMS, pd.DataFrame(result.problems))
    avg = df[df["metric"] == "avg@k"].iloc[0]
    assert len(problems) == avg["n_problems"] and (problems["k"] == avg["k"]).all()
    assert (problems["correct"] / problems["k"]).mean() == pytest.approx(avg["mean"], abs=1e-6)


def test_ablation_bars_draws_one_bar_per_condition_and_benchmark():
    from klear_lib import plots

    fig = plots.ablation_bars(sft.SFT.aggregate(_table2_runs()), title="Table 2")
    assert len(fig.axes[0].patches) == 4 * 1  # tiny_lcb is 0 for every run: said in the title, not drawn
    assert "tiny_lcb left out: 0 for every run" in fig.axes[0].get_title()


def test_claims_read_each_primary_benchmark_as_the_preset_maps_it():
    from klear_lib.ablations import claims as C

    def table2(preset):
        df = C.expected(None, preset)
        return df[df["experiment"] == "table2"]

    plain, tiny, full = table2(None), table2(recipe("tiny")), table2(recipe("full"))
    assert set(plain["benchmark"]) == {"tiny_aime"}
    # tiny reads the held-out tier 2 instead (section 6 of the pre-registration), standing for AIME (no readings
    # given: the first release)
    assert set(tiny["benchmark"]) == {"math_eval_t2"} and set(tiny["paper_benchmarks"]) == {"aime24"}
    assert len(tiny) == len(plain)
    with_paper = C.expected(load_reported(), recipe("tiny"))
    assert set(with_paper[with_paper["experiment"] == "table2"]["paper_benchmarks"]) == {"aime24;aime25"}
    # full reads the paper's own benchmarks, each compared with itself
    assert set(full["benchmark"]) == {"aime24", "aime25"}
    assert (full["benchmark"] == full["paper_benchmarks"]).all()


def test_pilot_6_spreads_the_sft_tables_pairs_at_their_papers_sizes(monkeypatch, tmp_path):
    import importlib.util

    from klear_lib.paths import REPO

    spec = importlib.util.spec_from_file_location("pilot", REPO / "scripts" / "pilot.py")
    pilot = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(pilot)
    pairs = [(b, w, t, family) for b, w, t, _, _, family in pilot.SPREADS["sft"][2]()]
    assert pairs == [("easy/only_correct", "easy/mixed", "Table 2", 2), ("hard/mixed", "hard/only_correct", "Table 2", 2),
                     ("rank1", "rank2", "Table 3", 4), ("rank1", "rank3", "Table 3", 4),
                     *(("top" + b, "top" + w, "Table 4", 4) for b, w in (("1", "4"), ("1", "6"), ("2", "4"),
                                                                         ("2", "6")))]
    assert [(b, w) for b, w, *_ in pilot.SPREADS["sft_code"][2]()] == [("rank1", "rank2"), ("rank1", "rank3"),
                                                                        ("top1", "top4"), ("top2", "top4")]
    # Table 2's four conditions over two pilot seeds, on both math candidates (20 problems each, k = 4)
    monkeypatch.setattr("klear_lib.paths.results_dir", lambda preset: tmp_path)
    rng, rows = np.random.default_rng(0), []
    level = {"easy/only_correct": 0.45, "easy/mixed": 0.40, "hard/only_correct": 0.30, "hard/mixed": 0.35}
    for cond, p in level.items():
        for seed in (1000, 1001):
            for bench in pilot.SFT_MATH_READ:
                rows += [{"experiment": "table2", "condition": cond, "seed": seed, "benchmark": bench,
                          "problem": f"{bench}-{i}", "k": 4, "correct": int(rng.binomial(4, p)), "config_hash": "h"}
                         for i in range(20)]
    counts = pd.DataFrame(rows)
    tables.write(PROBLEMS, counts, tmp_path / "pilot" / "problems" / "table2.csv")
    pilot.spread("tiny", "sft")
    out = pd.read_csv(tmp_path / "pilot" / "sft_spread.csv")
    readings = {"math_eval_t1", "math_eval_t2", "math_eval_t3", "math_eval_t12", "math_eval_t23"}
    assert set(out["reading"]) == readings and len(out) == 10
    t23 = out[(out["reading"] == "math_eval_t23") & (out["better"] == "hard/mixed")].iloc[0]
    assert t23["problems"] == 40 and t23["worse"] == "hard/only_correct"
    # the rows of an epoch probe (sft --epochs 20) are read and spread in their own folder; a pooled reading is
    # never read on part of its splits (tier 3 missing: t3 and t23 left out)
    probe = tmp_path / "pilot" / "sft_epochs20"
    tables.write(PROBLEMS, counts[counts["benchmark"] != "math_eval_t3"], probe / "problems" / "table2.csv")
    pilot.spread("tiny", "sft", epochs=20)
    assert set(pd.read_csv(probe / "sft_spread.csv")["reading"]) == {"math_eval_t1", "math_eval_t2", "math_eval_t12"}
    with pytest.raises(SystemExit, match="fig2"):
        pilot.spread("tiny", "fig2", epochs=20)
    got = out[(out["reading"] == "math_eval_t12") & (out["better"] == "easy/only_correct")].iloc[0]
    t12 = counts[counts["benchmark"] != "math_eval_t3"]
    rate = t12.assign(p=t12["correct"] / 4).groupby(["condition", "seed"])["p"].mean()
    d = [rate[("easy/only_correct", s)] - rate[("easy/mixed", s)] for s in (1000, 1001)]
    assert got["diff_pts"] == pytest.approx(100 * np.mean(d), abs=1e-3) and got["problems"] == 40
    assert got["family_alpha"] == pytest.approx(0.025) and got["carried_pts"] > 0  # Table 2 on AIME 2024 and 2025


def test_pilot_6_probes_another_epoch_count_apart_from_its_rows(monkeypatch, tmp_path):
    """``pilot.py sft --epochs E``: the runs train E epochs (their own config hash), only the experiments and
    conditions asked for, and their rows go to ``sft_epochs<E>/``, never over pilot 6's."""
    import importlib.util

    from klear_lib.paths import REPO

    spec = importlib.util.spec_from_file_location("pilot", REPO / "scripts" / "pilot.py")
    pilot = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(pilot)
    monkeypatch.setattr("klear_lib.paths.results_dir", lambda preset: tmp_path)
    calls = []

    def run_experiment(family, r, experiment, seeds, path, workers, conditions):
        calls.append((experiment, sft.SFT.get_scale(r).sft, path, [c.label for c in conditions or ()],
                      sft.condition_hash(r, sft.SFT.get_experiment(experiment).conditions[0])))
        return pd.DataFrame({"metric": ["avg@k"], "condition": ["c"], "seed": [1000], "benchmark": ["b"],
                             "mean": [0.5]})

    monkeypatch.setattr(type(sft.SFT), "run_experiment", run_experiment)  # a frozen dataclass: its class
    pilot.sft_claims("tiny", [1000], 2, epochs=20, experiments=["table2", "table5"], conditions=None)
    pilot.sft_claims("tiny", [1000], 2, experiments=["table2"], conditions=["hard/mixed"])
    (e1, sft20, path20, _, hash20), (e5, *_), (e2, sft10, path10, labels, hash10) = calls
    assert (e1, e5, e2) == ("table2", "table5", "table2") and labels == ["hard/mixed"]
    # without --epochs: the 10 epochs pilot 6 was first drawn at, not the scale's (20 since section 6 registered it)
    assert sft20 == recipe("tiny").study.sft_ablations.sft and sft10 == {**sft20, "num_epochs": 10.0}
    assert hash20 != hash10
    assert path20 == tmp_path / "pilot" / "sft_epochs20" / "table2.csv" and path10 == tmp_path / "pilot" / "table2.csv"
    with pytest.raises(SystemExit, match="table9"):
        pilot.sft_claims("tiny", [1000], 2, experiments=["table9"])


def test_the_tiny_sft_scale_trains_and_reads_tables_2_and_4_as_section_6_registers_them(monkeypatch, tmp_path):
    """results/tiny/preregistration.md, section 6: Tables 2 and 4 train as pilot 6 at 20 epochs did (the same SFT
    config, and pilot.py still computes the condition hash its stored rows carry, so the pilot redraws the same
    runs), are read on every tier-2 problem at avg@16, with 16 and 12 seeds per arm."""
    import importlib.util

    from klear_lib.paths import REPO

    tiny = recipe("tiny")
    assert sft.SFT.seeds(tiny, "table2") == list(range(16)) and sft.SFT.seeds(tiny, "table4") == list(range(12))
    run = sft.run_recipe(tiny, 0)
    assert (run.sft.num_epochs, run.eval.k_math, run.eval.max_problems) == (20.0, 16, None)
    for experiment in ("table2", "table4"):
        assert {sft.SFT.benchmarks_at(tiny, c) for c in sft.SFT.conditions_for(tiny, experiment)} == {("math_eval_t2",)}

    spec = importlib.util.spec_from_file_location("pilot", REPO / "scripts" / "pilot.py")
    pilot = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(pilot)
    monkeypatch.setattr("klear_lib.paths.results_dir", lambda preset: tmp_path)
    seen = {}

    def run_experiment(family, r, experiment, seeds, path, workers, conditions):
        seen[experiment] = r
        return pd.DataFrame({"metric": ["avg@k"], "condition": ["c"], "seed": [1000], "benchmark": ["b"],
                             "mean": [0.5]})

    monkeypatch.setattr(type(sft.SFT), "run_experiment", run_experiment)
    pilot.sft_claims("tiny", [1000], 2, epochs=20, experiments=["table2", "table3", "table4", "table5"])
    assert set(seen) == {"table2", "table3", "table4", "table5"}
    for experiment, r in seen.items():
        assert sft.run_recipe(r, 0, experiment).sft == run.sft, experiment  # registered runs train as the pilot's
        stored = pd.read_csv(REPO / "results" / "tiny" / "pilot" / "sft_epochs20" / f"{experiment}.csv")
        keys = dict(zip(stored["condition"], stored["config_hash"]))
        # the pilot drew every condition, and each keeps the hash its rows carry
        exp = sft.SFT.get_experiment(experiment)
        assert set(keys) == {c.label for c in exp.conditions}, experiment
        assert {label: sft.condition_hash(r, exp.condition(label)) for label in keys} == keys, experiment


def test_the_tiny_sft_scale_reads_table_3_as_section_7_registers_it():
    """results/tiny/preregistration.md, section 7: Table 3 trains as pilot 6 at 20 epochs did, its three ranked
    arms only, 16 seeds, read on every problem of tier 1 and tiny_lcb at avg@16; its own reading is Table 3's
    alone, so Tables 2 and 4 keep the identity section 6 registered."""
    tiny = recipe("tiny")
    scale = tiny.study.sft_ablations
    assert sft.SFT.seeds(tiny, "table3") == list(range(16))
    assert [c.label for c in sft.SFT.conditions_for(tiny, "table3")] == ["rank1", "rank2", "rank3"]
    for experiment in ("table2", "table4", "table5"):  # the other tables run every condition
        assert sft.SFT.conditions_for(tiny, experiment) == sft.EXPERIMENTS[experiment].conditions, experiment
    run3 = sft.run_recipe(tiny, 0, "table3")
    assert (run3.sft, run3.sft.num_epochs) == (sft.run_recipe(tiny, 0, "table2").sft, 20.0)
    assert (run3.eval.k_math, run3.eval.k_code, run3.eval.max_problems) == (16, 16, None)
    assert {sft.SFT.benchmarks_at(tiny, c) for c in sft.SFT.conditions_for(tiny, "table3")} == {
        ("math_eval_t1", "tiny_lcb")}
    # without Table 3's reading and arms, Tables 2 and 4 hash as before: section 6's runs are unchanged
    bare = tiny.replace(study={"sft_ablations": dataclasses.replace(scale, per_experiment={}, arms={})})
    for experiment in ("table2", "table4"):
        assert scale.at(experiment) is scale
        for c in sft.EXPERIMENTS[experiment].conditions:
            assert sft.condition_hash(tiny, c) == sft.condition_hash(bare, c), (experiment, c.label)
    # the claims table reads Table 3 on its own reading, the others on tier 2
    from klear_lib.ablations import claims as C
    benches = C.expected(recipe=tiny).groupby("experiment")["benchmark"].agg(lambda b: tuple(sorted(set(b))))
    assert benches["table3"] == ("math_eval_t1", "tiny_lcb") and benches["table2"] == ("math_eval_t2",)


def test_the_tiny_sft_scale_reads_table_5_as_section_8_registers_it():
    """results/tiny/preregistration.md, section 8: Table 5 trains as pilot 6 at 20 epochs did, its three arms, 8
    seeds, read on every problem of tiny_lcb at avg@16; its reading is its own, so the runs of sections 6 and 7
    keep their identity."""
    tiny = recipe("tiny")
    scale = tiny.study.sft_ablations
    assert sft.SFT.seeds(tiny, "table5") == list(range(8))
    assert [c.label for c in sft.SFT.conditions_for(tiny, "table5")] == ["top1", "top2", "top4"]
    run5 = sft.run_recipe(tiny, 0, "table5")
    assert (run5.sft, run5.sft.num_epochs) == (sft.run_recipe(tiny, 0, "table2").sft, 20.0)
    assert (run5.eval.k_code, run5.eval.max_problems) == (16, None)
    assert {sft.SFT.benchmarks_at(tiny, c) for c in sft.SFT.conditions_for(tiny, "table5")} == {("tiny_lcb",)}
    # without Table 5's reading, every other table's runs hash as before: sections 6 and 7 are unchanged
    others = {e: o for e, o in scale.per_experiment.items() if e != "table5"}
    bare = tiny.replace(study={"sft_ablations": dataclasses.replace(scale, per_experiment=others)})
    for experiment in ("table2", "table3", "table4"):
        for c in sft.SFT.conditions_for(tiny, experiment):
            assert sft.condition_hash(tiny, c) == sft.condition_hash(bare, c), (experiment, c.label)
    # and Table 5's own reading is part of its runs' identity (without it, code is read at the scale's k = 2)
    assert sft.condition_hash(tiny, sft.EXPERIMENTS["table5"].conditions[0]) != sft.condition_hash(
        bare, sft.EXPERIMENTS["table5"].conditions[0])
    from klear_lib.ablations import claims as C
    claims = C.expected(recipe=tiny)
    assert set(claims.loc[claims["experiment"] == "table5", "benchmark"]) == {"tiny_lcb"}


def test_an_sft_scale_overrides_only_eval_and_benchmarks_per_experiment():
    with pytest.raises(ValueError, match=r"per_experiment\['table3'\]: \['sft'\]"):
        SFTScale(per_experiment={"table3": {"sft": {"num_epochs": 40.0}}})
    scale = SFTScale(eval={"k_math": 4, "k_code": 2}, benchmarks={"tiny_aime": ("math_eval_t2",)},
                     per_experiment={"table3": {"eval": {"k_code": 16}}})
    three = scale.at("table3")
    assert three.eval == {"k_math": 4, "k_code": 16} and three.benchmarks == scale.benchmarks
    assert three.per_experiment == {} and scale.at("table2") is scale
