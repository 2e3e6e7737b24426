"""Every stage's final config from one call: ``get_config(stage, preset, world_size=1, **overrides)``.

Stages: ``data``, ``model``, ``sft``, ``rl_math``, ``rl_code``, ``eval``, ``traces`` (teacher sampling for SFT). Each
is one frozen dataclass with presets ``ci``, ``tiny`` and ``full``; the code-RL stage is the RL config with its own
values (``configs/rl.py``).
``world_size`` lays a training stage out over that many ranks with the same global batch (``base.spread``).

>>> from klear_lib.configs import get_config, config_hash
>>> cfg = get_config("rl_math", "tiny", learning_rate=1e-4)
>>> get_config("rl_code", "full", world_size=32).gradient_accumulation_steps
8
"""
from __future__ import annotations

from typing import Any

from klear_lib.configs import data, eval as eval_, model, rl, sft, traces
from klear_lib.configs.base import algorithm_fields, config_hash, describe, resolve, spread, to_dict, with_overrides

STAGES = {"data": data.PRESETS, "model": model.PRESETS, "sft": sft.PRESETS, "rl_math": rl.PRESETS,
          "rl_code": rl.CODE_PRESETS, "eval": eval_.PRESETS, "traces": traces.PRESETS}
PRESET_NAMES = ("ci", "tiny", "full")
GPU_STAGES = ("model", "rl_math", "rl_code", "eval")  # the one-GPU preset "gpu" (docs/full_scale.md §8); more to come
TRAINING_STAGES = ("sft", "rl_math", "rl_code")


def get_config(stage: str, preset: str, world_size: int = 1, **overrides: Any):
    """The whole config of ``stage`` at ``preset`` with ``overrides``, laid out over ``world_size`` ranks (training
    stages only); unknown stages, presets or keys raise ``KeyError``, a batch that does not split ``LayoutError``
    (a ``ValueError`` naming the stage, its global batch and the world size)."""
    if stage not in STAGES:
        raise KeyError(f"unknown stage {stage!r}; choose one of {sorted(STAGES)}")
    cfg = resolve(STAGES[stage], preset, **overrides)
    if world_size != 1 and stage not in TRAINING_STAGES:
        raise ValueError(f"stage {stage!r} has no rank layout; world_size applies to {TRAINING_STAGES}")
    return spread(cfg, world_size, f"{stage} ({preset})") if stage in TRAINING_STAGES else cfg


def rl_stage_name(reward: str) -> str:
    """The config stage of an RL run on ``reward`` ("math" or "code")."""
    if reward not in ("math", "code"):
        raise KeyError(f"unknown RL reward {reward!r}; choose 'math' or 'code'")
    return f"rl_{reward}"


__all__ = ["get_config", "rl_stage_name", "config_hash", "describe", "to_dict", "with_overrides", "algorithm_fields",
           "STAGES", "PRESET_NAMES", "TRAINING_STAGES", "GPU_STAGES"]

from klear_lib.configs.recipe import Recipe, recipe  # noqa: E402  (it reads the names above)

__all__ += ["Recipe", "recipe"]
