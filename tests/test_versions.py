"""The framework versions each integration is tested against (README, "GPPO in your own code"): the installed
TRL is in its range, and an untested or missing framework stops with one clear line, not a deep traceback."""
from __future__ import annotations

import subprocess
import sys

import pytest

from klear_lib.paths import REPO
from klear_lib.versions import TESTED, UnsupportedVersion, installed_version, require


def test_the_installed_trl_is_the_tested_one():
    assert require("trl") == installed_version("trl") == "1.16.0"


@pytest.mark.parametrize("dist,version", [("trl", "1.17.0"), ("trl", "1.15.2"), ("trl", "2.0.0.dev0"),
                                          ("verl", "0.10.0"), ("verl", "0.8.0"), ("verl", "0.2.0.dev0")])
def test_an_untested_version_is_refused_naming_the_range_and_the_fix(dist, version):
    with pytest.raises(UnsupportedVersion) as err:
        require(dist, version)
    message = str(err.value)
    assert f"{dist} {version} is installed" in message and TESTED[dist] in message and "pip install" in message


@pytest.mark.parametrize("dist,version", [("trl", "1.16.0"), ("trl", "1.16.3"), ("trl", "1.16.1.dev0"),
                                          ("verl", "0.9.0"), ("verl", "0.9.1"), ("verl", "0.9.2")])
def test_tested_versions_pass(dist, version):
    assert require(dist, version) == version


def test_a_missing_framework_says_how_to_install_it(monkeypatch):
    monkeypatch.setattr("klear_lib.versions.installed_version", lambda dist: None)
    with pytest.raises(UnsupportedVersion, match=r"needs verl>=0\.9\.0,<0\.10, which is not installed: pip install"):
        require("verl")


def test_an_untested_trl_stops_the_trainers_import_with_one_line():
    """A fresh interpreter that sees TRL 1.17: importing klear_lib.training fails before TRL's own imports run."""
    code = ("import importlib.metadata as m\n_v = m.version\n"
            "m.version = lambda d: '1.17.0' if d == 'trl' else _v(d)\n"
            "import klear_lib.training\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert out.returncode != 0
    assert out.stderr.strip().splitlines()[-1] == (
        "klear_lib.versions.UnsupportedVersion: klear_lib's GPPOTrainer is tested with trl>=1.16.0,<1.17, "
        "but trl 1.17.0 is installed: pip install 'trl==1.16.0' (or a version in that range)")
