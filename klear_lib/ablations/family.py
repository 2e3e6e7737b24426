"""One ablation family abstraction: experiments as data, and a ``Family`` that runs, reuses and compares them.

An experiment (``Experiment``) is pure data: its conditions, the paper's claim, the claimed pairs and the
benchmarks its verdict reads. A family (``sft.SFT``, ``rl.RL``, ``stability.STABILITY``) is a ``Family``: a runner
of conditions × seeds into rows of its table, reused where the table holds them under the condition's identity
(``run_key``: the config hash of every stage config its runs use, and what no config holds), then seed-paired
comparisons of the claimed pairs. A family brings what differs: its run (``run``, ``setup``), its identity
(``key``) and its benchmarks; everything else lives here once.
"""
from __future__ import annotations

import hashlib
import json
import multiprocessing
import re
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, is_dataclass, replace
from functools import partial
from pathlib import Path
from typing import Callable, Iterable, Mapping, Sequence

import pandas as pd
from tqdm.auto import tqdm

from klear_lib import tables
from klear_lib.ablations import table as T
from klear_lib.ablations import verdicts as V
from klear_lib.configs import config_hash, to_dict
from klear_lib.results import ANALOGUE, PROBLEMS, problems_csv

EVAL_KEEP = ["benchmark", "metric", "k", "mean", "stderr", "ci_low", "ci_high", "n_problems", "n_samples"]
NOT_IN_PAPER = "(beyond the paper)"  # paper_setting of a condition the paper does not run
STORED = "stored"  # seeds="stored": the seeds a stored table holds in full (``Family.stored_seeds``)


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
    verdict reads. Conditions are frozen records with ``experiment``, ``label``, ``benchmarks`` and
    ``paper_setting`` (``Named``)."""

    id: str
    table: str                                # "Table 2", "Figure 3" (as in results/reported.csv)
    claim: str
    conditions: tuple
    comparisons: tuple[tuple[str, str], ...]
    primary: tuple[str, ...]                  # benchmarks the experiment-level verdict reads
    external: tuple[ExternalClaim, ...] = ()  # other papers' claims on these conditions
    extra: tuple = ()                         # controls run only where a scale names them (``RLScale.arms``)

    @property
    def pairs(self) -> tuple[tuple[str, str], ...]:
        """Every claimed pair (better, worse): the paper's comparisons, then the external claims'."""
        return self.comparisons + tuple((c.better, c.worse) for c in self.external)

    def external_claim(self, better: str, worse: str) -> ExternalClaim | None:
        """The external claim on (better, worse), or None when the pair is the paper's."""
        return next((c for c in self.external if (c.better, c.worse) == (better, worse)), None)

    def condition(self, label: str):
        """The condition called ``label``; unknown labels raise ``KeyError`` listing the known ones."""
        known = {c.label: c for c in self.conditions + self.extra}
        if label not in known:
            raise KeyError(f"{self.id} has no condition {label!r}; known: {list(known)}")
        return known[label]


class Named:
    """What names a condition's runs: ``experiment`` and ``label`` (a base of every family's condition record)."""

    @property
    def group(self) -> str:
        """The run name's middle part."""
        return self.experiment

    def fields(self, seed: int) -> dict:
        """The fields that name one run of this condition in its family's table."""
        return {"experiment": self.experiment, "condition": self.label, "seed": int(seed)}


def run_key(**parts) -> str:
    """A condition's identity, the seed aside: a stable hash of ``parts``, where every config (a dataclass, e.g. a
    stage config of the run's recipe after its overrides, at seed 0) stands as its ``config_hash`` (also inside
    dicts), beside what no config holds (the rows' rule, benchmarks, the start checkpoint's configs)."""
    def hashed(value):
        if is_dataclass(value):
            return config_hash(value)
        return {k: hashed(v) for k, v in value.items()} if isinstance(value, dict) else value
    return hashlib.sha256(json.dumps(hashed(parts), sort_keys=True, default=list).encode()).hexdigest()[:12]


def stage_configs(run) -> dict:
    """The configs every run starts from, in ``run`` (a Recipe): model, data, SFT and eval, by stage name."""
    return {"sft": run.sft, "eval": run.eval, "data": run.data, "model": run.model}


def rule(condition) -> dict:
    """``condition`` as data without its text (claim and paper setting): the part of it its identity holds."""
    return {k: v for k, v in to_dict(condition).items() if k not in ("claim", "paper_setting")}


def run_name(family: str, group: str, label: str, seed: int) -> str:
    """``<family>/<group>/<label>-s<seed>`` (a run record's name under ``results/<preset>/runs/``), every run of
    characters of ``label`` outside ``[A-Za-z0-9_.-]`` replaced by '-'."""
    return f"{family}/{group}/{re.sub(r'[^A-Za-z0-9_.-]+', '-', label)}-s{seed}"


def tagged(records: Iterable[Mapping], fields: Mapping, cfg_hash: str, keep: Sequence[str] | None = None,
           **extra) -> list[dict]:
    """Table rows of one run: its ``fields``, ``keep`` of each of ``records`` (default: all), ``extra`` and its
    config hash (``eval_stage`` rows -> ablation rows with ``keep=EVAL_KEEP``; per-problem counts -> PROBLEMS)."""
    return [{**fields, **{k: r[k] for k in (keep or r)}, **extra, "config_hash": cfg_hash} for r in records]


def mapped_benchmarks(scale, condition) -> tuple[str, ...]:
    """Each of the condition's miniature benchmarks, or what ``scale.benchmarks`` evaluates instead (at full: the
    paper's benchmarks)."""
    return tuple(b for name in condition.benchmarks for b in scale.benchmarks.get(name, (name,)))


def primary_benchmarks(experiments: Mapping[str, Experiment], scale, condition) -> tuple[str, ...]:
    """A family's ``benchmarks`` (bound to its ``experiments`` with ``partial``): the condition's own, or its
    experiment's primary ones where the scale says so (``primary_only``), each as ``mapped_benchmarks`` maps it."""
    if condition.experiment in scale.primary_only:
        condition = replace(condition, benchmarks=experiments[condition.experiment].primary)
    return mapped_benchmarks(scale, condition)


@dataclass(frozen=True)
class RunRows:
    """What a run returns: its rows of the family's table, of the side table where the family keeps one
    (``Family.side``), and its per-problem counts; all go back to the process that started the run, which writes
    every file, so parallel runs never share one."""

    rows: list[dict]                          # the family's table
    side: list[dict] = ()                     # the side table (the RL held-out curves)
    problems: list[dict] = ()                 # ``results.PROBLEMS`` rows of the run's final evaluation


@dataclass(frozen=True)
class Family:
    """An ablation family: a runner of conditions × seeds into rows of its table, reused by condition identity.

    ``run(recipe, condition, seed, context)`` trains and evaluates one run and returns its rows (a ``RunRows``);
    ``setup(recipe, todo, workers=...)`` builds the context the due runs share (data, the start checkpoint), only
    when a run is due, from this process (it may use ``workers`` processes). ``run`` must pickle (a module-level
    function) for ``workers`` > 1 and writes no file another run writes: the tables are written here.
    ``key(recipe, condition)`` is the condition's ``run_key``."""

    name: str                                 # table stem, run-name prefix and ``Study`` field: "ablations_sft"
    experiments: Mapping[str, Experiment]
    study: str                                # the ``Study`` field of the family's sizes: "sft_ablations"
    key: Callable                             # (recipe, condition) -> its identity (``run_key``)
    run: Callable
    setup: Callable
    benchmarks: Callable = mapped_benchmarks  # (scale, condition) -> benchmarks a run is evaluated on
    table: tables.Table = T.ABLATION
    summary: tables.Table = T.SUMMARY
    side: tables.Table | None = None          # a second table the runs add to (RL curves), ``side_csv``
    trains_as: Callable | None = None         # (recipe, condition) -> what it trains: equal values share runs

    def get_experiment(self, experiment: str | Experiment) -> Experiment:
        """An experiment by id (or itself); unknown ids raise ``KeyError`` listing the known ones."""
        if isinstance(experiment, Experiment):
            return experiment
        if experiment not in self.experiments:
            raise KeyError(f"unknown {self.name} experiment {experiment!r}; known: {sorted(self.experiments)}")
        return self.experiments[experiment]

    def get_scale(self, recipe, experiment: str | None = None):
        """The family's sizes in ``recipe``'s study, as ``experiment``'s runs see them where given and the scale has
        overrides per experiment (``SFTScale.at``); a preset without them raises ``KeyError``."""
        scale = getattr(recipe.study, self.study)
        if scale is None:
            raise KeyError(f"preset {recipe.preset!r} runs no {self.name}")
        return scale.at(experiment) if experiment is not None and hasattr(scale, "at") else scale

    def conditions_for(self, recipe, experiment: str | Experiment) -> tuple:
        """The conditions run: those the scale names (``RLScale.arms``, ``SFTScale.arms``: an experiment it does not
        name runs none), else all, or (a reduced scale) those of the first comparison."""
        exp, scale = self.get_experiment(experiment), self.get_scale(recipe)
        if getattr(scale, "arms", {}):
            return tuple(exp.condition(label) for label in scale.arms.get(exp.id, ()))
        return tuple(c for c in exp.conditions if not scale.reduced or c.label in exp.comparisons[0])

    def benchmarks_at(self, recipe, condition) -> tuple[str, ...]:
        """The benchmarks a run of ``condition`` is evaluated on."""
        # a stability cell belongs to no experiment
        return self.benchmarks(self.get_scale(recipe, getattr(condition, "experiment", None)), condition)

    def run_name(self, condition, seed: int) -> str:
        """``<family>/<experiment or group>/<label>-s<seed>`` (run record name; label made file-safe)."""
        return run_name(self.name, condition.group, condition.label, seed)

    def csv(self, results: Path) -> Path:
        """``<results>/<name>.csv`` (``results``: a recipe's ``results`` folder)."""
        return Path(results) / f"{self.name}.csv"

    def seeds(self, recipe, experiment: str | Experiment, seeds: int | Sequence[int] | str | None = None,
              path: Path | str | None = None, conditions: Sequence | None = None) -> list[int]:
        """A notebook's ``SEEDS`` as seeds: None -> the seeds per arm the protocol fixes before any row is drawn
        (no seed is added after looking at a result: docs/design.md, "Verdicts"); an int n -> 0..n-1; a list ->
        itself; "stored" -> those stored in full (``stored_seeds``), so nothing trains."""
        exp, scale = self.get_experiment(experiment), self.get_scale(recipe)
        if seeds == STORED:
            return self.stored_seeds(recipe, exp, path, conditions)
        if seeds is None:  # RL fixes the seeds per experiment (``RLScale.fixed_seeds``)
            seeds = getattr(scale, "fixed_seeds", {}).get(exp.id, scale.seeds)
        return list(range(seeds)) if isinstance(seeds, int) else [int(s) for s in seeds]

    def _held(self, recipe, conds: Sequence, seeds: Sequence[int], path: Path) -> tuple[pd.DataFrame, dict]:
        """The stored table at ``path``, and for each (condition, seed): its run's key and whether the table holds
        its rows under the condition's identity on every benchmark the run reads."""
        stored, held = tables.read(self.table, path), {}
        for rid, bench in zip(tables.run_ids(self.table, stored, ("config_hash",)), stored.get("benchmark", [])):
            held.setdefault(rid, set()).add(bench)
        ids = {(c, s): tables.run_id(self.table, c.fields(s)) + (self.key(recipe, c),) for s in seeds for c in conds}
        return stored, {cs: (rid, set(self.benchmarks_at(recipe, cs[0])) <= held.get(rid, set()))
                        for cs, rid in ids.items()}  # seed-major: a cut sweep leaves whole paired seeds

    def stored_seeds(self, recipe, experiment: str | Experiment, path: Path | str | None = None,
                     conditions: Sequence | None = None) -> list[int]:
        """The seeds for which every condition (default: ``conditions_for``) of ``experiment`` is stored under its
        current identity, on every benchmark it reads: ``run_experiment`` on them trains nothing, so a notebook
        re-executed on them redraws its tables and figures from the stored rows. Raises ValueError where no seed
        is stored in full."""
        exp, path = self.get_experiment(experiment), Path(path or self.csv(recipe.results))
        conds = self.conditions_for(recipe, exp) if conditions is None else tuple(conditions)
        stored = sorted({int(s) for s in tables.read(self.table, path).get("seed", [])})
        held = self._held(recipe, conds, stored, path)[1]
        seeds = [s for s in stored if all(held[(c, s)][1] for c in conds)]
        if not seeds:
            raise ValueError(f"{path}: no seed of {exp.id} at {recipe.preset} has the rows of all its {len(conds)} "
                             f"conditions under their current config hash; run them first (seeds=None)")
        return seeds

    def run_experiment(self, recipe, experiment: str | Experiment, seeds: int | Sequence[int] | str | None = None,
                       retrain: bool = False, path: Path | str | None = None, workers: int = 1,
                       conditions: Sequence | None = None) -> pd.DataFrame:
        """Every condition (default: ``conditions_for``) x seed (``seeds``) of ``experiment``, ``workers`` runs at
        a time; rows stored in ``path`` under the condition's identity for every benchmark are reused unless
        ``retrain`` (checkpoints and samples in the artifact store are reused either way). Each finished run is
        written at once. Returns the rows of these runs as stored, in table order."""
        exp, path = self.get_experiment(experiment), Path(path or self.csv(recipe.results))
        conds = self.conditions_for(recipe, exp) if conditions is None else tuple(conditions)
        seeds = self.seeds(recipe, exp, seeds, path, conds)
        stored, held = self._held(recipe, conds, seeds, path)
        todo = [cs for cs, (_, ok) in held.items() if retrain or not ok]
        stored = run_missing(todo, partial(self.run, recipe), partial(self._save, path), stored,
                             setup=partial(self.setup, recipe, todo, workers=workers), desc=f"{exp.id} runs",
                             workers=workers)
        wanted = {rid for rid, _ in held.values()}
        mine = [rid in wanted for rid in tables.run_ids(self.table, stored, ("config_hash",))]
        return stored[mine].reset_index(drop=True)

    def _save(self, path: Path, stored: pd.DataFrame, rows: RunRows) -> pd.DataFrame:
        """``stored`` with one finished run's rows, written to ``path`` at once and read back (its side rows and
        per-problem counts first, so a killed sweep never holds table rows of a run whose other rows are missing:
        that run is simply redone)."""
        rows = rows if isinstance(rows, RunRows) else RunRows(rows)
        if self.side is not None:
            tables.upsert_file(self.side, rows.side, side_csv(path))
        for exp, mine in pd.DataFrame(list(rows.problems)).groupby("experiment") if rows.problems else ():
            tables.upsert_file(PROBLEMS, mine, problems_csv(path.parent, exp))
        tables.write(self.table, tables.upsert(self.table, stored, rows.rows), path)
        return tables.read(self.table, path)

    def current_rows(self, recipe, path: Path | str | None = None) -> pd.DataFrame:
        """The stored rows run under the current identity of their condition in ``recipe``."""
        df = tables.read(self.table, path or self.csv(recipe.results))
        keys = {(e.id, c.label): self.key(recipe, c) for e in self.experiments.values()
                for c in e.conditions + e.extra}
        keep = [keys.get((r.experiment, r.condition)) == r.config_hash for r in df.itertuples()]
        return df[keep].reset_index(drop=True)

    def aggregate(self, df: pd.DataFrame) -> pd.DataFrame:
        """Mean over seeds ± 95% t-interval per (experiment, condition, benchmark, metric); per-seed values kept;
        conditions in definition order."""
        return T.aggregate(df, [(e.id, c.label) for e in self.experiments.values() for c in e.conditions + e.extra])

    def pairs(self, summary: pd.DataFrame, metric: str = "avg@k") -> pd.DataFrame:
        """One row per (experiment, claimed pair, benchmark) present in ``summary`` (from ``aggregate``): the
        difference paired by seed (or Welch's where the seeds differ) with its p. The pairs are the paper's
        comparisons, then other papers' claims on the same runs (``Experiment.external``). Verdicts are made from
        these once, for all claims together (``klear_lib.ablations.claims``)."""
        out = [self.contrast(summary, e.id, b, w, metric) for e in self.experiments.values() for b, w in e.pairs]
        return pd.concat([df for df in out if len(df)] or out[:1], ignore_index=True)

    def contrast(self, summary: pd.DataFrame, experiment: str, a: str, b: str,
                 metric: str = "avg@k") -> pd.DataFrame:
        """Condition ``a`` minus ``b`` per benchmark with its 95% interval over seeds (paired by seed where both ran
        the same seeds, else Welch's; the ``test`` column says which); benchmarks where either is missing are
        skipped. For a pair that is no claim it carries no verdict."""
        exp, cells = self.get_experiment(experiment), V.by_cell(summary[summary["metric"] == metric])
        rows = [V.comparison_row(exp, cells[(e, c, bench)], cells[(e, b, bench)])
                for (e, c, bench) in cells if e == exp.id and c == a and (e, b, bench) in cells]
        return pd.DataFrame(rows, columns=V.PAIR_COLUMNS + list(tables.PROVENANCE))

    def side_by_side(self, summary: pd.DataFrame, reported: pd.DataFrame, metric: str = "avg@k") -> pd.DataFrame:
        """Our mean ± 95% CI (in %) per condition and benchmark beside the paper's value of the same setting."""
        rows = []
        for r in summary[summary["metric"] == metric].to_dict("records"):
            exp, paper = self.experiments[r["experiment"]], ANALOGUE.get(r["benchmark"], r["benchmark"])
            setting = exp.condition(r["condition"]).paper_setting
            rows.append({"experiment": r["experiment"], "condition": r["condition"], "benchmark": r["benchmark"],
                         "n_seeds": r["n_seeds"], "ours_pct": 100 * r["mean"], "ci_low_pct": 100 * r["ci_low"],
                         "ci_high_pct": 100 * r["ci_high"], "paper_setting": setting, "paper_benchmark": paper,
                         "paper_pct": V.reported_value(reported, exp.table, setting, paper)})
        return pd.DataFrame(rows)

    def write_reports(self, summary: pd.DataFrame, results: Path, pairs: pd.DataFrame | None = None) -> list[Path]:
        """``<name>_summary.csv`` (per-seed values ';'-joined) and, given ``pairs``, ``<name>_pairs.csv`` beside
        the family's table in ``results``; rows as given, floats at the table's precision."""
        base = self.csv(results)
        paths = [tables.write(self.summary, T.flat(summary), base.with_name(f"{base.stem}_summary.csv"))]
        if pairs is not None:
            paths.append(tables.write(V.PAIRS, pairs, base.with_name(f"{base.stem}_pairs.csv")))
        return paths


def side_csv(path: Path | str) -> Path:
    """The side table's file beside a family's table ``path``: ``<stem>_curves.csv``."""
    return Path(path).with_name(f"{Path(path).stem}_curves.csv")


def run_missing(todo: Sequence[tuple], run: Callable, save: Callable, stored, setup: Callable | None = None,
                desc: str = "runs", workers: int = 1):
    """Run every (condition, seed) of ``todo``: ``run(condition, seed, context)`` gives rows, ``save(stored, rows)``
    stores them at once and returns the new table. ``setup()`` builds the shared context only if a run is due.

    ``workers`` > 1 runs that many runs at a time in fresh (spawned) processes; ``run`` and the context must then
    pickle (a module-level function or a ``functools.partial`` of one), and a script calling this must guard its
    entry point with ``if __name__ == "__main__":`` (spawned workers re-import it). Rows are saved as runs finish,
    by this process only, so a killed sweep still resumes."""
    context = setup() if todo and setup else None
    pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) if workers > 1 else None
    results = ((run(cond, seed, context) for cond, seed in todo) if pool is None else
               (f.result() for f in as_completed([pool.submit(run, c, s, context) for c, s in todo])))
    try:
        for rows in tqdm(results, total=len(todo), desc=desc, unit="run", disable=not todo):
            stored = save(stored, rows)
    finally:  # a failed run stops the sweep: runs not yet started are cancelled, not left to finish
        if pool is not None:
            pool.shutdown(cancel_futures=True)
    return stored
