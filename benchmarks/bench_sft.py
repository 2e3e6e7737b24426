"""SFT step at tiny: the old path (TRL's SFTTrainer, whole padded batches, new memory NaN-filled) vs the kit's
(length groups of ``klear_lib.training.sft`` without the fill, ``klear_lib.training.overhead``), side by side.

Both variants train copies of one model on the same batches (drawn by the trainer's own sampler, as the SFT stage
draws them): one optimizer step = forward + backward + AdamW. Reported: seconds per step and their paired ratio, the
padding share of the positions each computes, and model FLOP utilisation (MFU): the FLOPs the real tokens need
(matmuls and causal attention, forward + backward = 3 x forward) per second, over the fp32 matmul peak measured
here at the same thread count (1024 x 1024 x 1024, median of 20). The batches' padding share over a whole epoch
(every batch of one shuffle) is reported too.
"""
from __future__ import annotations

import argparse
import copy
import logging
import tempfile
import time
from pathlib import Path

import klear_lib  # noqa: F401  (first: the numerics mode before torch loads)
import torch
from trl import SFTTrainer

from klear_lib.configs import get_config, recipe
from klear_lib.data import load_split
from klear_lib.models import load
from klear_lib.models.factory import load_or_build
from klear_lib.training.sft import LengthGroupedSFTTrainer, length_groups, padded_positions, sft_dataset, trl_args

import perf  # benchmarks/perf.py, beside this script

BENCH = "sft_step"


def matmul_peak(threads: int, size: int = 1024, reps: int = 20) -> float:
    """fp32 GFLOP/s of a ``size``³ matmul here (median of ``reps``)."""
    torch.set_num_threads(threads)
    a, b = torch.randn(size, size), torch.randn(size, size)
    a @ b
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        a @ b
        times.append(time.perf_counter() - start)
    return 2 * size ** 3 / perf.summary(times)["median"] / 1e9


def model_flops(config, lengths: list[int]) -> float:
    """Forward + backward FLOPs of the real tokens of rows of ``lengths`` (no padding): 6 x matmul parameters x
    tokens, plus causal attention (QK^T and AV: 2 x 2 x heads x head_dim per attended pair, x 3)."""
    d, kv, heads, hd = config.hidden_size, config.num_key_value_heads, config.num_attention_heads, config.head_dim
    per_layer = d * heads * hd * 2 + d * kv * hd * 2 + 3 * d * config.intermediate_size  # q, o; k, v; MLP
    matmul = config.num_hidden_layers * per_layer + d * config.vocab_size  # + the (tied) LM head
    pairs = sum(n * (n + 1) // 2 for n in lengths)
    return 6.0 * matmul * sum(lengths) + 3 * 4.0 * heads * hd * config.num_hidden_layers * pairs


def trainers(cfg, out: Path):
    """Two trainers on copies of one model: the stock SFTTrainer and the length-grouped one."""
    model, tokenizer = load(load_or_build(recipe("tiny")))
    data = sft_dataset(load_split("sft", recipe("tiny")))
    made = {}
    for name, grouped in (("padded", False), ("grouped", True)):
        kwargs = {"overhead": cfg.group_overhead} if grouped else {}
        cls = LengthGroupedSFTTrainer if grouped else SFTTrainer
        trainer = cls(model=copy.deepcopy(model), args=trl_args(cfg, out / name), train_dataset=data,
                      processing_class=tokenizer, **kwargs)
        trainer.create_optimizer_and_scheduler(num_training_steps=10 ** 6)
        trainer.model.train()
        made[name] = trainer
    return made


def step(trainer, batch, fill: bool) -> None:
    """One optimizer step of ``trainer`` on ``batch`` (the Trainer's own training_step, then AdamW), with torch's
    deterministic NaN fill of new memory on or off (``full_determinism`` turns it on)."""
    torch.utils.deterministic.fill_uninitialized_memory = fill
    num_items = (batch["labels"][:, 1:] != -100).sum()
    trainer.training_step(trainer.model, dict(batch), num_items)
    trainer.optimizer.step()
    trainer.optimizer.zero_grad()


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=10, help="timed steps per variant")
    parser.add_argument("--threads", type=int, default=torch.get_num_threads(),
                        help="torch threads (default: the SFT stage's, all cores)")
    perf.add_output_args(parser)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    cfg = get_config("sft", "tiny")
    before = perf.loadavg()
    with tempfile.TemporaryDirectory(prefix="bench-sft-") as out:
        made = trainers(cfg, Path(out))
        loader = iter(made["padded"].get_train_dataloader())
        batches = [next(loader) for _ in range(args.reps + 1)]
        epoch = [b["attention_mask"].sum(1).tolist() for b in made["padded"].get_train_dataloader()]
        queue = {name: iter(batches) for name in made}
        times = perf.interleave({name: (lambda n=name: step(made[n], next(queue[n]), n == "padded"))
                                 for name in made},
                                reps=args.reps)
    peak = matmul_peak(args.threads)
    config = made["padded"].model.config
    lengths = [b["attention_mask"].sum(1).tolist() for b in batches[1:]]
    flops = sum(model_flops(config, ls) for ls in lengths) / len(lengths)
    note = (f"tiny SFT, batches of {cfg.per_device_batch_size} rows as the sampler draws them, {args.reps} steps; "
            f"CPU fp32, {args.threads} torch thread(s), {perf.load_note(before, perf.loadavg())}")
    rows = []
    for name in made:
        stats = perf.summary(times[name])
        rows.append(perf.row(BENCH, f"step_s.{name}", stats["median"], "s", notes=f"{perf.iqr_note(stats)}; {note}"))
        rows.append(perf.row(BENCH, f"mfu.{name}", flops / stats["median"] / 1e9 / peak, "share",
                             notes=f"{flops / 1e9:.1f} GFLOP of real tokens per step; matmul peak {peak:.0f} GFLOP/s"))
    stats = perf.summary(perf.paired_ratios(times, "padded", "grouped"))
    rows.append(perf.row(BENCH, "step_s.ratio.padded", stats["median"], "x", "grouped",
                         f"speed-up of length groups without NaN fill; {perf.iqr_note(stats)}; target >= 2"))
    whole = [[list(range(len(ls)))] for ls in epoch]
    grouped = [length_groups(ls, cfg.group_overhead) for ls in epoch]
    flat = [n for ls in epoch for n in ls]
    for name, groups in (("padded", whole), ("grouped", grouped)):
        padded = sum(padded_positions(ls, gs) for ls, gs in zip(epoch, groups))
        share = 1 - sum(flat) / padded
        rows.append(perf.row(BENCH, f"padding_share.{name}", share, "share",
                             notes=f"one epoch: {len(epoch)} batches, {len(flat)} rows; target <= 0.05 (grouped); "
                                   f"{sum(map(len, groups)) / len(groups):.1f} forward calls per batch"))
    perf.emit(rows, args)


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING, format="%(message)s")
    main()
