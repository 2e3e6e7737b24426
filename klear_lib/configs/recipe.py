"""A preset resolved once: every stage's final config and the study's settings in one frozen ``Recipe``.

A notebook's setup cell and a command's ``main`` call ``recipe(preset, ...)`` once; the pipeline, the evaluation
and the studies receive the recipe (or the one config they need), never a preset string. The preset's name stays
on the recipe as a label: the folders its results and artifacts live in.

>>> from klear_lib.configs.recipe import recipe
>>> r = recipe("tiny", seed=1)
>>> r.sft.seed, r.eval.seed, r.study.main_rl_seeds
(1, 1, 5)
>>> r.main_job.eval.benchmarks
('math_eval_t23', 'code_eval_t45')
>>> r.replace(rl_math={"loss_type": "cispo"}).rl("math").loss_type
'cispo'
"""
from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from klear_lib import artifacts, paths
from klear_lib.configs import STAGES, TRAINING_STAGES, get_config, rl_stage_name
from klear_lib.configs import study as study_
from klear_lib.configs.base import resolve, with_overrides
from klear_lib.configs.data import DataConfig
from klear_lib.configs.eval import EvalConfig
from klear_lib.configs.model import ModelConfig
from klear_lib.configs.rl import RLConfig
from klear_lib.configs.sft import SFTConfig
from klear_lib.configs.traces import TracesConfig


@dataclass(frozen=True)
class Recipe:
    """Every stage's config at one preset (``None`` for a stage the preset does not define: ``gpu`` has no data
    world, SFT or teacher sampling) and the study's own settings."""

    preset: str                  # a label: results/<preset>/ and <artifacts>/<preset>/ hold what it makes
    model: ModelConfig
    rl_math: RLConfig
    rl_code: RLConfig
    eval: EvalConfig
    study: study_.Study
    data: DataConfig | None = None
    sft: SFTConfig | None = None
    traces: TracesConfig | None = None
    scratch: bool = False        # a rehearsal: results, runs and figures under <artifacts>/<preset>/results
    # a re-run of the study in progress: its committed results, runs and figures under results/<preset>/<subdir>/,
    # beside the study's until it replaces them (results/tiny/rerun/: docs/design.md, "Where the re-run reads ...")
    results_subdir: str | None = None
    stage_processes: bool = False  # each RL stage trains in a process of its own (GPU memory freed after it)

    def rl(self, reward: str) -> RLConfig:
        """The RL config of ``reward`` ("math" or "code")."""
        return getattr(self, rl_stage_name(reward))

    def replace(self, **stages: dict[str, Any]) -> "Recipe":
        """This recipe with some stages' fields changed, e.g. ``replace(sft={"num_epochs": 10})``; ``study`` takes
        the study's fields. An unknown stage or field raises ``KeyError`` naming the known ones."""
        known = [f.name for f in dataclasses.fields(self)
                 if f.name not in ("preset", "scratch", "results_subdir", "stage_processes")]
        changes = {}
        for stage, overrides in stages.items():
            if stage not in known:
                raise KeyError(f"a recipe has no stage {stage!r}; known: {known}")
            current = getattr(self, stage)
            if current is None:
                raise KeyError(f"preset {self.preset!r} defines no {stage!r} stage")
            changes[stage] = with_overrides(current, **overrides)
        return dataclasses.replace(self, **changes)

    @property
    def main_job(self) -> "Recipe":
        """This recipe as the main job reads its stages (notebooks 03 and 04): the eval config with
        ``Study.main_eval`` applied (tiny: the re-run's registered benchmarks). The ablations read from the preset's
        own eval config, so their keys do not depend on the main job's reading."""
        return self.replace(eval=self.study.main_eval) if self.study.main_eval else self

    @property
    def results(self) -> Path:
        """``results/<preset>/`` (committed tables), created on demand; a rehearsal's under its artifacts, a re-run's
        in its subfolder."""
        if self.scratch:
            return paths.made(self.artifacts / "results")
        return paths.made(paths.results_dir(self.preset) / self.results_subdir) if self.results_subdir else \
            paths.results_dir(self.preset)

    @property
    def runs(self) -> Path:
        """``results/<preset>/runs/``: per-step run records."""
        return paths.made(self.results / "runs") if self.scratch or self.results_subdir else \
            paths.runs_dir(self.preset)

    @property
    def artifacts(self) -> Path:
        """``<artifacts>/<preset>/``: checkpoints, samples and caches outside git."""
        return paths.made(artifacts.root() / self.preset)

    def figure(self, what: str) -> Path:
        """Where the figure ``what`` of this preset goes: ``results/figures/<preset>_<what>.png``, under
        ``results/figures/<preset>/`` for a smoke run (``Study.smoke``), under a rehearsal's results folder or a
        re-run's ``figures/``."""
        folder = (self.results if self.scratch else self.results / "figures" if self.results_subdir
                  else paths.FIGURES / self.preset if self.study.smoke else paths.FIGURES)
        return folder / f"{self.preset}_{what}.png"

    def check_in_process(self, what: str) -> None:
        """Raise before anything is built when ``what`` at this preset can only run under the launchers: ``full``
        trains on the files of ``make data-full`` (a notebook built GBs of world and then found no 'sft' split), with
        ZeRO-3, which needs a rank per process, and vLLM TP = 2, which needs two GPUs; none of that starts in a
        kernel."""
        if self.preset in LAUNCHED_PRESETS:
            raise RuntimeError(f"{what} at preset {self.preset!r} runs through scripts/launch_*_full.sh on a cluster "
                               f"(docs/full_scale.md); in a notebook use 'gpu' (one GPU) or 'ci'/'tiny' (CPU)")


LAUNCHED_PRESETS = ("full",)  # trained only through the launchers: one process per GPU, ZeRO-3, vLLM TP = 2
REHEARSAL_ENV = "KLEAR_REHEARSAL"
STAGE_PROCESS_PRESETS = ("gpu",)  # one GPU: a colocated vLLM engine keeps its memory until its process ends


def rehearsal() -> bool:
    """True when ``$KLEAR_REHEARSAL`` is 1: ``recipe("gpu")`` is then its CPU rehearsal (``rehearse``)."""
    return os.environ.get(REHEARSAL_ENV, "") == "1"


def rehearse(r: Recipe) -> Recipe:
    """The ``gpu`` recipe's CPU rehearsal: the same stages, pipeline and notebook cells, other values only. A small
    random Qwen3 (the ci model: the architecture of Qwen3-1.7B at 2 layers, the kit's tokenizer) in float32 for the
    hub model; the miniature ci world's RL splits and benchmarks for the real files; no bf16, CUDA or vLLM; one RL
    step of ci's sizes, gpu's layout of one rollout a micro-batch kept (notebook 06's arms too, read on the ci
    benchmarks); real files from a mirror only. Labelled ``gpu_rehearsal``: everything it writes is under
    ``<artifacts>/gpu_rehearsal``."""
    ci_rl, ci_eval = get_config("rl_math", "ci"), get_config("eval", "ci")
    rl = {f: getattr(ci_rl, f) for f in ("prompts_per_step", "mini_batch_prompts", "warmup_steps",
                                          "max_prompt_length", "max_completion_length", "save_steps")}
    rl |= {"max_steps": 1, "gradient_accumulation_steps": ci_rl.mini_batch_rollouts,  # gpu: 1 rollout each
           "bf16": False, "use_cpu": True, "use_vllm": False}
    eval_ = {f: getattr(ci_eval, f) for f in ("benchmarks", "k_math", "k_code", "max_new_tokens", "max_model_len",
                                               "max_problems", "chunk_problems", "judge_workers", "backend", "models",
                                               "model_revisions", "dtype")}
    arena = dataclasses.replace(r.study.rl_ablations, per_experiment={}, rl={}, curve_every=None, benchmarks={})
    r = r.replace(rl_math=rl, rl_code=rl, eval=eval_, study={"real_data": "mirror", "reference_code_problems": 2,
                                                             "rl_ablations": arena})
    return dataclasses.replace(r, preset="gpu_rehearsal", model=get_config("model", "ci"),
                               data=get_config("data", "ci", seed=r.eval.seed), scratch=True)


def recipe(preset: str, world_size: int = 1, seed: int | None = None, **stages: dict[str, Any]) -> Recipe:
    """The ``Recipe`` of ``preset``: each stage's config with ``stages[stage]`` overrides (``study`` for the
    study's settings), training stages laid out over ``world_size`` ranks; ``seed`` sets the seed of every stage
    that has one (the data world's included; the model's ``init_seed`` is its own). Unknown presets, stages or
    fields raise ``KeyError``."""
    if unknown := sorted(set(stages) - set(STAGES) - {"study"}):
        raise KeyError(f"unknown stage(s) {unknown}; choose from {sorted(STAGES) + ['study']}")
    configs = {}
    for stage, presets in STAGES.items():
        if preset not in presets:
            continue
        overrides = dict(stages.get(stage, {}))
        if seed is not None and hasattr(presets[preset], "seed"):
            overrides.setdefault("seed", seed)
        configs[stage] = get_config(stage, preset, world_size if stage in TRAINING_STAGES else 1, **overrides)
    study = resolve(study_.PRESETS, preset, **stages.get("study", {}))
    built = Recipe(preset=preset, study=study, stage_processes=preset in STAGE_PROCESS_PRESETS, **configs)
    return rehearse(built) if preset == "gpu" and rehearsal() else built


__all__ = ["Recipe", "recipe", "rehearsal", "rehearse", "REHEARSAL_ENV"]
