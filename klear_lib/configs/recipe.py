"""A preset resolved once: every stage's final config and the study's settings in one frozen ``Recipe``.

A notebook's setup cell and a command's ``main`` call ``recipe(preset, ...)`` once; the pipeline, the evaluation
and the studies receive the recipe (or the one config they need), never a preset string. The preset's name stays
on the recipe as a label: the folders its results and artifacts live in.

>>> from klear_lib.configs.recipe import recipe
>>> r = recipe("tiny", seed=1)
>>> r.sft.seed, r.eval.seed, r.study.main_rl_seeds
(1, 1, 3)
>>> r.replace(rl_math={"loss_type": "cispo"}).rl("math").loss_type
'cispo'
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from klear_lib import artifacts, paths
from klear_lib.configs import STAGES, TRAINING_STAGES, check_in_process, get_config, rl_stage_name
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

    def rl(self, reward: str) -> RLConfig:
        """The RL config of ``reward`` ("math" or "code")."""
        return getattr(self, rl_stage_name(reward))

    def replace(self, **stages: dict[str, Any]) -> "Recipe":
        """This recipe with some stages' fields changed, e.g. ``replace(sft={"num_epochs": 10})``; ``study`` takes
        the study's fields. An unknown stage or field raises ``KeyError`` naming the known ones."""
        known = [f.name for f in dataclasses.fields(self) if f.name != "preset"]
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
    def results(self) -> Path:
        """``results/<preset>/`` (committed tables), created on demand."""
        return paths.results_dir(self.preset)

    @property
    def runs(self) -> Path:
        """``results/<preset>/runs/``: per-step run records."""
        return paths.runs_dir(self.preset)

    @property
    def artifacts(self) -> Path:
        """``<artifacts>/<preset>/``: checkpoints, samples and caches outside git."""
        path = artifacts.root() / self.preset
        path.mkdir(parents=True, exist_ok=True)
        return path

    def figure(self, what: str) -> Path:
        """Where the figure ``what`` of this preset goes: ``results/figures/<preset>_<what>.png``, under
        ``results/figures/<preset>/`` for a smoke run (``Study.smoke``)."""
        return (paths.FIGURES / self.preset if self.study.smoke else paths.FIGURES) / f"{self.preset}_{what}.png"

    def check_in_process(self, what: str) -> None:
        """Raise when ``what`` at this preset can only run under the cluster launchers (``configs.check_in_process``)."""
        check_in_process(self.preset, what)


def recipe(preset: str, world_size: int = 1, seed: int | None = None, **stages: dict[str, Any]) -> Recipe:
    """The ``Recipe`` of ``preset``: each stage's config with ``stages[stage]`` overrides (``study`` for the
    study's settings), training stages laid out over ``world_size`` ranks; ``seed`` sets the seed of every stage
    that has one (the data world's included; the model's ``init_seed`` is its own). Unknown presets, stages or fields raise ``KeyError``."""
    unknown = sorted(set(stages) - set(STAGES) - {"study"})
    if unknown:
        raise KeyError(f"unknown stage(s) {unknown}; choose from {sorted(STAGES) + ['study']}")
    configs = {}
    for stage, presets in STAGES.items():
        if preset not in presets:
            continue
        overrides = dict(stages.get(stage, {}))
        if seed is not None and "seed" in {f.name for f in dataclasses.fields(presets[preset])}:
            overrides.setdefault("seed", seed)
        configs[stage] = get_config(stage, preset, world_size if stage in TRAINING_STAGES else 1, **overrides)
    study = resolve(study_.PRESETS, preset, **stages.get("study", {}))
    return Recipe(preset=preset, study=study, **configs)


__all__ = ["Recipe", "recipe"]
