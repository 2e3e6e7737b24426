"""The RL frameworks' versions each integration is tested against, and a clear error outside them.

``GPPOTrainer`` overrides private methods of TRL's ``GRPOTrainer`` and the verl plugin calls verl's loss registry and
aggregation, so a version outside the tested range fails somewhere deep (a missing attribute, a changed signature)
or, worse, silently trains something else. ``require`` turns that into one error naming the package, the version
found, the range tested and the command that installs a tested one.
"""
from __future__ import annotations

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
