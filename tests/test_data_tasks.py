"""Miniature tasks: prompts, answers, tests, the restricted interpreter, and agreement with the kit's judges."""
from __future__ import annotations

import json
import random

import pytest

from klear_lib.data import tasks_code as tc
from klear_lib.data import tasks_math as tm
from klear_lib.data.teachers import ranked, respond


def test_math_item_prompt_and_answer():
    item = tm.MathItem(19, (("*", 2), ("-", 20), ("+", 7)))
    assert item.prompt == "Compute ((19*2)-20)+7." and item.values() == [38, 18, 25] and item.tier == 3
    assert tm.decomposed(19, "*", 2, 38) == "19*2=10*2+9*2=20+18=38"
    assert tm.decomposed(58, "+", 27, 85) == "58+27=58+20+7=78+7=85"


@pytest.mark.parametrize("tier", tm.TIERS)
def test_math_items_stay_small_and_nonnegative(tier):
    rng = random.Random(tier)
    for _ in range(300):
        item = tm.sample_item(rng, tier)
        assert item.tier == tier and min(item.values()) >= 0 and len(item.prompt) < 100
        assert eval(item.prompt[len("Compute "):-1]) == item.answer  # the prompt's expression is the answer
        assert 2 <= item.start <= tm.DEFAULT_MAX_OPERAND
        assert all(b <= tm.DEFAULT_MAX_OPERAND if op != "*" else 2 <= b <= 9 for op, b in item.ops)


def test_max_operand_bounds_every_operand_and_rejects_nonsense():
    rng = random.Random(0)
    items = [tm.sample_item(rng, 4, max_operand=9) for _ in range(300)]
    assert max(max(item.start, *(b for _, b in item.ops)) for item in items) == 9
    cur_before_mul = [v for item in items for v, (op, _) in zip([item.start, *item.values()], item.ops) if op == "*"]
    assert max(cur_before_mul) <= 9  # products only of small values
    with pytest.raises(ValueError, match="max_operand"):
        tm.sample_item(rng, 2, max_operand=1)


def test_boxed_extraction_and_judge():
    assert tm.boxed_int("<think>\nx\n</think>\n\\boxed{25}") == 25
    assert tm.boxed_int("\\boxed{25}") is None  # no </think>
    assert tm.judge("<think>\n</think>\n\\boxed{-3}", "-3") and not tm.judge("<think>\n</think>\n25", "25")


def test_code_prompt_tests_and_programs():
    item = tc.CodeItem((("double", None), ("add", 3), ("square", None)), tuple(range(-8, 8)))
    assert item.prompt == "Read x. Double it, add 3, then square it. Print it."
    assert tc.stepwise_program(item.ops) == "x=int(input())\nx=x*2\nx=x+3\nx=x*x\nprint(x)"
    assert tc.oneliner(item.ops) == "x=int(input())\nprint((x*2+3)**2)"
    assert tc.oneliner(item.ops, lambda: True) == "x=int(input())\nprint(x*2+3**2)"  # the precedence slip
    gt = tc.ground_truth(item.inputs, item.outputs())
    assert len(json.loads(gt)["inputs"]) == 16
    good = f"<think>\nok\n</think>\n```python\n{tc.stepwise_program(item.ops)}\n```"
    bad = f"<think>\nok\n</think>\n```python\n{tc.oneliner(item.ops, lambda: True)}\n```"
    assert tc.judge(good, gt) and 0 <= tc.pass_fraction(bad, gt) < 1


@pytest.mark.parametrize("tier", tc.TIERS)
def test_programs_agree_with_the_op_list(tier):
    rng = random.Random(100 + tier)
    for _ in range(200):
        item = tc.sample_item(rng, tier)
        assert len(item.prompt) <= 100 and len(set(item.inputs)) == 16
        for prog in (tc.stepwise_program(item.ops), tc.oneliner(item.ops)):
            assert [tc.interpret(prog, x) for x in item.inputs] == [f"{y}\n" for y in item.outputs()]
            # the interpreter agrees with Python itself on these (trusted, generated-by-us) programs
            env = {"input": lambda v=item.inputs[0]: str(v), "print": lambda v: out.append(v)}
            out = []
            exec(prog, env)  # noqa: S102 -- our own op-list program, not model output
            assert f"{out[0]}\n" == tc.interpret(prog, item.inputs[0])


def test_interpreter_rejects_anything_else():
    for prog in ("import os\nprint(1)", "x=int(input())\nprint(open('f'))", "x=int(input(\nprint(x)",
                 "x=int(input())\nprint(x**99)", "x=int(input())\nprint(x//0)"):
        assert tc.interpret(prog, 3) is None


def test_miniature_math_judge_agrees_with_the_kit_judge():
    """The curation judge (exact integer) gives the verdict of the RL/eval judge on teacher responses."""
    from klear_lib.rewards.math import is_correct

    rng, checked = random.Random(7), 0
    for i in range(60):
        item = tm.sample_item(rng, 1 + i % 5)
        for t in ranked("math"):
            text = respond(t, item, f"k{i}", 0, seed=3)
            for gt in (str(item.answer), str(item.answer + 1)):
                assert tm.judge(text, gt) == is_correct(text, gt), (t, text, gt)
                checked += 1
    assert checked == 720


def test_code_ground_truth_is_read_by_the_sandbox_parser():
    from klear_lib.rewards.code import parse_tests

    item = tc.sample_item(random.Random(1), 3)
    tests = parse_tests(tc.to_row(item, "x")["reward_model"]["ground_truth"])
    assert len(tests) == 16 and tests[0]["input"].endswith("\n")
