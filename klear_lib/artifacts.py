"""Checkpoints and caches outside git, under ``$KLEAR_ARTIFACTS`` (default ``<repo>/.artifacts``)."""
from __future__ import annotations

import os
from pathlib import Path

from klear_lib.paths import REPO


def root() -> Path:
    """The artifact root, created on demand."""
    path = Path(os.environ.get("KLEAR_ARTIFACTS", REPO / ".artifacts")).resolve()
    path.mkdir(parents=True, exist_ok=True)
    return path


def artifact_dir(*parts: str) -> Path:
    """``<root>/<parts...>``, created on demand, e.g. ``artifact_dir("tiny", "sft", "<hash>")``."""
    path = root().joinpath(*parts)
    path.mkdir(parents=True, exist_ok=True)
    return path


def is_complete(path: Path) -> bool:
    """True when a stage wrote its ``DONE`` marker in ``path`` (so a half-written artifact is never reused)."""
    return (Path(path) / "DONE").exists()


def mark_complete(path: Path, note: str = "") -> None:
    """Write the ``DONE`` marker last, after everything else in ``path``."""
    (Path(path) / "DONE").write_text(note)
