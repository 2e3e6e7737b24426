"""Where things live: the repository, results, notebooks and data cards (real data: ``klear_lib.data.fetch``)."""
from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
NOTEBOOKS = REPO / "notebooks"
RESULTS = REPO / "results"
FIGURES = RESULTS / "figures"
DATA_CARDS = REPO / "data_cards"
DEEPSPEED_CONFIGS = REPO / "configs" / "deepspeed"


def made(path: Path) -> Path:
    """``path``, a folder created on demand."""
    path.mkdir(parents=True, exist_ok=True)
    return path


def results_dir(preset: str) -> Path:
    """``results/<preset>/``, created on demand."""
    return made(RESULTS / preset)


def runs_dir(preset: str) -> Path:
    """``results/<preset>/runs/``: small CSV run records, committed."""
    return made(results_dir(preset) / "runs")
