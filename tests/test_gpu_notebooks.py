"""Notebooks 02-04 and 06 at ``PRESET=gpu`` end to end on the CPU: the gpu recipe's rehearsal (``KLEAR_REHEARSAL=1``,
``configs.recipe.rehearse``) runs the same cells and pipeline functions on a small random Qwen3, so the gpu path
cannot rot between GPU runs. Everything it writes goes to ``tmp_path``; ``results/`` is never touched."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from klear_lib import paths
from klear_lib.configs import recipe
from klear_lib.configs.recipe import REHEARSAL_ENV
from klear_lib.pipeline import in_process, rl_rows, sft_stage

GPU_NOTEBOOKS = ("02_long_cot_sft", "03_gppo_rl", "04_evaluation")


def test_the_gpu_recipe_is_itself_without_the_switch(monkeypatch):
    monkeypatch.delenv(REHEARSAL_ENV, raising=False)
    r = recipe("gpu")
    assert (r.preset, r.model.hub_id, r.sft, r.data, r.scratch) == ("gpu", "Qwen/Qwen3-1.7B", None, None, False)
    assert r.stage_processes and r.rl_math.use_vllm and r.rl_math.bf16
    assert not recipe("ci").stage_processes and not recipe("tiny").scratch


def test_the_rehearsal_changes_values_only_and_writes_outside_results(monkeypatch, tmp_path):
    monkeypatch.setenv(REHEARSAL_ENV, "1")
    monkeypatch.setenv("KLEAR_ARTIFACTS", str(tmp_path))
    gpu, r = recipe("gpu"), recipe("gpu")
    monkeypatch.delenv(REHEARSAL_ENV)
    real = recipe("gpu")
    assert gpu == r and r.preset == "gpu_rehearsal" and r.scratch and r.stage_processes and r.sft is None
    assert r.model.hub_id is None and r.model.dtype == "float32" and r.eval.dtype == "float32"
    assert not (r.rl_math.use_vllm or r.rl_math.bf16) and r.rl_math.use_cpu
    assert r.rl_math.mini_batch_rollouts // r.rl_math.gradient_accumulation_steps == 1  # gpu's layout kept
    assert r.rl_math.learning_rate == real.rl_math.learning_rate and r.rl_math.loss_type == real.rl_math.loss_type
    for where in (r.results, r.runs, r.figure("rl_math").parent):
        assert tmp_path in where.parents and paths.RESULTS not in where.parents
    assert recipe("tiny").results == paths.RESULTS / "tiny"  # the switch is read for gpu only


def test_sft_at_gpu_is_the_start_model_at_its_pinned_revision(monkeypatch):
    import huggingface_hub

    monkeypatch.delenv(REHEARSAL_ENV, raising=False)
    monkeypatch.setattr(huggingface_hub, "snapshot_download", lambda repo, revision: f"/hub/{repo}@{revision}")
    r = recipe("gpu")
    assert sft_stage(r) == f"/hub/Qwen/Qwen3-1.7B@{r.model.hub_revision}"  # nothing trained


def test_a_stage_process_that_fails_raises_in_the_parent():
    in_process(print, "a stage in its own process")
    with pytest.raises(RuntimeError, match="exit code 3"):
        in_process(sys.exit, 3)


def test_a_recipe_replaces_stages_not_its_switches():
    with pytest.raises(KeyError, match="no stage 'scratch'"):
        recipe("ci").replace(scratch={})


def test_rl_at_gpu_reads_the_files_of_make_data_full(monkeypatch, tmp_path):
    from datasets import Dataset

    monkeypatch.delenv(REHEARSAL_ENV, raising=False)
    monkeypatch.setenv("KLEAR_ARTIFACTS", str(tmp_path))
    r = recipe("gpu")
    with pytest.raises(FileNotFoundError, match="make data-full DATA_OUT="):
        rl_rows(r, "math")
    rows = [{"id": "m1", "prompt": [{"role": "user", "content": "1+1?"}], "reward_model": {"ground_truth": "2"}}]
    (tmp_path / "gpu" / "data").mkdir(parents=True)
    Dataset.from_list(rows).to_parquet(str(tmp_path / "gpu" / "data" / "math_rl.parquet"))
    assert rl_rows(r, "math") == rows


@pytest.mark.slow
def test_notebooks_02_to_04_at_gpu_run_in_rehearsal(tmp_path):
    """The three notebooks in order, as ``make rehearse-gpu`` runs them (about 3 minutes on 2 cores)."""
    env = {**os.environ, REHEARSAL_ENV: "1", "KLEAR_ARTIFACTS": str(tmp_path / "artifacts"), "KLEAR_BENCHMARKS": "",
           "HF_HUB_OFFLINE": "1", "TQDM_DISABLE": "1"}
    papermill = Path(sys.executable).parent / "papermill"
    for name in GPU_NOTEBOOKS:
        run = subprocess.run([str(papermill), str(paths.NOTEBOOKS / f"{name}.ipynb"), str(tmp_path / f"{name}.ipynb"),
                              "-p", "PRESET", "gpu", "-k", "python3", "--no-progress-bar"], env=env, cwd=tmp_path,
                             capture_output=True, text=True)
        assert run.returncode == 0, f"{name} at PRESET=gpu (rehearsal) failed:\n{run.stderr[-4000:]}"
    results = tmp_path / "artifacts" / "gpu_rehearsal" / "results"
    for run in ("rl_math", "rl_code"):
        assert len(pd.read_csv(results / "runs" / f"{run}.csv")) > 0
    stages = set(pd.read_csv(results / "eval.csv")["stage"])
    assert {"base", "sft", "rl_math", "rl_code"} <= stages
    for table in ("eval_seed_gains.csv", "eval_gains.csv", "problems/main.csv"):
        assert (results / table).exists(), table
    assert not (paths.RESULTS / "gpu_rehearsal").exists() and not (paths.FIGURES / "gpu_rehearsal").exists()


def test_the_gpu_arena_runs_fig2s_arms_and_the_random_reward_control_only(monkeypatch):
    from klear_lib.ablations import rl

    monkeypatch.delenv(REHEARSAL_ENV, raising=False)
    gpu = recipe("gpu")
    arms = {e: [c.label for c in rl.RL.conditions_for(gpu, e)] for e in rl.EXPERIMENTS}
    assert arms == {"fig2": ["gppo", "clip_higher", "grpo", "random_reward"], "fig3": [], "fig4": [], "fig5": [],
                    "table6": []}
    control = rl.rl_config(gpu, rl.EXPERIMENTS["fig2"].condition("random_reward"))
    grpo = rl.rl_config(gpu, rl.EXPERIMENTS["fig2"].condition("grpo"))
    assert control.random_reward and control.loss_type == "gppo" and control.max_steps == 20
    assert (grpo.loss_type, grpo.clip_low, grpo.clip_high) == ("clip_higher", 0.2, 0.2)  # GRPO, symmetric ε = 0.2
    assert rl.RL.benchmarks_at(gpu, rl.EXPERIMENTS["fig2"].condition("gppo")) == ("math500", "aime24", "aime25")
    for preset in ("ci", "tiny"):  # the control joins no stored experiment
        labels = {c.label for e in rl.EXPERIMENTS for c in rl.RL.conditions_for(recipe(preset), e)}
        assert "random_reward" not in labels
    assert len(rl.RL.conditions_for(recipe("tiny"), "fig2")) == 6  # the six arms of results/tiny/preregistration.md


@pytest.mark.slow
def test_notebook_06_at_gpu_runs_its_arena_in_rehearsal(tmp_path):
    """Fig. 2's arena at ``PRESET=gpu``: four arms of one RL step each from the random start model."""
    env = {**os.environ, REHEARSAL_ENV: "1", "KLEAR_ARTIFACTS": str(tmp_path / "artifacts"), "KLEAR_BENCHMARKS": "",
           "HF_HUB_OFFLINE": "1", "TQDM_DISABLE": "1"}
    papermill = Path(sys.executable).parent / "papermill"
    run = subprocess.run([str(papermill), str(paths.NOTEBOOKS / "06_rl_ablations.ipynb"), str(tmp_path / "06.ipynb"),
                          "-p", "PRESET", "gpu", "-k", "python3", "--no-progress-bar"], env=env, cwd=tmp_path,
                         capture_output=True, text=True)
    assert run.returncode == 0, f"06_rl_ablations at PRESET=gpu (rehearsal) failed:\n{run.stderr[-4000:]}"
    results = tmp_path / "artifacts" / "gpu_rehearsal" / "results"
    rows = pd.read_csv(results / "ablations_rl.csv")
    assert set(rows["condition"]) == {"gppo", "clip_higher", "grpo", "random_reward"} and set(rows["experiment"]) == {"fig2"}
    assert (results / "ablations_rl_summary.csv").exists() and not (results / "claims.csv").exists()
    assert not (paths.RESULTS / "gpu_rehearsal").exists()
