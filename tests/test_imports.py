"""The library's import graph: every module imports alone, no cycle hides behind a function-level import, and the
only imports inside functions are optional engines kept lazy (each line says why with ``# lazy:``)."""
from __future__ import annotations

import ast
import subprocess
import sys

from klear_lib.paths import REPO
from klear_lib.versions import installed_version

PACKAGE = REPO / "klear_lib"
# Plugins for an optional framework import it at the top (that is what registers them) and refuse to import without
# it, by design: they are checked only where their framework is installed (tests/test_verl_plugin.py covers the rest).
OPTIONAL = {"klear_lib.integrations.verl_plugin": "verl"}


def module_names() -> list[str]:
    names = []
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(REPO).with_suffix("").parts
        names.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return [n for n in names if n not in OPTIONAL or installed_version(OPTIONAL[n]) is not None]


def function_level_imports() -> list[str]:
    """``path:line`` of every import inside a function whose line does not say ``# lazy:``."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        lines = path.read_text().splitlines()
        for fn in ast.walk(ast.parse("\n".join(lines))):
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                found += [f"{path.relative_to(REPO)}:{node.lineno}" for node in ast.walk(fn)
                          if isinstance(node, (ast.Import, ast.ImportFrom))
                          and "# lazy:" not in lines[node.lineno - 1]]
    return found


def test_no_imports_inside_functions():
    assert function_level_imports() == []


def test_every_module_imports_alone():
    """Each module in a namespace with no klear_lib module loaded: a cycle raises ImportError for one of them
    (third-party packages stay loaded between modules, so this takes seconds, not a fresh interpreter each)."""
    code = ("import importlib, sys, traceback\n"
            f"failed = []\nfor name in {module_names()!r}:\n"
            "    for m in [m for m in sys.modules if m == 'klear_lib' or m.startswith('klear_lib.')]:\n"
            "        del sys.modules[m]\n"
            "    try:\n        importlib.import_module(name)\n"
            "    except Exception as err:\n        failed.append(f'{name}: {type(err).__name__}: {err}')\n"
            "print('\\n'.join(failed))\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip() == ""
