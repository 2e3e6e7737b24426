"""Sampled accuracy of a checkpoint on RL prompts, per tier, at the rollout temperature (how much signal RL gets).

GRPO-style RL learns only from groups that mix right and wrong rollouts; a tier on which the start model is almost
never right gives all-wrong groups, which zero-advantage filtering drops. Run this on the SFT checkpoint before
choosing RL prompts. The results log quotes its numbers.

    python scripts/rl_prompt_accuracy.py CHECKPOINT --split math_rl --prompts 160 --k 8 --temperature 1.0
"""
from __future__ import annotations

import argparse
from collections import defaultdict

import klear_lib  # noqa: F401  (first: the numerics mode before torch loads)
from transformers import AutoModelForCausalLM, AutoTokenizer

from klear_lib.configs import recipe
from klear_lib.data import load_split
from klear_lib.rewards.math import is_correct
from klear_lib.seeding import seed_everything
from quick_math_eval import sample  # scripts/ is on sys.path when run as a script


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("checkpoint")
    ap.add_argument("--preset", default="tiny")
    ap.add_argument("--split", default="math_rl")
    ap.add_argument("--prompts", type=int, default=160)
    ap.add_argument("--k", type=int, default=8)
    ap.add_argument("--temperature", type=float, default=1.0)
    ap.add_argument("--max-new-tokens", type=int, default=256)
    ap.add_argument("--batch", type=int, default=40)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    seed_everything(args.seed)
    tok = AutoTokenizer.from_pretrained(args.checkpoint, padding_side="left")
    model = AutoModelForCausalLM.from_pretrained(args.checkpoint).eval()
    rows = load_split(args.split, recipe(args.preset))[:args.prompts]
    hits, mixed = defaultdict(list), defaultdict(list)
    for i in range(0, len(rows), args.batch):
        batch = rows[i:i + args.batch]
        for row, outs in zip(batch, sample(model, tok, batch, args.k, args.max_new_tokens,
                                             temperature=args.temperature, top_p=1.0)):
            tier = row["extra_info"].get("tier", "?")
            right = [is_correct(o, row["reward_model"]["ground_truth"]) for o in outs]
            hits[tier] += right
            mixed[tier].append(0 < sum(right) < len(right))
    for tier in sorted(hits, key=str):
        print(f"tier {tier}: accuracy {sum(hits[tier]) / len(hits[tier]):.3f}, groups with signal "
              f"{sum(mixed[tier]) / len(mixed[tier]):.2f} ({len(mixed[tier])} prompts x {args.k})")


if __name__ == "__main__":
    main()
