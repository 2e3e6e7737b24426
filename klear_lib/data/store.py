"""Caching worlds as JSON lines under ``<artifacts>/<preset>/data/<config hash>``, and loading splits."""
from __future__ import annotations

import csv
import hashlib
import io
import json
import logging
import os
import shutil
import tempfile
from pathlib import Path

from klear_lib import tables
from klear_lib.artifacts import is_complete, mark_complete
from klear_lib.configs import Recipe, config_hash
from klear_lib.data.curation import Funnel, Step, World
from klear_lib.data.schema import dumps_rows
from klear_lib.data.world import TRAIN_SPLITS, build_world
from klear_lib.tables import Table

log = logging.getLogger(__name__)
FUNNEL_COLUMNS = ("pool", "order", "stage", "rows_in", "rows_out", "dropped", "dropped_by", "note")
# ``results/<preset>/data_funnel.csv``: one row per (pool, step), in pipeline order
FUNNEL = Table("data funnel", FUNNEL_COLUMNS, ("pool", "order"), sort=False, types=tuple(
    (c, int if c in ("order", "rows_in", "rows_out", "dropped") else str) for c in FUNNEL_COLUMNS))


def code_version() -> str:
    """A short hash of the world-building source (``klear_lib/data`` and ``configs/data.py``): edits rebuild."""
    here = Path(__file__).resolve().parent
    files = sorted(here.glob("*.py")) + [here.parent / "configs" / "data.py"]
    return hashlib.sha256(b"".join(f.read_bytes() for f in files)).hexdigest()[:8]


def world_dir(recipe: Recipe) -> Path:
    """Where the recipe's data world is cached: ``<artifacts>/<preset>/data/<config_hash>-<code_version>``."""
    path = recipe.artifacts / "data" / f"{config_hash(recipe.data)}-{code_version()}"
    path.mkdir(parents=True, exist_ok=True)
    return path


def funnel_csv(funnel: Funnel) -> str:
    """The funnel as CSV text (fixed columns, rows in pipeline order)."""
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=FUNNEL_COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(funnel.records())
    return buf.getvalue()


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in Path(path).read_text().splitlines() if line]


def ensure_world(recipe: Recipe) -> Path:
    """Build and cache the recipe's data world if it is not cached yet; return its folder. The world is written
    atomically: ``<split>.jsonl`` per split, ``funnel.csv`` and ``manifest.json``, marked complete."""
    if recipe.data is None:
        raise KeyError(f"preset {recipe.preset!r} has no data world (its RL data and benchmarks are real files)")
    path = world_dir(recipe)
    if is_complete(path):
        return path
    log.info("building the %s data world (seed %d) into %s", recipe.preset, recipe.data.seed, path)
    world, tmp = build_world(recipe.data), Path(tempfile.mkdtemp(dir=path.parent, prefix=path.name + ".tmp"))
    for name, rows in world.splits.items():
        (tmp / f"{name}.jsonl").write_text(dumps_rows(rows))
    (tmp / "funnel.csv").write_text(funnel_csv(world.funnel))
    (tmp / "manifest.json").write_text(json.dumps({"config_hash": world.config_hash,
                                                    "splits": {k: len(v) for k, v in world.splits.items()}},
                                                   sort_keys=True, indent=1))
    mark_complete(tmp, world.config_hash)
    if path.exists():
        shutil.rmtree(path)
    os.replace(tmp, path)
    return path


def load_split(name: str, recipe: Recipe) -> list[dict]:
    """Rows of split ``name`` of the recipe's data world (built and cached on first use)."""
    if name in TRAIN_SPLITS:  # full: stop before its world's GBs are built (the launchers read make data-full's files)
        recipe.check_in_process(f"training split {name!r}")
    path = ensure_world(recipe) / f"{name}.jsonl"
    if not path.exists():
        known = sorted(p.stem for p in path.parent.glob("*.jsonl"))
        raise KeyError(f"no split {name!r} in the {recipe.preset} world; known: {known}")
    return read_jsonl(path)


def load_world(recipe: Recipe):
    """The recipe's whole cached data world (built on first use)."""
    path = ensure_world(recipe)
    funnel = Funnel()
    for rec in csv.DictReader(io.StringIO((path / "funnel.csv").read_text())):
        dropped = {k: int(v) for k, v in (kv.rsplit("=", 1) for kv in rec["dropped_by"].split(";") if kv)}
        funnel.add(rec["pool"], Step(rec["stage"], int(rec["rows_in"]), int(rec["rows_out"]), dropped, rec["note"]))
    splits = {p.stem: read_jsonl(p) for p in sorted(path.glob("*.jsonl"))}
    manifest = json.loads((path / "manifest.json").read_text())
    return World(splits=splits, funnel=funnel, config_hash=manifest["config_hash"])


def write_funnel(world, results: Path) -> Path:
    """``<results>/data_funnel.csv`` (``Recipe.results``)."""
    return tables.write(FUNNEL, world.funnel.records(), Path(results) / "data_funnel.csv")
