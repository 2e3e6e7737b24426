"""Benchmark specs and rows from the real files, and the judge check on them (reference answers and programs)."""
from __future__ import annotations

import shutil

import pytest

from klear_lib.configs import get_config
from klear_lib.evaluation import benchmarks as bm
from klear_lib.evaluation.reference import (code_reference_check, leetcode_rows, math_reference_check,
                                            reference_response, shuffled)
from klear_lib.rewards.judge import row_tests

needs_firejail = pytest.mark.skipif(shutil.which("firejail") is None, reason="firejail is not installed")


def test_specs_follow_the_paper():
    assert {s: bm.get_spec(s).paper_k for s in ("aime24", "aime25", "hmmt25", "lcb_v5", "lcb_v6")} == \
        {"aime24": 64, "aime25": 64, "hmmt25": 64, "lcb_v5": 8, "lcb_v6": 8}
    assert bm.get_spec("lcb_v5").window == ("2024-08-01", "2025-02-01")
    assert bm.get_spec("lcb_v6").window == ("2025-02-01", "2025-05-01")
    assert {"tiny_aime", "tiny_lcb", "math500"} <= set(bm.SPECS)
    with pytest.raises(KeyError, match="unknown benchmark"):
        bm.get_spec("aime2030")


def test_eval_config_sampling_and_yarn():
    full = get_config("eval", "full")
    assert (full.temperature, full.top_p, full.k_math, full.k_code) == (0.6, 0.95, 64, 8)
    assert full.hf_overrides is None
    assert get_config("eval", "full", yarn_64k=True).hf_overrides == {
        "rope_scaling": {"rope_type": "yarn", "factor": 2.5, "original_max_position_embeddings": 32768}}
    assert bm.samples_per_problem(bm.get_spec("aime24"), full) == 64
    assert bm.samples_per_problem(bm.get_spec("lcb_v5"), full) == 8


@pytest.mark.parametrize("name,n", [("aime24", 30), ("aime25", 30), ("hmmt25", 30), ("math500", 500)])
def test_math_rows_load_in_the_verl_schema(name, n):
    rows = bm.load_rows(name)
    assert len(rows) == n and len({r["extra_info"]["id"] for r in rows}) == n
    assert all(r["ability"] == "math" and r["reward_model"]["ground_truth"] for r in rows)
    assert all(r["prompt"][0]["role"] == "user" for r in rows)


def test_lcb_v5_rows_have_dates_in_the_window_and_tests():
    rows = bm.load_rows("lcb_v5")
    assert len(rows) == 279
    assert all("2024-08-01" <= r["extra_info"]["contest_date"] < "2025-02-01" for r in rows)
    calls = [r for r in rows if any(t.get("kind") == "functional" for t in row_tests(r))]
    assert len(calls) == 104  # the LeetCode problems are call-based
    assert all(len(row_tests(r)) >= 1 for r in rows)


def test_window_filter_and_missing_dates():
    row = {"extra_info": {"id": "x", "contest_date": "2025-02-01"}}
    assert not bm.in_window(row, ("2024-08-01", "2025-02-01")) and bm.in_window(row, ("2025-02-01", "2025-05-01"))
    with pytest.raises(ValueError, match="contest_date"):
        bm.in_window({"extra_info": {"id": "y"}}, ("2024-08-01", "2025-02-01"))


def test_lcb_v6_has_no_offline_copy():
    with pytest.raises((FileNotFoundError, NotImplementedError)):
        bm.load_rows("lcb_v6")


def test_shuffle_is_a_derangement():
    values = [str(i) for i in range(30)]
    assert all(a != b for a, b in zip(values, shuffled(values, seed=0)))
    assert sorted(shuffled(values, 3)) == sorted(values)


@pytest.mark.parametrize("name", ["aime24", "aime25", "hmmt25"])
def test_reference_answers_judge_correct_and_shuffled_wrong(name):
    df = math_reference_check(name)
    assert df["reference_correct"].all()
    assert not df["shuffled_correct"].any()


def test_math500_reference_answers_all_judge_correct():
    df = math_reference_check("math500")
    assert df["reference_correct"].all()
    # a shuffled answer can equal the real one (several problems share an answer): only those may pass
    passed = df[df["shuffled_correct"]]
    assert len(passed) <= 5 and (passed["answer"] == passed["shuffled_answer"]).all()


def test_reference_response_is_well_formed():
    assert reference_response("7").startswith("<think>") and "</think>\n\\boxed{7}" in reference_response("7")


@needs_firejail
def test_leetcode_reference_solutions_pass_on_a_sample():
    rows, programs = leetcode_rows(40)
    df = code_reference_check(rows, programs)
    assert df["passed"].all(), df[~df["passed"]].to_dict("records")


@needs_firejail
@pytest.mark.slow
def test_all_leetcode_reference_solutions_pass():
    rows, programs = leetcode_rows()
    df = code_reference_check(rows, programs)
    assert df["passed"].mean() >= 0.99, df[~df["passed"]].to_dict("records")
