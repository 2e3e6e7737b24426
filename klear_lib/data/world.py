"""The miniature reasoning world: evaluation splits, the SFT teacher pool and the RL sets, each curated through
the pure filters of ``curation`` with every drop counted in one ``Funnel`` (docs/paper.md §2.2-2.3, docs/design.md).

Held-out splits are drawn first; every training pool then loses their ids (exact) and anything sharing a
9-gram with them or with the real benchmarks. The held-out code splits of one tier each (``code_eval_t<k>``) are
drawn last, checked against the pools as they stand, so that adding them (for the study re-run) left every training
split byte-identical and no trained model stale. Deterministic in ``cfg`` (seeds via ``klear_lib.seeding``).
"""
from __future__ import annotations

import logging
import math
from collections import Counter

from tqdm.auto import tqdm

from klear_lib.configs.base import config_hash
from klear_lib.data import curation as cu
from klear_lib.data import tasks_code as tc
from klear_lib.data import tasks_math as tm
from klear_lib.data.curation import World
from klear_lib.data.realworld import build_real_world
from klear_lib.data.schema import n_code_tests
from klear_lib.data.sources import benchmark_texts
from klear_lib.data.subsets import sft_subset
from klear_lib.data.teachers import get_teacher, ranked, respond
from klear_lib.seeding import py_rng

log = logging.getLogger(__name__)
MATH_EVAL_SPLITS = tuple(f"math_eval_t{k}" for k in tm.TIERS)
# tier 4 is the hardest code tier of training; tier 5 is held out of it, as math's tier 5 (tiny_aime) is
CODE_EVAL_SPLITS = tuple(f"code_eval_t{k}" for k in (4, 5))
FIRST_EVAL_SPLITS = ("tiny_aime", "tiny_lcb", *MATH_EVAL_SPLITS)  # drawn before the training pools
EVAL_SPLITS = (*FIRST_EVAL_SPLITS, *CODE_EVAL_SPLITS)
# About 45% of tier 4-5 code candidates share a 9-gram with a prompt of the tiny pools (2026-12-04), so a split drawn
# after them draws this many times the candidates of the first ones
LATE_CANDIDATE_FACTOR = 2.5
TRAIN_SPLITS = ("sft_pool", "sft", "math_rl", "code_rl", "math_rl_unfiltered", "code_rl_unfiltered")
TASKS = {"math": tm, "code": tc}


def _candidates(cfg, ability: str, concern: str, n: int, split: str, weights, tiers=None) -> list[dict]:
    task, rng = TASKS[ability], py_rng(cfg.seed, "world", concern)
    size = cfg.math_max_operand if ability == "math" else cfg.code_tests
    return [task.to_row(task.sample_item(rng, k, size), split)
            for k in rng.choices(tiers or task.TIERS, weights=weights, k=n)]


def eval_splits(cfg, funnel: cu.Funnel) -> dict[str, list[dict]]:
    """The held-out splits drawn first: ``tiny_aime`` (tier 5), ``tiny_lcb`` (code), ``math_eval_t1..t5``; ids
    disjoint."""
    n_cand, out, seen = math.ceil(cfg.n_eval * (1 + cfg.candidate_margin)), {}, set()
    for name in FIRST_EVAL_SPLITS:
        if name == "tiny_lcb":
            rows = _candidates(cfg, "code", f"eval:{name}", n_cand, name, cfg.code_tier_weights)
        else:
            tier = 5 if name == "tiny_aime" else int(name[-1])
            rows = _candidates(cfg, "math", f"eval:{name}", n_cand, name, [1.0], tiers=(tier,))
        rows = funnel.run(f"eval:{name}", rows, cu.exact_dedup,
                          lambda r: cu.exclude_ids(r, seen, "exclude_other_eval_ids"),
                          lambda r: cu.take_first(r, cfg.n_eval))
        seen |= {cu.item_of(r) for r in rows}
        out[name] = sorted(rows, key=cu.item_of)
    return out


def late_eval_splits(cfg, splits: dict[str, list[dict]], funnel: cu.Funnel) -> dict[str, list[dict]]:
    """``code_eval_t<k>``: held-out code problems of tier k, drawn after the training pools in ``splits``. A candidate
    goes when its id is in any other split, or when a training prompt shares a 9-gram with it (the pools' rule,
    applied from the held-out side: ``curation.decontaminate_heldout``)."""
    train = [r for name in TRAIN_SPLITS for r in splits[name]]
    taken = {cu.item_of(r) for rows in splits.values() for r in rows}
    heldout = [cu.prompt_text(r) for name in FIRST_EVAL_SPLITS for r in splits[name]]
    n_cand, out = math.ceil(cfg.n_eval * (1 + cfg.candidate_margin) * LATE_CANDIDATE_FACTOR), {}
    for name in CODE_EVAL_SPLITS:
        rows = _candidates(cfg, "code", f"eval:{name}", n_cand, name, [1.0], tiers=(int(name[-1]),))
        rows = funnel.run(f"eval:{name}", rows, cu.exact_dedup,
                          lambda r: cu.exclude_ids(r, taken, "exclude_other_split_ids", "id_in_other_split"),
                          lambda r: cu.decontaminate_heldout(r, map(cu.prompt_text, train), cfg.ngram_decontam,
                                                             cfg.ngram_boilerplate_df, heldout),
                          lambda r: cu.take_first(r, cfg.n_eval))
        taken |= {cu.item_of(r) for r in rows}
        out[name] = sorted(rows, key=cu.item_of)
    return out


def _clean(rows: list[dict], pool: str, heldout: set[str], index: cu.NgramIndex, funnel: cu.Funnel) -> list[dict]:
    return funnel.run(pool, rows, lambda r: cu.validate_rows(r, on_error="raise"), cu.exact_dedup,
                      lambda r: cu.exclude_ids(r, heldout), lambda r: cu.decontaminate(r, (), index=index))


def _item(row: dict):
    return TASKS[row["ability"]].item_from_row(row)


def pass_rates(cfg, rows: list[dict], teacher: str, concern: str) -> dict[str, float]:
    """Per item: the fraction of ``cfg.responses_per_prompt`` samples of ``teacher`` that the miniature judge
    accepts."""
    out, n = {}, cfg.responses_per_prompt
    for row in tqdm(rows, desc=f"{concern}:{teacher}", leave=False, mininterval=2):
        gt, rid, item = row["reward_model"]["ground_truth"], cu.item_of(row), _item(row)
        judge = TASKS[row["ability"]].judge
        out[rid] = sum(judge(respond(teacher, item, rid, k, seed=cfg.seed, concern=concern), gt) for k in range(n)) / n
    return out


def _sft_rows(row: dict, samples: int, seed: int) -> list[dict]:
    rid, item, gt = cu.item_of(row), _item(row), row["reward_model"]["ground_truth"]
    ability, task, out = row["ability"], TASKS[row["ability"]], []
    for name in ranked(ability):
        for k in range(samples):
            text = respond(name, item, rid, k, seed=seed, concern="sft")
            out.append({"id": f"{rid}-{name}-{k:02d}", "item_id": rid, "ability": ability, "tier": item.tier,
                        "teacher": name, "teacher_rank": get_teacher(name).rank, "sample": k,
                        "messages": [{"role": "user", "content": row["prompt"][0]["content"]},
                                     {"role": "assistant", "content": text}],
                        "correct": task.judge(text, gt), "difficulty": row["extra_info"]["difficulty"],
                        "data_source": row["data_source"], "ground_truth": gt})
    return out


def sft_pool(cfg, prompts: list[dict], ability: str, funnel: cu.Funnel) -> list[dict]:
    """Label prompt difficulty with the reference teacher, then expand each prompt into teacher responses."""
    pool = f"sft_pool:{ability}"
    rates = pass_rates(cfg, prompts, getattr(cfg, f"reference_teacher_{ability}"), "reference")
    prompts = funnel.run(pool, prompts, lambda r: cu.label_difficulty(r, rates, threshold=cfg.difficulty_threshold,
                                                                      hard_tier_min=cfg.hard_tier_min))
    samples = getattr(cfg, f"{ability}_samples_per_teacher")
    rows = [r for p in tqdm(prompts, desc=pool, leave=False, mininterval=2) for r in _sft_rows(p, samples, cfg.seed)]
    funnel.add(pool, cu.Step("teacher_responses", len(prompts), len(rows), {},
                             note=f"{len(ranked(ability))} teachers x {samples} samples"))
    rows = funnel.run(pool, rows, lambda r: cu.validate_rows(r, kind="sft", on_error="raise"))
    return sorted(rows, key=lambda r: r["id"])


def _noisy(cfg, row: dict, share: float, kind: str) -> bool:
    return py_rng(cfg.seed, "noise", kind, cu.item_of(row)).random() < share


def inject_noise(cfg, rows: list[dict], ability: str) -> list[dict]:
    """Math: replace the reference answer of a ``math_wrong_answer_share`` of items by a wrong one. Code: corrupt
    some expected outputs (``faulty_tests``) or cut the tests below 16 (``few_tests``). Noisy rows are flagged."""
    out, is_math = [], ability == "math"
    for row in rows:
        item, split = _item(row), row["extra_info"]["split"]
        rng = py_rng(cfg.seed, "noise", "delta" if is_math else "tests", cu.item_of(row))
        if is_math and _noisy(cfg, row, cfg.math_wrong_answer_share, "wrong_answer"):
            wrong = int(row["reward_model"]["ground_truth"]) + rng.choice((-1, 1)) * rng.randint(1, 9)
            row = tm.to_row(item, split, ground_truth=wrong, noise="wrong_answer")
        elif not is_math and _noisy(cfg, row, cfg.code_faulty_tests_share, "faulty_tests"):
            outs = item.outputs()
            for i in rng.sample(range(len(outs)), rng.randint(2, 5)):
                outs[i] += rng.choice((-3, -2, -1, 1, 2, 3))
            row = tc.to_row(item, split, outputs=outs, noise="faulty_tests")
        elif not is_math and _noisy(cfg, row, cfg.code_few_tests_share, "few_tests"):
            few = item.inputs[: rng.randint(6, cfg.min_code_tests - 1)]
            row = tc.to_row(item, split, inputs=few, noise="few_tests")
        out.append(row)
    return out


def rl_split(cfg, ability: str, heldout: set[str], index: cu.NgramIndex,
             funnel: cu.Funnel) -> tuple[list[dict], list[dict]]:
    """``math_rl`` / ``code_rl``: candidates -> clean -> inject noise -> the paper's RL filters -> target size; and
    ``<ability>_rl_unfiltered``: the same noisy candidates without the filters, cut to the same size (Fig. 4)."""
    name, n, is_math = f"{ability}_rl", getattr(cfg, f"n_{ability}_rl"), ability == "math"
    n_cand = math.ceil(n * cfg.rl_candidate_factor[not is_math])
    rows = _candidates(cfg, ability, f"rl:{ability}", n_cand, name, cfg.rl_tier_weights if is_math
                       else cfg.code_tier_weights)
    rows = _clean(rows, name, heldout, index, funnel)
    noisy = inject_noise(cfg, rows, ability)
    kinds = Counter(r["extra_info"]["noise"] for r in noisy if r["extra_info"]["noise"])
    funnel.add(name, cu.Step("inject_noise", len(rows), len(noisy), {},
                             ";".join(f"{k}={v}" for k, v in sorted(kinds.items()))))
    unfiltered = sorted(noisy[:n], key=cu.item_of)
    rates = pass_rates(cfg, noisy, getattr(cfg, f"filter_teacher_{ability}"), "filter")
    if is_math:
        rows, step = cu.filter_math_majority(noisy, rates, majority=cfg.math_majority)
    else:
        rows, step = cu.filter_code_tests(noisy, rates, lambda r: n_code_tests(r["reward_model"]["ground_truth"]),
                                          min_tests=cfg.min_code_tests, min_pass_rate=cfg.code_pass_rate_min)
    funnel.add(name, step)
    rows = [{**r, "extra_info": {**r["extra_info"], "filter_pass_rate": rates[cu.item_of(r)]}} for r in rows]
    rows = funnel.run(name, rows, lambda r: cu.take_first(r, n))
    return sorted(rows, key=cu.item_of), unfiltered


def build_world(cfg) -> World:
    """Build every split of the world described by ``cfg`` (miniature, or real sources for local/hub)."""
    if cfg.source != "miniature":
        return build_real_world(cfg)
    funnel = cu.Funnel()
    evals = eval_splits(cfg, funnel)
    heldout = {cu.item_of(r) for rows in evals.values() for r in rows}
    # held-out texts: the miniature eval prompts, plus the real benchmarks that load here when configured
    # (``sources.benchmark_texts``: the miniature world shares no 9-gram with them either way, and never downloads)
    texts = [r["prompt"][0]["content"] for rows in evals.values() for r in rows]
    texts += list(benchmark_texts("mirror")) if cfg.decontam_real else []
    index = cu.ngram_index(texts, cfg.ngram_decontam, cfg.ngram_boilerplate_df)
    pool = []
    for ability in ("math", "code"):
        n = getattr(cfg, f"n_{ability}_sft_prompts")
        n_cand = math.ceil(n * cfg.sft_candidate_factor[ability == "code"])
        cand = _candidates(cfg, ability, f"sft:{ability}", n_cand, "sft",
                           cfg.sft_tier_weights if ability == "math" else cfg.code_tier_weights)
        prompts = _clean(cand, f"sft_pool:{ability}", heldout, index, funnel)
        prompts = funnel.run(f"sft_pool:{ability}", prompts, lambda r: cu.take_first(r, n))
        pool += sft_pool(cfg, prompts, ability, funnel)
    splits = {"sft_pool": sorted(pool, key=lambda r: r["id"])}
    sub = cu.Funnel()
    splits["sft"] = sft_subset(splits["sft_pool"], correctness=cfg.sft_correctness, top_k=cfg.sft_top_k,
                               budget=cfg.sft_budget, seed=cfg.seed, funnel=sub)
    funnel.steps += [("sft", s) for _, s in sub.steps]
    for ability in ("math", "code"):
        splits[f"{ability}_rl"], splits[f"{ability}_rl_unfiltered"] = rl_split(cfg, ability, heldout, index, funnel)
    splits.update(evals)
    splits.update(late_eval_splits(cfg, splits, funnel))
    return World(splits=splits, funnel=funnel, config_hash=config_hash(cfg))
