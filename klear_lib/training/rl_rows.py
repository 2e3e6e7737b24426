"""The verl-schema RL rows as GPPOTrainer reads them: checked field by field, reduced to the columns the trainer
and rewards use, and (``RLConfig.long_prompts="drop"``) without the prompts over the length limit."""
from __future__ import annotations

import logging

from klear_lib.data.schema import ABILITIES, RowError, judge_can_parse, parse_code_tests

log = logging.getLogger(__name__)


def _problem(row, reward: str) -> tuple[str, str] | None:
    """The first ``(field, why)`` of ``row`` (its shape, ``extra_info``, prompt, ability and ground truth) that the
    trainer or the ``reward`` stage cannot use, or None."""
    if not isinstance(row, dict):
        return "<row>", f"not a dict but {type(row).__name__}"
    info = row.get("extra_info")  # verl rows may carry none: the view then gives id "" and tier 0
    if info is not None and not isinstance(info, dict):
        return "extra_info", f"not a dict but {type(info).__name__}"
    rid, tier = (info or {}).get("id"), (info or {}).get("tier")
    if rid is not None and (isinstance(rid, bool) or not isinstance(rid, (str, int))):
        return "extra_info.id", f"{rid!r} is not a string or an integer"
    if tier is not None and (isinstance(tier, bool) or not isinstance(tier, int) or tier < 0):
        return "extra_info.tier", f"{tier!r} is not a tier (an integer >= 0, or null)"
    prompt = row.get("prompt")
    if not (isinstance(prompt, list) and prompt and all(
            isinstance(m, dict) and isinstance(m.get("role"), str) and m["role"] and isinstance(m.get("content"), str)
            for m in prompt)):
        return "prompt", "must be a non-empty list of {role, content} messages"
    if "ability" in row and row["ability"] not in ABILITIES:  # optional: the stage, not the row, picks the reward
        return "ability", f"{row['ability']!r} is not one of {ABILITIES}"
    truth = row.get("reward_model")
    if not isinstance(truth, dict):
        return "reward_model", f"not a dict but {type(truth).__name__}"
    truth = truth.get("ground_truth")
    if not isinstance(truth, str) or not truth.strip():
        return "reward_model.ground_truth", "must be a non-empty string"
    if reward == "code":  # the code reward would read a string of inputs as one test per character
        try:
            parse_code_tests(truth)
        except RowError as err:
            return "reward_model.ground_truth", err.why
    if reward == "math" and row.get("ability") != "code" and not judge_can_parse(truth):  # else every rollout
        # of the row would score -1, silently
        return "reward_model.ground_truth", f"{truth[:60]!r} is no answer the math judge can parse"
    return None


def validate_rl_rows(rows: list[dict], reward: str = "math") -> list[dict]:
    """Check the verl schema fields the trainer and its ``reward`` read; a malformed row raises ``ValueError``
    naming the row (its index, and its id when it has one) and the field."""
    for k, row in enumerate(rows):
        if problem := _problem(row, reward):
            info = row.get("extra_info") if isinstance(row, dict) else None
            rid = info.get("id") if isinstance(info, dict) and problem[0] != "extra_info.id" else None
            name = f"row {k}" + (f" (id {rid!r})" if rid is not None else "")
            raise ValueError(f"{name}: field {problem[0]}: {problem[1]}")
    return rows


def training_view(row: dict) -> dict:
    """The columns the trainer and rewards read; the rest of ``extra_info`` (free-form) stays out of Arrow."""
    extra = row.get("extra_info") or {}
    return {"prompt": row["prompt"], "reward_model": {"ground_truth": row["reward_model"]["ground_truth"]},
            "extra_info": {"id": str(extra.get("id", "")), "tier": int(extra.get("tier") or 0)}}


def drop_long_prompts(rows: list[dict], tokenizer, max_prompt_length: int) -> list[dict]:
    """Rows whose chat-templated prompt fits ``max_prompt_length`` tokens; the drop count is logged."""
    kept = [row for row in rows if len(tokenizer.apply_chat_template(
        row["prompt"], tokenize=True, add_generation_prompt=True, return_dict=True)["input_ids"]) <= max_prompt_length]
    if len(kept) < len(rows):
        log.warning("dropped %d of %d RL prompts longer than %d tokens", len(rows) - len(kept), len(rows),
                    max_prompt_length)
    return kept
