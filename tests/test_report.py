"""README sections are generated between markers; the rest of the README is untouched."""
from __future__ import annotations

import pandas as pd

from klear_lib.configs import recipe
from klear_lib.report import replace_section
from klear_lib.tables import markdown_table


def test_replace_section_only_touches_the_markers():
    text = "intro\n<!-- results:start -->\nold\n<!-- results:end -->\noutro\n"
    out = replace_section(text, "results", "new")
    assert out == "intro\n<!-- results:start -->\nnew\n<!-- results:end -->\noutro\n"
    assert replace_section(out, "results", "new") == out


def test_replace_section_appends_missing_markers():
    out = replace_section("intro\n", "claims", "| a |")
    assert out.endswith("<!-- claims:start -->\n| a |\n<!-- claims:end -->\n") and out.startswith("intro\n")


def test_markdown_table_shows_missing_values():
    md = markdown_table(pd.DataFrame({"a": [1.5, None], "b": ["x", "y"]}))
    assert md.splitlines() == ["| a | b |", "|---|---|", "| 1.5 | x |", "| — | y |"]


def test_stability_section_is_built_from_the_stored_summary(monkeypatch, tmp_path):
    from klear_lib import report
    from klear_lib.ablations import stability as S

    monkeypatch.setattr("klear_lib.paths.results_dir", lambda preset: tmp_path)
    assert "run `make stability`" in report.stability_section(recipe("tiny"))
    rows = []
    for loss, base in (("gppo", 0.3), ("cispo", 0.2), ("clip_higher", 0.1)):
        for lr in (1e-4, 4e-4):
            for seed in range(3):
                mean = 0.0 if (loss, lr) == ("gppo", 4e-4) else base + 0.01 * seed
                row = {"loss": loss, "learning_rate": lr, "updates_per_step": 4, "seed": seed, "benchmark": "b",
                       "metric": "avg@k", "k": 4, "mean": mean, "ci_low": 0.0, "ci_high": 1.0,
                       **S.run_summary(pd.DataFrame({"accuracy": [0.3] * 8, "response_length": [50.0] * 8,
                                                     "entropy": 0.1, "loss": 0.1, "grad_norm": 1.0,
                                                     **{c: 0.0 for c in S.CASES}}), 0.2, mean)}
                rows.append(row)
    S.STABILITY.write_reports(S.aggregate(S.mark_collapse(pd.DataFrame(rows))), tmp_path)
    text = report.stability_section(recipe("tiny"))
    assert "| gppo | 4 | 31.0 [" in text and "0.0 [0.0, 0.0] (3/3 collapsed)" in text
    assert text.index("| gppo |") < text.index("| clip_higher |") < text.index("| cispo |")  # LOSSES order
    assert "- gppo: no seed collapsed at LR 0.0001 with 4 updates/step (of 2 LRs each)" in text
    assert "- the paper's order gppo > cispo > clip_higher holds somewhere (1 holds, 0 reversed, 1 inconclusive" in text


def test_readme_sources_table_follows_the_registry():
    from klear_lib.paths import REPO
    from klear_lib.report import sources_section

    text = (REPO / "docs" / "sources.md").read_text()
    body = text.split("<!-- sources:start -->")[1].split("<!-- sources:end -->")[0]
    assert body.strip() == sources_section(recipe("tiny")).strip(), "docs/sources.md's table is stale: run `make readme`"


def test_seed_gains_section_reads_the_stored_gains_and_the_results_section_the_main_seed(monkeypatch, tmp_path):
    from klear_lib import report, tables
    from klear_lib.results import EVAL, EVAL_SEED_GAINS

    monkeypatch.setattr("klear_lib.paths.results_dir", lambda preset: tmp_path)
    monkeypatch.setattr(report, "eval_csv", lambda results: tmp_path / "eval.csv")
    assert "run `make reproduce`" in report.seed_gains_section(recipe("tiny"))
    tables.write(EVAL_SEED_GAINS, pd.DataFrame([{
        "benchmark": "tiny_aime", "before": "sft", "after": "rl_math", "n_seeds": 3, "gain": 0.021, "ci_low": -0.004,
        "ci_high": 0.05, "seed_ci_low": -0.02, "seed_ci_high": 0.06, "n_problems": 200,
        "per_seed": "0.0184;0.0300;0.0146", "significant": False}]), tmp_path / "eval_seed_gains.csv")
    text = report.seed_gains_section(recipe("tiny"))
    assert "| tiny_aime | rl_math over sft | 3 | +2.1 | [-2.0, +6.0] | +1.8 +3.0 +1.5 |" in text  # the t-interval
    assert "[-0.4, +5.0]" not in text  # the bootstrap under-covers at 3 seeds: not shown
    row = {"benchmark": "tiny_aime", "metric": "avg@k", "k": 16, "mean": 0.06, "stderr": 0.01, "ci_low": 0.04,
           "ci_high": 0.08, "n_problems": 200, "n_samples": 3200, "seed": 0, "config_hash": "h", "model": "m"}
    tables.write(EVAL, pd.DataFrame([{**row, "stage": "rl_math"}, {**row, "stage": "rl_math-s1"}]),
                 tmp_path / "eval.csv")
    text = report.results_section(recipe("tiny"))
    assert "| rl_math | tiny_aime |" in text and "rl_math-s1" not in text  # the other seeds: the section above


def test_standing_section_reads_each_number_from_the_table_it_names(monkeypatch, tmp_path):
    from klear_lib import report, tables
    from klear_lib.results import EVAL, EVAL_SEED_GAINS

    monkeypatch.setattr("klear_lib.paths.results_dir", lambda preset: tmp_path)
    monkeypatch.setattr(report, "eval_csv", lambda results: tmp_path / "eval.csv")
    assert report.standing_section(recipe("tiny")).startswith("_No results at `tiny` yet")
    tables.write(EVAL_SEED_GAINS, pd.DataFrame([{
        "benchmark": "tiny_aime", "before": "sft", "after": "rl_math", "n_seeds": 3, "gain": 0.021, "ci_low": -0.004,
        "ci_high": 0.05, "seed_ci_low": -0.02, "seed_ci_high": 0.06, "n_problems": 200,
        "per_seed": "0.0184;0.0300;0.0146", "significant": False}]), tmp_path / "eval_seed_gains.csv")
    row = {"benchmark": "tiny_aime", "metric": "avg@k", "k": 16, "mean": 0.04, "stderr": 0.01, "ci_low": 0.03,
           "ci_high": 0.05, "n_problems": 200, "n_samples": 3200, "seed": 0, "config_hash": "h", "model": "m"}
    tables.write(EVAL, pd.DataFrame([{**row, "stage": "sft"}]), tmp_path / "eval.csv")
    text = report.standing_section(recipe("tiny"))
    assert text.count("\n- ") == 0 and text.startswith("- **GPPO math RL moves")  # its interval holds 0; one bullet
    assert "by +2.1 points [−2.0, +6.0] over 3 RL seeds" in text and "avg@16 4.0% → 6.1%" in text
    assert "per seed +1.8, +3.0, +1.5" in text and "95% t-interval over the seeds" in text
    assert text.endswith(f"(`{tmp_path / 'eval_seed_gains.csv'}`, `{tmp_path / 'eval.csv'}`)")
    assert "random-reward control" not in text  # not trained: not claimed
    gain = {"benchmark": "tiny_aime", "n_seeds": 3, "ci_low": 0.0, "ci_high": 0.0, "n_problems": 200,
            "significant": False}
    tables.write(EVAL_SEED_GAINS, pd.DataFrame([
        {**gain, "before": "sft", "after": "rl_math", "gain": 0.021, "seed_ci_low": -0.02, "seed_ci_high": 0.06,
         "per_seed": "0.0184;0.0300;0.0146"},
        {**gain, "before": "sft", "after": "random_rl_math", "gain": -0.003, "seed_ci_low": -0.01,
         "seed_ci_high": 0.004, "per_seed": "-0.0016;-0.0060;-0.0014"},
        {**gain, "before": "random_rl_math", "after": "rl_math", "gain": 0.024, "seed_ci_low": 0.003,
         "seed_ci_high": 0.045, "per_seed": "0.0200;0.0360;0.0160"}]), tmp_path / "eval_seed_gains.csv")
    text = report.standing_section(recipe("tiny"))
    assert "**math RL gains +2.4 points [+0.3, +4.5]**, the part the task's reward makes" in text
    assert "(per seed +2.0, +3.6, +1.6); the control alone moves `tiny_aime` by −0.3 [−1.0, +0.4]." in text


def test_readme_standing_section_is_current():
    from klear_lib.paths import REPO
    from klear_lib.report import standing_section

    text = (REPO / "README.md").read_text()
    body = text.split("<!-- standing:start -->")[1].split("<!-- standing:end -->")[0]
    assert body.strip() == standing_section(recipe("tiny")).strip(), "README 'Where the study stands' is stale: run `make readme`"
