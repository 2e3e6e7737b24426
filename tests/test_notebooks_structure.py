"""Every committed notebook follows the house structure (docs/design.md "Notebooks"), so papermill and nbval can
run it."""
from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parent.parent / "notebooks").glob("[0-9][0-9]_*.ipynb"))


def _cells(path):
    return json.loads(path.read_text())["cells"]


def _src(cell):
    return "".join(cell["source"])


def test_there_are_notebooks():
    assert NOTEBOOKS, "no notebooks/NN_*.ipynb found"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_title_is_h1(path):
    first = _cells(path)[0]
    assert first["cell_type"] == "markdown" and _src(first).startswith("# ")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_one_parameters_cell_of_literals(path):
    cells = [c for c in _cells(path) if "parameters" in c.get("metadata", {}).get("tags", [])]
    assert len(cells) == 1, "exactly one cell tagged `parameters`"
    for node in ast.parse(_src(cells[0])).body:
        assert isinstance(node, ast.Assign), f"only assignments in the parameters cell: {ast.dump(node)}"
        ast.literal_eval(node.value)  # raises on anything but a literal
    assert "PRESET" in _src(cells[0])


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_has_checked_output_and_no_injected_cell(path):
    cells = _cells(path)
    assert any(_src(c).startswith("# NBVAL_CHECK_OUTPUT") for c in cells if c["cell_type"] == "code")
    assert not any("injected-parameters" in c.get("metadata", {}).get("tags", []) for c in cells)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_executed_with_counts_and_outputs(path):
    code = [c for c in _cells(path) if c["cell_type"] == "code"]
    assert code and all(c.get("execution_count") for c in code), "run `make refresh` to store executed outputs"
    checked = [c for c in code if _src(c).startswith("# NBVAL_CHECK_OUTPUT")]
    assert all(c["outputs"] for c in checked), "checked cells must have stored outputs"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_no_shell_magics_or_path_hacks(path):
    for cell in _cells(path):
        src = _src(cell)
        if cell["cell_type"] == "code":
            assert "!pip" not in src and "%cd" not in src and "sys.path" not in src
