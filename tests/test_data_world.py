"""The ci miniature world: byte-identical per seed, held-out items never in training, noise filtered out."""
from __future__ import annotations

import hashlib

import pytest

from klear_lib.configs import get_config, recipe
from klear_lib.data import EVAL_SPLITS, build_world, load_split, sft_subset
from klear_lib.data import curation as cu
from klear_lib.data import world as world_mod
from klear_lib.data.schema import dumps_rows, validate_rl_row, validate_sft_row
from klear_lib.data.sources import benchmark_texts
from klear_lib.data.store import funnel_csv, load_world, world_dir

TRAIN = ("sft_pool", "sft", "math_rl", "code_rl")


@pytest.fixture(scope="module")
def world():
    return build_world(get_config("data", "ci"))


def _digest(world) -> dict[str, str]:
    out = {k: hashlib.sha256(dumps_rows(v).encode()).hexdigest() for k, v in world.splits.items()}
    out["funnel"] = hashlib.sha256(funnel_csv(world.funnel).encode()).hexdigest()
    return out


def test_same_seed_gives_byte_identical_datasets(world):
    again = build_world(get_config("data", "ci"))
    assert _digest(again) == _digest(world)
    other = build_world(get_config("data", "ci", seed=1))
    assert _digest(other)["math_rl"] != _digest(world)["math_rl"]


def test_split_sizes_and_schema(world):
    cfg = get_config("data", "ci")
    for name in EVAL_SPLITS:
        assert len(world.splits[name]) == cfg.n_eval
    assert len(world.splits["math_rl"]) == cfg.n_math_rl and len(world.splits["code_rl"]) == cfg.n_code_rl
    assert len(world.splits["sft"]) == cfg.sft_budget
    assert len(world.splits["sft_pool"]) == cfg.n_math_sft_prompts * 12 + cfg.n_code_sft_prompts * 16
    for name, rows in world.splits.items():
        for row in rows:
            (validate_sft_row if name.startswith("sft") else validate_rl_row)(row)
    assert {r["extra_info"]["tier"] for r in world.splits["tiny_aime"]} == {5}


def test_no_heldout_item_survives_into_training(world):
    held = [r for n in EVAL_SPLITS for r in world.splits[n]]
    held_ids = {cu.item_of(r) for r in held}
    index = cu.ngram_index([r["prompt"][0]["content"] for r in held] + list(benchmark_texts()), 9,
                           get_config("data", "ci").ngram_boilerplate_df)
    for name in TRAIN:
        rows = world.splits[name]
        assert not {cu.item_of(r) for r in rows} & held_ids, name
        assert not any(index.hits(cu.prompt_text(r)) for r in rows), name
    assert sum(s.dropped.get("heldout_id", 0) + s.dropped.get("contaminated", 0)
               for p, s in world.funnel.steps if not p.startswith("eval")) > 0, "decontamination never fired"


def test_code_eval_splits_are_drawn_last_and_change_no_other_split(world, monkeypatch):
    assert {r["extra_info"]["tier"] for r in world.splits["code_eval_t4"]} == {4}
    assert {r["extra_info"]["tier"] for r in world.splits["code_eval_t5"]} == {5}
    assert {r["ability"] for n in world_mod.CODE_EVAL_SPLITS for r in world.splits[n]} == {"code"}
    monkeypatch.setattr(world_mod, "CODE_EVAL_SPLITS", ())
    without = build_world(get_config("data", "ci"))
    assert set(world.splits) - set(without.splits) == {"code_eval_t4", "code_eval_t5"}
    assert {k: v for k, v in _digest(without).items() if k != "funnel"} == \
        {k: v for k, v in _digest(world).items() if k in without.splits}
    dropped = {p: s.dropped for p, s in world.funnel.steps if s.stage == "decontaminate_9gram_vs_training"}
    assert set(dropped) == {"eval:code_eval_t4", "eval:code_eval_t5"}


def test_eval_splits_are_disjoint_and_clean(world):
    ids = [cu.item_of(r) for n in EVAL_SPLITS for r in world.splits[n]]
    assert len(ids) == len(set(ids))
    assert not any(r["extra_info"]["noise"] for n in EVAL_SPLITS for r in world.splits[n])


def test_injected_noise_is_filtered_out(world):
    notes = {p: s.note for p, s in world.funnel.steps if s.stage == "inject_noise"}
    assert "wrong_answer=" in notes["math_rl"] and "faulty_tests=" in notes["code_rl"]
    for name in ("math_rl", "code_rl"):
        assert not any(r["extra_info"]["noise"] for r in world.splits[name])
    for r in world.splits["code_rl"]:
        assert r["extra_info"]["filter_pass_rate"] > 0.5


def test_sft_pool_labels(world):
    pool = world.splits["sft_pool"]
    assert {r["difficulty"] for r in pool} == {"easy", "hard"} and {r["correct"] for r in pool} == {True, False}
    per_item = {}
    for r in pool:
        per_item.setdefault(r["item_id"], set()).add(r["difficulty"])
    assert all(len(v) == 1 for v in per_item.values()), "difficulty is a property of the prompt"


def test_sft_subset_options(world):
    pool = world.splits["sft_pool"]
    easy_true = sft_subset(pool, difficulty="easy", correctness="only_correct")
    assert easy_true and all(r["difficulty"] == "easy" and r["correct"] for r in easy_true)
    hard_mixed = sft_subset(pool, difficulty="hard", correctness="mixed")
    assert {r["correct"] for r in hard_mixed} == {True, False}
    by = sft_subset(pool, correctness="by_difficulty")
    assert all(r["correct"] or r["difficulty"] == "hard" for r in by)
    assert {r["teacher"] for r in sft_subset(pool, teachers=["terse"])} == {"terse"}
    top1 = sft_subset(pool, ability="math", top_k=1, budget=50, seed=0)
    assert len(top1) == 50 and {r["teacher"] for r in top1} == {"reflective"}
    top6 = sft_subset(pool, ability="math", top_k=6, budget=50, seed=0)
    assert len(top6) == 50 and len({r["teacher"] for r in top6}) > 1
    assert top6 == sft_subset(pool, ability="math", top_k=6, budget=50, seed=0)
    mixed = sft_subset(pool, budget=100)
    assert {r["ability"] for r in mixed} == {"math", "code"} and len(mixed) == 100


def test_load_split_caches_and_round_trips(world):
    rows = load_split("math_rl", recipe("ci"))
    assert dumps_rows(rows) == dumps_rows(world.splits["math_rl"])
    assert (world_dir(recipe("ci")) / "DONE").exists()
    assert load_world(recipe("ci")).funnel.records() == world.funnel.records()
    with pytest.raises(KeyError, match="known"):
        load_split("no_such_split", recipe("ci"))
