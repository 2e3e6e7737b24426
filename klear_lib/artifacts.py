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


def portable_id(path: str | Path) -> str:
    """A name for a model that survives moving the artifact store or cloning the repository elsewhere: a folder
    inside the root as its path relative to the root, any other folder as its resolved absolute path, and a name
    that is no folder (a hub id) as is. Artifact keys and sample files hash this, never an absolute path."""
    if not Path(path).exists():
        return str(path)
    resolved = Path(path).resolve()
    try:
        return str(resolved.relative_to(root()))
    except ValueError:
        return str(resolved)


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
