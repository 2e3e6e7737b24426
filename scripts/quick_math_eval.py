"""A quick sampled check of a checkpoint on the miniature math splits (transformers backend, no stored samples).

The numbers the results log quotes for RL attempts that did not become the recipe come from here: avg@k and pass@k
at the paper's sampling (temperature 0.6, top-p 0.95) on the first ``--problems`` problems of each split. For the
recipe's own numbers use the evaluation harness (notebooks 02-04), which stores every sample.

    python scripts/quick_math_eval.py CHECKPOINT --splits math_eval_t2 tiny_aime --problems 100 --k 8
"""
from __future__ import annotations

import argparse

import klear_lib  # noqa: F401  (first: the numerics mode before torch loads)
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from klear_lib.configs import recipe
from klear_lib.data import load_split
from klear_lib.rewards.math import is_correct
from klear_lib.seeding import seed_everything


def sample(model, tok, rows: list[dict], k: int, max_new_tokens: int, temperature: float = 0.6,
           top_p: float = 0.95) -> list[list[str]]:
    """``k`` completions per row (default: the paper's evaluation sampling, temperature 0.6, top-p 0.95)."""
    texts = [tok.apply_chat_template(r["prompt"], add_generation_prompt=True, tokenize=False) for r in rows]
    enc = tok(texts, return_tensors="pt", padding=True, add_special_tokens=False)
    with torch.no_grad():
        out = model.generate(**enc, max_new_tokens=max_new_tokens, do_sample=True, temperature=temperature,
                             top_p=top_p, num_return_sequences=k)
    dec = tok.batch_decode(out[:, enc["input_ids"].shape[1]:], skip_special_tokens=True)
    return [dec[i * k:(i + 1) * k] for i in range(len(rows))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("checkpoint")
    ap.add_argument("--preset", default="tiny")
    ap.add_argument("--splits", nargs="+", default=["math_eval_t2", "tiny_aime"])
    ap.add_argument("--problems", type=int, default=100)
    ap.add_argument("--k", type=int, default=8)
    ap.add_argument("--max-new-tokens", type=int, default=256)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    seed_everything(args.seed)
    tok = AutoTokenizer.from_pretrained(args.checkpoint, padding_side="left")
    model = AutoModelForCausalLM.from_pretrained(args.checkpoint).eval()
    for split in args.splits:
        rows = load_split(split, recipe(args.preset))[:args.problems]
        outs = sample(model, tok, rows, args.k, args.max_new_tokens)
        hits = [[is_correct(o, r["reward_model"]["ground_truth"]) for o in row_outs] for r, row_outs in zip(rows, outs)]
        avg = sum(map(sum, hits)) / (len(rows) * args.k)
        print(f"{split}: avg@{args.k} {avg:.3f}  pass@{args.k} {sum(map(any, hits)) / len(rows):.3f}  "
              f"({len(rows)} problems)")


if __name__ == "__main__":
    main()
