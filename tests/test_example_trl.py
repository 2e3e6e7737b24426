"""examples/train_gppo_trl.py, the TRL example, at a tiny size on the ci micro model: it trains with a reward function
of the caller's, through GPPOTrainer alone, and saves a model that loads."""
from __future__ import annotations

import runpy

import torch
from transformers import AutoModelForCausalLM

from klear_lib.paths import REPO

EXAMPLE = runpy.run_path(str(REPO / "examples" / "train_gppo_trl.py"))
TINY = ["--num-generations", "4", "--prompts-per-step", "2", "--prompts-per-update", "1",
        "--max-completion-length", "8", "--learning-rate", "0.05", "--max-steps", "2"]


def test_the_example_trains_any_causal_lm_with_the_users_reward(ci_model_path, tmp_path):
    seen = []

    def my_reward(prompts, completions, **kwargs):  # a user's judge: TRL's reward interface, nothing of the kit
        seen.append(len(completions))
        return [float(len(c) % 3) - 1.0 for c in completions]  # rewards differ within groups: every group trains

    args = EXAMPLE["parser"]().parse_args(["--model", ci_model_path, "--output-dir", str(tmp_path / "out"), *TINY])
    start = {k: v.detach().clone() for k, v in AutoModelForCausalLM.from_pretrained(ci_model_path).named_parameters()}
    trainer = EXAMPLE["train"](ci_model_path, [my_reward], EXAMPLE["PROMPTS"], str(tmp_path / "out"), args)
    assert seen == [8]  # one RL step: 2 prompts x 4 rollouts, used by 2 updates
    logs = [row for row in trainer.state.log_history if "gppo/clip_frac" in row]
    assert len(logs) == 2 and trainer.state.global_step == 2
    saved = AutoModelForCausalLM.from_pretrained(str(tmp_path / "out"))
    assert any(not torch.equal(p, start[k]) for k, p in saved.named_parameters())


def test_the_example_command_line_runs_with_its_own_reward(ci_model_path, tmp_path):
    trainer = EXAMPLE["main"](["--model", ci_model_path, "--output-dir", str(tmp_path / "cli"), *TINY,
                               "--max-steps", "1", "--sft-alpha", "0"])
    assert trainer.state.global_step == 1 and (tmp_path / "cli" / "config.json").exists()
