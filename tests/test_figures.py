"""The figures a reader reads in the report: every seed, labelled smoothing, one axis per benchmark, distinct arms,
intervals cut at 0 (issue 42)."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from klear_lib import plots


def _eval_rows():
    rows = []
    for stage, aime, lcb in (("sft", 0.044, 0.75), ("rl_math", 0.063, 0.34), ("rl_code", 0.067, 0.90)):
        for bench, mean, k in (("tiny_aime", aime, 16), ("tiny_lcb", lcb, 4)):
            rows.append({"stage": stage, "benchmark": bench, "metric": "avg@k", "k": k, "mean": mean,
                         "ci_low": mean - 0.01, "ci_high": mean + 0.01, "n_problems": 200})
    return pd.DataFrame(rows)


def test_stage_bars_draw_one_axis_per_benchmark_and_every_seed():
    gains = pd.DataFrame({"benchmark": ["tiny_aime"], "before": ["sft"], "after": ["rl_math"], "n_problems": [200],
                          "per_seed": ["0.019;0.035;0.023"]})
    rows = plots.stage_rows_over_seeds(_eval_rows(), gains)
    assert sorted(rows.loc[rows["stage"].str.startswith("rl_math-s"), "mean"].round(3)) == [0.067, 0.079]
    fig = plots.stage_bars(rows)
    assert len(fig.axes) == 2 and fig.axes[0].get_ylim()[1] < 20  # tiny_aime keeps its own scale
    assert "mean over 3 RL seeds" in fig._suptitle.get_text()
    from matplotlib.collections import PathCollection

    dots = [c for c in fig.axes[0].collections if isinstance(c, PathCollection)]
    assert len(dots) == 1 and len(dots[0].get_offsets()) == 3  # the seed dots of rl_math on tiny_aime


def test_the_random_reward_control_gets_every_seed_a_bar_its_main_seed_included():
    # the control has no main-seed row in eval.csv (notebook 03 reads only the pipeline's own stages there)
    gains = pd.DataFrame({"benchmark": ["tiny_aime"] * 2, "before": ["sft"] * 2,
                          "after": ["rl_math", "random_rl_math"], "n_problems": [200] * 2,
                          "per_seed": ["0.019;0.035", "0.002;-0.004"]})
    rows = plots.stage_rows_over_seeds(_eval_rows(), gains)
    control = rows[rows["stage"].str.startswith("random_rl_math")]
    assert sorted(control["stage"]) == ["random_rl_math-s0", "random_rl_math-s1"]
    assert sorted(control["mean"].round(3)) == [0.04, 0.046]  # the SFT model's 4.4% plus each seed's gain
    assert list(rows.loc[rows["stage"].str.startswith("rl_math-s"), "stage"]) == ["rl_math-s1"]
    axis = plots.stage_bars(rows).axes[0]
    assert [t.get_text() for t in axis.get_xticklabels()] == ["sft", "rl_math", "rl_code", "random\nrl_math"]


def test_seed_curves_say_their_smoothing_and_draw_shares_in_percent():
    rec = pd.DataFrame({"rl_step": list(range(1, 61)) * 2, "seed": [0] * 60 + [1] * 60, "stage": "rl_math",
                        "accuracy": np.linspace(0.2, 0.5, 120), "entropy": np.linspace(0.1, 0.05, 120)})
    fig = plots.rl_seed_curves(rec, ["accuracy", "entropy"], title="math RL")
    title = fig._suptitle.get_text()
    assert "2 RL seeds" in title and "rolling mean over 4 RL steps" in title
    acc = fig.axes[0]
    assert acc.get_title() == "training accuracy (% correct)" and max(acc.lines[-1].get_ydata()) > 40
    assert len(acc.collections) == 1 and acc.collections[0].get_paths()[0].vertices[:, 1].min() >= 0  # band at >= 0


def test_condition_curves_give_each_arm_its_colour_and_marker():
    rec = pd.DataFrame({"condition": np.repeat(["a", "b", "c"], 4), "seed": [0, 0, 1, 1] * 3,
                        "rl_step": [1, 2] * 6, "entropy": np.zeros(12)})
    ax = plots.condition_curves(rec, ["entropy"]).axes[0]
    means = [line for line in ax.lines if line.get_lw() > 1]
    assert len({line.get_color() for line in means}) == 3 and len({line.get_marker() for line in means}) == 3


def test_stability_figures_carry_intervals_cut_at_zero():
    summary = pd.DataFrame({"loss": ["gppo", "gppo"], "learning_rate": [1e-4, 1e-3], "updates_per_step": [2, 2],
                            "n_seeds": [3, 3], "mean": [0.02, 0.001], "ci_low": [0.01, -0.004],
                            "ci_high": [0.03, 0.006], "collapsed": [0, 2], "collapse_share": [0, 2 / 3],
                            "start_mean": [0.05, 0.05], "clip_frac": [0.001, 0.002]})
    texts = [t.get_text() for t in plots.stability_map(summary, "mean").axes[0].texts]
    assert any("[0.00, 0.60]" in t for t in texts)  # the interval under the mean, cut at 0
    assert any("2/3 seeds" in t.get_text() for t in plots.stability_map(summary, "collapse_share").axes[0].texts)
    runs = pd.DataFrame({"loss": "gppo", "learning_rate": [1e-4] * 3, "updates_per_step": 2, "seed": [0, 1, 2],
                         "clip_frac": [0.001, 0.0012, 0.0008]})
    assert any("\n[" in t.get_text() for t in plots.stability_map(summary, "clip_frac", runs=runs).axes[0].texts)
    ax = plots.stability_lines(summary).axes[0]
    assert ax.get_ylim()[0] == 0
    lows = [seg[:, 1].min() for c in ax.collections if hasattr(c, "get_segments") for seg in c.get_segments()]
    assert min(lows) >= 0
