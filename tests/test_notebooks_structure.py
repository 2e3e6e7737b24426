"""Every committed notebook follows the house structure (docs/design.md "Notebooks"), so papermill and nbval can
run it."""
from __future__ import annotations

import ast
import json
import re
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


# --- what a reader sees in the stored outputs ---------------------------------------------------------------------

REPO = NOTEBOOKS[0].parent.parent if NOTEBOOKS else Path(".")
STORED = NOTEBOOKS + sorted((REPO / "results").glob("*/notebooks/[0-9][0-9]_*.ipynb"))
# An absolute path names one machine; a warning is noise the reader has to judge (klear_lib.versions filters the
# tested stack's known ones where they are raised).
ABSOLUTE_PATH = re.compile(r"(?<![\w.~])/(?:home|tmp|work|Users|root|usr|opt|var|mnt|private)/")
# The kit's own logged warnings (WARNING:klear_lib.…, e.g. the real benchmarks left out when no mirror is set) are
# what it tells the reader, so they stay.
WARNING = re.compile(r"\b[A-Z]\w*Warning\b|^WARNING\b(?!:klear_lib\.)|\bWARNING:(?!klear_lib\.)", re.MULTILINE)



def _output_text(output) -> str:
    if "text" in output:
        return "".join(output["text"])
    if output.get("output_type") == "error":
        return "\n".join(output.get("traceback", []))
    data = output.get("data", {})
    return "".join(data.get("text/plain", [])) + "".join(data.get("text/html", []))


def _dirty_lines(path) -> list[str]:
    bad = []
    for i, cell in enumerate(_cells(path)):
        for out in cell.get("outputs", []):
            for line in _output_text(out).splitlines():
                if ABSOLUTE_PATH.search(line) or WARNING.search(line):
                    bad.append(f"cell {i}: {line.strip()[:160]}")
    return bad


@pytest.mark.parametrize("path", STORED, ids=lambda p: p.relative_to(REPO).as_posix())
def test_stored_outputs_hold_no_warning_or_absolute_path(path):
    name = path.relative_to(REPO).as_posix()
    bad = _dirty_lines(path)
    assert not bad, f"{name}: stored outputs a reader should not see:\n" + "\n".join(bad[:10])


def test_the_output_check_catches_what_it_should(tmp_path):
    outputs = [{"output_type": "stream", "name": "stderr", "text": ["/opt/x/trl/__init__.py:22: UserWarning: old\n"]},
               {"output_type": "execute_result", "data": {"text/plain": ["PosixPath('/work/main/results/a.png')"]}},
               {"output_type": "stream", "name": "stdout", "text": ["WARNING:vllm:Triton disabled\n"]},
               {"output_type": "stream", "name": "stdout", "text": ["results/figures/tiny_a.png; 0.5 of 1/2 ~/x\n"]},
               {"output_type": "stream", "name": "stderr", "text": ["WARNING:klear_lib.data.sources:mirror unset\n"]}]
    path = tmp_path / "nb.ipynb"
    path.write_text(json.dumps({"cells": [{"cell_type": "code", "source": [], "outputs": outputs}]}))
    assert [line.split(":")[0] for line in _dirty_lines(path)] == ["cell 0"] * 3
