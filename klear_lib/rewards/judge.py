"""One entry point per row schema: the same judges score RL rollouts (reward) and benchmark samples (verdict).

Rows follow the verl schema (``ability``, ``reward_model.ground_truth``, ``extra_info.id``). Math ground truth
is the answer string; code ground truth is the JSON test spec parsed by ``code.parse_tests`` — or, for
benchmark rows built by ``klear_lib.evaluation.benchmarks``, a ready list of tests under ``extra_info.tests``.
"""
from __future__ import annotations

import json
import logging

from klear_lib.rewards import code as code_judge
from klear_lib.rewards import math as math_judge
from klear_lib.rewards.format import INCORRECT_SCORE, is_correct_score
from klear_lib.rewards.sandbox import DEFAULT_TIMEOUT_S, SandboxUnavailable

log = logging.getLogger(__name__)


def row_id(row: dict) -> str:
    """The id of an RL row (``extra_info.id``) or SFT row (``id``); ``"<no id>"`` when absent."""
    info = row.get("extra_info")
    rid = info.get("id") if isinstance(info, dict) else row.get("id")
    return str(rid) if rid is not None else "<no id>"


def ground_truth(reward_model, rid="<no id>") -> str:
    """A row's ``reward_model["ground_truth"]`` (given the ``reward_model`` field, as TRL passes columns); a
    ``ValueError`` naming the row and the field when it is missing or not a string."""
    if not isinstance(reward_model, dict) or not isinstance(reward_model.get("ground_truth"), str):
        raise ValueError(f"row {rid}: field reward_model.ground_truth missing or not a string: {reward_model!r}")
    return reward_model["ground_truth"]


def code_tests(truth: str, rid="<no id>") -> list[dict]:
    """The tests of a code row's ground truth, parsed by the code judge (stdin/stdout, call-based, asserts)."""
    try:
        return code_judge.parse_tests(truth, rid)
    except json.JSONDecodeError as err:
        raise ValueError(f"row {rid}: field reward_model.ground_truth is not JSON ({err})") from None


def row_tests(row: dict) -> list[dict]:
    """The code tests of a row: ``extra_info.tests`` if present, else parsed from the ground truth."""
    tests = (row.get("extra_info") or {}).get("tests")
    return list(tests) if tests is not None else code_tests(_ground_truth(row), row_id(row))


def _ground_truth(row: dict) -> str:
    return ground_truth(row.get("reward_model"), row_id(row))


def _ability(row: dict) -> str:
    ability = row.get("ability")
    if ability not in ("math", "code"):
        raise ValueError(f"row {row_id(row)}: field ability must be 'math' or 'code', got {ability!r}")
    return ability


def reward(response: str, row: dict, code_mode: str = "soft", max_tests: int | None = code_judge.MAX_TESTS,
           seed: int = 0, timeout_s: float = DEFAULT_TIMEOUT_S) -> float:
    """The paper's shaped reward of ``response`` for ``row`` (math: ±1/-0.5/-2; code: soft or hard)."""
    if _ability(row) == "math":
        return math_judge.math_reward(response, _ground_truth(row))
    return code_judge.code_reward(response, row_tests(row), code_mode, max_tests, seed, timeout_s)


def verdict(response: str, row: dict, max_tests: int | None = None, seed: int = 0,
            timeout_s: float = DEFAULT_TIMEOUT_S) -> dict:
    """``{"correct", "reward"}`` of one response from one judge call: the soft reward (the RL reward of code,
    the shaped one of math) and whether it is +1 (``max_tests=None`` runs every test, as LiveCodeBench).

    A response that breaks its judge is a wrong answer (-1, logged), so no model output can stop an evaluation;
    the row is checked first, so a bad row still raises, and so does a missing sandbox (every verdict would be
    wrong)."""
    row_tests(row) if _ability(row) == "code" else _ground_truth(row)
    try:
        score = reward(response, row, "soft", max_tests, seed, timeout_s)
    except SandboxUnavailable:
        raise
    except Exception:  # noqa: BLE001 (whatever the response makes the judge raise costs only its verdict)
        log.exception("judging a response to row %s failed; scored as a wrong answer", row_id(row))
        score = INCORRECT_SCORE
    return {"correct": is_correct_score(score), "reward": float(score)}


def correct(response: str, row: dict, max_tests: int | None = None, timeout_s: float = DEFAULT_TIMEOUT_S) -> bool:
    """The benchmark verdict alone (``verdict``)."""
    return verdict(response, row, max_tests, 0, timeout_s)["correct"]

