"""The one row schema (verl-compatible) for RL/eval rows and SFT rows, stable ids, and row validation.

RL/eval row: ``{"data_source", "prompt": [{"role","content"}], "ability": "math"|"code",
"reward_model": {"ground_truth": str, "style": "rule"}, "extra_info": {"id", "split", "tier", ...}}``.
SFT row: ``{"messages": [user, assistant], "id", "ability", "tier", "teacher", "correct", "difficulty", ...}``.
"""
from __future__ import annotations

import hashlib
import json
import re
from typing import Any, Iterable

from klear_lib.rewards.judge import row_id
from klear_lib.rewards.math import gold_parses

ABILITIES = ("math", "code")
_WS = re.compile(r"\s+")


class RowError(ValueError):
    """A malformed row: the message names the row id and the field."""

    def __init__(self, row_id: str, field: str, why: str):
        super().__init__(f"row {row_id!r}: field {field!r}: {why}")
        self.row_id, self.field, self.why = row_id, field, why


def normalise_prompt(text: str) -> str:
    """Lower-case, whitespace-collapsed, stripped text: the key for ids and exact dedup."""
    return _WS.sub(" ", text).strip().lower()


def item_id(text: str, prefix: str = "") -> str:
    """A stable id: ``prefix`` + the first 16 hex digits of sha256(normalised prompt)."""
    return prefix + hashlib.sha256(normalise_prompt(text).encode()).hexdigest()[:16]


def make_rl_row(prompt: str, ground_truth: str, *, ability: str, data_source: str, split: str,
                tier: int | None, extra: dict[str, Any] | None = None, id_prefix: str = "") -> dict:
    """An RL/eval row in the verl schema, id = hash of the normalised prompt."""
    info = {"id": item_id(prompt, id_prefix), "split": split, "tier": tier, **(extra or {})}
    return {"data_source": data_source, "prompt": [{"role": "user", "content": prompt}], "ability": ability,
            "reward_model": {"ground_truth": ground_truth, "style": "rule"}, "extra_info": info}


def prompt_text(row: dict) -> str:
    """The user prompt of an RL row (``prompt[0].content``) or SFT row (``messages[0].content``)."""
    turns = row.get("prompt") if "prompt" in row else row.get("messages")
    return turns[0]["content"]


def _check(cond: bool, rid: str, field: str, why: str) -> None:
    if not cond:
        raise RowError(rid, field, why)


def parse_code_tests(ground_truth: str, rid: str = "<no id>") -> dict:
    """Parse a code ground truth JSON string ``{"inputs": [...], "outputs": [...]}`` (or functional)."""
    def check(cond: bool, why: str) -> None:
        _check(cond, rid, "reward_model.ground_truth", why)

    try:
        tests = json.loads(ground_truth)
    except (TypeError, json.JSONDecodeError) as err:
        raise RowError(rid, "reward_model.ground_truth", f"unparsable tests ({err})") from None
    check(isinstance(tests, dict), "tests must be a JSON object")
    if "functional" in tests:
        check(isinstance(tests["functional"], str) and tests["functional"].strip() != "", "empty functional tests")
        check("Solution()" in tests["functional"],
              "functional tests must call Solution() (check(Solution().name)), or no program can pass them")
        return tests
    ins, outs = tests.get("inputs"), tests.get("outputs")
    check(isinstance(ins, list) and isinstance(outs, list), "tests need lists 'inputs' and 'outputs'")
    check(len(ins) > 0, "empty tests")
    check(len(ins) == len(outs), f"{len(ins)} inputs vs {len(outs)} outputs")
    return tests


def n_code_tests(ground_truth: str) -> int:
    """How many tests a code ground truth holds (asserts for functional tests)."""
    tests = json.loads(ground_truth)
    if "functional" in tests:
        return tests["functional"].count("assert ")
    return len(tests["inputs"])


# The math judge can use an answer as a ground truth: an integer, or math-verify parses ``\boxed{answer}`` within the
# judge's bounds (``rewards.math.gold_parses``). False at a bound: the row then follows the drop/raise policy.
judge_can_parse = gold_parses


def validate_rl_row(row: Any, *, require_answer: bool = True, check_judge: bool = True) -> dict:
    """Return ``row`` if it is a valid RL/eval row, else raise ``RowError`` naming the id and field."""
    _check(isinstance(row, dict), "<no id>", "<row>", f"not a dict but {type(row).__name__}")
    rid = row_id(row)
    info = row.get("extra_info")
    _check(isinstance(info, dict) and isinstance(info.get("id"), str), rid, "extra_info.id", "missing id")
    _check(isinstance(row.get("data_source"), str), rid, "data_source", "not a string")
    turns = row.get("prompt")
    _check(isinstance(turns, list) and len(turns) > 0 and isinstance(turns[0], dict), rid, "prompt",
           "must be a non-empty list of {role, content}")
    content = turns[0].get("content")
    _check(isinstance(content, str) and content.strip() != "", rid, "prompt", "content is not a non-empty string")
    _check(row.get("ability") in ABILITIES, rid, "ability", f"{row.get('ability')!r} not in {ABILITIES}")
    reward = row.get("reward_model")
    _check(isinstance(reward, dict), rid, "reward_model", "missing")
    answer = reward.get("ground_truth")
    if require_answer:
        _check(isinstance(answer, str) and answer.strip() != "", rid, "reward_model.ground_truth", "missing answer")
        if row["ability"] == "code":
            parse_code_tests(answer, rid)
        elif check_judge:
            _check(judge_can_parse(answer), rid, "reward_model.ground_truth", "the judge cannot parse the answer")
    return row


def validate_sft_row(row: Any) -> dict:
    """Return ``row`` if it is a valid SFT row, else raise ``RowError`` naming the id and field."""
    _check(isinstance(row, dict), "<no id>", "<row>", f"not a dict but {type(row).__name__}")
    rid = row_id(row)
    msgs = row.get("messages")
    _check(isinstance(msgs, list) and len(msgs) == 2, rid, "messages", "need [user, assistant]")
    for turn, role in zip(msgs, ("user", "assistant")):
        _check(isinstance(turn, dict) and turn.get("role") == role, rid, "messages", f"expected a {role} turn")
        _check(isinstance(turn.get("content"), str) and turn["content"] != "", rid, "messages",
               f"{role} content is not a non-empty string")
    _check(row.get("ability") in ABILITIES, rid, "ability", f"{row.get('ability')!r} not in {ABILITIES}")
    _check(isinstance(row.get("correct"), bool), rid, "correct", "not a bool")
    _check(row.get("difficulty") in ("easy", "hard"), rid, "difficulty", "not 'easy' or 'hard'")
    return row


def dumps_rows(rows: Iterable[dict]) -> str:
    """JSON lines with sorted keys: byte-identical for equal rows."""
    return "".join(json.dumps(r, sort_keys=True, ensure_ascii=True) + "\n" for r in rows)
