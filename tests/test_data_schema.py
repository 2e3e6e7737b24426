"""Row schema: stable ids, and malformed rows raise an error naming the row id and the field (or are counted)."""
from __future__ import annotations

import json
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from klear_lib.data import curation as cu
from klear_lib.data.schema import (RowError, item_id, judge_can_parse, make_rl_row, n_code_tests, normalise_prompt,
                                   validate_rl_row, validate_sft_row)


def _math(prompt="Compute 2+3.", gt="5", rid=None):
    row = make_rl_row(prompt, gt, ability="math", data_source="t", split="x", tier=1)
    if rid:
        row["extra_info"]["id"] = rid
    return row


def _code(gt):
    return make_rl_row("Read x. Print it.", gt, ability="code", data_source="t", split="x", tier=1)


def test_id_is_a_hash_of_the_normalised_prompt():
    assert item_id("Compute  2+3.\n") == item_id("compute 2+3.") != item_id("Compute 2+4.")
    assert normalise_prompt("  A\tB \n C ") == "a b c"
    assert len(item_id("x")) == 16 and item_id("x", "m-").startswith("m-")


@pytest.mark.parametrize("mutate, field", [
    (lambda r: r["reward_model"].update(ground_truth=""), "reward_model.ground_truth"),
    (lambda r: r["reward_model"].pop("ground_truth"), "reward_model.ground_truth"),
    (lambda r: r["prompt"][0].update(content=42), "prompt"),
    (lambda r: r.update(prompt="Compute 2+3."), "prompt"),
    (lambda r: r.update(ability="poetry"), "ability"),
    (lambda r: r["reward_model"].update(ground_truth="???"), "reward_model.ground_truth"),
])
def test_bad_math_rows_name_id_and_field(mutate, field):
    row = _math(rid="row-7")
    mutate(row)
    with pytest.raises(RowError) as err:
        validate_rl_row(row)
    assert err.value.field == field and "row-7" in str(err.value) and field in str(err.value)


@pytest.mark.parametrize("gt, why", [
    ("not json", "unparsable"), (json.dumps({"inputs": [], "outputs": []}), "empty"),
    (json.dumps({"inputs": ["1"], "outputs": []}), "inputs vs"), (json.dumps([1, 2]), "JSON object"),
    (json.dumps({"functional": "  "}), "empty functional"),
    (json.dumps({"functional": "assert f(1) == 1"}), "must call Solution"),
])
def test_bad_code_tests_raise(gt, why):
    with pytest.raises(RowError, match=why) as err:
        validate_rl_row(_code(gt))
    assert err.value.field == "reward_model.ground_truth"


def test_good_rows_pass_and_count_tests():
    gt = json.dumps({"inputs": ["1\n"] * 16, "outputs": ["1\n"] * 16})
    assert validate_rl_row(_code(gt)) and n_code_tests(gt) == 16
    assert n_code_tests(json.dumps({"functional": "assert f(1)==1\nassert f(2)==2"})) == 2
    assert validate_rl_row(_math(gt="\\frac{1}{2}"))


def test_drop_policy_counts_and_raise_policy_raises():
    rows = [_math(), _math(gt=""), "not a row", _math(prompt="Compute 1+1.", gt="2")]
    kept, step = cu.validate_rows(rows, on_error="drop")
    assert len(kept) == 2 and step.dropped == {"invalid:<row>": 1, "invalid:reward_model.ground_truth": 1}
    with pytest.raises(RowError, match="reward_model.ground_truth"):
        cu.validate_rows(rows, on_error="raise")


def test_sft_row_validation():
    row = {"id": "s1", "messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}],
           "ability": "math", "correct": True, "difficulty": "easy"}
    assert validate_sft_row(row)
    with pytest.raises(RowError, match="'s1'.*'correct'"):
        validate_sft_row({**row, "correct": "yes"})
    with pytest.raises(RowError, match="messages"):
        validate_sft_row({**row, "messages": row["messages"][:1]})


# ---- issue 22: the curation check of a math answer is bounded like the judge ---------------------------------

DEEP_BRACES = "{" * 10_000 + "1" + "}" * 10_000
DEEP_FRACS = "\\frac{1}{" * 200 + "2" + "}" * 200   # value 2, but math-verify falls back to an inner 1/2


def test_judge_can_parse_is_bounded_on_deep_nesting():
    """10k nested braces took 28.6 s with no timeout; past the nesting cap the answer cannot be parsed at once.
    200 nested reciprocals parsed (to 1/2, an inner part, not their value 2); now they cannot, nor can a chain past
    the judge's operator cap."""
    start = time.perf_counter()
    assert not judge_can_parse(DEEP_BRACES)
    assert not judge_can_parse(DEEP_FRACS)
    assert not judge_can_parse("+".join(["1"] * 1000))
    assert time.perf_counter() - start < 10  # a hang guard: the caps answer at once


def test_judge_can_parse_keeps_honest_answers_and_the_digit_rule():
    honest = ["5", "-12", "7" * 5000, "\\frac{1}{2}", "\\sqrt{2}", "٤٢", "\\frac{١}{٢}",
              "\\left( 3, \\frac{\\pi}{2} \\right)", "+".join(["x"] * 50)]
    assert all(judge_can_parse(a) for a in honest)
    assert not judge_can_parse("???")


def test_judge_can_parse_works_off_the_main_thread():
    """Curation may validate rows from a thread pool: the check runs in a worker process there, still bounded."""
    answers = ["\\frac{1}{2}", "???", DEEP_FRACS, "42"]
    with ThreadPoolExecutor(max_workers=2) as pool:
        assert list(pool.map(judge_can_parse, answers, timeout=120)) == [True, False, False, True]


def test_an_unparsable_deep_answer_follows_the_row_policy():
    rows = [_math(), _math(prompt="Compute 1+1.", gt=DEEP_FRACS, rid="deep")]
    with pytest.raises(RowError, match="'deep'.*reward_model.ground_truth.*cannot parse"):
        validate_rl_row(rows[1])
    kept, step = cu.validate_rows(rows, on_error="drop")
    assert len(kept) == 1 and step.dropped == {"invalid:reward_model.ground_truth": 1}
