"""The full-scale launch path without GPUs: shipped accelerate/DeepSpeed configs, the launch script's command
line, and the ``python -m klear_lib.training.gppo_trainer`` CLI run end to end at ci scale."""
from __future__ import annotations

import ast
import inspect
import json
import os
import subprocess
import sys

import pytest
import torch.distributed as dist
import yaml

from klear_lib.paths import REPO
from klear_lib.training import gppo_trainer, sft
from klear_lib.training import rewards as reward_adapters
from klear_lib.training.launch import end_launch
from klear_lib.training.run_record import read_rows

SCRIPT = REPO / "scripts" / "launch_rl_full.sh"


def test_accelerate_configs_point_at_shipped_deepspeed_json():
    zero3 = yaml.safe_load((REPO / "configs" / "accelerate" / "zero3.yaml").read_text())
    assert zero3["distributed_type"] == "DEEPSPEED"
    ds_path = REPO / zero3["deepspeed_config"]["deepspeed_config_file"]  # relative to the repo root
    ds = json.loads(ds_path.read_text())
    assert ds["zero_optimization"]["stage"] == 3 and ds["bf16"]["enabled"] == "auto"
    assert ds["zero_optimization"]["stage3_gather_16bit_weights_on_model_save"] is True
    ddp = yaml.safe_load((REPO / "configs" / "accelerate" / "multi_gpu.yaml").read_text())
    assert ddp["distributed_type"] == "MULTI_GPU"


def _dry_run(**env) -> subprocess.CompletedProcess:
    base = {"DRY_RUN": "1", "MODEL": "/ckpt/sft", "TRAIN_FILE": "/data/rl.parquet", "OUTPUT_DIR": "/ckpt/rl"}
    return subprocess.run(["bash", str(SCRIPT)], cwd=REPO, env={**os.environ, **base, **env},
                          capture_output=True, text=True, timeout=30)


def test_launch_script_builds_the_paper_batch_layout():
    math = _dry_run(NNODES="4", PYTHON=sys.executable)
    assert "--num_processes 32" in math.stdout and "-m klear_lib.training.gppo_trainer" in math.stdout
    assert "gradient_accumulation_steps=4 per_device_rollouts=1" in math.stderr  # 128 rollouts = 1 x 4 x 32 ranks
    assert "accumulation" not in math.stdout  # the trainer derives the layout itself from WORLD_SIZE
    code = _dry_run(NNODES="1", STAGE="code", VLLM_MODE="server", VLLM_HOST="10.0.0.9", PYTHON=sys.executable)
    assert "gradient_accumulation_steps=32 per_device_rollouts=1" in code.stderr  # 256 rollouts over 8 ranks
    assert "vllm_server_host=10.0.0.9" in code.stdout
    bad = _dry_run(NNODES="3", PYTHON=sys.executable)
    assert bad.returncode == 1 and "does not split over 24 ranks" in bad.stderr


def test_cli_trains_and_resumes(ci_model_path, tmp_path, monkeypatch):
    monkeypatch.setattr(reward_adapters, "_default_judge",
                        lambda kind, *_: lambda response, truth: 1.0 if truth in response else -1.0)
    rows = [{"prompt": [{"role": "user", "content": f"Say {c}"}], "reward_model": {"ground_truth": c, "style": "rule"},
             "extra_info": {"id": f"say-{c}", "split": "train", "tier": 1}} for c in "abcdefgh"]
    train_file = tmp_path / "rows.jsonl"
    train_file.write_text("".join(json.dumps(r) + "\n" for r in rows))
    argv = ["--preset", "ci", "--model", ci_model_path, "--train-file", str(train_file),
            "--output-dir", str(tmp_path / "out"), "--run-record", str(tmp_path / "rec.csv"),
            "--set", "max_steps=1", "dual_clip=10"]
    gppo_trainer.main(argv)
    assert (tmp_path / "out" / "final" / "config.json").exists()
    assert len(read_rows(tmp_path / "rec.csv")) == 2  # 1 RL step x 2 updates (ci: 4 prompts / 2 per update)
    gppo_trainer.main(argv)  # restart after the end: resumes from checkpoint-2 and stops, record unchanged
    assert len(read_rows(tmp_path / "rec.csv")) == 2
    with pytest.raises(KeyError, match="no_such_field"):
        gppo_trainer.main([*argv[:-3], "--set", "no_such_field=1"])


def test_end_launch_leaves_the_process_group(tmp_path):
    dist.init_process_group("gloo", init_method=f"file://{tmp_path / 'store'}", rank=0, world_size=1)
    try:
        end_launch()
        assert not dist.is_initialized()
    finally:
        if dist.is_initialized():
            dist.destroy_process_group()
    end_launch()  # and without a group, nothing


@pytest.mark.parametrize("module", [sft, gppo_trainer])
def test_launched_entry_points_end_by_leaving_the_process_group(module):
    """A rank that exits inside its gloo group aborts now and then at shutdown (klear_lib/training/launch.py): the
    CLIs that torchrun and accelerate launch end with ``end_launch``, after the final save."""
    body = ast.parse(inspect.getsource(module.main)).body[0].body
    last = body[-1]
    assert isinstance(last, ast.Expr) and ast.unparse(last.value) == "end_launch()"
