"""Generated rows on disk, written chunk by chunk so a killed run resumes: the evaluation's samples and the
teachers' SFT traces. A chunk is appended in one write and flushed; a rerun rewrites the file without the rows of
unfinished chunks and generates those again whole, so chunks (``fixed_chunks``) never depend on what is stored."""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Sequence

from klear_lib import artifacts


def append_samples(path: Path, records: Sequence[dict]) -> None:
    """Append records as JSON lines in one write and flush them to disk."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a", encoding="utf-8") as f:
        f.write("".join(json.dumps(r, sort_keys=True) + "\n" for r in records))
        f.flush()
        os.fsync(f.fileno())


def rewrite_samples(path: Path, records: Sequence[dict]) -> None:
    """Replace the samples file with ``records`` atomically (dropping torn lines and stale partial chunks)."""
    with artifacts.replacing(path) as tmp:
        append_samples(tmp, records)


def fixed_chunks(n_rows: int, size: int) -> list[range]:
    """Row indices of each chunk: consecutive ranges of ``size``, the same whatever is already stored."""
    return [range(c, min(c + size, n_rows)) for c in range(0, n_rows, size)]
