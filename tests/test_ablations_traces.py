"""Trace-style measures, checked on the teachers whose styles are documented (klear_lib.data.teachers)."""
from __future__ import annotations

import json
import random

import pandas as pd
import pytest

from klear_lib import paths
from klear_lib.ablations import traces
from klear_lib.configs import recipe
from klear_lib.data import tasks_code as tc
from klear_lib.data import tasks_math as tm
from klear_lib.data.teachers import respond, without_checks


def teacher_samples(teacher: str, ability: str, n: int = 300) -> list[dict]:
    rng, module = random.Random(0), tm if ability == "math" else tc
    items = [module.sample_item(rng, tier=1 + i % 4) for i in range(n)]
    return [{"response": respond(teacher, item, f"p{i}", 0), "correct": False} for i, item in enumerate(items)]


def test_arith_reads_sums_of_products():
    assert traces.arith("10*9+1*9") == 99
    assert traces.arith("33-24") == 9
    assert traces.arith("7") == 7
    assert traces.arith("2*3-4*5+1") == -13
    assert traces.arith("-4+10") == 6


def test_math_features_count_wrong_steps_false_checks_and_corrections():
    response = "<think>\n3+4=8\ncheck: 8-4=5\nwait, 3+4 is not 8, so 3+4=7\n7*2=14\n</think>\n\\boxed{14}"
    got = traces.math_features(response)
    assert got == dict(steps=2, step_errors=1, checks=1, check_errors=1, fixes=1, detected=1)
    garbled = traces.math_features("<think>\n3+4=7\ncheck: 7-=3\ncheck: 7-4=3\n</think>\n\boxed{7}")
    assert (garbled["checks"], garbled["check_errors"]) == (2, 1)   # a malformed check counts, as a wrong one
    assert traces.math_features("<think>\n3-7=-4\ncheck: -4+7=3\n</think>")["check_errors"] == 0


def test_reflective_math_teacher_checks_truly_and_corrects_most_slips():
    reflective = traces.summarize(teacher_samples("reflective", "math"), "math")
    careful = traces.summarize(teacher_samples("careful", "math"), "math")
    terse = traces.summarize(teacher_samples("terse", "math"), "math")
    assert reflective["check_error"] == 0            # a teacher's check lines are computed, so always true
    assert reflective["checks_per_step"] > 0.5       # p_check 0.8, less the checks dropped to fit the length cap
    assert 0.5 < reflective["detect"] < 0.9          # p_check * p_detect = 0.72 of wrong steps get a "wait, ..."
    assert careful["checks_per_step"] == 0 and careful["detect"] == 0
    assert terse["step_error"] > careful["step_error"] > 0


def test_code_teachers_styles_follow_their_documented_rates():
    stepwise = traces.summarize(teacher_samples("code_stepwise", "code"), "code")
    reflective = traces.summarize(teacher_samples("code_reflective", "code"), "code")
    assert 0.03 < stepwise["oneliner"] < 0.2 and stepwise["check"] == 0      # p_stepwise 0.9, no checks
    assert 0.6 < reflective["check"] < 0.9                                   # p_check 0.8
    assert reflective["rewrite"] > 0
    # a check that rewrote the program describes the program before the rewrite; every other check is true
    for sample in teacher_samples("code_reflective", "code", 100):
        f = traces.code_features(sample["response"])
        if not f["rewrite"]:
            assert f["checks_true"] == f["checks"]


def test_summarize_and_features_reject_bad_input():
    with pytest.raises(ValueError, match="ability"):
        traces.response_features("<think>\n</think>", "chemistry")
    with pytest.raises(ValueError, match="no samples"):
        traces.summarize([], "math")


def _write(path, corrects):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps({"problem_id": f"p{i}", "sample": 0, "correct": c,
                                        "response": "<think>\n1+1=2\n</think>\n\\boxed{2}"}) + "\n"
                            for i, c in enumerate(corrects)))
    return path


def test_matching_samples_picks_the_file_that_reproduces_the_stored_score(tmp_path):
    old = _write(tmp_path / "a.samples.jsonl", [False] * 4)
    new = _write(tmp_path / "b.samples.jsonl", [True, False, False, False])
    assert traces.matching_samples([old, new], 0.25, 4)[0]["correct"] is True
    assert traces.matching_samples([old, new], 0.5, 4) is None
    assert traces.matching_samples([new], 0.25, 8) is None


def test_stored_styles_serve_a_clone_without_samples(tmp_path, monkeypatch):
    monkeypatch.setenv("KLEAR_ARTIFACTS", str(tmp_path / "store"))
    monkeypatch.setattr(paths, "RESULTS", tmp_path / "results")
    runs = pd.DataFrame([{"experiment": "table3", "condition": "rank1", "seed": 0, "benchmark": b,
                          "metric": "avg@k", "mean": 0.25, "n_samples": 4, "config_hash": "abc"}
                         for b in ("tiny_aime", "math_eval_t2")])
    _write(tmp_path / "store/ci/eval/e1/ablations_sft--table3--rank1-s0__tiny_aime__m1.samples.jsonl",
           [True, False, False, False])
    first = traces.stored_styles(recipe("ci"), runs)
    assert len(first) == 1 and first.accuracy.iloc[0] == 0.25 and first.step_error.iloc[0] == 0
    for f in (tmp_path / "store").rglob("*.jsonl"):
        f.unlink()
    again = traces.stored_styles(recipe("ci"), runs)
    pd.testing.assert_frame_equal(first, again, check_dtype=False)
    assert traces.stored_styles(recipe("ci"), runs.assign(config_hash="new")).empty   # a retrained run is not served stale
    assert list(traces.style_table(first, "math").seeds) == [1]


def test_without_checks_keeps_the_answer_and_the_effect_of_each_correction():
    for sample in teacher_samples("reflective", "math", 200):
        before = sample["response"]
        after = without_checks(before, "math")
        f0, f1 = traces.math_features(before), traces.math_features(after)
        assert tm.boxed_int(after) == tm.boxed_int(before)
        assert f1["checks"] == f1["fixes"] == 0 and f1["step_errors"] == f0["step_errors"] - f0["detected"]
    rewritten = 0
    for sample in teacher_samples("code_reflective", "code", 200):
        before = sample["response"]
        after = without_checks(before, "code")
        assert after.split("</think>")[1] == before.split("</think>")[1]
        assert "check x=" not in after and "wait," not in after
        if traces.code_features(before)["rewrite"]:
            rewritten += 1
            assert traces.code_features(after)["oneliner"] is False
    assert rewritten > 0
    assert without_checks("no trace here", "math") == "no trace here"
    below_zero = "<think>\n3-7=-5\ncheck: -5+7=2, not 3\nwait, 3-7 is not -5, so 3-7=-4\n-4+10=6\n</think>\n\\boxed{6}"
    assert without_checks(below_zero, "math") == "<think>\n3-7=-4\n-4+10=6\n</think>\n\\boxed{6}"
