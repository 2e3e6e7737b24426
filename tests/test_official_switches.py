"""Where the official code departs from the paper's text, an RLConfig switch: its default is the paper's choice (ours
where the paper says nothing), its other value the official code's, and each one reaches the training code and
changes what it does."""
from __future__ import annotations

import math
import re
import shutil
from pathlib import Path

import pytest
import torch

from klear_lib.configs import get_config
from klear_lib.configs.trl import RL_FIELDS, trl_kwargs
from klear_lib.losses import get_loss
from klear_lib.training import gppo_trainer
from klear_lib.training import rewards as reward_adapters
from klear_lib.training.gppo_trainer import GPPOConfig, build_rl_trainer, filter_values, informative_groups

RL_CONFIG = Path(gppo_trainer.__file__).resolve().parent.parent / "configs" / "rl.py"

# field: (default, the official code's value, the section of docs/paper.md that describes the departure)
SWITCHES = {"dual_clip": (None, 10.0, "§1.4"), "filter_metric": ("reward", "acc", "§2.4"),
            "code_timeout_s": (10.0, 35.0, "§2.5"), "long_prompts": ("drop", "truncate_left", "§2.4")}


def _comment(name: str) -> str:
    """The comment of field ``name`` in configs/rl.py: its line and the comment-only lines below it."""
    lines = RL_CONFIG.read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if re.match(rf"\s+{name}: ", line))
    block = [lines[start]] + [ln for ln in lines[start + 1:start + 6] if ln.strip().startswith("#")]
    return " ".join(block)


@pytest.mark.parametrize("name", sorted(SWITCHES))
def test_each_switch_has_its_default_and_cites_the_paper(name):
    default, official, section = SWITCHES[name]
    for preset in ("ci", "tiny"):
        assert getattr(get_config("rl_math", preset), name) == default
    full = get_config("rl_math", "full")
    assert getattr(full, name) == (official if name == "code_timeout_s" else default)  # 35 s at full scale
    assert getattr(get_config("rl_math", "tiny", **{name: official}), name) == official
    assert f"docs/paper.md {section}" in _comment(name) or f"({section})" in _comment(name), _comment(name)


def test_unknown_long_prompts_choice_raises():
    with pytest.raises(ValueError, match="long_prompts"):
        get_config("rl_math", "tiny", long_prompts="truncate_right")


@pytest.mark.parametrize("dual_clip,grad", [(None, 20.0), (10.0, 0.0)])
def test_dual_clip_zeroes_the_gradient_of_a_far_negative_token(tmp_path, dual_clip, grad):
    """A<0, δ = 20: Eq. 11 keeps F = δ (dL/dℓ = -F·A = 20); the official c = 10 cuts it to 0."""
    args = GPPOConfig(output_dir=str(tmp_path), use_cpu=True, bf16=False,
                      **{k: v for k, v in trl_kwargs(RL_FIELDS, get_config("rl_math", "tiny", dual_clip=dual_clip))
                         .items() if k == "dual_clip"})
    hyper = get_loss(args.loss_type).settings(args)  # what GPPOTrainer._compute_loss passes
    logp = torch.zeros(1, 1, dtype=torch.float64, requires_grad=True)
    get_loss("gppo").per_token(logp, logp.detach() - math.log(20.0), torch.tensor([-1.0], dtype=torch.float64),
                               **hyper).sum().backward()
    assert logp.grad.item() == pytest.approx(grad)


def test_filter_metric_acc_drops_soft_code_groups_that_reward_keeps():
    """Soft code rewards of a group in which no rollout passes every test: unequal rewards, all acc = 0."""
    rewards = torch.tensor([-0.5, 0.25, 1.0, 1.0, -1.0, 1.0])  # groups of 2: soft only, all correct, mixed
    kept = {metric: informative_groups(filter_values(rewards, 1.0, metric), 2).tolist()
            for metric in ("reward", "acc")}
    assert kept == {"reward": [True, False, True], "acc": [False, False, True]}
    assert trl_kwargs(RL_FIELDS, get_config("rl_code", "tiny", filter_metric="acc"))["filter_metric"] == "acc"


@pytest.mark.skipif(shutil.which("firejail") is None, reason="firejail is not installed")
def test_code_timeout_decides_a_slow_program():
    """A correct program that needs ~1.5 s: passes within the timeout, scores -1 past it."""
    response = "<think>\nslow\n</think>\n```python\nimport time\ntime.sleep(1.5)\nprint(int(input()) + 1)\n```"
    truth = [{"ground_truth": '{"inputs": ["1\\n"], "outputs": ["2\\n"]}', "style": "rule"}]
    scores = {}
    for timeout in (0.5, 6.0):
        cfg = get_config("rl_code", "tiny", code_timeout_s=timeout)
        func = reward_adapters.make_reward_func("code", tag_shaping=cfg.tag_shaping, timeout_s=cfg.code_timeout_s)
        scores[timeout] = func(completions=[response], reward_model=truth)[0]
    assert scores == {0.5: -1.0, 6.0: 1.0}


def _rows(n: int = 4) -> list[dict]:
    long = "word " * 200  # far past ci's 128-token prompt limit
    return [{"prompt": [{"role": "user", "content": f"What is {i}+{i}?" + (long if i == 0 else "")}],
             "reward_model": {"ground_truth": str(2 * i), "style": "rule"},
             "extra_info": {"id": f"r{i}", "split": "train", "tier": 1}} for i in range(n)]


@pytest.mark.parametrize("long_prompts", ["drop", "truncate_left"])
def test_long_prompts_are_dropped_or_cut_from_the_left(ci_model_path, tmp_path, monkeypatch, long_prompts):
    seen = {}
    make = reward_adapters.make_reward_func
    monkeypatch.setattr(reward_adapters, "make_reward_func", lambda *a, **kw: seen.update(kw) or make(*a, **kw))
    cfg = get_config("rl_code", "ci", long_prompts=long_prompts, code_timeout_s=35.0)
    trainer = build_rl_trainer(cfg, ci_model_path, _rows(), "math", tmp_path / long_prompts)
    assert seen["timeout_s"] == 35.0  # the code reward gets the config's timeout
    assert len(trainer.train_dataset) == (3 if long_prompts == "drop" else 4)
    ids, _, _ = trainer._tokenize_prompts([_rows()[0]["prompt"], _rows()[1]["prompt"]])
    full, short = trainer.processing_class.apply_chat_template(
        [_rows()[0]["prompt"], _rows()[1]["prompt"]], add_generation_prompt=True, tokenize=True,
        return_dict=True)["input_ids"]
    assert len(full) > cfg.max_prompt_length >= len(short) and ids[1] == short  # a short prompt is untouched
    assert ids[0] == (full[-cfg.max_prompt_length:] if long_prompts == "truncate_left" else full)
