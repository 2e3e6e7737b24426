"""Train any Hugging Face causal LM with GPPO and a reward function of your own, on TRL.

This uses the kit only as a library: ``GPPOConfig`` and ``GPPOTrainer`` (TRL's ``GRPOConfig`` and
``GRPOTrainer`` with the GPPO loss) and nothing of its pipeline, presets or miniature world. Replace ``PROMPTS``
and ``reward`` with your data and your judge::

    python examples/train_gppo_trl.py --model Qwen/Qwen3-0.6B --output-dir out/gppo --max-steps 200

A reward function follows TRL's interface: it gets the batch's ``prompts`` and ``completions`` (plus the dataset's
other columns as keyword arguments) and returns one float per completion. The paper's SFT term (α·NLL on correct
rollouts, ``--sft-alpha``) counts a completion as correct when its reward equals ``GPPOConfig.correct_reward`` (1.0).
Tested with TRL 1.16 (``klear_lib.versions.TESTED``); ``tests/test_example_trl.py`` runs it at a tiny size.
"""
from __future__ import annotations

import argparse

import torch
from datasets import Dataset
from transformers import AutoTokenizer

from klear_lib.losses import loss_names
from klear_lib.training import GPPOConfig, GPPOTrainer

PROMPTS = ["Name a fruit.", "Name a colour.", "Name an animal.", "Name a country.", "Name a tool.", "Name a city.",
           "Name a planet.", "Name a sport."]


def reward(prompts, completions, **kwargs) -> list[float]:
    """A stand-in judge: +1 for an answer of at most five words, -1 otherwise. Yours goes here."""
    return [1.0 if 0 < len(c.split()) <= 5 else -1.0 for c in completions]


def gppo_config(output_dir: str, args: argparse.Namespace) -> GPPOConfig:
    """The paper's loss settings (docs/paper.md §2.4; GPPOConfig's clip range is the paper's) at the sizes given on
    the command line."""
    return GPPOConfig(
        output_dir=output_dir, loss_type=args.loss_type, dual_clip=args.dual_clip, beta_low=args.beta_low,
        beta_high=args.beta_high, sft_alpha=args.sft_alpha, num_generations=args.num_generations,
        # one RL step generates rollouts for prompts_per_step prompts, then makes several updates on them, so the
        # ratio leaves 1 after the first update and clipping (where GPPO differs from PPO) happens; with TRL's
        # defaults (steps_per_generation = gradient accumulation, num_iterations = 1) GPPO would be clip-higher,
        # and GPPOConfig says so with an OnPolicyGPPOWarning
        per_device_train_batch_size=args.prompts_per_update * args.num_generations,
        steps_per_generation=args.prompts_per_step // args.prompts_per_update,
        max_completion_length=args.max_completion_length, learning_rate=args.learning_rate,
        max_steps=args.max_steps, seed=args.seed, logging_steps=1, save_strategy="no", report_to="none",
        use_cpu=not torch.cuda.is_available(), bf16=torch.cuda.is_available(),
        model_init_kwargs={"dtype": "bfloat16" if torch.cuda.is_available() else "float32"})


def train(model: str, reward_funcs, prompts: list[str], output_dir: str, args: argparse.Namespace) -> GPPOTrainer:
    """Train ``model`` (a hub id or a local directory) on ``prompts`` with ``reward_funcs``; saves to ``output_dir``."""
    tokenizer = AutoTokenizer.from_pretrained(model)
    if tokenizer.pad_token is None:  # base models often have none; TRL pads completions with it
        tokenizer.pad_token = tokenizer.eos_token
    trainer = GPPOTrainer(model, reward_funcs=reward_funcs, args=gppo_config(output_dir, args),
                          train_dataset=Dataset.from_list([{"prompt": p} for p in prompts]), processing_class=tokenizer)
    trainer.train()
    trainer.save_model(output_dir)
    return trainer


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", required=True, help="hub id or local directory of a causal LM")
    p.add_argument("--output-dir", required=True)
    p.add_argument("--loss-type", default="gppo", choices=loss_names(), help="a loss of klear_lib.losses")
    p.add_argument("--beta-low", type=float, default=1.0, help="β_low of Eq. 17 (1 = the paper's GPPO)")
    p.add_argument("--beta-high", type=float, default=1.0, help="β_high of Eq. 17")
    p.add_argument("--dual-clip", type=float, default=None, help="verl's dual clip c (official scripts: 10)")
    p.add_argument("--sft-alpha", type=float, default=0.1, help="α of the SFT loss on correct rollouts")
    p.add_argument("--num-generations", type=int, default=8, help="rollouts per prompt (paper: 8)")
    p.add_argument("--prompts-per-step", type=int, default=4, help="prompts generated for per RL step")
    p.add_argument("--prompts-per-update", type=int, default=2, help="prompts per optimizer update")
    p.add_argument("--max-completion-length", type=int, default=64)
    p.add_argument("--learning-rate", type=float, default=1e-6, help="paper: 1e-6 (math)")
    p.add_argument("--max-steps", type=int, default=100, help="optimizer updates")
    p.add_argument("--seed", type=int, default=0)
    return p


def main(argv: list[str] | None = None) -> GPPOTrainer:
    args = parser().parse_args(argv)
    if args.prompts_per_step % args.prompts_per_update:
        raise SystemExit(f"--prompts-per-step {args.prompts_per_step} must be a multiple of --prompts-per-update "
                         f"{args.prompts_per_update}")
    return train(args.model, [reward], PROMPTS, args.output_dir, args)


if __name__ == "__main__":
    main()
