"""Where an RL step's time goes (issue 9: profile the slowest stage): generation, judging, the rest of scoring
(old log-probs, group filter, advantages), the loss forward, and backward + optimizer, for a math or code stage.

    .venv/bin/python benchmarks/bench_rl_profile.py [--reward math] [--steps 5] [--threads 1] [--no-record]

RL is the slowest stage of the tiny study: notebook 03's math stage runs 120 RL steps, and every RL ablation and
stability run is an RL stage. The script builds the stage's ``GPPOTrainer`` (preset tiny, from the registered
SFT checkpoint, else the untrained base model, which the notes say) in a temporary folder and wraps four of
its methods with wall-clock timers; the shares are of ``trainer.train()``'s wall time (set-up excluded).
"""
from __future__ import annotations

import argparse
import logging
import os
import tempfile
import time
from collections import defaultdict
from pathlib import Path

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import klear_lib  # noqa: E402, F401  (first: the numerics mode before torch loads)
import torch  # noqa: E402

from klear_lib.data import load_split  # noqa: E402
from klear_lib.evaluation.checkpoints import stage_checkpoint  # noqa: E402
from klear_lib.models import load_or_build  # noqa: E402
from klear_lib.configs import get_config, recipe, rl_stage_name  # noqa: E402
from klear_lib.pipeline import RL_SPLITS  # noqa: E402
from klear_lib.training import build_rl_trainer  # noqa: E402

import perf  # noqa: E402  (benchmarks/perf.py, beside this script)

BENCH = "rl_profile"  # recorded as rl_profile_<reward>: a rerun of one stage leaves the other's rows
TIMED = {"generate": "_generate", "judge": "_calculate_rewards", "score": "_generate_and_score_completions",
         "loss_forward": "compute_loss"}


def wrap(trainer, seconds: dict) -> None:
    """Replace each ``TIMED`` method of ``trainer`` (on the instance) with one that adds its wall time."""
    for part, attr in TIMED.items():
        method = getattr(trainer, attr)

        def timed(*a, _method=method, _part=part, **kw):
            start = time.perf_counter()
            try:
                return _method(*a, **kw)
            finally:
                seconds[_part] += time.perf_counter() - start
        setattr(trainer, attr, timed)


def shares(seconds: dict, total: float) -> dict:
    """Exclusive parts of one ``train()``: generation, judging and the rest of scoring nest inside ``score``."""
    rest = seconds["score"] - seconds["generate"] - seconds["judge"]
    parts = {"generate": seconds["generate"], "judge": seconds["judge"], "score_other": rest,
             "loss_forward": seconds["loss_forward"]}
    return {**parts, "backward_optimizer_other": total - sum(parts.values())}


def run(args) -> list[dict]:
    torch.set_num_threads(args.threads)
    init = stage_checkpoint("sft", recipe("tiny"))
    model = init or load_or_build(recipe("tiny"))
    cfg = get_config(rl_stage_name(args.reward), "tiny", max_steps=args.steps, save_steps=10 ** 6)
    before, seconds = perf.loadavg(), defaultdict(float)
    with tempfile.TemporaryDirectory(prefix="bench-rl-profile-") as tmp:
        start = time.perf_counter()
        trainer = build_rl_trainer(cfg, model, load_split(RL_SPLITS[args.reward], recipe("tiny")), reward=args.reward,
                                   output_dir=Path(tmp), disable_tqdm=True)
        setup = time.perf_counter() - start
        wrap(trainer, seconds)
        start = time.perf_counter()
        trainer.train()
        total = time.perf_counter() - start
    note = (f"{args.reward} RL, {args.steps} steps of {cfg.prompts_per_step} prompts x {cfg.num_generations} "
            f"(x{cfg.oversample} oversampled), <= {cfg.max_completion_length} tokens, {cfg.updates_per_step} "
            f"updates/step; from {'the SFT checkpoint' if init else 'the untrained base model'}; CPU fp32, "
            f"{args.threads} torch thread(s), {perf.load_note(before, perf.loadavg())}")
    bench = f"{BENCH}_{args.reward}"
    rows = [perf.row(bench, "step_s", total / args.steps, "s", notes=note),
            perf.row(bench, "setup_s", setup, "s", notes="build_rl_trainer: model, tokenizer, data")]
    rows += [perf.row(bench, f"share.{part}", secs / total, "share", notes=f"{secs:.1f} s of {total:.1f} s")
             for part, secs in shares(seconds, total).items()]
    return rows


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reward", choices=sorted(RL_SPLITS), default="math")
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1)
    perf.add_output_args(parser)
    args = parser.parse_args(argv)
    perf.emit(run(args), args)


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    main()
