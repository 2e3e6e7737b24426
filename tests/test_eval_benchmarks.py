"""Benchmark specs, rows from a fixture mirror, and the judge checks (reference answers and programs); the same
checks on the real files are in ``test_real_data.py``."""
from __future__ import annotations

import shutil

import pytest

from klear_lib.configs import get_config, recipe
from klear_lib.data.sources import in_window
from klear_lib.evaluation import benchmarks as bm
from klear_lib.evaluation.reference import (leetcode_reference_check, math_reference_check, math_reference_checks,
                                            reference_response, shuffled, shuffled_passes, summarize_math_check)
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
        "rope_scaling": {"rope_type": "yarn", "factor": 2.5, "original_max_position_embeddings": 32768},
        "max_position_embeddings": 81920}  # vLLM's length check reads the scaled length there (configs/eval.py)
    assert bm.samples_per_problem(bm.get_spec("aime24"), full) == 64
    assert bm.samples_per_problem(bm.get_spec("lcb_v5"), full) == 8


@pytest.mark.parametrize("name,n", [("aime24", 3), ("aime25", 3), ("hmmt25", 4), ("math500", 3)])
def test_math_rows_load_in_the_verl_schema(fake_mirror, name, n):
    rows = bm.load_rows(name, recipe("tiny"))
    assert len(rows) == n and len({r["extra_info"]["id"] for r in rows}) == n
    assert all(r["ability"] == "math" and r["reward_model"]["ground_truth"] for r in rows)
    assert all(r["prompt"][0]["role"] == "user" for r in rows)


def test_lcb_v5_rows_have_dates_in_the_window_and_tests(fake_mirror):
    rows = bm.load_rows("lcb_v5", recipe("tiny"))
    assert len(rows) == 2
    assert all("2024-08-01" <= r["extra_info"]["contest_date"] < "2025-02-01" for r in rows)
    calls = [r for r in rows if any(t.get("kind") == "functional" for t in row_tests(r))]
    assert len(calls) == 1  # the LeetCode-style problem is call-based
    assert all(len(row_tests(r)) >= 1 for r in rows)


def test_window_filter_and_missing_dates():
    row = {"extra_info": {"id": "x", "contest_date": "2025-02-01T12:00:00"}}
    for undated in ("outside", "raise"):
        assert not in_window(row, ("2024-08-01", "2025-02-01"), undated=undated)
        assert in_window(row, ("2025-02-01", "2025-05-01"), undated=undated) and in_window(row, None, undated=undated)
    assert not in_window({"extra_info": {"id": "y"}}, ("2024-08-01", "2025-02-01"), undated="outside")  # the loaders
    with pytest.raises(ValueError, match="row y: field extra_info.contest_date missing"):  # a benchmark's rows
        in_window({"extra_info": {"id": "y"}}, ("2024-08-01", "2025-02-01"), undated="raise")


def test_real_benchmarks_have_their_size_in_one_place():
    assert {n: bm.get_spec(n).problems for n in ("aime24", "aime25", "hmmt25", "math500", "lcb_v5", "lcb_v6")} == \
        {"aime24": 30, "aime25": 30, "hmmt25": 30, "math500": 500, "lcb_v5": 279, "lcb_v6": None}
    assert bm.get_spec("tiny_aime").problems is None  # the world's splits are sized by the preset


def test_an_incomplete_benchmark_file_stops_the_evaluation(fake_mirror, tmp_path):
    path = tmp_path / "mirror" / "klear_reasoner_eval" / "HMMT-202502.jsonl"
    path.write_text("".join(path.read_text().splitlines(keepends=True)[1:]))
    with pytest.raises(ValueError, match=r"hmmt2025: 3 problems in .*HMMT-202502.jsonl, expected 4"):
        bm.load_rows("hmmt25", recipe("tiny"), max_problems=2)  # the size is checked on the whole file, before any cut
    path.write_text(path.read_text() + '{"id": 10, "messages": [{"role": "user", "content": "Compute $1+1$."}]}\n')
    with pytest.raises(ValueError, match=r"HMMT-202502.jsonl: line 4: field 'reward_model.ground_truth'"):
        bm.load_rows("hmmt25", recipe("tiny"))  # a record without an answer is an error, not a smaller benchmark


def test_lcb_v6_has_no_offline_copy():
    with pytest.raises((FileNotFoundError, NotImplementedError)):
        bm.load_rows("lcb_v6", recipe("tiny"))


def test_shuffle_is_a_derangement():
    values = [str(i) for i in range(30)]
    assert all(a != b for a, b in zip(values, shuffled(values, seed=0)))
    assert sorted(shuffled(values, 3)) == sorted(values)


@pytest.mark.parametrize("name", ["aime24", "aime25", "hmmt25", "math500"])
def test_reference_answers_judge_correct_and_shuffled_wrong(fake_mirror, name):
    df = math_reference_check(name, recipe("tiny"))
    assert df["reference_correct"].all() and not df["shuffled_correct"].any()


def test_reference_checks_skip_what_is_missing_and_say_why():
    frames, skipped = math_reference_checks(("aime24", "math500"), recipe("ci"))
    assert frames == [] and skipped == {"aime24": "skipped: KLEAR_BENCHMARKS is unset",
                                        "math500": "skipped: KLEAR_BENCHMARKS is unset"}
    table = summarize_math_check(frames, skipped)
    assert table.status.tolist() == ["skipped: KLEAR_BENCHMARKS is unset"] * 2 and table.problems.sum() == 0
    assert shuffled_passes(frames).empty
    leet, summary = leetcode_reference_check(recipe("ci", study={"reference_code_problems": 4}))
    assert leet.empty and summary == "skipped: KLEAR_BENCHMARKS is unset"


def test_reference_response_is_well_formed():
    assert reference_response("7").startswith("<think>") and "</think>\n\\boxed{7}" in reference_response("7")


@needs_firejail
def test_leetcode_reference_check_on_the_fixture(fake_mirror):
    leet, summary = leetcode_reference_check(recipe("tiny", study={"reference_code_problems": None}))
    assert summary == "1 of 1 reference programs pass all their tests" and leet.passed.all()


@pytest.mark.parametrize("pooled_name", ["math_eval_t23", "code_eval_t45"])
def test_a_pooled_world_benchmark_is_its_splits_in_order(pooled_name):
    ci = recipe("ci")
    spec = bm.get_spec(pooled_name)
    first, second = (bm.load_rows(split, ci) for split in spec.parts)
    pooled = bm.load_rows(pooled_name, ci)
    assert pooled == first + second and first and second
    assert len({r["extra_info"]["id"] for r in pooled}) == len(first) + len(second)  # disjoint: a problem counts once
    assert bm.load_rows(pooled_name, ci, max_problems=3) == pooled[:3]
    assert spec.problems is None and spec.ability == bm.get_spec(spec.parts[0]).ability
