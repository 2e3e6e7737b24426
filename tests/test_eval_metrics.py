"""avg@k, the unbiased pass@k, standard error and the seeded bootstrap CI."""
from __future__ import annotations

import itertools
from math import comb

import numpy as np
import pytest

from klear_lib.evaluation import metrics as m


@pytest.mark.parametrize("n,c,k", [(10, 0, 1), (10, 10, 5), (10, 3, 1), (10, 3, 4), (16, 5, 8), (64, 1, 64), (5, 2, 5)])
def test_pass_at_k_equals_the_combinatorial_definition(n, c, k):
    assert m.pass_at_k(n, c, k) == pytest.approx(1 - comb(n - c, k) / comb(n, k))


def test_pass_at_k_by_enumeration():
    """pass@k is the chance that a random k-subset of the n samples holds at least one correct one."""
    samples = [True, False, False, True, False, False]
    subsets = list(itertools.combinations(samples, 3))
    assert m.pass_at_k(6, 2, 3) == pytest.approx(sum(any(s) for s in subsets) / len(subsets))


def test_pass_at_1_is_the_fraction_correct_and_bad_input_raises():
    assert m.pass_at_k(8, 3, 1) == pytest.approx(3 / 8)
    for args in [(4, 5, 1), (4, 1, 5), (4, 1, 0), (4, -1, 1)]:
        with pytest.raises(ValueError):
            m.pass_at_k(*args)


def test_avg_at_k_is_the_mean_of_per_problem_rates():
    correct = [[True, False, False, False], [True, True, True, True], [False] * 4]
    assert m.per_problem_rates(correct).mean() == pytest.approx((0.25 + 1 + 0) / 3)
    assert np.mean([m.pass_at_k(4, sum(c), 4) for c in correct]) == pytest.approx(2 / 3)
    with pytest.raises(ValueError):
        m.per_problem_rates([[True], []])


def test_standard_error():
    values = [0.0, 0.5, 1.0, 0.5]
    assert m.standard_error(values) == pytest.approx(np.std(values, ddof=1) / 2)
    assert m.standard_error([0.3]) == 0.0


def test_bootstrap_ci_is_seeded_and_brackets_the_mean():
    values = np.linspace(0, 1, 30)
    low, high = m.bootstrap_ci(values, seed=0)
    assert low < values.mean() < high and (low, high) == m.bootstrap_ci(values, seed=0)
    assert (low, high) != m.bootstrap_ci(values, seed=1)
    assert high - low == pytest.approx(2 * 1.96 * m.standard_error(values), rel=0.2)  # ~normal CI


def test_paired_gain_is_the_mean_per_problem_difference_with_a_narrow_ci():
    rng = np.random.default_rng(0)
    difficulty = rng.uniform(0, 1, 200)                     # shared between stages: pairing removes it
    before = [list(rng.uniform(size=16) < p) for p in difficulty * 0.5]
    after = [list(rng.uniform(size=16) < p) for p in difficulty * 0.5 + 0.05]
    out = m.paired_gain(before, after, seed=0)
    diff = m.per_problem_rates(after) - m.per_problem_rates(before)
    assert out["gain"] == pytest.approx(diff.mean()) and out["n_problems"] == 200
    assert out["ci_low"] < out["gain"] < out["ci_high"]
    own = m.bootstrap_ci(m.per_problem_rates(after), seed=0)
    assert out["ci_high"] - out["ci_low"] < own[1] - own[0]  # narrower than a stage's own CI


def test_paired_gain_needs_the_same_problems():
    with pytest.raises(ValueError, match="same problems"):
        m.paired_gain([[True]], [[True], [False]], seed=0)
