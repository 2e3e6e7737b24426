"""Stage runners the notebooks call: each trains once per (config, data, seed) and reuses the artifact after.

Each runner takes the ``Recipe`` (``klear_lib.configs.recipe``) and reads the one stage config it trains or
evaluates. Checkpoints live under ``<artifacts>/<preset>/<stage>/<key>`` (outside git); per-step run records under
``results/<preset>/runs/<name>.csv`` (small, committed). A stage whose ``final/DONE`` marker exists is reused; a
stage killed midway resumes from its last complete checkpoint (``klear_lib.training.checkpoints``).
"""
from __future__ import annotations

import hashlib
import json
import logging
import multiprocessing
import shutil
from pathlib import Path

import pandas as pd

from klear_lib import artifacts, tables
from klear_lib.configs import Recipe, config_hash
from klear_lib.data import load_split
from klear_lib.evaluation.benchmarks import get_spec, load_rows
from klear_lib.evaluation.checkpoints import checkpoint_label, register_stage_checkpoint
from klear_lib.evaluation.harness import evaluate, problem_counts, summarize
from klear_lib.models import load_or_build
from klear_lib.models.factory import pinned_start
from klear_lib.results import CONTROL, EVAL, MAIN, PROBLEMS, eval_csv, problems_csv
from klear_lib.training.checkpoints import last_complete
from klear_lib.training.gppo_trainer import build_rl_trainer
from klear_lib.training.sft import train_sft

log = logging.getLogger(__name__)
RL_SPLITS = {"math": "math_rl", "code": "code_rl"}
RUN_RECORD = "run_record.csv"  # a stage's per-step record, kept beside its checkpoint
Samples = dict[tuple[str, str], pd.DataFrame]  # (stage label, benchmark) -> that checkpoint's judged samples


def seed_stage(stage: str, seed: int, main_seed: int | None = 0) -> str:
    """The stage label of ``stage`` trained with RL seed ``seed``: the pipeline's own name for the main seed
    (notebook 04 evaluates it), ``<stage>-s<seed>`` for the others."""
    return stage if seed == main_seed else f"{stage}-s{seed}"


# The random-reward controls (Study.main_control): the control arm's RL settings beyond the task arm's
CONTROLS = {"blind": {"random_reward": True},                          # every reward a coin flip
            "format": {"random_reward": True, "random_format": True}}  # the task reward's format scores kept


def rl_seeds(recipe: Recipe, init: str | Path, seeds, main_seed: int | None = 0,
             control: str | None = None, arms: tuple[str, ...] | None = None) -> dict[int, dict[str, Path]]:
    """Math RL then code RL from ``init`` for every seed: {seed: {"rl_math": path, "rl_code": path}}. The main
    seed's stages are the pipeline's own (registered); the others are named ``rl_math-s<seed>`` (their run
    records ``results/<preset>/runs/rl_math-s<seed>.csv``). ``control`` (a key of ``CONTROLS``) adds, per seed, the
    same two stages with every reward drawn at random (``RLConfig.random_reward``; ``"format"`` keeps the task
    reward's format scores), everything else equal: ``random_rl_math`` and ``random_rl_code`` (``-s<seed>`` for the
    others; never registered), what RL gains without the task's signal.
    ``main_seed=None``: no seed's stages are the pipeline's own (a pilot's). ``arms``: the arms to train, by stage
    prefix ("" the task's reward, ``CONTROL`` the control; default both where there is a control), so that a sweep
    can train a seed's two arms in two workers."""
    if control is not None and control not in CONTROLS:
        raise ValueError(f"control={control!r}; choose None or one of {sorted(CONTROLS)}")
    every = ("", CONTROL) if control else ("",)
    if arms is not None and not set(arms) <= set(every):
        raise ValueError(f"arms={arms!r}; with control={control!r} choose from {every}")
    out = {}
    for seed in seeds:
        out[seed] = {}
        for prefix in every if arms is None else arms:
            arm = {"seed": seed, **(CONTROLS[control] if prefix else {})}
            seeded = recipe.replace(rl_math=arm, rl_code=arm)
            own = seed == main_seed and not prefix  # only the main seed's own stages are the pipeline's
            name = {r: None if own else seed_stage(f"{prefix}rl_{r}", seed, main_seed) for r in ("math", "code")}
            math = rl_stage(seeded, init, "math", name=name["math"])
            out[seed] |= {f"{prefix}rl_math": math, f"{prefix}rl_code": rl_stage(seeded, math, "code",
                                                                                 name=name["code"])}
    return out


def main_job(recipe: Recipe, init: str | Path, seeds, main_seed: int | None = 0, control: str | None = None,
             arms: tuple[str, ...] | None = None) -> tuple[dict[int, dict[str, str]], Samples]:
    """The main job's RL seeds trained (``rl_seeds``, ``arms`` as there) and read on ``recipe.eval``'s benchmarks:
    ({seed: {stage: label}}, {(label, benchmark): samples}), the start ``init`` read once as "sft". Pass
    ``recipe.main_job``: its readings are the ones the study registers (``Study.main_eval``)."""
    runs = rl_seeds(recipe, init, seeds, main_seed=main_seed, control=control, arms=arms)
    stages = {s: {stage: seed_stage(stage, s, main_seed) for stage in paths} for s, paths in runs.items()}
    checkpoints = [("sft", init)] + [(stages[s][stage], path) for s, paths in runs.items()
                                     for stage, path in paths.items()]
    samples = {(label, name): df for label, path in checkpoints
               for name, df in stage_samples(recipe, label, path).items()}
    return stages, samples


def main_problems(recipe: Recipe, stages: dict[int, dict[str, str]], samples: Samples) -> list[dict]:
    """The per-problem counts of the main job's readings (``main_job``'s two results), as rows of
    ``results/<preset>/problems/main.csv``: condition = the stage (``rl_math``, ``random_rl_code``, ...), seed = its
    RL seed; the start's condition is its label, with the eval seed, as ``eval_stage`` writes it."""
    owner = {label: (stage, seed) for seed, labels in stages.items() for stage, label in labels.items()}
    return [row for (label, name), df in samples.items()
            for row in _main_rows(recipe, *owner.get(label, (label, recipe.eval.seed)),
                                  [{"benchmark": name, **c} for c in problem_counts(df)])]


def _main_rows(recipe: Recipe, condition: str, seed: int, counts: list[dict]) -> list[dict]:
    """Per-problem counts (with their benchmark) as rows of the main job's problems file, under ``recipe.eval``."""
    digest = config_hash(recipe.eval)
    return [{"experiment": MAIN, "condition": condition, "seed": seed, **c, "config_hash": digest} for c in counts]


def rows_fingerprint(rows: list[dict]) -> str:
    """A short hash of the rows' ids and order (so a different data subset gets a different key). Contents are
    not hashed (keys of stored checkpoints would all change): a transformation that changes a row's text must
    give it a new id, and ``guard_rows`` refuses a stage folder whose rows kept their ids but not their text."""
    ids = "\n".join(str(r.get("id") or (r.get("extra_info") or {}).get("id")) for r in rows)
    return hashlib.sha256(ids.encode()).hexdigest()[:8]


def guard_rows(out: Path, rows: list[dict]) -> None:
    """Stamp ``out`` with a hash of the rows' contents, or raise if it holds another one: the same ids with
    other contents would silently reuse a checkpoint trained on other data. A folder made before stamps existed
    takes the stamp of its next use."""
    digest = hashlib.sha256(json.dumps(rows, sort_keys=True, default=str).encode()).hexdigest()[:16]
    stamp = Path(out) / "rows.sha256"
    if stamp.exists() and stamp.read_text().strip() != digest:
        raise ValueError(f"{out} holds a stage trained on rows with these ids but other contents (content hash "
                         f"{stamp.read_text().strip()}, now {digest}): give the changed rows new ids, or delete "
                         f"the folder to retrain")
    stamp.parent.mkdir(parents=True, exist_ok=True)
    stamp.write_text(digest + "\n")


def stage_key(cfg, rows: list[dict], parent: str | Path = "") -> str:
    """The artifact key of a stage: its config hash, its data and the checkpoint it starts from, named by
    ``artifacts.portable_id`` so the same stage gets the same key in any checkout."""
    ident = artifacts.portable_id(parent) if parent else ""
    return hashlib.sha256(f"{config_hash(cfg)}|{rows_fingerprint(rows)}|{ident}".encode()).hexdigest()[:12]


def sft_stage(recipe: Recipe, rows: list[dict] | None = None, name: str = "sft") -> Path | str:
    """The SFT checkpoint of ``recipe.sft`` (trained on ``rows``, default the curated ``sft`` split); at a preset
    without an SFT stage (``gpu``: the start model already reasons in ``<think>``) the start model itself."""
    recipe.check_in_process("the SFT stage")
    if recipe.sft is None:
        return pinned_start(recipe)  # not registered: notebook 04 reads it as "base"
    rows = load_split("sft", recipe) if rows is None else rows
    base = load_or_build(recipe)
    out = _sft_dir(recipe, rows, base)
    guard_rows(out, rows)
    record, trained = recipe.runs / f"{name}.csv", not artifacts.is_complete(out / "final")
    final = train_sft(recipe.sft, base, rows, out, record_path=record)
    keep_record(out, record, trained)
    if name == "sft":  # the pipeline's own stage (ablation runs have their own names): notebook 04 evaluates it
        register_stage_checkpoint("sft", recipe, final)
    return final


def _sft_dir(recipe: Recipe, rows: list[dict], base: str) -> Path:
    return recipe.artifacts / "sft" / stage_key(recipe.sft, rows, base)


def trained_sft(recipe: Recipe) -> Path | str | None:
    """``sft_stage(recipe)``'s checkpoint where the artifact store already holds it complete (the start model at a
    preset without an SFT stage), else None; trains nothing."""
    if recipe.sft is None:
        return pinned_start(recipe)
    final = _sft_dir(recipe, load_split("sft", recipe), load_or_build(recipe)) / "final"
    return final if artifacts.is_complete(final) else None


def rl_stage(recipe: Recipe, init: str | Path, reward: str = "math", rows: list[dict] | None = None,
             name: str | None = None) -> Path:
    """An RL stage (``reward`` = "math" or "code", config ``recipe.rl(reward)``) from checkpoint ``init``; resumes
    if killed midway."""
    recipe.check_in_process(f"the {reward} RL stage")
    cfg = recipe.rl(reward)
    rows = rl_rows(recipe, reward) if rows is None else rows
    out = rl_stage_dir(recipe, init, reward, rows)
    guard_rows(out, rows)
    final, record = out / "final", recipe.runs / f"{name or 'rl_' + reward}.csv"
    trained = not artifacts.is_complete(final)
    if trained:
        args = (cfg, init, rows, reward, out, record)
        in_process(train_rl, *args) if recipe.stage_processes else train_rl(*args)
    keep_record(out, record, trained)
    if name is None:  # the pipeline's own stage, not an ablation or an attempt: notebook 04 evaluates it
        register_stage_checkpoint(f"rl_{reward}", recipe, final)
    return final


def rl_stage_dir(recipe: Recipe, init: str | Path, reward: str, rows: list[dict]) -> Path:
    """Where ``rl_stage`` keeps its checkpoints: keyed by config, rows and start, so a stage already trained there
    (``artifacts.is_complete(<dir>/"final")``) is reused, not trained again."""
    return recipe.artifacts / f"rl_{reward}" / stage_key(recipe.rl(reward), rows, init)


def keep_record(out: Path, record: Path, trained: bool) -> None:
    """A stage's run record, kept beside its checkpoint in ``out`` once trained, so that a recipe reusing the stage
    gets it too: copied back over ``record`` (trained under another results folder, scripts/rerun.py), replacing any
    record an earlier design left under that name."""
    kept = out / RUN_RECORD
    if trained and record.exists():  # a stage that wrote no record keeps none
        shutil.copyfile(record, kept)
    elif not trained and kept.exists():
        shutil.copyfile(kept, record)


def rl_rows(recipe: Recipe, reward: str) -> list[dict]:
    """The RL rows of ``reward``: the curated split of the recipe's data world, or at a preset without one (``gpu``)
    ``make data-full``'s file in ``<artifacts>/<preset>/data/`` (``math_rl.parquet``, ``code_rl.parquet``)."""
    if recipe.data is not None:
        return load_split(RL_SPLITS[reward], recipe)
    path = recipe.artifacts / "data" / f"{RL_SPLITS[reward]}.parquet"
    if not path.exists():
        raise FileNotFoundError(f"{recipe.preset} RL trains on the real rows of `make data-full DATA_OUT={path.parent}`"
                                f" (docs/full_scale.md §8); {path} is missing")
    from datasets import Dataset  # lazy: the real files only; most runs never import it here

    return Dataset.from_parquet(str(path)).to_list()


def train_rl(cfg, init: str | Path, rows: list[dict], reward: str, out: Path, record: Path) -> None:
    """Train one RL stage into ``out`` (resuming from its last complete checkpoint) and mark ``out/final`` done."""
    trainer = build_rl_trainer(cfg, init, rows, reward=reward, output_dir=out, run_record=record)
    trainer.train(resume_from_checkpoint=last_complete(out))
    trainer.save_model(str(out / "final"))
    trainer.processing_class.save_pretrained(str(out / "final"))
    artifacts.mark_complete(out / "final")


def in_process(fn, *args) -> None:
    """Run ``fn(*args)`` in a fresh (spawned) process and wait: what it held on a GPU, a colocated vLLM engine
    included, is freed when it ends. A failure raises here with the child's exit code (its traceback is on stderr)."""
    child = multiprocessing.get_context("spawn").Process(target=fn, args=args)
    child.start()
    child.join()
    if child.exitcode != 0:
        raise RuntimeError(f"{fn.__name__} failed in its own process (exit code {child.exitcode}); see its traceback")


def eval_stage(recipe: Recipe, stage: str, model_path: str | Path, benchmarks=None, write_csv: bool = True,
               problems: list | None = None):
    """avg@k and pass@k of one checkpoint on ``benchmarks`` (default: ``recipe.eval``'s), upserted into eval.csv
    (and its per-problem counts into ``results/<preset>/problems/main.csv``) unless ``write_csv`` is False (the
    ablations keep their own tables); ``problems``, a list, receives the per-problem counts
    (``harness.problem_counts`` with their benchmark).

    Samples go to ``<artifacts>/<preset>/eval/<eval config hash>``, the folder notebook 04 reads, in files keyed
    by the checkpoint: a rerun resumes, and another checkpoint under the same stage name never reuses them.
    """
    cfg = recipe.eval
    rows, counts = [], []
    for name, samples in stage_samples(recipe, stage, model_path, benchmarks).items():
        rows += summarize(samples, stage=stage, benchmark=name, seed=cfg.seed, config_hash=config_hash(cfg),
                          model=checkpoint_label(str(model_path)))
        counts += [{"benchmark": name, **c} for c in problem_counts(samples)]
    if problems is not None:
        problems += counts
    if write_csv:
        tables.upsert_file(EVAL, rows, eval_csv(recipe.results))
        tables.upsert_file(PROBLEMS, _main_rows(recipe, stage, cfg.seed, counts), problems_csv(recipe.results, MAIN))
    return pd.DataFrame(rows)


def stage_samples(recipe: Recipe, stage: str, model_path: str | Path, benchmarks=None) -> dict[str, pd.DataFrame]:
    """The judged samples of one checkpoint per benchmark (default: ``recipe.eval``'s), generated where missing
    and stored as ``eval_stage`` stores them."""
    cfg = recipe.eval
    out = eval_dir(recipe)  # sample files are keyed by model inside
    return {name: evaluate(str(model_path), get_spec(name), load_rows(name, recipe, cfg.max_problems), cfg, out,
                           stage=stage)
            for name in benchmarks or cfg.benchmarks}


def eval_dir(recipe: Recipe) -> Path:
    """``<artifacts>/<preset>/eval/<eval config hash>``: the sample files of every checkpoint the recipe's eval
    config reads (notebooks 03 and 04 share them)."""
    path = recipe.artifacts / "eval" / config_hash(recipe.eval)
    path.mkdir(parents=True, exist_ok=True)
    return path
