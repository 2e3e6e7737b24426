"""One judge per row schema: the RL reward and the benchmark verdict come from the same functions."""
from __future__ import annotations

import json
import shutil

import pytest

from klear_lib.rewards import judge

MATH = {"ability": "math", "reward_model": {"ground_truth": "073"}, "extra_info": {"id": "m1"}}
CODE = {"ability": "code", "reward_model": {"ground_truth": json.dumps({"inputs": ["1\n", "2\n"],
                                                                        "outputs": ["2\n", "4\n"]})},
        "extra_info": {"id": "c1"}}


def test_math_rows():
    assert judge.reward("<think>\n</think>\n\\boxed{73}", MATH) == 1.0
    assert judge.correct("<think>\n</think>\n\\boxed{73}", MATH)
    assert not judge.correct("\\boxed{73}", MATH) and judge.reward("\\boxed{73}", MATH) == -0.5


def test_bad_rows_name_the_row_and_field():
    with pytest.raises(ValueError, match="row m2: field ability"):
        judge.reward("x", {"ability": "poetry", "extra_info": {"id": "m2"}})
    with pytest.raises(ValueError, match="row m3: field reward_model.ground_truth missing"):
        judge.reward("x", {"ability": "math", "extra_info": {"id": "m3"}})


@pytest.mark.skipif(shutil.which("firejail") is None, reason="firejail is not installed")
def test_code_rows_and_batches():
    half = "<think>\n</think>\n```python\nprint(2)\n```"
    good = "<think>\n</think>\n```python\nprint(2 * int(input()))\n```"
    assert judge.reward(half, CODE) == 0.0 and judge.reward(half, CODE, code_mode="hard") == -1.0
    assert [judge.correct(good, CODE), judge.correct(half, CODE)] == [True, False]


def test_math_verdicts_on_hostile_answers_never_raise():
    """Issue 22: a 5,000-digit ground truth or answer crashed the verdict (Python's int() digit limit); a deep
    nest of reciprocals whose value is 2 was judged equal to 1/2. Each is now a plain verdict."""
    big = "7" * 5000
    big_row = {"ability": "math", "reward_model": {"ground_truth": big}, "extra_info": {"id": "m4"}}
    half = {"ability": "math", "reward_model": {"ground_truth": "\\frac{1}{2}"}, "extra_info": {"id": "m5"}}
    deep = "\\frac{1}{" * 200 + "2" + "}" * 200
    assert judge.verdict(f"<think>\n</think>\n\\boxed{{{big}}}", big_row) == {"correct": True, "reward": 1.0}
    assert judge.verdict("<think>\n</think>\n\\boxed{73}", big_row) == {"correct": False, "reward": -1.0}
    assert judge.verdict(f"<think>\n</think>\n\\boxed{{{'9' * 100_000}}}", MATH) == {"correct": False, "reward": -1.0}
    assert judge.verdict(f"<think>\n</think>\n\\boxed{{{deep}}}", half) == {"correct": False, "reward": -1.0}
    assert judge.correct("<think>\n</think>\n\\boxed{٧٣}", MATH)
