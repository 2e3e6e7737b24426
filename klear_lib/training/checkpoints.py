"""Checkpoints a resume can trust: a marker written once the Trainer has finished a checkpoint, and a picker that
resumes from the newest marked one.

``transformers.Trainer._save_checkpoint`` writes the weights, then the optimizer and scheduler states, the RNG
state and, last, ``trainer_state.json``; it then rotates old checkpoints (``save_total_limit``) and only after all
of that fires ``on_save``. ``CheckpointMarker`` writes ``COMPLETE.json`` there, with the size of every file: a
folder without it was cut short by a crash and is skipped (a log line names it), falling back to the previous
one. A marked folder whose files are gone or changed size is an error, never a silent fresh optimizer (the
Trainer skips state files that are absent). Sizes, not hashes: a check that costs nothing at 8B scale.
"""
from __future__ import annotations

import fnmatch
import json
import logging
from pathlib import Path

import torch.distributed as dist
from transformers import TrainerCallback

from klear_lib import artifacts

log = logging.getLogger(__name__)
MARKER = "COMPLETE.json"
# What a resume needs besides the weights, each as the file names it may have: the Trainer's own, or a DeepSpeed
# checkpoint's (its optimizer shards, and its scheduler inside the model states when DeepSpeed owns the scheduler).
STATE_FILES = {
    "optimizer state": ("optimizer.pt", "global_step*/*optim_states.pt"),
    "scheduler state": ("scheduler.pt", "global_step*/*model_states.pt"),
    "RNG state": ("rng_state.pth", "rng_state_*.pth"),
    "trainer state": ("trainer_state.json",),
}


def step_of(folder: Path) -> int:
    """N of a ``checkpoint-N`` folder (-1 for a name that is not one, so it sorts first and is never picked)."""
    tail = folder.name.split("-", 1)[-1]
    return int(tail) if tail.isdigit() else -1


def mark(folder: Path) -> None:
    """Write the completion marker of ``folder`` with the size of every file under it (atomically: a marker is whole
    or absent)."""
    folder = Path(folder)
    sizes = {str(p.relative_to(folder)): p.stat().st_size for p in sorted(folder.rglob("*"))
             if p.is_file() and p.name != MARKER}
    with artifacts.replacing(folder / MARKER) as tmp:
        tmp.write_text(json.dumps({"files": sizes}, indent=1, sort_keys=True) + "\n")


class CheckpointMarker(TrainerCallback):
    """Marks each checkpoint complete once the Trainer has written all of it (``on_save`` fires after that)."""

    def on_save(self, args, state, control, **kwargs):
        if dist.is_available() and dist.is_initialized():
            dist.barrier()  # every rank has written its shards and its RNG file before rank 0 marks the folder
        if state.is_world_process_zero:
            mark(Path(args.output_dir) / f"checkpoint-{state.global_step}")


def check(folder: Path) -> None:
    """Raise naming the file if a marked checkpoint lost a file, holds one of another size than it was written
    with, lacks a state a resume needs or has an unreadable ``trainer_state.json``."""
    folder = Path(folder)
    try:
        files = json.loads((folder / MARKER).read_text())["files"]
    except (ValueError, KeyError, TypeError) as err:
        raise ValueError(f"{folder / MARKER}: unreadable checkpoint marker ({err})") from err
    for name, size in files.items():
        path = folder / name
        if not path.is_file():
            raise FileNotFoundError(f"{path}: missing from a checkpoint marked complete; restore it, or delete "
                                    f"{folder} to resume from the checkpoint before it")
        if path.stat().st_size != size:
            raise ValueError(f"{path}: {path.stat().st_size} bytes, {size} when the checkpoint was written "
                             f"(truncated or replaced); restore it, or delete {folder} to resume from the one before")
    for what, names in STATE_FILES.items():
        if not any(fnmatch.filter(files, pattern) for pattern in names):
            raise FileNotFoundError(f"{folder / names[0]}: no {what} in this checkpoint; resuming would start it "
                                    f"afresh")
    try:
        json.loads((folder / "trainer_state.json").read_text())
    except (ValueError, UnicodeDecodeError) as err:
        raise ValueError(f"{folder / 'trainer_state.json'}: unreadable ({err})") from err


def last_complete(output_dir: str | Path) -> str | None:
    """The newest complete ``checkpoint-N`` in ``output_dir`` (checked, see ``check``), or None to start afresh;
    newer folders without a marker (a crash while writing them) are skipped with a warning."""
    for folder in sorted(Path(output_dir).glob("checkpoint-*"), key=step_of, reverse=True):
        if step_of(folder) < 0 or not folder.is_dir():
            continue
        if (folder / MARKER).exists():
            check(folder)
            return str(folder)
        log.warning("skipping %s: no %s, the run stopped while writing it; resuming from an older checkpoint",
                    folder, MARKER)
    return None
