"""Record mappers: one raw record of a real source (a file line, a hub row) to a verl-style schema row.

``MAPPERS`` maps each registered layout name (``Source.hub_mapper`` / ``mirror_mapper`` in
``klear_lib.data.sources``) to a function ``(source, index, record) -> row``. A field a mapper cannot read raises
``FieldError`` with its dotted path, which the loaders turn into a counted drop or an error naming file and line.
"""
from __future__ import annotations

import json
import re
from typing import Callable

from klear_lib.data.schema import make_rl_row

CODE_PREFIX = ("You are an expert Python programmer. You will be given a question (problem specification) and will "
               "generate a correct Python program that matches the specification and passes all tests.\n\n")
_FN = re.compile(r"def (\w+)\(self")


class FieldError(ValueError):
    """A record field a mapper cannot read: ``field`` is its dotted path (``<record>`` for the record itself)."""

    def __init__(self, field: str, why: str):
        super().__init__(f"field {field!r}: {why}")
        self.field, self.why = field, why


def _text(v, field: str) -> str:
    if not isinstance(v, str) or not v.strip():
        raise FieldError(field, "missing or not a non-empty string")
    return v


def _at(r, path: str):
    """The value at dotted ``path`` of record ``r`` (``a.0.b`` walks keys and list indices)."""
    v = r
    for key in path.split("."):
        try:
            v = v[int(key)] if key.isdigit() and isinstance(v, list) else v[key]
        except (KeyError, IndexError, TypeError):
            raise FieldError(path, "missing") from None
    return v


def _json_field(r: dict, field: str, default: str | None = None):
    """Record field ``field`` holding a JSON string, parsed (``default`` when the field is empty or absent)."""
    text = r.get(field) or default
    try:
        return json.loads(text)
    except (TypeError, json.JSONDecodeError) as err:
        raise FieldError(field, f"not a JSON string ({err})") from None


def _date(r: dict) -> str:
    """The ``YYYY-MM-DD`` of ``contest_date``: windows compare it, so a record without one cannot be placed."""
    return _text(r.get("contest_date"), "contest_date")[:10]


def _row(src, i: int, prompt, truth, ability: str, extra: dict | None = None) -> dict:
    """The schema row of record ``i``; a prompt that is not a non-empty string raises ``FieldError``."""
    return make_rl_row(_text(prompt, "prompt"), truth, ability=ability, data_source=src.name, split=src.kind,
                       tier=None, extra={"index": i, **(extra or {})})


def _math(src, i: int, problem, answer, extra: dict | None = None) -> dict:
    gt = answer if isinstance(answer, str) else (str(answer) if isinstance(answer, int) else None)
    return _row(src, i, problem, gt, "math", extra)


def map_klear_eval(src, i, r):
    """Klear-Reasoner's own eval files: ``messages[0].content`` and ``meta.answer|solution`` or ``answer``."""
    meta = r["meta"] if isinstance(r.get("meta"), dict) else {}
    answer = r["answer"] if "answer" in r else meta.get("answer", meta.get("solution"))
    return _math(src, i, _at(r, "messages.0.content"), answer)


def map_problem_answer(src, i, r):
    """Rows with ``problem`` and ``answer`` (MATH-500, DeepScaleR, HF AIME/HMMT mirrors)."""
    keep = {k: r[k] for k in ("level", "subject", "unique_id", "year", "type") if k in r}
    return _math(src, i, r.get("problem"), r.get("answer"), keep)


def map_verl(src, i, r):
    """Rows already in the verl schema (Klear's released RL subsets; UNVERIFIED field layout)."""
    content = _at(r, "prompt.0.content") if isinstance(r.get("prompt"), list) else r.get("prompt")
    reward = r.get("reward_model") if isinstance(r.get("reward_model"), dict) else {}
    return _row(src, i, content, reward.get("ground_truth"), r.get("ability", src.ability),
                {"orig_data_source": r.get("data_source")})


def _tests_truth(tests: list[dict], starter: str = "", field: str = "tests") -> str:
    """rLLM/LCB test lists as our code ground truth; ``field`` names the record field they came from."""
    if not isinstance(tests, list) or not all(isinstance(t, dict) and "input" in t and "output" in t for t in tests):
        raise FieldError(field, "not a list of {input, output, testtype} tests")
    if tests and "testtype" not in tests[0]:
        raise FieldError(field, "the first test has no testtype")
    kind = tests[0]["testtype"] if tests else "stdin"
    out = {"inputs": [t["input"] for t in tests], "outputs": [t["output"] for t in tests], "testtype": kind}
    if kind == "functional":
        fn = _FN.search(starter or "")
        out["fn_name"] = fn.group(1) if fn else None
    return json.dumps(out)


def map_rllm_tests(src, i, r):
    """rLLM/DeepCoder files: ``problem``, ``starter_code``, ``tests`` [{input, output, testtype}]."""
    return _row(src, i, CODE_PREFIX + _text(r.get("problem"), "prompt"),
                _tests_truth(r.get("tests"), r.get("starter_code", "")), "code", {"question": r["problem"]})


def map_rllm_leetcode(src, i, r):
    """rLLM LeetCode: ``problem`` and assert-based ``tests.functional`` (kept in that functional format)."""
    return _row(src, i, r.get("problem"), json.dumps({"functional": _at(r, "tests.functional")}), "code",
                {"question": r.get("problem")})


def map_lcb_hub(src, i, r):
    """``livecodebench/code_generation_lite`` rows; public tests only (private ones need LCB's pickle decoding)."""
    tests = _json_field(r, "public_test_cases")
    meta = _json_field(r, "metadata", "{}")
    if not isinstance(meta, dict):
        raise FieldError("metadata", "not a JSON object")
    truth = json.loads(_tests_truth(tests, r.get("starter_code", ""), "public_test_cases"))
    truth["fn_name"] = meta.get("func_name", truth.get("fn_name"))
    return _row(src, i, CODE_PREFIX + _text(r.get("question_content"), "prompt"), json.dumps(truth), "code",
                {"question": r["question_content"], "question_id": _at(r, "question_id"), "contest_date": _date(r),
                 "platform": r.get("platform")})


def map_prompt_only(field: str, ability: str, ability_field: str | None = None) -> Callable:
    """SFT prompt sources: a prompt (``field``; ``a.0.b`` walks nested keys), no reference answer; the ability
    is fixed or read from ``ability_field`` (rows of other domains then fail validation and are counted)."""
    def mapper(src, i, r):
        row = _row(src, i, _at(r, field), "", r.get(ability_field, ability) if ability_field else ability)
        row["reward_model"]["style"] = "none"
        return row
    return mapper


def map_lcb_local(src, i, r):
    """A joined local LCB v5 record: QwQ's full prompt, rLLM's public tests."""
    return _row(src, i, r.get("prompt"), _tests_truth(r.get("tests"), r.get("starter_code")), "code",
                {"question": _text(r.get("problem"), "problem"), "question_id": _at(r, "question_id"),
                 "contest_date": _date(r)})

MAPPERS = {"klear_eval": map_klear_eval, "problem_answer": map_problem_answer, "verl": map_verl,
           "rllm_tests": map_rllm_tests, "rllm_leetcode": map_rllm_leetcode, "lcb_hub": map_lcb_hub,
           "openthoughts": map_prompt_only("conversations.0.value", "math", "domain"),
           "numina": map_prompt_only("problem", "math"), "acereason": map_prompt_only("input", "math", "category"),
           "ocr": map_prompt_only("input", "code"), "taco": map_prompt_only("question", "code"),
           "codeforces": map_prompt_only("description", "code"), "lcb_local": map_lcb_local}


def map_one(src, mapper: Callable, i: int, rec) -> dict:
    """Record ``i`` mapped to a row; anything the mapper cannot read raises ``FieldError`` naming the field."""
    if not isinstance(rec, dict):
        raise FieldError("<record>", f"not a JSON object but {type(rec).__name__}")
    try:
        return mapper(src, i, rec)
    except FieldError:
        raise
    except KeyError as err:
        raise FieldError(str(err.args[0]), "missing") from None
    except (TypeError, IndexError, AttributeError, ValueError) as err:
        raise FieldError("<record>", f"{type(err).__name__}: {err}") from None
