"""The real-data world (``full``): the hub path on fake records (no network); the mirror stand-in on the real
files is in ``test_real_data.py``."""
from __future__ import annotations

import json

import pytest

from klear_lib.configs import get_config
from klear_lib.data import build_world
from klear_lib.data import sources as S

AIME_Q = "Find the number of ordered pairs of positive integers whose product equals the sum of their squares plus 7."


def _fake_hub(src):
    if src.hub_mapper == "lcb_hub":
        tests = json.dumps([{"input": "1\n", "output": "1\n", "testtype": "stdin"}] * 16)
        return [{"question_content": f"Problem {i}: print the input back, unchanged, for every test case given.",
                 "question_id": f"q{i}", "contest_date": d, "platform": "atcoder", "starter_code": "",
                 "metadata": "{}", "public_test_cases": tests}
                for i, d in enumerate(["2024-09-01T00:00:00", "2025-03-01T00:00:00", "2023-01-01T00:00:00"])]
    if src.name.startswith("aime") or src.name in ("hmmt2025", "math500"):
        return [{"problem": f"{src.name}: {AIME_Q}", "answer": "7"}]
    if src.name == "klear_math_sub30k":
        leak = {"prompt": [{"role": "user", "content": f"aime2024: {AIME_Q}"}], "ability": "math",
                "reward_model": {"ground_truth": "7", "style": "rule"}, "data_source": "math_longcot_math_verify"}
        ok = {**leak, "prompt": [{"role": "user", "content": "What is 2+2?"}]}
        bad = {**ok, "reward_model": {"ground_truth": "", "style": "rule"}}
        return [leak, ok, ok, bad]
    if src.name == "klear_code_sub15k":
        gt = lambda n: json.dumps({"inputs": ["1\n"] * n, "outputs": ["1\n"] * n})  # noqa: E731
        row = {"prompt": [{"role": "user", "content": "Echo the number."}], "ability": "code",
               "reward_model": {"ground_truth": gt(16), "style": "rule"}}
        return [row, {**row, "prompt": [{"role": "user", "content": "Echo twice."}],
                      "reward_model": {"ground_truth": gt(4), "style": "rule"}}]
    raise AssertionError(f"unexpected hub load {src.name}")


def test_hub_world_on_fake_records(monkeypatch):
    import fake_mirror

    monkeypatch.setattr(S, "hub_records", _fake_hub)
    fake_mirror.expect(monkeypatch, dict.fromkeys(("aime2024", "aime2025", "hmmt2025", "math500", "lcb_v5"), 1))
    world = build_world(get_config("data", "full"))
    assert len(world.splits["lcb_v5"]) == 1 and len(world.splits["lcb_v6"]) == 1
    math_rl = world.splits["math_rl"]
    assert [r["prompt"][0]["content"] for r in math_rl] == ["What is 2+2?"]
    steps = {(p, s.stage): s for p, s in world.funnel.steps}
    assert steps[("math_rl", "decontaminate_9gram")].dropped == {"contaminated": 1}
    assert steps[("math_rl", "exact_dedup")].dropped == {"duplicate": 1}
    assert steps[("math_rl:klear_math_sub30k", "validate")].dropped == {"invalid:reward_model.ground_truth": 1}
    assert [r["prompt"][0]["content"] for r in world.splits["code_rl"]] == ["Echo the number."]
    assert steps[("code_rl", "min_tests")].dropped == {"too_few_tests": 1}
