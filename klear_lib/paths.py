"""Where things live: the repository, results, notebooks, shared benchmarks and artifacts outside git."""
from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
NOTEBOOKS = REPO / "notebooks"
RESULTS = REPO / "results"
FIGURES = RESULTS / "figures"
DATA_CARDS = REPO / "data_cards"


def shared_dir() -> Path:
    """The shared folder beside the project root (``$KLEAR_SHARED`` overrides)."""
    return Path(os.environ.get("KLEAR_SHARED", REPO.parent / "shared")).resolve()


def benchmarks_dir() -> Path:
    """Real benchmark files (``../shared/benchmarks`` by default); never copied into the repo."""
    path = shared_dir() / "benchmarks"
    if not path.is_dir():
        raise FileNotFoundError(
            f"benchmark folder {path} not found: set KLEAR_SHARED to the folder holding benchmarks/"
        )
    return path


def results_dir(preset: str) -> Path:
    """``results/<preset>/``, created on demand."""
    path = RESULTS / preset
    path.mkdir(parents=True, exist_ok=True)
    return path


def runs_dir(preset: str) -> Path:
    """``results/<preset>/runs/``: small CSV run records, committed."""
    path = results_dir(preset) / "runs"
    path.mkdir(parents=True, exist_ok=True)
    return path
