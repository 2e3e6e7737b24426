"""One ZeRO-3 SFT run at ci on CPU, a process per rank: ``torchrun --nproc_per_node N tests/zero3_cpu.py MODEL OUT``
with ``DS_ACCELERATOR=cpu`` (tests/test_deepspeed.py). Each rank writes ``OUT/rank<r>.json``: whether ZeRO-3 was on
when the model was created, and how much of it the rank holds; rank 0 writes the run record ``OUT/record.csv``.

accelerate 1.15 finds no distributed backend for DeepSpeed on a machine without an accelerator: DeepSpeed itself
starts gloo over all ranks, but accelerate then counts one process, so the batch DeepSpeed checks is off by the world
size. Here accelerate is handed gloo, the backend DeepSpeed's CPU accelerator uses; on GPUs it finds NCCL itself.
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import klear_lib  # noqa: F401  (first: the numerics mode before torch loads)
from accelerate import state
from accelerate.utils import DistributedType
from transformers.integrations.deepspeed import is_deepspeed_zero3_enabled

from klear_lib.configs import get_config
from klear_lib.training import sft
from klear_lib.training.launch import end_launch
from sft_drills import drill_rows

CFG = get_config("sft", "ci", per_device_batch_size=8, max_rows=None, save_steps=100)  # 4 steps of 8 rows


def rows(n: int = 32) -> list[dict]:
    """SFT rows of one-step products (the same for the ZeRO-3 run and the plain one it is compared with)."""
    return drill_rows(n, "zero3-cpu")


def gloo_for_cpu_deepspeed() -> None:
    """accelerate's backend detection, with gloo where it finds none for DeepSpeed (see the module docstring)."""
    original = state.PartialState._prepare_backend

    def prepare(self, cpu=False, sagemaker_dp=False, backend=None):
        found, kind = original(self, cpu, sagemaker_dp, backend)
        if found is None and not cpu and os.environ.get("ACCELERATE_USE_DEEPSPEED") == "true":
            return "gloo", DistributedType.NO
        return found, kind

    state.PartialState._prepare_backend = prepare


def main(model_path: str, out: Path) -> None:
    gloo_for_cpu_deepspeed()
    world, rank = int(os.environ["WORLD_SIZE"]), int(os.environ["RANK"])
    cfg = get_config("sft", "ci", world_size=world, deepspeed="zero3", use_cpu=False,
                     **{k: getattr(CFG, k) for k in ("per_device_batch_size", "max_rows", "save_steps")})
    facts, load = {}, sft.load

    def watched_load(path, dtype="float32", revision=None):
        facts["zero3_at_load"] = is_deepspeed_zero3_enabled()
        model, tokenizer = load(path, dtype, revision)
        params = list(model.parameters())
        facts.update(whole_numel_at_load=sum(p.numel() for p in params),
                     shard_numel=sum(p.ds_tensor.numel() for p in params if hasattr(p, "ds_tensor")),
                     total_numel=sum(getattr(p, "ds_numel", p.numel()) for p in params))
        return model, tokenizer

    sft.load = watched_load
    final = sft.train_sft(cfg, model_path, rows(), out / "run", record_path=out / "record.csv")
    (out / f"rank{rank}.json").write_text(json.dumps({**facts, "final": str(final)}))
    end_launch()  # as the CLIs end


if __name__ == "__main__":
    main(sys.argv[1], Path(sys.argv[2]))
