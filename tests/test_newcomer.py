"""What a newcomer meets first: make targets that stop in one line on a misspelt variable, before doing anything."""
from __future__ import annotations

import json
import os
import re
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
    env = {k: v for k, v in os.environ.items() if k not in ("MAKELEVEL", "MAKEFLAGS", "MFLAGS")}  # a top-level
    run = subprocess.run(["make", target, *variable.split()], cwd=tmp_path, capture_output=True, text=True,
                         timeout=60, env=env)  # make, as a user types it, even when `make test` runs this test
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


# --- the README a newcomer reads in two minutes ------------------------------------------------------------------

README = ROOT / "README.md"
GENERATED = re.compile(r"<!-- (\w+):start -->.*?<!-- \1:end -->", re.S)
# An absolute path into one machine's folders (a scratch or home folder); tests/ holds such strings as fixtures.
MACHINE_PATH = re.compile(r"(?<![\w.~])/(?:tmp|work|home|Users|root|mnt|scratch|private)/[\w.+-]+/")


def test_readme_is_short_and_says_first_what_is_not_verified():
    text = README.read_text()
    hand = GENERATED.sub("", text)
    assert len(text.encode()) <= 24_000 and len(hand.encode()) <= 14_000, (len(text.encode()), len(hand.encode()))
    head = "\n".join(text.splitlines()[:15])
    assert "GPU path has never run" in head
    for section in ("## Install", "## The two commands", "## What was found", "## GPPO in your own code",
                    "## Glossary"):
        assert section in text
    assert text.index("## Install") < text.index("## The two commands") < text.index("## GPPO in your own code")
    assert "<!-- perf:start -->" not in text and "<!-- sources:start -->" not in text  # moved to docs/


@pytest.mark.parametrize("page", [README, *sorted((ROOT / "docs").glob("*.md"))], ids=lambda p: p.name)
def test_relative_links_resolve(page):
    text = page.read_text()
    anchors = {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-")
               for h in re.findall(r"^#+ (.+)$", text, re.M)}
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if target.startswith(("http://", "https://", "mailto:")):
            continue
        path, _, anchor = target.partition("#")
        if path:
            assert (page.parent / path).exists(), f"{page.name}: {target} does not exist"
        elif anchor:
            assert anchor in anchors, f"{page.name}: no heading for #{anchor}"


def test_readme_defines_its_terms():
    glossary = README.read_text().split("## Glossary", 1)[1]
    for term in ("avg@k", "tiny_aime", "math_eval_t1", "main job", "clip-higher", "β_low", "F·A", "CISPO", "DGPO",
                 "carried to our base rate", "Holm", "family-wise interval", "rank1", "top1", "a0",
                 "(final (range))"):
        assert term in glossary, term


def test_no_machine_paths_in_committed_files():
    files = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    found = []
    for name in files:
        path = ROOT / name
        if name.startswith("tests/") or path.suffix in (".png", ".parquet", ".gz") or not path.is_file():
            continue
        try:
            text = path.read_text()
        except UnicodeDecodeError:
            continue
        found += [f"{name}: {m.group(0)}" for m in MACHINE_PATH.finditer(text)]
    assert found == [], found[:10]
