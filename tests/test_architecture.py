"""The library's layers: the import graph between its units (a top-level module or subpackage of klear_lib) has no
cycle, so every import runs down a layer; module-level and function-level (``# lazy:``) imports both count.

    python tests/test_architecture.py   # the layer order and the size figures (lines, functions, preset, up-imports)
"""
from __future__ import annotations

import ast
import itertools
from collections import defaultdict
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "klear_lib"


def unit_of(module: str) -> str | None:
    """The unit a dotted module name belongs to (``klear_lib.data.full.traces`` -> ``data``); None outside."""
    parts = module.split(".")
    return parts[1] if parts[0] == "klear_lib" and len(parts) > 1 else None


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _targets(node: ast.AST, module: str, is_package: bool) -> list[str]:
    """The klear_lib modules one import statement names (``from klear_lib import x`` names ``klear_lib.x``)."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[:len(base) - node.level + 1] if node.level else []
    source = ".".join([*base, node.module] if node.module else base)
    return [f"{source}.{a.name}" if (PACKAGE.parent / source.replace(".", "/") / a.name).exists()
            or (PACKAGE.parent / f"{source.replace('.', '/')}/{a.name}.py").exists() else source
            for a in node.names]


def import_edges() -> list[tuple[str, str, str]]:
    """(importing unit, imported unit, ``path:line``) for every import between two different units, at any depth."""
    edges = []
    for path in sorted(PACKAGE.rglob("*.py")):
        module = _module_name(path)
        here = unit_of(module)
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                for target in _targets(node, module, path.name == "__init__.py"):
                    there = unit_of(target)
                    if here and there and there != here:
                        edges.append((here, there, f"{path.relative_to(PACKAGE.parent)}:{node.lineno}"))
    return edges


def units() -> list[str]:
    return sorted(p.stem if p.is_file() else p.name for p in PACKAGE.iterdir()
                  if (p.suffix == ".py" and p.stem != "__init__") or (p / "__init__.py").exists())


def _components(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v), on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while not comp or comp[-1] != v:
                comp.append(stack.pop())
                on.discard(comp[-1])
            out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def _fewest_up_edges(comp: list[str], graph: dict[str, set[str]], weight: dict) -> set[tuple[str, str]]:
    """The smallest set of edges inside a cycle whose removal leaves it acyclic, the fewest import statements among
    equals (exact; components are small)."""
    inner = sorted((a, b) for a in comp for b in graph[a] if b in comp)
    for k in range(1, len(inner) + 1):
        cuts = [set(cut) for cut in itertools.combinations(inner, k)
                if all(len(c) == 1 for c in _components(
                    {v: {b for b in graph[v] if b in comp and (v, b) not in cut} for v in comp}))]
        if cuts:
            return min(cuts, key=lambda cut: sum(weight[e] for e in cut))
    return set(inner)


def layering() -> tuple[list[list[str]], list[tuple[str, str, str]]]:
    """Units by layer, bottom first (a unit sits one above the highest it imports), and the imports running back up
    a layer: those on the fewest unit edges whose removal breaks every cycle (none when the graph is acyclic)."""
    edges = sorted(set(import_edges()))
    graph, weight = {u: set() for u in units()}, defaultdict(int)
    for a, b, _ in edges:
        graph[a].add(b)
        weight[a, b] += 1
    up = set().union(*(_fewest_up_edges(c, graph, weight) for c in _components(graph) if len(c) > 1))
    down = {v: graph[v] - {b for a, b in up if a == v} for v in graph}
    layer: dict[str, int] = {}

    def height(v):
        if v not in layer:
            layer[v] = 1 + max((height(w) for w in down[v]), default=-1)
        return layer[v]

    by_layer = defaultdict(list)
    for v in sorted(graph):
        by_layer[height(v)].append(v)
    return [by_layer[i] for i in sorted(by_layer)], [e for e in edges if (e[0], e[1]) in up]


def figures() -> dict[str, int]:
    """Size figures of the library: lines, functions (methods included), functions taking a ``preset`` parameter,
    units, unit edges, layers and imports running back up a layer (unit edges, then import statements)."""
    lines = functions = preset = 0
    for path in PACKAGE.rglob("*.py"):
        text = path.read_text()
        lines += len(text.splitlines())
        for fn in ast.walk(ast.parse(text)):
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                functions += 1
                a = fn.args
                preset += any(p.arg == "preset" for p in [*a.posonlyargs, *a.args, *a.kwonlyargs])
    layers, up = layering()
    return {"lines": lines, "functions": functions, "functions_taking_preset": preset, "units": len(units()),
            "unit_edges": len({(a, b) for a, b, _ in import_edges()}), "layers": len(layers),
            "up_layer_unit_edges": len({(a, b) for a, b, _ in up}), "up_layer_imports": len(up)}


def test_every_import_runs_down_a_layer():
    layers, up = layering()
    print("\n".join(f"layer {i}: {' '.join(names)}" for i, names in enumerate(layers)))
    assert up == []


def test_the_graph_sees_module_level_and_lazy_imports():
    edges = {(a, b) for a, b, _ in import_edges()}
    assert ("site", "ablations") in edges  # a function-level `# lazy:` import
    assert ("pipeline", "configs") in edges  # a module-level one


if __name__ == "__main__":
    layers, up = layering()
    for i, names in enumerate(layers):
        print(f"layer {i}: {' '.join(names)}")
    for a, b, where in up:
        print(f"up: {a} -> {b}  {where}")
    for name, value in figures().items():
        print(f"{name}: {value}")
