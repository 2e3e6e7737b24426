"""The light install of GPPO for other people's code (pyproject's ``trl`` extra: torch, packaging and TRL with what
TRL itself requires), emulated inside the kit's own environment: a folder of links to exactly the distributions that
install would bring, so a test or a benchmark can import the trainer there and see that vLLM, math-verify and the
kit's data code are neither needed nor loaded.

>>> from klear_lib import light
>>> site = light.light_site(tmp_path / "light")                      # doctest: +SKIP
>>> subprocess.run(light.command(site, "from klear_lib.training import GPPOTrainer"))  # doctest: +SKIP
"""
from __future__ import annotations

import os
import sys
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from klear_lib.paths import REPO, made

# What `pip install klear-lib[trl]` asks for (pyproject: the base dependencies and the `trl` extra).
LIGHT = ("torch", "packaging", "trl")


def closure(roots=LIGHT) -> set[str]:
    """The installed distributions ``roots`` require, recursively (extras left out), as normalised names."""
    seen, todo = set(), [Requirement(r) for r in roots]
    while todo:
        req = todo.pop()
        name = canonicalize_name(req.name)
        if name in seen:
            continue
        try:
            dist = metadata.distribution(req.name)
        except metadata.PackageNotFoundError:
            continue
        seen.add(name)
        extras = [""] + sorted(req.extras)
        todo += [sub for sub in map(Requirement, dist.requires or [])
                 if sub.marker is None or any(sub.marker.evaluate({"extra": e}) for e in extras)]
    return seen


def light_site(out: str | Path, roots=LIGHT) -> Path:
    """``out`` filled with links to the top-level modules and metadata of ``closure(roots)`` (nothing else of the
    environment), ready for ``command``."""
    out = made(Path(out))
    keep = closure(roots)
    for dist in metadata.distributions():
        if canonicalize_name(dist.metadata["Name"]) not in keep or not dist.files:
            continue
        for file in dist.files:
            top = file.parts[0]
            if top in ("..", "__pycache__") or top.endswith(".pth") or top == "__editable__":
                continue
            src, dst = Path(dist.locate_file(top)), out / top
            if src.exists() and not dst.exists():
                dst.symlink_to(src)
    return out


def command(site: Path, code: str) -> tuple[list[str], dict]:
    """The argv and environment that run ``code`` in a fresh interpreter seeing only ``site``, this repository and the
    environment's Jupyter data files (``-S``: no site-packages, no ``.pth`` files)."""
    env = {**os.environ, "PYTHONPATH": f"{site}{os.pathsep}{REPO}", "PYTHONWARNINGS": "ignore",
           # data files an install puts beside site-packages (nbconvert's templates); -S hides the venv's prefix
           "JUPYTER_PATH": str(Path(sys.prefix) / "share" / "jupyter")}
    return [sys.executable, "-S", "-c", code], env
