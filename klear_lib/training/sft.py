"""Long-CoT SFT through TRL's ``SFTTrainer``: loss on the assistant turn only (docs/paper.md §2.2)."""
from __future__ import annotations

import argparse
import logging
import os
from pathlib import Path

from datasets import Dataset, load_dataset
from transformers import TrainerCallback
from trl import SFTConfig as TRLSFTConfig
from trl import SFTTrainer

from klear_lib import artifacts
from klear_lib.configs import config_hash, get_config
from klear_lib.configs.base import parse_overrides
from klear_lib.configs.sft import SFTConfig
from klear_lib.configs.trl import SFT_FIELDS, trl_kwargs
from klear_lib.models import load
from klear_lib.training.checkpoints import CheckpointMarker, last_complete
from klear_lib.training.run_record import SFT_KEYS, RunRecord

log = logging.getLogger(__name__)


class StopAt(TrainerCallback):
    """Stops training after ``step`` optimizer steps, as a crash would, keeping the LR schedule of the full run."""

    def __init__(self, step: int):
        self.step = step

    def on_step_end(self, args, state, control, **kwargs):
        if state.global_step >= self.step:
            control.should_training_stop = True
            control.should_save = True


def trl_args(cfg: SFTConfig, output_dir: Path) -> TRLSFTConfig:
    """Our SFT config as TRL's, through the field table (``klear_lib.configs.trl.SFT_FIELDS``)."""
    return TRLSFTConfig(output_dir=str(output_dir), **trl_kwargs(SFT_FIELDS, cfg))


def sft_dataset(rows: list[dict], max_rows: int | None = None) -> Dataset:
    """A conversational dataset (``messages`` only) from SFT rows; a row without messages raises naming it."""
    rows = rows[:max_rows] if max_rows else rows
    for row in rows:
        msgs = row.get("messages")
        if not msgs or msgs[-1].get("role") != "assistant" or not isinstance(msgs[-1].get("content"), str):
            raise ValueError(f"SFT row {row.get('id', '?')}: field 'messages' needs a final assistant turn")
    return Dataset.from_list([{"messages": r["messages"]} for r in rows])


def train_sft(cfg: SFTConfig, model_path: str, rows: list[dict], output_dir: Path,
              record_path: Path | None = None, stop_at_step: int | None = None) -> Path:
    """Train, resuming from the last complete checkpoint in ``output_dir``; save the final model in
    ``output_dir/final``.

    ``stop_at_step`` saves a checkpoint and stops there, as a run killed midway (used to test resumption).
    """
    output_dir = Path(output_dir)
    final = output_dir / "final"
    if artifacts.is_complete(final):
        return final
    resume = last_complete(output_dir)  # first: a damaged checkpoint fails before the model loads
    model, tokenizer = load(model_path)
    args = trl_args(cfg, output_dir)
    record = [RunRecord(record_path, None, config_hash(cfg), SFT_KEYS)] if record_path else []
    callbacks = [CheckpointMarker(), *record, *([StopAt(stop_at_step)] if stop_at_step else [])]
    trainer = SFTTrainer(model=model, args=args, train_dataset=sft_dataset(rows, cfg.max_rows),
                         processing_class=tokenizer, callbacks=callbacks)
    trainer.train(resume_from_checkpoint=resume)
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


if __name__ == "__main__":
    main()
