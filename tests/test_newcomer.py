"""What a newcomer meets first: make targets that stop in one line on a misspelt variable, before doing anything."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
@pytest.mark.parametrize("target, variable, says", [
    ("reproduce", "PRESET=tine", "PRESET=tine is not a preset; choose one of: ci tiny full"),
    ("reproduce", "PRESET=", "PRESET= is not a preset"),
    ("ablations", "ABLATIONS=06_rl_ablation", "06_rl_ablation is not an ablation notebook"),
    ("readme", "PRESET=tiny ABLATIONS=x", "x is not an ablation notebook"),
])
def test_make_stops_in_one_line_on_a_misspelt_variable(tmp_path, target, variable, says):
    """Run in a bare copy of the Makefile (no .venv), so nothing could be set up even if the check failed."""
    shutil.copy(ROOT / "Makefile", tmp_path / "Makefile")
    run = subprocess.run(["make", target, *variable.split()], cwd=tmp_path, capture_output=True, text=True,
                         timeout=60)
    assert run.returncode == 2
    assert says in run.stderr and len(run.stderr.strip().splitlines()) == 1, run.stderr
    assert run.stdout == "" and sorted(p.name for p in tmp_path.iterdir()) == ["Makefile"]


STORED_NOTEBOOKS = sorted([*ROOT.glob("notebooks/*.ipynb"), *ROOT.glob("results/*/notebooks/*.ipynb")])


@pytest.mark.parametrize("path", STORED_NOTEBOOKS, ids=lambda p: str(p.relative_to(ROOT)))
def test_stored_notebooks_hold_no_stderr(path):
    """A warning belongs in stdout (the notebooks log there) or nowhere: stderr in a stored notebook is output that
    depends on what ran before in the process, which nbval then trips over."""
    nb = json.loads(path.read_text())
    stderr = [i for i, c in enumerate(nb["cells"]) if c["cell_type"] == "code"
              for o in c.get("outputs", []) if o.get("name") == "stderr"]
    assert stderr == [], f"cells {stderr} hold stderr"


@pytest.mark.slow
def test_nbval_passes_on_notebook_01_with_an_empty_artifact_store(tmp_path):
    """``make test-nbval`` alone on a fresh clone: the data notebook's checked cells do not depend on a world cached
    by an earlier run (its once-per-process warning used to land in a checked cell only when the store was full)."""
    env = {**os.environ, "KLEAR_ARTIFACTS": str(tmp_path / "store"), "KLEAR_BENCHMARKS": "", "HF_HUB_OFFLINE": "1"}
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--nbval-lax",
                          "--nbval-current-env", "--nbval-sanitize-with", "tests/nbval_sanitize.cfg",
                          "notebooks/01_data_curation.ipynb"], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=900)
    assert run.returncode == 0, run.stdout[-3000:]
