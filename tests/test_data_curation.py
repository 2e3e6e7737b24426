"""Pure curation filters: each reports what it kept and dropped; decontamination catches held-out items."""
from __future__ import annotations

import json

import pytest

from klear_lib.data import curation as cu
from klear_lib.data.schema import make_rl_row
from klear_lib.data.sources import benchmark_texts, decontam_text, load_benchmark


def _row(prompt, gt="1", ability="math", tier=1, rid=None):
    row = make_rl_row(prompt, gt, ability=ability, data_source="t", split="x", tier=tier)
    if rid:
        row["extra_info"]["id"] = rid
    return row


def test_exact_dedup_uses_the_normalised_prompt():
    rows = [_row("Compute 1+2."), _row("compute  1+2. "), _row("Compute 1+3.")]
    kept, step = cu.exact_dedup(rows)
    assert [r["prompt"][0]["content"] for r in kept] == ["Compute 1+2.", "Compute 1+3."]
    assert (step.rows_in, step.rows_out, step.dropped) == (3, 2, {"duplicate": 1})


def test_ngrams_and_short_text_policy():
    assert cu.tokens("Compute ((19*2)-20)+7.") == ["compute", "19", "2", "20", "7"]
    assert cu.ngrams("a b c", 9) == {("a", "b", "c")}
    index = cu.ngram_index(["Evaluate $\\log_264$.", " ".join("abcdefghijk")], 9)
    assert index.hits("Please evaluate $\\log_264$ now") and not index.hits("evaluate log")
    assert index.hits("x a b c d e f g h i y") and not index.hits("a b c d e f g h")
    assert len(cu.ngrams(" ".join(map(str, range(12))), 9)) == 4


def test_decontamination_drops_overlaps_only():
    long_eval = "Find the number of ordered pairs of integers such that both are prime and their sum is 40"
    rows = [_row("Compute 19*2."), _row("Compute 19+2."), _row("Compute 19*3."),
            _row("Please help: find the number of ordered pairs of integers such that both are prime today"),
            _row("Find the number of ordered sets of reals")]
    kept, step = cu.decontaminate(rows, ["Compute 19*2.", long_eval], n=9)
    # short texts match by their whole token sequence (operators are not tokens: 19*2 and 19+2 collide)
    assert [r["prompt"][0]["content"] for r in kept] == ["Compute 19*3.", "Find the number of ordered sets of reals"]
    assert step.dropped == {"contaminated": 3}


def test_no_benchmark_item_survives_decontamination(fake_mirror):
    texts = benchmark_texts()
    assert len(texts) == 3 + 3 + 4 + 3 + 2  # the fixture mirror's benchmarks (test_real_data: the real ones)
    planted = []
    for name in ("aime2024", "aime2025", "hmmt2025", "math500", "lcb_v5"):
        for r in load_benchmark(name)[::7]:
            planted.append(_row("Solve this: " + decontam_text(r) + " Think step by step.", rid="planted"))
    clean = [_row(f"Compute {a}*{b}.") for a in range(10, 30) for b in range(2, 5)]
    kept, step = cu.decontaminate(planted + clean, texts, n=9)
    assert all(r["extra_info"]["id"] != "planted" for r in kept) and len(kept) == len(clean)
    assert step.dropped == {"contaminated": len(planted)}


def test_exclude_ids_and_take_first():
    rows = [_row("Compute 1+1.", rid="a"), _row("Compute 1+2.", rid="b")]
    kept, step = cu.exclude_ids(rows, {"a"})
    assert [r["extra_info"]["id"] for r in kept] == ["b"] and step.dropped == {"heldout_id": 1}
    kept, step = cu.take_first(rows, 1)
    assert len(kept) == 1 and step.dropped == {"over_budget": 1}


def test_label_difficulty_reference_then_tier_fallback():
    rows = [_row("Compute 1+1.", rid="a", tier=1), _row("Compute 1+2.", rid="b", tier=1),
            _row("Compute 1+3.", rid="c", tier=5)]
    out, step = cu.label_difficulty(rows, {"a": 0.9, "b": 0.25}, threshold=0.5, hard_tier_min=4)
    assert [r["extra_info"]["difficulty"] for r in out] == ["easy", "hard", "hard"]
    assert step.note == "easy:reference_model=1;hard:reference_model=1;hard:tier_fallback=1"


def _sft(correct, difficulty):
    return {"id": f"{correct}{difficulty}", "correct": correct, "difficulty": difficulty}


@pytest.mark.parametrize("policy, kept_ids", [
    ("all", ["Trueeasy", "Falseeasy", "Truehard", "Falsehard"]),
    ("mixed", ["Trueeasy", "Falseeasy", "Truehard", "Falsehard"]),
    ("only_correct", ["Trueeasy", "Truehard"]),
    ("by_difficulty", ["Trueeasy", "Truehard", "Falsehard"]),
])
def test_correctness_policies(policy, kept_ids):
    rows = [_sft(True, "easy"), _sft(False, "easy"), _sft(True, "hard"), _sft(False, "hard")]
    kept, step = cu.filter_correctness(rows, policy)
    assert [r["id"] for r in kept] == kept_ids and step.rows_in - step.rows_out == sum(step.dropped.values())
    with pytest.raises(ValueError, match="unknown"):
        cu.filter_correctness(rows, "some")


def test_code_and_math_rl_filters():
    gt16 = json.dumps({"inputs": ["1"] * 16, "outputs": ["1"] * 16})
    gt8 = json.dumps({"inputs": ["1"] * 8, "outputs": ["1"] * 8})
    rows = [_row("p1", gt16, "code", rid="a"), _row("p2", gt8, "code", rid="b"), _row("p3", gt16, "code", rid="c"),
            _row("p4", gt16, "code", rid="d")]
    n_tests = lambda r: len(json.loads(r["reward_model"]["ground_truth"])["inputs"])  # noqa: E731
    kept, step = cu.filter_code_tests(rows, {"a": 0.75, "b": 1.0, "c": 0.5}, n_tests)
    assert [r["extra_info"]["id"] for r in kept] == ["a"]
    assert step.dropped == {"teacher_pass_rate<=0.50": 2, "too_few_tests": 1}
    kept, step = cu.filter_math_majority(rows, {"a": 9 / 16, "b": 8 / 16})
    assert [r["extra_info"]["id"] for r in kept] == ["a"] and step.dropped == {"no_majority": 3}


def test_funnel_records_are_a_long_table():
    f = cu.Funnel()
    f.add("p", cu.Step("s1", 10, 7, {"x": 2, "y": 1}))
    f.add("p", cu.Step("expand", 7, 70, {}, note="x10"))
    recs = f.records()
    assert recs[0] == {"pool": "p", "order": 1, "stage": "s1", "rows_in": 10, "rows_out": 7, "dropped": 3,
                       "dropped_by": "x=2;y=1", "note": ""}
    assert recs[1]["dropped"] == 0 and recs[1]["order"] == 2


def test_template_ngrams_are_ignored_but_items_still_caught():
    template = "The input is given from Standard Input in the following format"
    evals = [f"Problem {w}: count the {w} pebbles arranged around the circular table. {template}." for w in
             ("red", "blue", "green", "pink")]
    train = [_row(f"Sort the numbers. {template}.", rid="fresh"), _row("Ugh: " + evals[2], rid="leak")]
    kept, _ = cu.decontaminate(train, evals, n=9, boilerplate_df=3)
    assert [r["extra_info"]["id"] for r in kept] == ["fresh"]
    kept, _ = cu.decontaminate(train, evals, n=9)  # the literal rule drops the template-sharing prompt too
    assert kept == []


def test_heldout_side_decontamination_is_the_same_rule_seen_from_the_other_side():
    """A held-out candidate goes exactly when ``decontaminate`` would drop some training text against it."""
    long_train = "Find the number of ordered pairs of integers such that both are prime and their sum is 40"
    train = ["Compute 19*2.", long_train, "Please evaluate the following tiny sum now: 3 plus 4."]
    cands = [_row("Compute 19*2.", rid="same"), _row("Compute 19+2.", rid="short-collides"),
             _row("Evaluate the following tiny sum", rid="short-inside"), _row("Compute 19*3.", rid="clean"),
             _row("Please help: find the number of ordered pairs of integers such that both are prime today",
                  rid="long-shares-9gram"), _row("Find the number of ordered sets of reals", rid="long-clean")]
    kept, step = cu.decontaminate_heldout(cands, train, n=9)
    assert [r["extra_info"]["id"] for r in kept] == ["clean", "long-clean"]
    assert step.stage == "decontaminate_9gram_vs_training" and step.dropped == {"contaminated": 4}
    for cand in cands:  # the forward rule, one candidate at a time as the only evaluation text
        forward = any(not cu.decontaminate([_row(t)], [cu.prompt_text(cand)], n=9)[0] for t in train)
        assert forward == (cand not in kept), cand["extra_info"]["id"]
