"""Teachers: deterministic, within the length caps, ranked by measured quality, erring more on harder tiers."""
from __future__ import annotations

import random
from collections import defaultdict

import pytest

from klear_lib.data import tasks_code as tc
from klear_lib.data import tasks_math as tm
from klear_lib.data.teachers import MAX_RESPONSE_CHARS, TEACHERS, get_teacher, ranked, respond


def _accuracy(ability: str, n_items: int = 150, seed: int = 11):
    """Accuracy per (teacher, tier) over fresh items, 2 samples each."""
    task, rng, acc = (tm if ability == "math" else tc), random.Random(seed), defaultdict(list)
    for i in range(n_items):
        tier = task.TIERS[i % len(task.TIERS)]
        item = task.sample_item(rng, tier)
        gt = str(item.answer) if ability == "math" else tc.ground_truth(item.inputs, item.outputs())
        for t in ranked(ability):
            for k in range(2):
                acc[(t, tier)].append(task.judge(respond(t, item, f"i{i}", k, seed=seed), gt))
    return {key: sum(v) / len(v) for key, v in acc.items()}


def test_enough_teachers_with_unique_ranks():
    assert len(ranked("math")) >= 6 and len(ranked("code")) >= 4
    assert sorted(TEACHERS) == sorted(ranked("math") + ranked("code"))
    for pool in (ranked("math"), ranked("code")):
        assert sorted(TEACHERS[t].rank for t in pool) == list(range(1, len(pool) + 1))
    with pytest.raises(KeyError, match="known"):
        get_teacher("oracle")


def test_responses_are_deterministic_and_vary_by_sample():
    item = tm.MathItem(19, (("*", 2), ("-", 20), ("+", 7)))
    a = [respond("mixed", item, "id", k, seed=0) for k in range(16)]
    assert a == [respond("mixed", item, "id", k, seed=0) for k in range(16)]
    assert len(set(a)) > 1 and a != [respond("mixed", item, "id", k, seed=1) for k in range(16)]


@pytest.mark.parametrize("ability", ["math", "code"])
def test_length_caps_and_format(ability):
    task, rng = (tm if ability == "math" else tc), random.Random(5)
    for i in range(200):
        item = task.sample_item(rng, task.TIERS[-1])
        assert len(item.prompt) <= 100
        for t in ranked(ability):
            text = respond(t, item, f"x{i}", i % 16)
            assert len(text) <= MAX_RESPONSE_CHARS and text.startswith("<think>\n")
            assert set(text) <= set(map(chr, range(32, 127))) | {"\n"}


@pytest.mark.parametrize("ability", ["math", "code"])
def test_measured_quality_follows_the_documented_rank(ability):
    acc = _accuracy(ability)
    tiers = (tm if ability == "math" else tc).TIERS
    overall = {t: sum(acc[(t, k)] for k in tiers) / len(tiers) for t in ranked(ability)}
    ordered = [overall[t] for t in ranked(ability)]
    assert ordered == sorted(ordered, reverse=True), overall


@pytest.mark.parametrize("ability", ["math", "code"])
def test_error_rate_grows_with_tier(ability):
    acc = _accuracy(ability)
    tiers = (tm if ability == "math" else tc).TIERS
    for t in ranked(ability):
        assert acc[(t, tiers[0])] > acc[(t, tiers[-1])], (t, acc[(t, tiers[0])], acc[(t, tiers[-1])])


def test_styles_differ():
    rng = random.Random(2)
    items = [tm.sample_item(rng, 4) for _ in range(40)]
    texts = {t: [respond(t, it, f"s{i}", 0) for i, it in enumerate(items)] for t in ranked("math")}
    assert any("check:" in x for x in texts["reflective"]) and not any("check:" in x for x in texts["terse"])
    assert any("wait," in x for t in ("reflective", "mixed") for x in texts[t])  # caught errors get corrected
    mean = {t: sum(map(len, v)) / len(v) for t, v in texts.items()}
    assert mean["verbose"] > mean["careful"] > mean["terse"]
    assert not any("+" in line.split("=", 2)[-1] for x in texts["terse"] for line in x.splitlines()[1:-2]), \
        "terse never decomposes"
