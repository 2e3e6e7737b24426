"""Stable per-concern seeds: ``(seed, concern, step, index)`` -> an int, never Python's salted ``hash()``."""
from __future__ import annotations

import hashlib
import random
from contextlib import contextmanager

import numpy as np
import torch


def stable_seed(*parts: object) -> int:
    """A 63-bit seed from any parts, stable across processes, machines and Python versions.

    >>> stable_seed(0, "data", 3) == stable_seed(0, "data", 3)
    True
    """
    text = "\x1f".join(repr(p) if not isinstance(p, str) else p for p in parts)
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big") >> 1


def py_rng(*parts: object) -> random.Random:
    """A ``random.Random`` seeded from ``stable_seed(*parts)``."""
    return random.Random(stable_seed(*parts))


def np_rng(*parts: object) -> np.random.Generator:
    """A NumPy generator seeded from ``stable_seed(*parts)``."""
    return np.random.default_rng(stable_seed(*parts))


def torch_generator(*parts: object):
    """A CPU ``torch.Generator`` seeded from ``stable_seed(*parts)``."""
    return torch.Generator().manual_seed(stable_seed(*parts))


def seed_everything(seed: int, deterministic: bool = True) -> None:
    """Seed Python, NumPy and torch globals (for third-party code we do not control, e.g. trainers)."""
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)
    if deterministic:
        torch.use_deterministic_algorithms(True, warn_only=True)


@contextmanager
def torch_threads(n: int | None):
    """Run the block with ``n`` intra-op torch threads (None: leave as is), restoring the count after.

    Float reductions depend on the thread count, so a run is bit-reproducible only under the same count: a sweep
    that pins it gives the same rows whether it runs its runs one at a time or in parallel worker processes.
    """
    before = torch.get_num_threads()
    if n is not None:
        torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)
