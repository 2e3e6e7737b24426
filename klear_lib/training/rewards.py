"""Thin TRL reward-function adapters over ``klear_lib.rewards`` (the judge the benchmarks use too).

TRL calls ``func(prompts=..., completions=..., completion_ids=..., **columns)`` with every dataset column as a
list (docs/stack.md §1.7); ours read ``completions`` and the verl-schema ``reward_model`` column
(``{"ground_truth": str, "style": "rule"}``). Completions may be strings or chat lists
``[{"role": "assistant", "content": ...}]``.
"""
from __future__ import annotations

import functools
import warnings
from concurrent.futures import ThreadPoolExecutor
from typing import Callable

from klear_lib.rewards.code import code_reward, code_rewards, plan_reward
from klear_lib.rewards.format import TAG_SHAPINGS, THINK_CLOSE, THINK_OPEN, think_tag_score
from klear_lib.rewards.judge import code_tests, ground_truth
from klear_lib.rewards.math import math_reward
from klear_lib.rewards.sandbox import DEFAULT_TIMEOUT_S
from klear_lib.seeding import py_rng, stable_seed


class NoThinkWarning(UserWarning):
    """No completion of a generation batch closes ``</think>``: every rollout scores as a missing tag."""


def template_opens_think(tokenizer) -> bool:
    """Whether the chat template writes ``<think>`` into the generation prompt itself (DeepSeek-R1-distilled models'
    templates do), so that a completion holds only the closing tag."""
    chat = [{"role": "user", "content": "1+1?"}]
    prompt = tokenizer.apply_chat_template(chat, add_generation_prompt=True, tokenize=False)
    return prompt.rstrip().endswith(THINK_OPEN)


def scored_texts(completions, think_opened: bool = False) -> list[str]:
    """The texts the judge scores: with ``think_opened`` (the template wrote ``<think>``) the tag is put back in
    front, else every rollout of such a model scores as a missing ``<think>``. Warns (``NoThinkWarning``) when no
    completion closes ``</think>``: then every group has equal rewards, the filter drops them all and nothing
    trains, which without the warning only shows as a flat reward curve."""
    texts = [c if isinstance(c, str) else c[-1]["content"] for c in completions]  # a string or a chat list
    if think_opened:
        texts = [t if t.lstrip().startswith(THINK_OPEN) else THINK_OPEN + t for t in texts]
    if texts and not any(THINK_CLOSE in t for t in texts):
        warnings.warn(f"none of {len(texts)} completions closes {THINK_CLOSE}: each scores as a missing think tag, "
                      f"every group is dropped as zero-advantage and nothing trains; the model must write "
                      f"{THINK_OPEN}...{THINK_CLOSE} (a reasoning model or the SFT stage's output) within "
                      f"max_completion_length", NoThinkWarning, stacklevel=3)
    return texts


def _row_ids(extra_info, n: int) -> list:
    """Row ids from the ``extra_info`` column (its ``id``), else the position in the batch."""
    infos = extra_info if extra_info is not None else [None] * n
    return [info.get("id", k) if isinstance(info, dict) else k for k, info in enumerate(infos)]


def math_reward_func(judge: Callable[[str, str], float] | None = None,
                     tag_shaping: str = "official", think_opened: bool = False) -> Callable:
    """A TRL reward function scoring each completion with ``judge(response, ground_truth)``.

    ``judge`` defaults to ``klear_lib.rewards.math.math_reward`` with ``tag_shaping`` (official: +1/-1/-0.5/-2);
    ``think_opened``: the chat template wrote ``<think>`` (``scored_texts``).
    """
    def math_reward(completions, reward_model, extra_info=None, **kwargs) -> list[float]:
        score = judge or _default_judge("math", tag_shaping)
        ids = _row_ids(extra_info, len(completions))
        return [float(score(text, ground_truth(rm, i)))
                for text, rm, i in zip(scored_texts(completions, think_opened), reward_model, ids)]
    return math_reward


def code_reward_func(mode: str = "soft", max_tests: int = 16, seed: int = 0, judge: Callable | None = None,
                     tag_shaping: str = "official", workers: int = 2, timeout_s: float = DEFAULT_TIMEOUT_S,
                     think_opened: bool = False) -> Callable:
    """A TRL reward function scoring each completion's program on its row's tests, ``workers`` sandboxes at a time,
    each test given ``timeout_s`` seconds.

    By default one ``klear_lib.rewards.code.code_rewards`` call per batch judges each distinct (program, sampled
    tests) pair once (a small policy repeats its programs; see there). A custom ``judge(response, tests, mode,
    max_tests, seed)`` is called per completion instead, ``workers`` at a time. The test-sampling seed is derived
    from ``(seed, row id, global step, rollout index)`` so reruns sample the same tests. ``workers=2``: on 2 cores
    3 or 4 sandboxes at a time judged a step no faster (benchmarks/bench_code_judge.py), the sandboxes being CPU-bound.
    """
    def code_reward(completions, reward_model, extra_info=None, trainer_state=None, **kwargs) -> list[float]:
        step = getattr(trainer_state, "global_step", 0)
        ids = _row_ids(extra_info, len(completions))
        texts = scored_texts(completions, think_opened)
        tests = [code_tests(ground_truth(reward_model[k], ids[k]), ids[k]) for k in range(len(completions))]
        seeds = [stable_seed(seed, "code-tests", ids[k], step, k) for k in range(len(completions))]
        if judge is None:
            return code_rewards(texts, tests, mode, max_tests, seeds, timeout_s=timeout_s, workers=workers,
                                tag_shaping=tag_shaping)
        with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
            return list(pool.map(lambda t, c, s: float(judge(t, c, mode=mode, max_tests=max_tests, seed=s)),
                                 texts, tests, seeds))
    return code_reward


RANDOM_REWARDS = (-1.0, 1.0)  # the support of the binary math reward (and the ends of the soft code reward)


def random_reward_func(seed: int = 0, form: Callable | None = None, think_opened: bool = False) -> Callable:
    """A TRL reward function that ignores whether a completion is right: each rollout's reward is +1 or -1 with
    equal odds, drawn from a generator seeded by ``(seed, row id, global step, rollout index)``, so a rerun draws
    the same rewards. The control of ``RLConfig.random_reward``: what RL gains with no signal about correctness.

    ``form(text, reward_model, row_id)`` (``format_score``): the score the task's reward gives a response for its
    form alone, None when well formed; with it a malformed response keeps that score and only the well-formed ones
    draw (``RLConfig.random_format``). Blind, the control loses the format signal too."""
    def random_reward(completions, reward_model=None, extra_info=None, trainer_state=None, **kwargs) -> list[float]:
        step = getattr(trainer_state, "global_step", 0)
        ids = _row_ids(extra_info, len(completions))
        draws = [py_rng(seed, "random-reward", ids[k], step, k).choice(RANDOM_REWARDS) for k in range(len(completions))]
        if form is None:
            return draws
        texts = scored_texts(completions, think_opened)
        truths = reward_model if reward_model is not None else [None] * len(texts)  # math's form reads none
        forms = [form(text, rm, i) for text, rm, i in zip(texts, truths, ids)]
        return [draw if score is None else float(score) for draw, score in zip(draws, forms)]
    return random_reward


def format_score(kind: str, tag_shaping: str = "official") -> Callable:
    """``(text, reward_model, row_id) -> float | None``: what the task's ``kind`` reward scores a response for its
    form alone (a missing think tag; in code also an oversized response or no program block), None when the score
    would depend on whether the response is right."""
    def math_form(text: str, reward_model=None, rid="<no id>") -> float | None:
        return think_tag_score(text, tag_shaping)

    def code_form(text: str, reward_model=None, rid="<no id>") -> float | None:
        plan = plan_reward(text, code_tests(ground_truth(reward_model, rid), rid), None, tag_shaping=tag_shaping)
        return plan if isinstance(plan, float) else None  # a program to run: its score is its tests'
    return math_form if kind == "math" else code_form


def _default_judge(kind: str, tag_shaping: str = "official") -> Callable:
    """The shared judge of ``klear_lib.rewards`` with ``tag_shaping`` (imported late: the judges import more)."""
    if tag_shaping not in TAG_SHAPINGS:
        raise ValueError(f"tag_shaping={tag_shaping!r}; choose one of {TAG_SHAPINGS}")
    return functools.partial(math_reward if kind == "math" else code_reward, tag_shaping=tag_shaping)


def make_reward_func(kind: str, *, mode: str = "soft", max_tests: int = 16, seed: int = 0,
                     judge: Callable | None = None, tag_shaping: str = "official",
                     timeout_s: float = DEFAULT_TIMEOUT_S, think_opened: bool = False,
                     random: bool = False, random_format: bool = False) -> Callable:
    """``"math"`` or ``"code"`` reward function for ``GPPOTrainer`` (``tag_shaping``: see ``rewards.format``;
    ``timeout_s``: per code test, ``RLConfig.code_timeout_s``; ``think_opened``: see ``scored_texts``;
    ``random``: rewards drawn at random instead, ``random_reward_func``, keeping the task reward's format scores
    with ``random_format``)."""
    _default_judge(kind, tag_shaping)  # fail here, not at the first rollout, on a bad tag_shaping
    if kind not in ("math", "code"):
        raise ValueError(f"reward={kind!r}; choose 'math' or 'code'")
    if random_format and not random:
        raise ValueError("random_format=True keeps the task reward's format scores among random rewards: it needs "
                         "random=True")
    if random:
        return random_reward_func(seed, format_score(kind, tag_shaping) if random_format else None, think_opened)
    if kind == "math":
        return math_reward_func(judge, tag_shaping, think_opened)
    return code_reward_func(mode, max_tests, seed, judge, tag_shaping, timeout_s=timeout_s, think_opened=think_opened)
