"""GPPO in someone else's TRL script: the light install (pyproject's `trl` extra) imports the loss and the trainer
without vLLM, math-verify or the kit's data code, and GPPO warns when TRL's on-policy settings make it clip-higher."""
from __future__ import annotations

import subprocess
import tomllib
import warnings

import pytest
from packaging.requirements import Requirement

from klear_lib import light
from klear_lib.paths import REPO
from klear_lib.training.gppo_trainer import GPPOConfig, OnPolicyGPPOWarning

KIT_ONLY = ("vllm", "math_verify", "klear_lib.data", "klear_lib.rewards", "klear_lib.evaluation", "matplotlib")


@pytest.mark.slow
def test_light_install_imports_the_trainer_without_vllm_or_the_data_code(tmp_path):
    site = light.light_site(tmp_path / "site")
    assert not list(site.glob("vllm*")) and not list(site.glob("math_verify*"))
    code = ("import importlib.util, sys\n"
            "from klear_lib.losses import get_loss\n"
            "from klear_lib.training import GPPOConfig, GPPOTrainer\n"
            f"print(importlib.util.find_spec('vllm') is None, importlib.util.find_spec('math_verify') is None)\n"
            f"print(sorted(m for m in {KIT_ONLY!r} if m in sys.modules))\n")
    argv, env = light.command(site, code)
    run = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout.split("\n")[:2] == ["True True", "[]"], run.stdout


def test_the_light_extra_pins_nothing_of_the_kit_stack():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    light_reqs = [Requirement(r) for r in project["dependencies"] + project["optional-dependencies"]["trl"]]
    assert {r.name for r in light_reqs} == set(light.LIGHT)
    assert not any(s.operator == "==" for r in light_reqs for s in r.specifier)


def _args(tmp_path, **kw):
    return GPPOConfig(output_dir=str(tmp_path), use_cpu=True, bf16=False, num_generations=4,
                      per_device_train_batch_size=4, report_to="none", **kw)


def test_gppo_warns_when_trl_defaults_make_it_clip_higher(tmp_path):
    with pytest.warns(OnPolicyGPPOWarning, match="identical to clip-higher"):
        _args(tmp_path)  # steps_per_generation defaults to gradient_accumulation_steps, num_iterations to 1
    with pytest.warns(OnPolicyGPPOWarning):
        _args(tmp_path, gradient_accumulation_steps=2, steps_per_generation=2)
    with warnings.catch_warnings():
        warnings.simplefilter("error", OnPolicyGPPOWarning)
        _args(tmp_path, steps_per_generation=2)            # 2 updates per generation batch: off-policy
        _args(tmp_path, num_iterations=2)                  # the batch reused: off-policy
        _args(tmp_path, loss_type="clip_higher")         # no GPPO to lose


def test_the_kits_own_configs_do_not_warn(tmp_path):
    """The kit's RLConfig states its updates per step (the stability map runs 1-update cells on purpose)."""
    from klear_lib.configs import get_config
    from klear_lib.training.gppo_trainer import gppo_args

    cfg = get_config("rl_math", "ci", prompts_per_step=2, mini_batch_prompts=2)  # one update per step
    with warnings.catch_warnings():
        warnings.simplefilter("error", OnPolicyGPPOWarning)
        gppo_args(cfg, tmp_path)
