"""What a newcomer meets first: make targets that stop in one line on a misspelt variable, before doing anything."""
from __future__ import annotations

import shutil
import subprocess
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
