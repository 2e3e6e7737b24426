"""SFT and GPPO at ci, one process per rank on CPU (gloo): ``torchrun --nproc_per_node 2 tests/distributed_cpu.py
MODEL OUT TAG JOB [JOB ...]`` (tests/test_distributed_cpu.py).

A job is ``sft`` or ``rl``, run to its end, or ``sft@K`` / ``rl@K``, whose ranks all send themselves SIGKILL once
optimizer update K is logged: no checkpoint, no flush, as a lost node. A stage trains in ``OUT/<stage>/run`` with its
run record ``OUT/<stage>/record.csv`` and resumes from the last complete checkpoint there, as the CLIs do. Each rank
appends to ``OUT/<stage>/<TAG>-rank<r>.jsonl`` its world, a sha256 of its parameters after every update, and the ids
of the rows (SFT) or prompts (RL) of every batch it trains on. Several jobs share one launch to pay its start once.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import signal
import sys
from pathlib import Path

import klear_lib  # noqa: F401  (first: the numerics mode before torch loads)
import torch
import torch.distributed as dist
from transformers import TrainerCallback

from klear_lib.configs import get_config
from klear_lib.training import rewards as reward_adapters
from klear_lib.training import sft
from klear_lib.training.checkpoints import last_complete
from klear_lib.training.gppo_trainer import GPPOTrainer, build_rl_trainer
from klear_lib.training.launch import end_launch

SFT_KW = {"per_device_batch_size": 8, "num_epochs": 2.0, "max_rows": None, "save_steps": 2}  # 32 rows: 2 epochs of 4
RL_KW = {"max_steps": 3, "learning_rate": 0.005}  # 16 prompts = 2 RL steps (4 updates) an epoch: 6 updates
ROW_ID = re.compile(r"Row (\d+):")


def sft_rows(n: int = 32) -> list[dict]:
    """SFT rows whose user turn names the row (``Row 7: ...``), so a batch tells which rows it holds."""
    return [{"id": f"r{i}", "messages": [{"role": "user", "content": f"Row {i}: compute {i + 10}*3."},
                                         {"role": "assistant", "content": f"<think>\n{i + 10}*3={3 * (i + 10)}\n"
                                                                          f"</think>\n\\boxed{{{3 * (i + 10)}}}"}]}
            for i in range(n)]


def rl_rows(n: int = 16) -> list[dict]:
    """RL rows in the verl schema; the toy judge below rewards any response holding an 'a'."""
    return [{"prompt": [{"role": "user", "content": f"Row {i}: what is {i}+{i}?"}], "ability": "math",
             "reward_model": {"ground_truth": str(2 * i), "style": "rule"},
             "extra_info": {"id": f"p{i}", "split": "train", "tier": 1}} for i in range(n)]


def toy_judge(response: str, truth: str) -> float:
    """Signal on a random micro model, so the GPPO updates are not all filtered out."""
    return 1.0 if "a" in response else -1.0


def digest(model) -> str:
    """sha256 over the bytes of every parameter, in order."""
    h = hashlib.sha256()
    for name, p in model.named_parameters():
        h.update(name.encode())
        h.update(p.detach().cpu().contiguous().view(torch.uint8).numpy().tobytes())
    return h.hexdigest()


class Events:
    """This rank's event log, one JSON line each, flushed at once (a SIGKILL loses nothing written)."""

    def __init__(self, path: Path):
        self.path = path

    def write(self, **event) -> None:
        with self.path.open("a") as fh:
            fh.write(json.dumps(event, sort_keys=True) + "\n")


class Watch(TrainerCallback):
    """Logs the world and the parameter digest after each update; kills the process once update ``kill_at`` is
    logged (after the run record's row: the record is attached first)."""

    def __init__(self, events: Events, kill_at: int | None):
        self.events, self.kill_at = events, kill_at

    def on_train_begin(self, args, state, control, **kwargs):
        self.events.write(world_size=args.world_size, backend=dist.get_backend(), resumed_at=state.global_step)

    def on_step_end(self, args, state, control, model=None, **kwargs):
        self.events.write(step=state.global_step, digest=digest(model))

    def on_log(self, args, state, control, logs=None, **kwargs):
        if self.kill_at == state.global_step and logs and "loss" in logs:
            os.kill(os.getpid(), signal.SIGKILL)


def watch_sft_batches(events: Events) -> None:
    """Record the row ids of each SFT batch a rank trains on (``training_step`` sees the rank's batch)."""
    original = sft.LengthGroupedSFTTrainer.training_step

    def training_step(self, model, inputs, num_items_in_batch=None):
        texts = self.processing_class.batch_decode(inputs["input_ids"], skip_special_tokens=True)
        events.write(step=self.state.global_step + 1, rows=sorted(int(ROW_ID.search(t).group(1)) for t in texts))
        return original(self, model, inputs, num_items_in_batch)
    sft.LengthGroupedSFTTrainer.training_step = training_step


def watch_rl_prompts(events: Events) -> None:
    """Record the prompt ids of each generation batch a rank generates for."""
    original = GPPOTrainer._generate_and_score_completions

    def generate(self, inputs):
        events.write(step=self.state.global_step + 1, prompts=sorted({x["extra_info"]["id"] for x in inputs}))
        return original(self, inputs)
    GPPOTrainer._generate_and_score_completions = generate


def run_sft(model: str, out: Path, watch: Watch) -> None:
    cfg = get_config("sft", "ci", world_size=int(os.environ["WORLD_SIZE"]), **SFT_KW)
    init = sft.LengthGroupedSFTTrainer.__init__

    def with_watch(self, *args, callbacks=(), **kwargs):  # train_sft builds its trainer itself
        init(self, *args, callbacks=[*callbacks, watch], **kwargs)
    sft.LengthGroupedSFTTrainer.__init__ = with_watch
    try:
        sft.train_sft(cfg, model, sft_rows(), out / "run", record_path=out / "record.csv")
    finally:
        sft.LengthGroupedSFTTrainer.__init__ = init


def run_rl(model: str, out: Path, watch: Watch) -> None:
    reward_adapters._default_judge = lambda kind, *_: toy_judge
    cfg = get_config("rl_math", "ci", world_size=int(os.environ["WORLD_SIZE"]), **RL_KW)
    trainer = build_rl_trainer(cfg, model, rl_rows(), "math", out / "run", out / "record.csv")
    trainer.add_callback(watch)
    trainer.train(resume_from_checkpoint=last_complete(out / "run"))
    trainer.save_model(str(out / "run" / "final"))


def main(model: str, out: Path, tag: str, jobs: list[str]) -> None:
    rank = os.environ["RANK"]
    for job in jobs:
        stage, _, kill_at = job.partition("@")
        (out / stage).mkdir(parents=True, exist_ok=True)
        events = Events(out / stage / f"{tag}-rank{rank}.jsonl")
        watch = Watch(events, int(kill_at) if kill_at else None)
        (watch_sft_batches if stage == "sft" else watch_rl_prompts)(events)
        (run_sft if stage == "sft" else run_rl)(model, out / stage, watch)
    end_launch()  # as the CLIs end


if __name__ == "__main__":
    main(sys.argv[1], Path(sys.argv[2]), sys.argv[3], sys.argv[4:])
