"""What every ablation family shares: the experiment record, seeds, run names, result rows, the reuse loop over
stored rows, and the report files.

An ablation family (``sft``, ``rl``, ``stability``) defines its conditions as data and a ``run(condition, seed,
context)`` that trains and evaluates one run; this module decides which runs are missing from a results table,
runs them (one table write per finished run, so a killed sweep resumes) and writes the summaries.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Iterator, Sequence

import pandas as pd
from tqdm.auto import tqdm

from klear_lib.ablations import table

EVAL_KEEP = ["benchmark", "metric", "k", "mean", "stderr", "ci_low", "ci_high", "n_problems", "n_samples"]


@dataclass(frozen=True)
class Experiment:
    """A paper table or figure: its conditions, the pairs (claimed better, claimed worse) and the benchmarks a
    verdict reads. Conditions are any frozen records with ``label``, ``benchmarks`` and ``paper_setting``."""

    id: str
    table: str                                # "Table 2", "Figure 3" (as in results/reported.csv)
    claim: str
    conditions: tuple
    comparisons: tuple[tuple[str, str], ...]
    primary: tuple[str, ...]                  # benchmarks the experiment-level verdict reads

    def condition(self, label: str):
        """The condition called ``label``; unknown labels raise ``KeyError`` listing the known ones."""
        found = [c for c in self.conditions if c.label == label]
        if not found:
            raise KeyError(f"{self.id} has no condition {label!r}; known: {[c.label for c in self.conditions]}")
        return found[0]


def get_experiment(experiments: dict, experiment, family: str) -> Experiment:
    """``experiments[experiment]`` (or ``experiment`` itself); unknown ids raise ``KeyError`` listing the known."""
    if isinstance(experiment, Experiment):
        return experiment
    if experiment not in experiments:
        raise KeyError(f"unknown {family} ablation {experiment!r}; known: {sorted(experiments)}")
    return experiments[experiment]


def mapped_benchmarks(benchmarks: Sequence[str], mapping: dict) -> tuple[str, ...]:
    """Each miniature benchmark, or what ``mapping`` evaluates instead (at full: the paper's benchmarks)."""
    return tuple(b for name in benchmarks for b in mapping.get(name, (name,)))


def resolve_seeds(seeds: int | Sequence[int] | None, default: int) -> list[int]:
    """None -> ``default`` seeds; an int n -> 0..n-1; a list -> itself."""
    if seeds is None:
        seeds = default
    return list(range(seeds)) if isinstance(seeds, int) else [int(s) for s in seeds]


def reduced(experiment: Experiment, is_reduced: bool) -> tuple:
    """All conditions, or (reduced scale) only those of the experiment's first comparison."""
    if not is_reduced:
        return experiment.conditions
    return tuple(c for c in experiment.conditions if c.label in experiment.comparisons[0])


def file_safe(label: str) -> str:
    """``label`` with every run of characters outside ``[A-Za-z0-9_.-]`` replaced by '-'."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", label)


def run_name(family: str, experiment: str, label: str, seed: int) -> str:
    """``<family>/<experiment>/<label>-s<seed>`` (the run record's name under ``results/<preset>/runs/``)."""
    return f"{family}/{experiment}/{file_safe(label)}-s{seed}"


def result_rows(scores: pd.DataFrame, experiment: str, label: str, seed: int, cfg_hash: str,
                n_train: int) -> list[dict]:
    """Ablation table rows (``klear_lib.ablations.table`` schema) from the ``eval_stage`` rows of one run."""
    return [{"experiment": experiment, "condition": label, "seed": int(seed), **{k: r[k] for k in EVAL_KEEP},
             "n_train": int(n_train), "config_hash": cfg_hash} for r in scores.to_dict("records")]


def run_missing(pairs: Iterable[tuple], stored, is_done: Callable, run: Callable, save: Callable,
                setup: Callable | None = None, retrain: bool = False, desc: str = "runs", workers: int = 1):
    """Run every (condition, seed) of ``pairs`` that ``is_done(stored, condition, seed)`` denies (all of them when
    ``retrain``): ``run(condition, seed, context)`` gives rows, ``save(stored, rows)`` stores them at once and
    returns the new table. ``setup()`` builds the shared context (data, start checkpoint) only if a run is due.

    ``workers`` > 1 runs that many runs at a time in fresh (spawned) processes; ``run`` and the context must then
    pickle (a module-level function or a ``functools.partial`` of one), and a script calling this must guard its
    entry point with ``if __name__ == "__main__":`` (spawned workers re-import it). Rows are saved as runs finish,
    by this process only, so a killed sweep still resumes."""
    todo = [(c, s) for c, s in pairs if retrain or not is_done(stored, c, s)]
    context = setup() if todo and setup else None
    for rows in tqdm(_results(todo, run, context, workers), total=len(todo), desc=desc, unit="run",
                     disable=not todo):
        stored = save(stored, rows)
    return stored


def _results(todo: Sequence[tuple], run: Callable, context, workers: int) -> Iterator[list]:
    """The rows of each (condition, seed) of ``todo``: in order here, or as they finish in ``workers`` processes."""
    if workers <= 1:
        yield from (run(cond, seed, context) for cond, seed in todo)
        return
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed

    pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"))
    try:
        yield from (f.result() for f in as_completed([pool.submit(run, c, s, context) for c, s in todo]))
    finally:  # a failed run stops the sweep: runs not yet started are cancelled, not left to finish
        pool.shutdown(cancel_futures=True)


def run_table(path: Path, experiment: Experiment, conditions: Sequence, seeds: Sequence[int], hashes: dict,
              benchmarks: dict, run: Callable, setup: Callable | None = None, retrain: bool = False,
              workers: int = 1) -> pd.DataFrame:
    """``run_missing`` over an ablation table at ``path`` (rows reused when stored under the condition's hash for
    every benchmark), ``workers`` runs at a time; returns this experiment's rows for ``seeds`` under the current
    hashes."""
    def is_done(stored, cond, seed):
        return table.has_run(stored, experiment.id, cond.label, seed, hashes[cond.label], benchmarks[cond.label])

    def save(stored, rows):
        stored = table.upsert(stored, rows)
        table.write(stored, path)
        return stored

    pairs = [(c, s) for c in conditions for s in seeds]
    stored = run_missing(pairs, table.read(path), is_done, run, save, setup, retrain, desc=f"{experiment.id} runs",
                         workers=workers)
    mine = [(r.experiment == experiment.id and hashes.get(r.condition) == r.config_hash and int(r.seed) in seeds)
            for r in stored.itertuples()]
    return stored[mine].reset_index(drop=True)


def write_reports(summary: pd.DataFrame, pairs: pd.DataFrame, base: Path) -> list[Path]:
    """``<base>_summary.csv`` (mean ± 95% CI over seeds, per-seed values) and ``<base>_verdicts.csv`` beside the
    table ``base``; rows as given, floats at fixed precision."""
    base = Path(base)
    paths = [base.with_name(f"{base.stem}_summary.csv"), base.with_name(f"{base.stem}_verdicts.csv")]
    for df, path in zip((table.flat(summary), pairs), paths):
        df.to_csv(path, index=False, float_format=table.FLOAT_FORMAT, lineterminator="\n")
    return paths
