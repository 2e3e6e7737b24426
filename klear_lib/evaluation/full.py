"""The released checkpoints evaluated at one length budget, data-parallel over GPUs (docs/paper.md §4).

    python -m klear_lib.evaluation.full --budget 32k|64k --gpus N [--tp T] --out DIR [--models ID[@REV] ...]
        [--benchmarks NAME ...] [--official-sampling] [--set KEY=VALUE ...] [--dry-run]

The config is ``configs.eval.budget_config``: the ``full`` preset with the budget's lengths (64K: YaRN x2.5), the
paper's T = 0.6 / top_p = 0.95 pinned, ``--official-sampling`` adding the released script's top_k = 20 and
repetition penalty 1.05. ``--gpus N --tp T`` makes N/T engines of T GPUs each (T defaults to the config's 2). The
problems are dealt to the engines ahead of time in fixed chunks (``dp_plan``); each engine is a process of this
module (``--engine E --plan PLAN``) on its own GPUs, running ``harness.evaluate`` chunk by chunk, one vLLM engine
at a time (``klear_lib.generation`` starts one per chunk). A chunk's samples do not depend on which
engine drew them, so a rerun with any layout resumes from what is stored. Under ``DIR/<budget>-<config hash>/``:

* ``plan.json`` — the config, the engines, the split; ``rows/<benchmark>.jsonl`` — the problems, loaded once;
* ``raw/chunk-NNNN/<model>__<benchmark>__<hash>.samples.jsonl`` — every raw sample with its verdict, per chunk;
* ``samples/<model>__<benchmark>.samples.jsonl`` — the chunks merged; ``eval.csv`` — avg@k and pass@k (EVAL
  schema, keyed by the config hash); ``logs/engine-E.log``.

``--dry-run`` prints the config, each engine's command and the split, and runs nothing: problem counts come from
``rows/`` when a run wrote them, else the registry (``Source.problems``); a benchmark of unknown size (LiveCodeBench
v6) is left out of a dry run's split and dealt once loaded.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import os
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
from tqdm.auto import tqdm

from klear_lib import artifacts, tables
from klear_lib.configs import config_hash, recipe, to_dict
from klear_lib.configs.base import parse_overrides
from klear_lib.configs.eval import BUDGETS, OFFICIAL_SAMPLING, budget_config
from klear_lib.data.schema import dumps_rows
from klear_lib.data.store import read_jsonl
from klear_lib.evaluation import dp_plan
from klear_lib.evaluation.benchmarks import get_spec, load_rows, samples_per_problem
from klear_lib.evaluation.checkpoints import checkpoint_label
from klear_lib.evaluation.harness import evaluate, parse_samples, sample_key, samples_path, stored_chunk, summarize
from klear_lib.generation import rewrite_samples
from klear_lib.results import EVAL

log = logging.getLogger(__name__)
POLL_S = 30  # seconds between progress checks of the engines' sample files
# Set by the command's own flags, or the paper's sampling (docs/paper.md §4): refused in --set.
FLAGS = {**dict.fromkeys(BUDGETS["32k"], "--budget"), **dict.fromkeys(OFFICIAL_SAMPLING, "--official-sampling"),
         "tensor_parallel_size": "--tp", "temperature": "nothing (the paper's 0.6)",
         "top_p": "nothing (the paper's 0.95)", "models": "--models", "model_revisions": "--models",
         "benchmarks": "--benchmarks"}


def eval_config(budget: str, official: bool, tp: int | None, overrides: dict):
    """The budget's config with ``--tp`` and ``--set``; a key that a flag or the paper sets raises naming it."""
    if taken := sorted(set(overrides) & set(FLAGS)):
        raise ValueError("--set " + ", ".join(f"{k} is set by {FLAGS[k]}" for k in taken))
    return budget_config(budget, official, **overrides, **({"tensor_parallel_size": tp} if tp else {}))


def run_root(out: str | Path, budget: str, cfg) -> Path:
    """``DIR/<budget>-<config hash>``: another config (chunking, sampling, TP) never mixes its samples in."""
    return Path(out) / f"{budget}-{config_hash(cfg)}"


def rows_path(root: Path, name: str) -> Path:
    return root / "rows" / f"{name}.jsonl"


def problem_sizes(root: Path, names, load: bool) -> tuple[dict[str, int], dict[str, str]]:
    """Problems per benchmark, from ``rows/`` or, with ``load``, the data loaders (then written to ``rows/``);
    without ``load``, the registered sizes. Notes say where each count came from when not from ``rows/``."""
    sizes, notes = {}, {}
    for name in names:
        path = rows_path(root, name)
        if not path.exists() and load:
            path.parent.mkdir(parents=True, exist_ok=True)
            with artifacts.replacing(path) as tmp:
                tmp.write_text(dumps_rows(load_rows(name, recipe("full"))))
        if path.exists():
            sizes[name] = len(read_jsonl(path))
        elif (n := get_spec(name).problems) is not None:
            sizes[name], notes[name] = n, "registered size (Source.problems); not loaded yet"
        else:
            notes[name] = "size unknown until loaded (UNVERIFIED in the registry): left out of this split"
    return sizes, notes


def make_plan(args, cfg, sizes: dict[str, int], notes: dict[str, str]) -> dict:
    """The whole run as JSON: config and hash, models, sizes, and each engine's GPUs and units."""
    groups = dp_plan.engine_groups(args.gpus, cfg.tensor_parallel_size, os.environ.get("CUDA_VISIBLE_DEVICES"))
    models = ([tuple(w.rsplit("@", 1)) if "@" in w else (w, None) for w in args.models] if args.models
              else list(zip(cfg.models, cfg.model_revisions)))  # ID[@REVISION] words; none: the released ones
    shares = dp_plan.deal(dp_plan.work_units(models, sizes, cfg), len(groups))
    return {"budget": args.budget, "official_sampling": args.official_sampling, "tp": cfg.tensor_parallel_size,
            "set": parse_overrides(args.set), "config_hash": config_hash(cfg), "config": to_dict(cfg),
            "models": models, "sizes": sizes, "notes": notes,
            "engines": [{"engine": e, "gpus": g, "units": [dataclasses.asdict(u) for u in s]}
                        for e, (g, s) in enumerate(zip(groups, shares))]}


def plan_config(plan: dict):
    """The config a plan was made with; code or presets changed since raise (the plan's hash would lie)."""
    cfg = eval_config(plan["budget"], plan["official_sampling"], plan["tp"], plan["set"])
    if config_hash(cfg) != plan["config_hash"]:
        raise ValueError(f"the plan was made with config {plan['config_hash']}, this code gives {config_hash(cfg)}: "
                         "run the command again to write a new plan")
    return cfg


def shares(plan: dict) -> list[list[dp_plan.Unit]]:
    return [[dp_plan.Unit(**u) for u in eng["units"]] for eng in plan["engines"]]


def engine_command(plan_path: Path, engine: int) -> list[str]:
    return [sys.executable, "-m", "klear_lib.evaluation.full", "--engine", str(engine), "--plan", str(plan_path)]


def describe(plan: dict, plan_path: Path) -> str:
    """What a run of ``plan`` does: config, engines with their commands, the split, and the notes."""
    lines = [f"budget {plan['budget']}, config {plan['config_hash']}"
             f"{' (official sampling: top_k 20, repetition penalty 1.05)' if plan['official_sampling'] else ''}",
             json.dumps(plan["config"], sort_keys=True, indent=1),
             "models: " + " ".join(f"{m}@{r or 'default'}" for m, r in plan["models"]), f"problems: {plan['sizes']}"]
    lines += [f"  {name}: {note}" for name, note in plan["notes"].items()]
    for eng in plan["engines"]:
        cmd = " ".join(engine_command(plan_path, eng["engine"]))
        lines.append(f"engine {eng['engine']}: CUDA_VISIBLE_DEVICES={','.join(eng['gpus'])} {cmd}")
    return "\n".join(lines + [dp_plan.split_table(shares(plan))])


def chunk_dir(root: Path, chunk: int) -> Path:
    return root / "raw" / f"chunk-{chunk:04d}"


def unit_records(root: Path, unit: dp_plan.Unit, rows: list[dict], cfg, strict: bool = True) -> list[dict] | None:
    """The stored samples of ``unit`` in (problem, sample) order; None (or, ``strict``, an error naming the unit)
    when any is missing. Unparsable lines count as missing (a write still under way)."""
    k = samples_per_problem(get_spec(unit.benchmark), cfg)
    path = samples_path(chunk_dir(root, unit.chunk), unit.benchmark, checkpoint_label(unit.model), unit.model,
                        unit.revision)
    done = {sample_key(r): r for r in parse_samples(path, warn=strict)[0]}
    if (records := stored_chunk(done, rows, range(unit.first, unit.last), k)) is None and strict:
        raise RuntimeError(f"{unit.model} {unit.benchmark} chunk {unit.chunk}: samples missing in {path}; run the "
                           "command again to finish it")
    return records


def run_engine(plan_path: Path, engine: int) -> None:
    """One engine's share: each unit through ``harness.evaluate``, its samples in the unit's chunk folder."""
    plan = json.loads(Path(plan_path).read_text())
    cfg, root = plan_config(plan), Path(plan_path).parent
    rows = {name: read_jsonl(rows_path(root, name)) for name in plan["sizes"]}
    for unit in tqdm(shares(plan)[engine], desc=f"engine {engine}", unit="chunk"):
        evaluate(unit.model, get_spec(unit.benchmark), rows[unit.benchmark], cfg, chunk_dir(root, unit.chunk),
                 stage=checkpoint_label(unit.model), revision=unit.revision, chunks=[unit.chunk])


def launch(plan: dict, plan_path: Path) -> None:
    """Every engine as a process on its GPUs; a bar of finished chunks; failed engines raise naming their logs."""
    root, logs = plan_path.parent, plan_path.parent / "logs"
    logs.mkdir(exist_ok=True)
    procs = {}
    for eng in plan["engines"]:
        env = {**os.environ, "CUDA_VISIBLE_DEVICES": ",".join(eng["gpus"])}
        with open(logs / f"engine-{eng['engine']}.log", "a") as out:
            procs[eng["engine"]] = subprocess.Popen(engine_command(plan_path, eng["engine"]), env=env, stdout=out,
                                                    stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    units = [u for s in shares(plan) for u in s]
    cfg, rows = plan_config(plan), {name: read_jsonl(rows_path(root, name)) for name in plan["sizes"]}
    try:
        with tqdm(total=len(units), desc=f"eval {plan['budget']}", unit="chunk") as bar:
            while any(p.poll() is None for p in procs.values()):
                time.sleep(POLL_S)
                bar.update(sum(unit_records(root, u, rows[u.benchmark], cfg, strict=False) is not None
                               for u in units) - bar.n)
    except BaseException:  # interrupted: stop the engines too, or they hold the GPUs with no one to merge
        for p in procs.values():
            p.terminate()
        raise
    if failed := [e for e, p in procs.items() if p.returncode != 0]:
        raise RuntimeError(f"engine(s) {failed} failed: see {', '.join(str(logs / f'engine-{e}.log') for e in failed)}"
                           "; the same command resumes from the stored samples")


def merge(plan: dict, root: Path) -> pd.DataFrame:
    """The chunks merged per (model, benchmark) into ``samples/`` and summarised into ``eval.csv``."""
    cfg, out = plan_config(plan), []
    for model, revision in plan["models"]:
        for name in plan["sizes"]:
            rows = read_jsonl(rows_path(root, name))
            units = dp_plan.work_units([(model, revision)], {name: len(rows)}, cfg)
            records = [r for u in units for r in unit_records(root, u, rows, cfg)]
            label = checkpoint_label(model)
            rewrite_samples(samples_path(root / "samples", name, label), records)
            out += summarize(pd.DataFrame(records), stage=label, benchmark=name, seed=cfg.seed,
                             config_hash=plan["config_hash"], model=label)
    return tables.upsert_file(EVAL, out, root / "eval.csv")


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m klear_lib.evaluation.full", description=__doc__.split("\n")[0])
    p.add_argument("--budget", choices=sorted(BUDGETS))
    p.add_argument("--gpus", type=int, help="GPUs to use (CUDA_VISIBLE_DEVICES order, else 0..N-1)")
    p.add_argument("--tp", type=int, default=None, help="GPUs per vLLM engine (default: the config's, 2)")
    p.add_argument("--out", help="output folder")
    p.add_argument("--models", nargs="*", metavar="ID[@REVISION]", help="default: the released checkpoints")
    p.add_argument("--benchmarks", nargs="*", help="default: AIME 2024/2025, HMMT 2025, LiveCodeBench v5/v6")
    p.add_argument("--official-sampling", action="store_true", help="the official script's top_k 20, rep. 1.05")
    p.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE", help="other EvalConfig fields")
    p.add_argument("--dry-run", action="store_true", help="print the plan and run nothing")
    p.add_argument("--engine", type=int, help=argparse.SUPPRESS)  # an engine process, started by the run
    p.add_argument("--plan", help=argparse.SUPPRESS)
    return p


def main(argv: list[str] | None = None) -> None:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.engine is not None:
        return run_engine(Path(args.plan), args.engine)
    if not (args.budget and args.gpus and args.out):
        parser.error("--budget, --gpus and --out are required")
    try:
        cfg = eval_config(args.budget, args.official_sampling, args.tp, parse_overrides(args.set))
        root = run_root(args.out, args.budget, cfg)
        plan = make_plan(args, cfg, *problem_sizes(root, args.benchmarks or cfg.benchmarks, load=not args.dry_run))
    except (KeyError, ValueError, FileNotFoundError) as err:  # FileNotFoundError: SourceUnavailable
        parser.exit(2, f"{parser.prog}: {err}\n")
    plan_path = root / "plan.json"
    print(describe(plan, plan_path))
    if args.dry_run:
        return
    plan_path.write_text(json.dumps(plan, indent=1, sort_keys=True))
    launch(plan, plan_path)
    table = merge(plan, root)
    print(table[table["metric"] == "avg@k"][["model", "benchmark", "k", "mean", "ci_low", "ci_high"]].to_string())


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO)
    main()
