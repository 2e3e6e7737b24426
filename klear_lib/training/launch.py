"""The end of a multi-process launch (torchrun, accelerate launch).

The Trainer joins the process group the launcher set up and never leaves it. A rank that then exits leaves its gloo
worker threads alive into interpreter shutdown, where releasing the tensors they hold aborts the process now and then
(SIGABRT, "terminate called without an active exception"; pytorch/pytorch#190489): a run that trained and saved
everything still fails its launch. Every entry point run under a launcher ends with ``end_launch``.
"""
from __future__ import annotations

import torch.distributed as dist


def end_launch() -> None:
    """Leave the process group, if this process joined one: a no-op in a single process."""
    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()
