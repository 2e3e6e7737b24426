"""The data-parallel evaluation plan: GPUs into tensor-parallel engines, the work into units, units onto engines.

Pure functions over sizes and names (no I/O): ``klear_lib.evaluation.full`` loads the problems, writes the plan
and runs it. A unit is one fixed chunk (``klear_lib.generation.fixed_chunks``) of one benchmark for one model, so
its seed and problem indices do not depend on the engine that runs it (``harness.evaluate(chunks=...)``): the samples
of a split run are those of a single-engine run, whatever the number of GPUs.
"""
from __future__ import annotations

import dataclasses
import itertools
from typing import Sequence

from klear_lib.evaluation.benchmarks import get_spec, samples_per_problem
from klear_lib.generation import fixed_chunks


@dataclasses.dataclass(frozen=True)
class Unit:
    """One chunk of one benchmark for one model: problems ``[first, last)``; ``cost`` = problems x samples."""

    model: str
    revision: str | None
    benchmark: str
    chunk: int
    first: int
    last: int
    cost: int


def engine_groups(gpus: int, tp: int, visible: str | None = None) -> list[list[str]]:
    """The GPUs of each engine: ``gpus / tp`` groups of ``tp`` neighbouring GPUs. ``visible`` is the caller's
    ``CUDA_VISIBLE_DEVICES`` (the engines then take from that list, in order), else GPUs ``0..gpus-1``."""
    if gpus < 1 or tp < 1:
        raise ValueError(f"--gpus {gpus} --tp {tp}: both must be at least 1")
    if gpus % tp:
        raise ValueError(f"--gpus {gpus} does not split into tensor-parallel groups of --tp {tp}: use a multiple "
                         f"of {tp} GPUs (one vLLM engine per group)")
    ids = [g.strip() for g in visible.split(",") if g.strip()] if visible else [str(g) for g in range(gpus)]
    if len(ids) < gpus:
        raise ValueError(f"--gpus {gpus}, but CUDA_VISIBLE_DEVICES={visible} names {len(ids)} GPUs")
    return [ids[e * tp:(e + 1) * tp] for e in range(gpus // tp)]


def work_units(models: Sequence[tuple[str, str | None]], sizes: dict[str, int], cfg) -> list[Unit]:
    """Every (model, benchmark, chunk) of ``sizes`` (benchmark -> problems), chunked as the harness chunks."""
    units = []
    for model, revision in models:
        for name, n in sizes.items():
            k = samples_per_problem(get_spec(name), cfg)
            units += [Unit(model, revision, name, c, r.start, r.stop, len(r) * k)
                      for c, r in enumerate(fixed_chunks(n, cfg.chunk_problems))]
    return units


def deal(units: Sequence[Unit], engines: int) -> list[list[Unit]]:
    """Units onto ``engines``: largest first, each to the least loaded engine (ties: the lowest index); the
    busiest engine then carries at most the mean load plus one unit. Deterministic: a rerun deals the same."""
    shares: list[list[Unit]] = [[] for _ in range(engines)]
    loads = [0] * engines
    for unit in sorted(units, key=lambda u: (-u.cost, u.model, u.benchmark, u.chunk)):
        e = min(range(engines), key=lambda i: (loads[i], i))
        shares[e].append(unit)
        loads[e] += unit.cost
    return [sorted(s, key=lambda u: (u.model, u.benchmark, u.chunk)) for s in shares]


def split_table(shares: Sequence[Sequence[Unit]]) -> str:
    """The split as text: one line per engine and (model, benchmark; ``deal`` sorts by them), its chunks and
    problems, and the load."""
    lines = []
    for e, share in enumerate(shares):
        lines.append(f"engine {e}: {sum(u.cost for u in share)} samples")
        for (model, bench), group in itertools.groupby(share, key=lambda u: (u.model, u.benchmark)):
            units = list(group)
            spans = ", ".join(f"{u.first}-{u.last - 1}" for u in units)
            lines.append(f"  {model} {bench}: chunks {[u.chunk for u in units]} (problems {spans}; "
                         f"{sum(u.last - u.first for u in units)} problems)")
    return "\n".join(lines)
