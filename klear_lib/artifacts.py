"""Checkpoints and caches outside git, under ``$KLEAR_ARTIFACTS`` (default ``<repo>/.artifacts``)."""
from __future__ import annotations

import os
from contextlib import contextmanager
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


def is_complete(path: Path) -> bool:
    """True when a stage wrote its ``DONE`` marker in ``path`` (so a half-written artifact is never reused)."""
    return (Path(path) / "DONE").exists()


def mark_complete(path: Path, note: str = "") -> None:
    """Write the ``DONE`` marker last, after everything else in ``path``."""
    (Path(path) / "DONE").write_text(note)


@contextmanager
def replacing(path: str | Path):
    """A temporary file beside ``path`` for the block to write, renamed over ``path`` only when the block ends
    without an error: a reader, or a run killed midway, sees the old file or the new one, never part of one."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")  # same folder: os.replace stays one atomic rename
    try:
        yield tmp
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def ends_with_newline(path: str | Path) -> bool:
    """True when the file at ``path`` is empty or its last line is whole (ends with a newline): every line we
    write ends with one, so a missing newline means a write was cut off."""
    with open(path, "rb") as fh:
        if fh.seek(0, os.SEEK_END) == 0:
            return True
        fh.seek(-1, os.SEEK_END)
        return fh.read(1) == b"\n"
