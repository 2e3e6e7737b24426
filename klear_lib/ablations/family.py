"""One ablation family abstraction: experiments as data, and a ``Family`` that runs, reuses and reports them.

An experiment (``Experiment``) is pure data: its conditions, the paper's claim, the claimed pairs and the
benchmarks its verdict reads. A family (``sft.SFT``, ``rl.RL``, ``stability.STABILITY``) is an instance of
``Family``: its experiments, its scale per preset, its results table and the two things that differ between
families, how one condition is hashed and how one (condition, seed) is trained and evaluated (``run``). Everything
else lives here once: seeds, run names, which runs a stored table already holds under the current hash, the loop
that runs the missing ones (one table write per finished run, so a killed sweep resumes; optionally in worker
processes, with every file written by the parent process only), the aggregation order, the verdicts and the
summary/verdict files.
"""
from __future__ import annotations

import multiprocessing
import re
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from functools import partial
from operator import attrgetter
from pathlib import Path
from typing import Callable, Iterator, Mapping, Sequence

import pandas as pd
from tqdm.auto import tqdm

from klear_lib import tables
from klear_lib.ablations import table as T
from klear_lib.ablations import verdicts as V
from klear_lib.results import PROBLEMS, problems_csv

EVAL_KEEP = ["benchmark", "metric", "k", "mean", "stderr", "ci_low", "ci_high", "n_problems", "n_samples"]
NOT_IN_PAPER = "(beyond the paper)"  # paper_setting of a condition the paper does not run


@dataclass(frozen=True)
class ExternalClaim:
    """A claim another paper makes about two of an experiment's conditions (DGPO: GRPO beats GPPO), tested on the
    same runs; its numbers are rows of ``results/reported.csv`` under ``table``."""

    better: str
    worse: str
    table: str                                # "DGPO"
    settings: tuple[str, str]                 # its model_or_setting of ``better``, of ``worse``
    benchmark: str                            # its benchmark in reported.csv
    claim: str
    more_settings: tuple[tuple[str, str], ...] = ()  # further readings of the same claim (another model size)


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
    external: tuple[ExternalClaim, ...] = ()  # other papers' claims on these conditions

    @property
    def pairs(self) -> tuple[tuple[str, str], ...]:
        """Every claimed pair (better, worse): the paper's comparisons, then the external claims'."""
        return self.comparisons + tuple((c.better, c.worse) for c in self.external)

    def external_claim(self, better: str, worse: str) -> ExternalClaim | None:
        """The external claim on (better, worse), or None when the pair is the paper's."""
        return next((c for c in self.external if (c.better, c.worse) == (better, worse)), None)

    def condition(self, label: str):
        """The condition called ``label``; unknown labels raise ``KeyError`` listing the known ones."""
        found = [c for c in self.conditions if c.label == label]
        if not found:
            raise KeyError(f"{self.id} has no condition {label!r}; known: {[c.label for c in self.conditions]}")
        return found[0]


def file_safe(label: str) -> str:
    """``label`` with every run of characters outside ``[A-Za-z0-9_.-]`` replaced by '-'."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", label)


def run_name(family: str, group: str, label: str, seed: int) -> str:
    """``<family>/<group>/<label>-s<seed>`` (a run record's name under ``results/<preset>/runs/``)."""
    return f"{family}/{group}/{file_safe(label)}-s{seed}"


def result_rows(scores: pd.DataFrame, experiment: str, label: str, seed: int, cfg_hash: str,
                n_train: int) -> list[dict]:
    """Ablation table rows (``table.ABLATION``) from the ``eval_stage`` rows of one run."""
    return [{"experiment": experiment, "condition": label, "seed": int(seed), **{k: r[k] for k in EVAL_KEEP},
             "n_train": int(n_train), "config_hash": cfg_hash} for r in scores.to_dict("records")]


def problem_rows(counts: list[dict], experiment: str, label: str, seed: int, cfg_hash: str) -> list[dict]:
    """``results.PROBLEMS`` rows from the per-problem counts ``eval_stage`` collected for one run."""
    return [{"experiment": experiment, "condition": label, "seed": int(seed), **c, "config_hash": cfg_hash}
            for c in counts]


STORED = "stored"  # seeds="stored": the seeds a stored table holds in full (``Family.stored_seeds``)


def resolve_seeds(seeds: int | Sequence[int] | None, default: int) -> list[int]:
    """None -> ``default`` seeds; an int n -> 0..n-1; a list -> itself."""
    if seeds is None:
        seeds = default
    return list(range(seeds)) if isinstance(seeds, int) else [int(s) for s in seeds]


def mapped_benchmarks(scale, condition) -> tuple[str, ...]:
    """Each of the condition's miniature benchmarks, or what ``scale.benchmarks`` evaluates instead (at full: the
    paper's benchmarks)."""
    return tuple(b for name in condition.benchmarks for b in scale.benchmarks.get(name, (name,)))


def ablation_fields(condition, seed: int) -> dict:
    """The fields that name one run in the ablation table."""
    return {"experiment": condition.experiment, "condition": condition.label, "seed": int(seed)}


@dataclass(frozen=True)
class RunRows:
    """What a run returns: its rows of the family's table, of the side table where the family keeps one
    (``Family.side``), and its per-problem counts; all go back to the process that started the run, which writes
    every file, so parallel runs never share one."""

    rows: list[dict]                          # the family's table
    side: list[dict] = ()                     # the side table (the RL held-out curves)
    problems: list[dict] = ()                 # ``results.PROBLEMS`` rows of the run's final evaluation


def default_seeds(scale, experiment: str) -> int:
    """The seeds per arm of ``experiment``: the scale's default count."""
    return scale.seeds


@dataclass(frozen=True)
class Family:
    """An ablation family: a runner of conditions × seeds into rows of its table, reused by config hash.

    ``run(recipe, condition, seed, context)`` trains and evaluates one run and returns its table rows (a ``RunRows``
    where the family has a ``side`` table); ``setup(recipe, todo)`` builds the context the due runs share (data, the
    start checkpoint, its samples), only when a run is due, in this process. ``run`` must pickle (a module-level
    function) for ``workers`` > 1, and writes no file that another run of the sweep writes: the tables are written
    here. ``scale`` reads the family's sizes off the recipe's study (``klear_lib.configs.study``)."""

    name: str                                 # table stem and run-name prefix: "ablations_sft"
    title: str                                # in errors: "SFT"
    experiments: Mapping[str, Experiment]
    scale: Callable                           # Study -> the family's sizes (with ``seeds``, ``reduced``)
    condition_hash: Callable                  # (recipe, condition) -> hash of all but the seed
    run: Callable
    setup: Callable
    table: tables.Table = T.ABLATION
    summary: tables.Table = T.SUMMARY
    fields: Callable = ablation_fields        # (condition, seed) -> the run's fields of ``table.runs``
    group: Callable = attrgetter("experiment")  # condition -> the run name's middle part
    benchmarks: Callable = mapped_benchmarks  # (scale, condition) -> benchmarks a run is evaluated on
    conditions: Callable | None = None        # (scale) -> conditions, where the scale defines them (a grid)
    seeds_of: Callable = default_seeds        # (scale, experiment id) -> seeds per arm fixed before any row
    side: tables.Table | None = None          # a second table the runs add to (RL curves), beside the first
    side_suffix: str = ""                     # its file: "<table stem><side_suffix>.csv"
    stored_precision: bool = False            # True: a run's rows are returned as read back from the file
    identity: Callable | None = None          # (recipe, condition) -> what its runs are: equal values share runs

    def get_experiment(self, experiment: str | Experiment) -> Experiment:
        """An experiment by id (or itself); unknown ids raise ``KeyError`` listing the known ones."""
        if isinstance(experiment, Experiment):
            return experiment
        if experiment not in self.experiments:
            raise KeyError(f"unknown {self.title} ablation {experiment!r}; known: {sorted(self.experiments)}")
        return self.experiments[experiment]

    def get_scale(self, recipe):
        """The family's sizes in ``recipe``'s study; a preset without them raises ``KeyError``."""
        scale = self.scale(recipe.study)
        if scale is None:
            raise KeyError(f"preset {recipe.preset!r} runs no {self.title} ablation")
        return scale

    def conditions_for(self, recipe, experiment: str | Experiment) -> tuple:
        """The conditions run: the scale's grid, all, or (reduced) those of the first comparison."""
        scale = self.get_scale(recipe)
        if self.conditions is not None:
            return tuple(self.conditions(scale))
        exp = self.get_experiment(experiment)
        if not scale.reduced:
            return exp.conditions
        return tuple(c for c in exp.conditions if c.label in exp.comparisons[0])

    def benchmarks_at(self, recipe, condition) -> tuple[str, ...]:
        """The benchmarks a run of ``condition`` is evaluated on."""
        return self.benchmarks(self.get_scale(recipe), condition)

    def run_name(self, condition, seed: int) -> str:
        """``<family>/<experiment or group>/<label>-s<seed>`` (run record name; label made file-safe)."""
        return run_name(self.name, self.group(condition), condition.label, seed)

    def csv(self, results: Path) -> Path:
        """``<results>/<name>.csv`` (``results``: a recipe's ``results`` folder)."""
        return Path(results) / f"{self.name}.csv"

    def side_csv(self, path: Path | str) -> Path:
        """The side table's file beside the family's table ``path``: ``<stem><side_suffix>.csv``."""
        path = Path(path)
        return path.with_name(f"{path.stem}{self.side_suffix}.csv")

    def seeds(self, recipe, experiment: str | Experiment, seeds: int | Sequence[int] | str | None = None,
              path: Path | str | None = None) -> list[int]:
        """A notebook's ``SEEDS`` as seeds: None -> the seeds per arm the protocol fixes before any row is drawn
        (no seed is added after looking at a result: docs/design.md, "Verdicts"); an int n -> 0..n-1; a list ->
        itself; "stored" -> those stored in full (``stored_seeds``), so nothing trains."""
        exp = self.get_experiment(experiment)
        if seeds == STORED:
            return self.stored_seeds(recipe, exp, path)
        return resolve_seeds(seeds, self.seeds_of(self.get_scale(recipe), exp.id))

    def run_experiment(self, recipe, experiment: str | Experiment, seeds: int | Sequence[int] | str | None = None,
                       retrain: bool = False, path: Path | str | None = None, workers: int = 1,
                       conditions: Sequence | None = None) -> pd.DataFrame:
        """Every condition (default: ``conditions_for``) x seed (``seeds``) of ``experiment``, ``workers`` runs at
        a time; rows stored in ``path`` under the condition's current hash for every benchmark are reused unless
        ``retrain`` (checkpoints and samples in the artifact store are reused either way). Each finished run is
        written at once. Returns the rows of these runs under the current hashes, in table order."""
        exp, path = self.get_experiment(experiment), Path(path or self.csv(recipe.results))
        conds = self.conditions_for(recipe, exp) if conditions is None else tuple(conditions)
        seeds = (self.stored_seeds(recipe, exp, path, conds) if seeds == STORED
                 else self.seeds(recipe, exp, seeds))
        ids = {(c, s): self._run_key(recipe, c, s) for s in seeds for c in conds}  # seed-major: a cut sweep
        stored = tables.read(self.table, path)                                      # leaves whole paired seeds
        held = self._held(stored)
        todo = [(c, s) for (c, s), rid in ids.items()
                if retrain or not set(self.benchmarks_at(recipe, c)) <= held.get(rid, set())]
        stored = run_missing(todo, partial(self.run, recipe), partial(self._save, path), stored,
                             setup=partial(self.setup, recipe, todo), desc=f"{exp.id} runs", workers=workers)
        wanted = set(ids.values())
        mine = [rid in wanted for rid in tables.run_ids(self.table, stored, ("config_hash",))]
        return stored[mine].reset_index(drop=True)

    def _run_key(self, recipe, condition, seed: int) -> tuple:
        """A run's key in the stored table: its fields and its condition's current hash."""
        return tables.run_id(self.table, self.fields(condition, seed)) + (self.condition_hash(recipe, condition),)

    def _held(self, stored: pd.DataFrame) -> dict[tuple, set]:
        """Run key -> the benchmarks ``stored`` holds rows of."""
        held: dict[tuple, set] = {}
        for rid, bench in zip(tables.run_ids(self.table, stored, ("config_hash",)), stored.get("benchmark", [])):
            held.setdefault(rid, set()).add(bench)
        return held

    def stored_seeds(self, recipe, experiment: str | Experiment, path: Path | str | None = None,
                     conditions: Sequence | None = None) -> list[int]:
        """The seeds for which every condition (default: ``conditions_for``) of ``experiment`` is stored under its
        current hash, on every benchmark it reads: ``run_experiment`` on them trains nothing, so a notebook
        re-executed on them redraws its tables and figures from the stored rows. Raises ValueError where no seed
        is stored in full."""
        exp, path = self.get_experiment(experiment), Path(path or self.csv(recipe.results))
        conds = self.conditions_for(recipe, exp) if conditions is None else tuple(conditions)
        stored = tables.read(self.table, path)
        held = self._held(stored)
        seeds = [s for s in sorted({int(s) for s in stored.get("seed", [])})
                 if all(set(self.benchmarks_at(recipe, c)) <= held.get(self._run_key(recipe, c, s), set())
                        for c in conds)]
        if not seeds:
            raise ValueError(f"{path}: no seed of {exp.id} at {recipe.preset} has the rows of all its {len(conds)} "
                             f"conditions under their current config hash; run them first (seeds=None)")
        return seeds

    def _save(self, path: Path, stored: pd.DataFrame, rows: list[dict] | RunRows) -> pd.DataFrame:
        """``stored`` with one finished run's ``rows``, written to ``path`` at once (its side rows and per-problem
        counts first, so a killed sweep never holds table rows of a run whose other rows are missing: that run is
        simply redone)."""
        if isinstance(rows, RunRows):
            if rows.side and self.side is None:
                raise TypeError(f"{self.title} runs return side rows, but the family has no side table to hold them")
            if self.side is not None:
                tables.upsert_file(self.side, rows.side, self.side_csv(path))
            for exp, mine in pd.DataFrame(list(rows.problems)).groupby("experiment") if rows.problems else ():
                tables.upsert_file(PROBLEMS, mine, problems_csv(path.parent, exp))
            rows = rows.rows
        stored = tables.upsert(self.table, stored, rows)
        tables.write(self.table, stored, path)
        return tables.read(self.table, path) if self.stored_precision else stored

    def current_rows(self, recipe, path: Path | str | None = None) -> pd.DataFrame:
        """The stored rows run under the current config hash of their condition in ``recipe``."""
        df = tables.read(self.table, path or self.csv(recipe.results))
        hashes = {(e.id, c.label): self.condition_hash(recipe, c)
                  for e in self.experiments.values() for c in e.conditions}
        keep = [hashes.get((r.experiment, r.condition)) == r.config_hash for r in df.itertuples()]
        return df[keep].reset_index(drop=True)

    def aggregate(self, df: pd.DataFrame) -> pd.DataFrame:
        """Mean over seeds ± 95% t-interval per (experiment, condition, benchmark, metric); per-seed values kept;
        conditions in definition order."""
        return T.aggregate(df, [(e.id, c.label) for e in self.experiments.values() for c in e.conditions])
    def pairs(self, summary: pd.DataFrame, metric: str = "avg@k") -> pd.DataFrame:
        """One row per (experiment, claimed pair, benchmark) present in ``summary`` (from ``aggregate``): the
        difference paired by seed (or Welch's where the seeds differ) with its p. The pairs are the paper's
        comparisons, then other papers' claims on the same runs (``Experiment.external``). Verdicts are made from
        these once, for all claims together (``klear_lib.ablations.claims``)."""
        cells, out = V.by_cell(summary[summary["metric"] == metric]), []
        for exp in self.experiments.values():
            benches = sorted({b for (e, _, b) in cells if e == exp.id})
            for better, worse in exp.pairs:
                for bench in benches:
                    b, w = cells.get((exp.id, better, bench)), cells.get((exp.id, worse, bench))
                    if b and w:
                        out.append(V.comparison_row(exp, b, w))
        return pd.DataFrame(out, columns=V.PAIR_COLUMNS)

    def contrast(self, summary: pd.DataFrame, experiment: str, a: str, b: str,
                 metric: str = "avg@k") -> pd.DataFrame:
        """Condition ``a`` minus ``b`` per benchmark with its 95% interval over seeds (paired by seed where both ran
        the same seeds, else Welch's; the ``test`` column says which): a comparison that is no paper claim, so it
        carries no verdict. Benchmarks where either condition is missing are skipped."""
        exp, cells = self.get_experiment(experiment), V.by_cell(summary[summary["metric"] == metric])
        rows = [V.comparison_row(exp, cells[(e, c, bench)], cells[(e, b, bench)])
                for (e, c, bench) in cells if e == exp.id and c == a and (e, b, bench) in cells]
        return pd.DataFrame(rows, columns=V.PAIR_COLUMNS)

    def side_by_side(self, summary: pd.DataFrame, reported: pd.DataFrame, metric: str = "avg@k") -> pd.DataFrame:
        """Our mean ± 95% CI (in %) per condition and benchmark beside the paper's value of the same setting."""
        rows = []
        for r in summary[summary["metric"] == metric].to_dict("records"):
            exp = self.experiments[r["experiment"]]
            rows.append({"experiment": r["experiment"], "condition": r["condition"], "benchmark": r["benchmark"],
                         "n_seeds": r["n_seeds"], "ours_pct": 100 * r["mean"], "ci_low_pct": 100 * r["ci_low"],
                         "ci_high_pct": 100 * r["ci_high"],
                         "paper_setting": exp.condition(r["condition"]).paper_setting,
                         "paper_benchmark": V.analogue(r["benchmark"]),
                         "paper_pct": V.paper_value(reported, exp, r["condition"], r["benchmark"])})
        return pd.DataFrame(rows)

    def write_reports(self, summary: pd.DataFrame, results: Path, pairs: pd.DataFrame | None = None) -> list[Path]:
        """``<name>_summary.csv`` (per-seed values ';'-joined) and, given ``pairs``, ``<name>_pairs.csv`` beside
        the family's table in ``results``; rows as given, floats at the table's precision."""
        base = self.csv(results)
        paths = [tables.write(self.summary, T.flat(summary), base.with_name(f"{base.stem}_summary.csv"))]
        if pairs is not None:
            paths.append(tables.write(V.PAIRS, pairs, base.with_name(f"{base.stem}_pairs.csv")))
        return paths


def run_missing(todo: Sequence[tuple], run: Callable, save: Callable, stored, setup: Callable | None = None,
                desc: str = "runs", workers: int = 1):
    """Run every (condition, seed) of ``todo``: ``run(condition, seed, context)`` gives rows, ``save(stored, rows)``
    stores them at once and returns the new table. ``setup()`` builds the shared context only if a run is due.

    ``workers`` > 1 runs that many runs at a time in fresh (spawned) processes; ``run`` and the context must then
    pickle (a module-level function or a ``functools.partial`` of one), and a script calling this must guard its
    entry point with ``if __name__ == "__main__":`` (spawned workers re-import it). Rows are saved as runs finish,
    by this process only, so a killed sweep still resumes."""
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
    pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"))
    try:
        yield from (f.result() for f in as_completed([pool.submit(run, c, s, context) for c, s in todo]))
    finally:  # a failed run stops the sweep: runs not yet started are cancelled, not left to finish
        pool.shutdown(cancel_futures=True)
