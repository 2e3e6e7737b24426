"""Which model each pipeline stage produced: a small registry over the artifacts folder.

A training stage registers its final model with ``register_stage_checkpoint(stage, recipe, path)`` (a pointer
file ``<artifacts>/<preset>/checkpoints/<stage>.txt``). Without a pointer, the newest complete model folder
(``DONE`` marker and a ``config.json``) under ``<artifacts>/<preset>/<stage>/`` is used. Stage ``base`` is the
untrained model of the preset, built on demand by ``klear_lib.models.load_or_build``.
"""
from __future__ import annotations

import logging
from pathlib import Path

from klear_lib import artifacts
from klear_lib.configs import Recipe
from klear_lib.models import load_or_build
from klear_lib.results import STAGE_ORDER as STAGES

log = logging.getLogger(__name__)


def _pointer(stage: str, recipe: Recipe) -> Path:
    return recipe.artifacts / "checkpoints" / f"{stage}.txt"


def _known(stage: str) -> str:
    if stage not in STAGES:
        raise KeyError(f"unknown stage {stage!r}; choose one of {STAGES}")
    return stage


def register_stage_checkpoint(stage: str, recipe: Recipe, path: str | Path) -> Path:
    """Record ``path`` as the model of ``stage`` under the recipe's preset (overwrites an earlier record)."""
    pointer = _pointer(_known(stage), recipe)
    pointer.parent.mkdir(parents=True, exist_ok=True)
    pointer.write_text(artifacts.portable_id(path))  # relative to the root when inside it: survives a move
    return pointer


def _is_model_dir(path: Path) -> bool:
    return artifacts.is_complete(path) and (path / "config.json").exists()


def stage_checkpoint(stage: str, recipe: Recipe) -> str | None:
    """The model path of ``stage`` under the recipe's preset, or None when that stage has not been run (``base``
    is built)."""
    if _known(stage) == "base":
        return load_or_build(recipe)
    pointer = _pointer(stage, recipe)
    if pointer.exists() and _is_model_dir(target := artifacts.root() / pointer.read_text().strip()):
        return str(target)  # (an absolute pointer: root / target is target)
    folder = recipe.artifacts / stage
    found = sorted((p for p in folder.rglob("DONE") if _is_model_dir(p.parent)), key=lambda p: p.stat().st_mtime) \
        if folder.is_dir() else []
    return str(found[-1].parent) if found else None


def available_stages(recipe: Recipe) -> dict[str, str]:
    """``{stage: path}`` for every stage with a model under the recipe's preset (always includes ``base``)."""
    return {s: p for s in STAGES if (p := stage_checkpoint(s, recipe)) is not None}


def checkpoint_label(path: str) -> str:
    """A machine-independent name for a model: a hub id as is, an artifact folder relative to the artifacts root."""
    if not Path(path).is_absolute():
        return str(path)
    ident = Path(artifacts.portable_id(path))
    return ident.name if ident.is_absolute() else str(ident)  # outside the store: its folder name only
