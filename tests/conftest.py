"""Shared fixtures: artifacts in a per-session scratch folder, and a micro model built offline."""
from __future__ import annotations

import os

import klear_lib  # noqa: F401  (first: the numerics mode before torch, NumPy or vLLM load; klear_lib.numerics)
import pytest

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TQDM_DISABLE", "1")


@pytest.fixture(scope="session", autouse=True)
def _artifacts_in_scratch(tmp_path_factory):
    """Keep test artifacts out of the user's ``.artifacts`` (CI starts clean anyway)."""
    if "KLEAR_ARTIFACTS" not in os.environ:
        os.environ["KLEAR_ARTIFACTS"] = str(tmp_path_factory.mktemp("artifacts"))
    yield


@pytest.fixture(scope="session")
def ci_model_path():
    """The ci-preset base model (hidden 32, 2 layers), built once per session from a config and a seed."""
    from klear_lib.configs import recipe
    from klear_lib.models import load_or_build

    return load_or_build(recipe("ci"))


@pytest.fixture(autouse=True)
def _mirror_only_for_real_tests(request, monkeypatch):
    """``make test`` runs with no mirror whatever the caller's environment; ``real`` tests need one."""
    if request.node.get_closest_marker("real") is None:
        monkeypatch.delenv("KLEAR_BENCHMARKS", raising=False)
    elif not os.environ.get("KLEAR_BENCHMARKS"):
        pytest.fail("this test reads the real files: set KLEAR_BENCHMARKS to a mirror (make test-real does)")


@pytest.fixture
def fake_mirror(tmp_path, monkeypatch):
    """A mirror of invented rows in every source's real schema (``tests/fake_mirror.py``), set as the mirror."""
    import fake_mirror as fm

    files = fm.write(tmp_path / "mirror")
    monkeypatch.setenv("KLEAR_BENCHMARKS", str(tmp_path / "mirror"))
    fm.expect(monkeypatch)  # benchmark sizes: the fixture's, not the real ones
    return files
