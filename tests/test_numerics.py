"""The numerics mode (klear_lib.numerics): what it sets, when, and that every process the kit starts runs under it."""
from __future__ import annotations

import ast
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from klear_lib import numerics
from klear_lib.paths import REPO

HEAVY = ("torch", "numpy", "pandas", "transformers", "trl", "datasets", "vllm", "accelerate", "scipy")


def child(code: str, **env: str) -> str:
    """``code``'s stdout in a fresh interpreter whose environment has no mode variables, plus ``env``."""
    base = {k: v for k, v in os.environ.items() if k not in numerics.PINNED and k != numerics.MODE_ENV}
    out = subprocess.run([sys.executable, "-c", code], env={**base, **env}, capture_output=True, text=True,
                         check=True, cwd=REPO)
    return out.stdout.strip()


def test_pinned_sets_every_variable_and_native_leaves_the_environment(monkeypatch):
    for name in [*numerics.PINNED, numerics.MODE_ENV]:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(numerics, "has_nvidia_gpu", lambda: False)
    assert numerics.apply() == "pinned" and numerics.pinned_env()
    for name in numerics.PINNED:
        monkeypatch.delenv(name)
    monkeypatch.setenv(numerics.MODE_ENV, "native")
    monkeypatch.setenv("ATEN_CPU_CAPABILITY", "avx512")
    assert numerics.apply() == "native" and os.environ["ATEN_CPU_CAPABILITY"] == "avx512"
    assert not any(name in os.environ for name in numerics.PINNED if name != "ATEN_CPU_CAPABILITY")


def test_unset_means_pinned_on_a_cpu_machine_and_native_beside_a_gpu(monkeypatch):
    monkeypatch.delenv(numerics.MODE_ENV, raising=False)
    monkeypatch.setattr(numerics, "has_nvidia_gpu", lambda: False)
    assert numerics.requested() == "pinned"
    monkeypatch.setattr(numerics, "has_nvidia_gpu", lambda: True)
    assert numerics.requested() == "native"
    monkeypatch.setenv(numerics.MODE_ENV, "fast")
    with pytest.raises(ValueError, match="KLEAR_NUMERICS='fast'"):
        numerics.requested()


def test_this_test_process_runs_pinned_with_torch_on_avx2():
    if os.environ.get(numerics.MODE_ENV) == "native":
        pytest.skip("the caller asked for the native mode")
    assert numerics.mode() == "pinned" and torch.backends.cpu.get_cpu_capability() == "AVX2"


def test_importing_klear_lib_first_pins_torch_and_numpy_in_a_fresh_process():
    code = ("import klear_lib, numpy, torch; from klear_lib import numerics; "
            "f = numpy._core._multiarray_umath.__cpu_features__; "
            "print(numerics.mode(), torch.backends.cpu.get_cpu_capability(), torch.get_num_threads(), "
            "f['AVX512F'], f['AVX512_SKX'])")
    assert child(code) == f"pinned AVX2 {numerics.THREADS} False False"
    assert child(code, KLEAR_NUMERICS="native").split()[0] == "native"


def test_torch_loaded_first_is_reported_as_mixed():
    native = child("import torch; print(torch.backends.cpu.get_cpu_capability(), torch.get_num_threads())",
                   KLEAR_NUMERICS="native")
    if native == f"AVX2 {numerics.THREADS}":
        # an AVX2-only CPU with THREADS cores: torch loaded first already takes the pinned kernel path and thread
        # count, so there is nothing for mode() to see (some of our AMD EPYC machines have no AVX-512)
        pytest.skip(f"this CPU's own torch path is the pinned one ({native})")
    assert child("import torch; import klear_lib; from klear_lib import numerics; print(numerics.mode())") == "mixed"


def test_the_mode_is_not_in_config_hashes(monkeypatch):
    from klear_lib.configs import config_hash, get_config

    before = config_hash(get_config("rl_math", "tiny"))
    monkeypatch.setenv(numerics.MODE_ENV, "native")
    assert config_hash(get_config("rl_math", "tiny")) == before


def test_provenance_names_the_machine_mode_and_versions():
    here = numerics.provenance()
    assert set(here) == {"cpu", "numerics", "torch", "mkl"} and here["torch"] == torch.__version__
    assert here["cpu"] and here["mkl"] not in ("", numerics.UNKNOWN)


def _imports(tree: ast.Module) -> list[str]:
    """Top-level package names imported at module level, in order."""
    names = []
    for node in tree.body:
        if isinstance(node, ast.Import):
            names += [a.name.split(".")[0] for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module.split(".")[0])
    return names


ENTRY_POINTS = sorted([*REPO.glob("scripts/*.py"), *REPO.glob("benchmarks/*.py")])


@pytest.mark.parametrize("path", ENTRY_POINTS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_entry_points_import_klear_lib_before_any_numerics_library(path):
    names = _imports(ast.parse(path.read_text()))
    heavy = [i for i, n in enumerate(names) if n in HEAVY]
    if heavy:
        assert "klear_lib" in names[:heavy[0]], f"{path.name} imports {names[heavy[0]]} before klear_lib"


def test_the_notebook_kernel_starts_through_klear_lib():
    spec = Path(sys.prefix) / "share" / "jupyter" / "kernels" / "python3" / "kernel.json"
    if not spec.exists():
        pytest.skip("no kernel spec in this environment (make setup installs it)")
    argv = json.loads(spec.read_text())["argv"]
    assert argv[argv.index("-m") + 1] == "klear_lib.kernel"


def test_children_of_the_kit_inherit_the_mode():
    from klear_lib.generation import vllm_env

    if numerics.mode() != "pinned":
        pytest.skip("the caller asked for the native mode")
    assert all(vllm_env()[k] == v for k, v in numerics.PINNED.items())


def test_the_vllm_worker_loads_vllms_avx2_kernels_under_the_pinned_mode():
    probes = ", ".join(f"torch.cpu.{p}()" for p in ("_is_avx512_supported", "_is_avx512_bf16_supported",
                                                  "_is_amx_tile_supported"))
    code = f"import klear_lib, torch; from klear_lib import numerics; numerics.cap_vllm_kernels(); print({probes})"
    assert child(code) == "False False False"
    if importlib.util.find_spec("vllm") is None:
        return
    code += ("; from vllm.platforms import current_platform; current_platform.import_kernels(); import re; "
             "print(sorted(set(re.findall(r'vllm/(_C\\w*)\\.abi3', open('/proc/self/maps').read()))))")
    assert child(code).splitlines()[-1] == "['_C_AVX2']"


def _script(name: str):
    """``scripts/<name>.py`` as a module (scripts/ is not a package)."""
    spec = importlib.util.spec_from_file_location(name, REPO / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_per_operation_records_cover_every_operation_the_script_runs():
    ops = _script("numerics_ops")
    records = json.loads(ops.RECORDS.read_text())
    assert any(r["numerics"] == "pinned" for r in records.values())
    for key, r in records.items():
        assert key == numerics.record_key(r)
        assert set(r["ops"]) == set(ops.OPS), key
    assert ops.OPS["softmax"]() == ops.OPS["softmax"]()  # seeded inputs: a rerun in one process is the same bytes




def test_the_trace_hashes_each_rounding_operation_and_finds_the_first_that_differs():
    nt = _script("numerics_trace")

    def run(x):
        with nt.Trace() as t:
            y = torch.exp(x.view(4, 4)).t().sum(0)  # a view and a transpose: aliases, not traced
            (y * 2).sqrt()
        return nt.unpack(nt.record(t))

    x = torch.linspace(0.1, 1.6, 16)
    first = run(x)
    assert [op for op, _ in first] == ["aten.exp.default", "aten.sum.dim_IntList", "aten.mul.Tensor",
                                       "aten.sqrt.default"]
    assert run(x.clone()) == first and nt.first_difference(first, first) is None
    nudged = x.clone()
    nudged[-1] = torch.nextafter(nudged[-1], torch.tensor(2.0))  # one ulp in one input changes every later hash
    assert nt.first_difference(first, run(nudged)) == 0
    assert nt.first_difference(first, first[:2]) == 2
    with nt.Trace({"aten.exp.default": "exact"}):  # --change: exp in float64, rounded once
        assert torch.equal(torch.exp(x), torch.exp(x.double()).float())
    plain = torch.exp(x)
    with nt.Trace({"aten.exp.default": "up"}):  # or each result one ulp up
        assert torch.equal(torch.exp(x), torch.nextafter(plain, torch.tensor(float("inf"))))
    squares = torch.tensor([4.0, 9.0, 16.0])
    roots = torch.sqrt(squares)  # this machine's own rounding, whatever it is
    down = torch.nextafter(roots, torch.zeros(3))
    with nt.Trace({"aten.sqrt.default": "down@4"}):  # or only the results of some input values
        assert torch.equal(torch.sqrt(squares), torch.stack([down[0], roots[1], roots[2]]))
    with nt.Trace({"aten.sqrt.default": "down@4/16"}):
        assert torch.equal(torch.sqrt(squares), torch.stack([down[0], roots[1], down[2]]))
    hows = ("exact", "up", "down@1.5", "up@1/2.5", "up@", "sideways", "up@x", "up@1/")
    assert [nt._is_change(h) for h in hows] == [True] * 4 + [False] * 4


def test_the_stored_traces_name_their_machine_and_read_back():
    nt = _script("numerics_trace")
    stored = json.loads(nt.TRACES.read_text())
    assert any(r["numerics"] == "pinned" for r in stored.values())
    for key, r in stored.items():
        assert key == numerics.record_key(r)
        steps = nt.unpack(r)
        assert len(steps) > 1000 and {op for op, _ in steps} == set(r["names"]), key
