"""Long-CoT SFT through TRL's ``SFTTrainer``: loss on the assistant turn only (docs/paper.md §2.2).

A batch of rows of mixed length is padded to its longest row; at tiny, 42% of the positions were padding. The
trainer here keeps every batch as the sampler drew it (same rows, same steps, same loss: the sum over the batch's
assistant tokens divided by their count) but runs it as a few micro-batches of rows of similar length, each cut to
its own longest row. Rows are padded on the right and attend causally, so cutting trailing padding changes no real
token's output; only the order of floating-point sums differs.
"""
from __future__ import annotations

import argparse
import logging
import os
from collections.abc import Sequence
from pathlib import Path

import torch
from datasets import Dataset, load_dataset
from transformers import TrainerCallback
from trl import SFTConfig as TRLSFTConfig
from trl import SFTTrainer

from klear_lib import artifacts
from klear_lib.configs import config_hash, get_config
from klear_lib.configs.base import parse_overrides
from klear_lib.configs.sft import SFTConfig
from klear_lib.configs.trl import SFT_FIELDS, trl_kwargs
from klear_lib.models import load, weights_dtype
from klear_lib.training.checkpoints import CheckpointMarker, last_complete
from klear_lib.training.launch import end_launch
from klear_lib.training.overhead import lean
from klear_lib.training.run_record import SFT_KEYS, RunRecord

log = logging.getLogger(__name__)


class StopAt(TrainerCallback):
    """Stops training after ``step`` optimizer steps, as a crash would, keeping the LR schedule of the full run."""

    def __init__(self, step: int):
        self.step = step

    def on_step_end(self, args, state, control, **kwargs):
        if state.global_step >= self.step:
            control.should_training_stop = control.should_save = True


def length_groups(lengths: Sequence[int], overhead: int) -> list[list[int]]:
    """Row indices split into groups of similar length that minimise padded positions + ``overhead`` per group.

    Exact: rows sorted longest first, the best split into contiguous runs by dynamic programming (a run costs its
    row count x its first row's length); ties keep the input order, so the grouping is deterministic.
    """
    order = sorted(range(len(lengths)), key=lambda i: (-lengths[i], i))
    sizes = [lengths[i] for i in order]
    best, cut = [0.0] + [float("inf")] * len(sizes), [0] * (len(sizes) + 1)
    for end in range(1, len(sizes) + 1):
        for start in range(end):
            cost = best[start] + (end - start) * sizes[start] + overhead
            if cost < best[end]:
                best[end], cut[end] = cost, start
    groups, end = [], len(sizes)
    while end:
        groups.append(order[cut[end]:end])
        end = cut[end]
    return groups[::-1]


def padded_positions(lengths: Sequence[int], groups: Sequence[Sequence[int]]) -> int:
    """Positions computed when each group of rows is padded to its longest row."""
    return sum(len(g) * max(lengths[i] for i in g) for g in groups)


def padding_share(lengths: Sequence[int], groups: Sequence[Sequence[int]]) -> float:
    """Share of the positions computed that are padding when each group is padded to its longest row."""
    positions = padded_positions(lengths, groups)
    return 1 - sum(lengths) / positions if positions else 0.0


class LengthGroupedSFTTrainer(SFTTrainer):
    """``SFTTrainer`` that runs each training batch as length groups (``length_groups``), with the batch's loss,
    gradient and logged metrics those of the whole padded batch. ``overhead``: ``SFTConfig.group_overhead``."""

    def __init__(self, *args, overhead: int, **kwargs):
        super().__init__(*args, **kwargs)
        self.overhead = overhead

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        """The batch's loss as the sum of its groups' losses, each normalised by the whole batch's token count."""
        mask = inputs.get("attention_mask")
        if return_outputs or not model.training or mask is None or mask.dim() != 2:
            return super().compute_loss(model, inputs, return_outputs, num_items_in_batch)
        lengths = mask.sum(1).tolist()
        groups = length_groups(lengths, self.overhead)
        if len(groups) == 1:
            return super().compute_loss(model, inputs, return_outputs, num_items_in_batch)
        if num_items_in_batch is None:  # TRL's normaliser then is this batch's own count of loss tokens
            num_items_in_batch = (inputs["labels"][:, 1:] != -100).sum()
        metrics = self._metrics["train"]
        before = {key: len(metrics[key]) for key in ("entropy", "mean_token_accuracy")}
        loss, weights = 0.0, []
        for group in groups:
            index, width = torch.tensor(group), max(lengths[i] for i in group)
            part = {key: value[index, :width] if torch.is_tensor(value) and value.dim() == 2 else value
                    for key, value in inputs.items()}
            weights.append(int((part["labels"][:, 1:] != -100).sum()))
            loss = loss + super().compute_loss(model, part, num_items_in_batch=num_items_in_batch)
        for key, start in before.items():  # one token-weighted value per batch, as the unsplit batch logs
            values = metrics[key][start:]
            del metrics[key][start:]
            metrics[key].append(sum(v * w for v, w in zip(values, weights)) / max(1, sum(weights)))
        return loss


def trl_args(cfg: SFTConfig, output_dir: Path) -> TRLSFTConfig:
    """Our SFT config as TRL's, through the field table (``klear_lib.configs.trl.SFT_FIELDS``)."""
    return TRLSFTConfig(output_dir=str(output_dir), **trl_kwargs(SFT_FIELDS, cfg))


def sft_dataset(rows: list[dict], max_rows: int | None = None) -> Dataset:
    """A conversational dataset (``messages`` only) from SFT rows; a row without messages raises naming it."""
    rows = rows[:max_rows] if max_rows else rows
    for row in rows:
        msgs = row.get("messages")
        if not isinstance(msgs, list) or not all(isinstance(m, dict) for m in msgs):  # a string has no turns
            raise ValueError(f"SFT row {row.get('id', '?')}: field 'messages' must be a list of {{role, content}} "
                             f"turns, got {type(msgs).__name__}")
        if not msgs or msgs[-1].get("role") != "assistant" or not isinstance(msgs[-1].get("content"), str):
            raise ValueError(f"SFT row {row.get('id', '?')}: field 'messages' needs a final assistant turn")
    return Dataset.from_list([{"messages": r["messages"]} for r in rows])


def train_sft(cfg: SFTConfig, model_path: str, rows: list[dict], output_dir: Path,
              record_path: Path | None = None, stop_at_step: int | None = None) -> Path:
    """Train, resuming from the last complete checkpoint in ``output_dir``; save the final model in
    ``output_dir/final``.

    ``stop_at_step`` saves a checkpoint and stops there, as a run killed midway (used to test resumption). The model
    is created after TRL's arguments, so that under ``cfg.deepspeed`` (ZeRO-3 at full) each rank loads only its
    shard, in bf16 when ``cfg.bf16``; without DeepSpeed (ci, tiny) it loads whole, in float32.
    """
    output_dir = Path(output_dir)
    final = output_dir / "final"
    if artifacts.is_complete(final):
        return final
    resume = last_complete(output_dir)  # first: a damaged checkpoint fails before the model loads
    args = trl_args(cfg, output_dir)  # before the model: under cfg.deepspeed it holds the ZeRO-3 config
    model, tokenizer = load(model_path, weights_dtype(cfg.bf16))
    record = [RunRecord(record_path, None, config_hash(cfg), SFT_KEYS)] if record_path else []
    callbacks = [CheckpointMarker(), *record, *([StopAt(stop_at_step)] if stop_at_step else [])]
    grouped = {"overhead": cfg.group_overhead} if cfg.length_grouping else {}
    trainer = (LengthGroupedSFTTrainer if grouped else SFTTrainer)(
        model=model, args=args, train_dataset=sft_dataset(rows, cfg.max_rows), processing_class=tokenizer,
        callbacks=callbacks, **grouped)
    lean(trainer).train(resume_from_checkpoint=resume)
    if stop_at_step is not None and trainer.state.global_step < trainer.state.max_steps:
        return output_dir
    trainer.save_model(str(final))
    tokenizer.save_pretrained(str(final))
    artifacts.mark_complete(final)
    return final


def main(argv: list[str] | None = None) -> None:
    """CLI for ``accelerate launch -m klear_lib.training.sft``: SFT rows (jsonl/parquet with ``messages``)."""
    parser = argparse.ArgumentParser(description="Long-CoT SFT (docs/paper.md §2.2)")
    parser.add_argument("--preset", default="full")
    parser.add_argument("--model", required=True, help="base model directory or hub id (e.g. Qwen/Qwen3-8B-Base)")
    parser.add_argument("--train-file", required=True, help="SFT rows with a `messages` column (.jsonl/.parquet)")
    parser.add_argument("--output-dir", required=True)
    parser.add_argument("--run-record", default=None)
    parser.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE", help="SFTConfig overrides")
    args = parser.parse_args(argv)
    kind = "parquet" if args.train_file.endswith(".parquet") else "json"
    rows = load_dataset(kind, data_files=args.train_file, split="train").to_list()
    world = int(os.environ.get("WORLD_SIZE", "1"))  # set by accelerate/torchrun
    cfg = get_config("sft", args.preset, world_size=world, **parse_overrides(args.set))
    train_sft(cfg, args.model, rows, Path(args.output_dir), args.run_record)
    end_launch()


if __name__ == "__main__":
    main()
