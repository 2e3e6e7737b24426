"""One frozen dataclass config per stage, each with presets ``ci``, ``tiny`` and ``full``.

>>> from klear_lib.configs import get_config, config_hash
>>> cfg = get_config("rl", "tiny", learning_rate=1e-4)
"""
from __future__ import annotations

from typing import Any

from klear_lib.configs import data, eval as eval_, model, rl, sft
from klear_lib.configs.base import algorithm_fields, config_hash, to_dict, with_overrides

STAGES = {"data": data, "model": model, "sft": sft, "rl": rl, "eval": eval_}
PRESET_NAMES = ("ci", "tiny", "full")


def get_config(stage: str, preset: str, **overrides: Any):
    """The config of ``stage`` at ``preset`` with ``overrides``; unknown stages, presets or keys raise."""
    if stage not in STAGES:
        raise KeyError(f"unknown stage {stage!r}; choose one of {sorted(STAGES)}")
    from klear_lib.configs.base import resolve

    return resolve(STAGES[stage].PRESETS, preset, **overrides)


__all__ = ["get_config", "config_hash", "to_dict", "with_overrides", "algorithm_fields", "STAGES", "PRESET_NAMES"]
