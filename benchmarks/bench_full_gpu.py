"""GPU benchmark of the ``full`` path on a randomly initialised model of Qwen3-8B's shape (nothing downloaded).

    python benchmarks/bench_full_gpu.py                 # full depth (36 layers): needs one ~80+ GB GPU
    python benchmarks/bench_full_gpu.py --layers 2      # quick check of the whole script
    python benchmarks/bench_full_gpu.py --out gpu.csv   # then here: python benchmarks/perf.py --collect gpu.csv

Two measurements, one after the other on one GPU (environment.gpu.yml: torch 2.13 CUDA, vllm 0.31, trl 1.16):

* rollout tokens/s with vLLM: a child process builds ``LLM(load_format="dummy")`` (random weights, no
  checkpoint) on a config-only model folder, token-id prompts (``skip_tokenizer_init``), ``ignore_eos`` so every
  sample runs to the cap; engine start-up (incl. compilation / CUDA graphs) is reported apart. The child
  exits before training starts, so its memory is free again.
* training tokens/s: ``GPPOTrainer`` (the recipe's loss: GPPO + α·L_LM, clip diagnostics) and stock TRL
  ``GRPOTrainer(loss_type="dapo")`` on the same bf16 model with gradient checkpointing, each step =
  ``compute_loss`` + ``backward`` + grad clip + AdamW on one prepared micro-batch; the two run interleaved and
  their ratio is the GPU counterpart of ``bench_gppo_step.py``.

The shape comes from ``get_config("model", "full")`` through ``klear_lib.models.factory.qwen3_config``, with
Qwen3-8B's real vocabulary size and untied embeddings; the tokenizer is the tiny character tokenizer (ids are
random anyway). Without CUDA the script prints "skipped: no CUDA" and exits 0.
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import klear_lib  # noqa: E402, F401  (first: the numerics mode before torch loads)
import torch  # noqa: E402

log = logging.getLogger("bench_full_gpu")
BENCH = "full_gpu"
QWEN3_8B_VOCAB = 151936        # Qwen3-8B config.json "vocab_size" (UNVERIFIED here: no hub access)
QWEN3_8B_TIED = False          # Qwen3-8B config.json "tie_word_embeddings"
QWEN3_8B_ROPE_THETA = 1e6      # Qwen3-8B config.json "rope_theta" (no effect on speed)


# ---- the model shape ----------------------------------------------------------------------------------------
def full_shape_config(layers: int | None = None, preset: str = "full"):
    """A ``Qwen3Config`` of Qwen3-8B's shape (``layers`` overrides the depth) and the char tokenizer; another
    model ``preset`` keeps the vocabulary and embeddings of Qwen3-8B with that preset's small body (tests)."""
    from klear_lib.configs import get_config
    from klear_lib.models import build_tokenizer
    from klear_lib.models.factory import qwen3_config

    tokenizer = build_tokenizer()
    depth = {"num_hidden_layers": layers} if layers else {}  # set at construction: layer_types follows it
    config = qwen3_config(get_config("model", preset, **depth), tokenizer)
    config.vocab_size, config.tie_word_embeddings = QWEN3_8B_VOCAB, QWEN3_8B_TIED
    config.rope_parameters = {"rope_type": "default", "rope_theta": QWEN3_8B_ROPE_THETA}
    config.architectures = ["Qwen3ForCausalLM"]  # vLLM picks the model class from this
    return config, tokenizer


def full_layers() -> int:
    """Qwen3-8B's depth, from the ``full`` model preset."""
    from klear_lib.configs import get_config

    return get_config("model", "full").num_hidden_layers


def token_prompts(n: int, length: int, low: int, high: int) -> list[list[int]]:
    """``n`` random token-id prompts of ``length`` ids in ``[low, high)`` (seeded)."""
    from klear_lib.seeding import np_rng

    return np_rng(0, "bench-full-prompts").integers(low, high, size=(n, length)).tolist()


# ---- rollout (child process) --------------------------------------------------------------------------------
def rollout_phase(args, result: Path) -> None:
    """vLLM engine start-up and generation throughput; writes a JSON result (runs in its own process)."""
    from vllm import LLM, SamplingParams

    config, tokenizer = full_shape_config(args.layers)
    with tempfile.TemporaryDirectory(prefix="bench-full-model-") as model_dir:
        config.save_pretrained(model_dir)  # config only: load_format="dummy" draws random weights
        start = time.perf_counter()
        llm = LLM(model=model_dir, load_format="dummy", skip_tokenizer_init=True, dtype=args.dtype, seed=0,
                  max_model_len=args.prompt_len + args.gen_len, gpu_memory_utilization=args.gpu_memory_utilization,
                  tensor_parallel_size=1, enforce_eager=args.enforce_eager)
        startup = time.perf_counter() - start
        prompts = [{"prompt_token_ids": ids} for ids in token_prompts(args.prompts, args.prompt_len, 4, len(tokenizer))]
        params = SamplingParams(n=args.n, temperature=1.0, top_p=1.0, max_tokens=args.gen_len, ignore_eos=True,
                                detokenize=False)
        llm.generate(prompts[:1], SamplingParams(max_tokens=8, ignore_eos=True, detokenize=False), use_tqdm=False)
        start = time.perf_counter()
        outputs = llm.generate(prompts, params, use_tqdm=False)
        seconds = time.perf_counter() - start
    tokens = sum(len(o.token_ids) for r in outputs for o in r.outputs)
    result.write_text(json.dumps({"startup_s": startup, "generate_s": seconds, "tokens": tokens}))


def run_rollout_child(argv: list[str]) -> dict:
    """Run ``rollout_phase`` in a child (vLLM needs a ``__main__`` guard and frees the GPU when it exits)."""
    with tempfile.TemporaryDirectory(prefix="bench-full-") as tmp:
        result = Path(tmp) / "rollout.json"
        cmd = [sys.executable, str(Path(__file__).resolve()), *argv, "--phase", "rollout", "--result", str(result)]
        proc = subprocess.run(cmd, text=True)
        if proc.returncode != 0 or not result.exists():
            raise RuntimeError(f"rollout phase failed with exit code {proc.returncode} (its output is above)")
        return json.loads(result.read_text())


# ---- training -----------------------------------------------------------------------------------------------
def build_model(config, dtype: torch.dtype, device: str):
    """A randomly initialised ``Qwen3ForCausalLM`` created directly on ``device`` in ``dtype``."""
    from transformers import AutoModelForCausalLM

    with torch.device(device):
        model = AutoModelForCausalLM.from_config(config, dtype=dtype)
    return model


def trainer_pair(model, tokenizer, args, out_dir: Path) -> dict:
    """GPPOTrainer (recipe loss, ``full`` RL preset values) and stock dapo GRPOTrainer around the same model."""
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    from klear_lib.configs import get_config
    from klear_lib.training import GPPOTrainer, gppo_args

    overrides = dict(per_device_train_batch_size=args.train_batch, gradient_accumulation_steps=1,
                     steps_per_generation=8, max_completion_length=args.train_completion_len, use_vllm=False,
                     save_strategy="no", disable_tqdm=True, use_cpu=not torch.cuda.is_available(),
                     bf16=args.dtype == "bfloat16", gradient_checkpointing=not args.no_checkpointing,
                     deepspeed=None)  # one GPU, one process: no ZeRO-3
    gppo_cfg = gppo_args(get_config("rl_math", "full"), out_dir / "gppo", **overrides)
    shared = {k: getattr(gppo_cfg, k) for k in ("epsilon", "epsilon_high", "num_generations", "learning_rate",
                                                "max_completion_length", "per_device_train_batch_size",
                                                "steps_per_generation", "bf16", "use_cpu", "gradient_checkpointing",
                                                "report_to", "save_strategy", "disable_tqdm", "max_grad_norm")}
    stock_cfg = GRPOConfig(output_dir=str(out_dir / "dapo"), loss_type="dapo", **shared)
    data = Dataset.from_list([{"prompt": [{"role": "user", "content": "1+1"}]}] * 16)
    reward = [lambda completions, **kw: [0.0] * len(completions)]
    made = {"gppo": GPPOTrainer(model, reward, args=gppo_cfg, train_dataset=data, processing_class=tokenizer),
            "trl_dapo": GRPOTrainer(model, reward, args=stock_cfg, train_dataset=data, processing_class=tokenizer)}
    for trainer in made.values():
        trainer.model.train()
        trainer.current_gradient_accumulation_steps = 1
    return made


def train_batch(args, vocab_low: int, vocab_high: int, device: str) -> dict:
    """A prepared micro-batch: ``(B, P)`` prompts, ``(B, T)`` full-length completions, off-policy old log-probs."""
    from klear_lib.seeding import torch_generator

    gen = torch_generator(0, "bench-full-batch")
    b, p, t = args.train_batch, args.prompt_len, args.train_completion_len
    batch = {"prompt_ids": torch.randint(vocab_low, vocab_high, (b, p), generator=gen),
             "prompt_mask": torch.ones(b, p, dtype=torch.long),
             "completion_ids": torch.randint(vocab_low, vocab_high, (b, t), generator=gen),
             "completion_mask": torch.ones(b, t, dtype=torch.long), "advantages": torch.randn(b, generator=gen),
             "is_correct": (torch.arange(b) % 2).float(), "num_items_in_batch": torch.tensor(float(b * t * 8))}
    batch = {k: v.to(device) for k, v in batch.items()}
    batch["old_per_token_logps"] = torch.full((b, t), -float(torch.log(torch.tensor(float(vocab_high)))),
                                              device=device) + 0.3 * torch.randn(b, t, generator=gen).to(device)
    return batch


def train_step(trainer, optimizer, batch) -> None:
    """One optimizer step on ``batch``: loss, backward, clip, AdamW; synchronised so the wall time is real."""
    loss = trainer.compute_loss(trainer.model, batch)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(trainer.model.parameters(), trainer.args.max_grad_norm)
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    if torch.cuda.is_available():
        torch.cuda.synchronize()


def train_phase(args, device: str = "cuda") -> dict:
    """Seconds per training step of GPPO and dapo, interleaved; plus tokens per step and peak memory."""
    import perf  # benchmarks/perf.py, beside this script

    config, tokenizer = full_shape_config(args.layers)
    dtype = getattr(torch, args.dtype)
    model = build_model(config, dtype, device)
    with tempfile.TemporaryDirectory(prefix="bench-full-train-") as tmp:
        trainers = trainer_pair(model, tokenizer, args, Path(tmp))
        optimizer = torch.optim.AdamW(model.parameters(), lr=trainers["gppo"].args.learning_rate, weight_decay=0.1)
        batch = train_batch(args, 4, len(tokenizer), device)
        times = perf.interleave({n: (lambda t=t: train_step(t, optimizer, batch)) for n, t in trainers.items()},
                                args.steps, args.warmup)
    peak = torch.cuda.max_memory_allocated() / 2**30 if torch.cuda.is_available() else float("nan")
    params = sum(p.numel() for p in model.parameters())
    return {"times": times, "tokens": args.train_batch * (args.prompt_len + args.train_completion_len),
            "peak_gib": peak, "params": params}


# ---- report -------------------------------------------------------------------------------------------------
def rows_from(rollout: dict | None, train: dict, args) -> list[dict]:
    import perf  # benchmarks/perf.py, beside this script

    shape = f"Qwen3-8B shape, {args.layers or full_layers()} layers, random init, {args.dtype}"
    rows = []
    if rollout:
        rows += [perf.row(BENCH, "rollout.startup_s.vllm", rollout["startup_s"], "s", notes=shape),
                 perf.row(BENCH, "rollout.tokens_per_s.vllm", rollout["tokens"] / rollout["generate_s"], "tok/s",
                          notes=f"{args.prompts} prompts x {args.n} samples x {args.gen_len} tokens "
                                f"(prompt {args.prompt_len}); {shape}")]
    train_note = (f"micro-batch {args.train_batch} x ({args.prompt_len}+{args.train_completion_len}) tokens, "
                  f"grad checkpointing {not args.no_checkpointing}, peak {train['peak_gib']:.1f} GiB, "
                  f"{train['params'] / 1e9:.2f} B params; {shape}")
    for name, xs in train["times"].items():
        stats = perf.summary(xs)
        rows += [perf.row(BENCH, f"train.step_s.{name}", stats["median"], "s", notes=f"{perf.iqr_note(stats)}"),
                 perf.row(BENCH, f"train.tokens_per_s.{name}", train["tokens"] / stats["median"], "tok/s",
                          notes=train_note)]
    stats = perf.summary(perf.paired_ratios(train["times"], "gppo", "trl_dapo"))
    rows.append(perf.row(BENCH, "train.ratio.gppo", stats["median"], "x", "trl_dapo",
                         f"{perf.iqr_note(stats)}; target <= 1.03"))
    return rows


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--layers", type=int, default=None, help="depth (default: Qwen3-8B's 36)")
    p.add_argument("--dtype", default="bfloat16")
    p.add_argument("--prompts", type=int, default=64, help="rollout prompts")
    p.add_argument("--n", type=int, default=8, help="samples per prompt (the recipe's group size)")
    p.add_argument("--prompt-len", type=int, default=256)
    p.add_argument("--gen-len", type=int, default=1024, help="rollout tokens per sample (ignore_eos)")
    p.add_argument("--gpu-memory-utilization", type=float, default=0.85)
    p.add_argument("--enforce-eager", action="store_true", help="no CUDA graphs / compilation in vLLM")
    p.add_argument("--train-batch", type=int, default=2, help="rollouts per micro-batch")
    p.add_argument("--train-completion-len", type=int, default=3840)
    p.add_argument("--no-checkpointing", action="store_true")
    p.add_argument("--steps", type=int, default=5, help="timed training steps per trainer")
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--skip-rollout", action="store_true")
    p.add_argument("--out", default=None, help="perf CSV (default results/perf.csv)")
    p.add_argument("--no-record", action="store_true")
    p.add_argument("--phase", choices=["all", "rollout"], default="all", help=argparse.SUPPRESS)
    p.add_argument("--result", default=None, help=argparse.SUPPRESS)
    return p


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = parser().parse_args(argv)
    if not torch.cuda.is_available():
        print("skipped: no CUDA (bench_full_gpu.py needs an NVIDIA GPU; see its docstring)")
        return 0
    if args.phase == "rollout":
        rollout_phase(args, Path(args.result))
        return 0
    import perf  # benchmarks/perf.py, beside this script

    rollout = None if args.skip_rollout else run_rollout_child(argv)
    rows = rows_from(rollout, train_phase(args), args)
    if args.layers and args.layers != full_layers():
        rows = [{**r, "benchmark": f"{BENCH}_{args.layers}layers"} for r in rows]
    for r in rows:
        print(f"  {r['metric']:<28} {r['value']:>12.4g} {r['unit']:<6} {r['notes']}")
    if not args.no_record:
        label = perf.machine(torch.cuda.get_device_name())
        log.info("recorded in %s", perf.record(rows, label, args.out or perf.PERF_CSV))
    return 0


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    sys.exit(main())
