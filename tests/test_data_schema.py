"""Row schema: stable ids, and malformed rows raise an error naming the row id and the field (or are counted)."""
from __future__ import annotations

import json

import pytest

from klear_lib.data import curation as cu
from klear_lib.data.schema import (RowError, item_id, make_rl_row, n_code_tests, normalise_prompt, validate_rl_row,
                                   validate_sft_row)


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
