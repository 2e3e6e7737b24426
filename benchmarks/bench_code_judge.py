"""The code-RL judge on real tiny rollouts: one sandbox per completion (the old path) vs one per distinct program.

    .venv/bin/python benchmarks/bench_code_judge.py [--calls 1] [--workers 2 3] [--reps 3] [--checkpoint DIR]
                                                    [--no-record]

The workload is ``--calls`` reward calls of one tiny code-RL step each (``prompts_per_step x oversample`` prompts
of the ``code_rl`` split x ``num_generations`` rollouts, 64 completions), sampled once at the stage's rollout
settings from the registered tiny SFT checkpoint (or ``--checkpoint``, e.g. the code-RL one, whose policy repeats
itself more). Every variant scores them through the TRL reward adapter (``klear_lib.training.rewards``), as the
trainer does: ``per_completion.w2`` is the old adapter (one ``code_reward`` per completion, 2 threads), ``dedup.wN``
the batched one judging each distinct (program, sampled tests) pair once with N sandboxes at a time. Variants run
interleaved (round r in an order rotated by r); each ratio is the median of per-round ratios to the old path, and
every variant's rewards are checked against the old path's (the mismatch count is a row). Before timing, one
instrumented pass of the old path with one worker splits its wall time into sandbox start-up (a sandbox's wall time
minus its tests' own wall time), test execution and the rest, and counts the completions that need no sandbox and
the duplicates.
"""
from __future__ import annotations

import argparse
import functools
import logging
import os
import time
from collections import Counter
from types import SimpleNamespace

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import klear_lib  # noqa: F401  (first: the numerics mode before torch loads)
import torch
from transformers import AutoTokenizer

from klear_lib.configs import get_config, recipe, rl_stage_name
from klear_lib.data import load_split
from klear_lib.evaluation.checkpoints import stage_checkpoint
from klear_lib.generation import chat_prompts, generate
from klear_lib.pipeline import RL_SPLITS
from klear_lib.rewards import code as cj
from klear_lib.seeding import stable_seed
from klear_lib.training import rewards as adapters

import perf  # benchmarks/perf.py, beside this script

BENCH = "code_judge"


def rollouts(checkpoint: str, cfg, calls: int, seed: int) -> list[dict]:
    """``calls`` reward-call batches ``{"completions", "reward_model", "extra_info"}``, each of
    ``prompts_per_step x oversample`` consecutive code-RL prompts x ``num_generations`` sampled completions."""
    rows = list(load_split(RL_SPLITS["code"], recipe("tiny")))
    per_call = cfg.prompts_per_step * cfg.oversample
    if len(rows) < calls * per_call:
        raise ValueError(f"split {RL_SPLITS['code']} has {len(rows)} rows; {calls} calls need {calls * per_call}")
    chosen = rows[:calls * per_call]
    texts = generate(checkpoint, chat_prompts(AutoTokenizer.from_pretrained(checkpoint), chosen),
                     n=cfg.num_generations, temperature=cfg.temperature, top_p=cfg.top_p,
                     max_new_tokens=cfg.max_completion_length, seed=stable_seed(seed, "bench-code-judge"))
    batches = []
    for c in range(calls):
        group = range(c * per_call, (c + 1) * per_call)
        batches.append({"completions": [t for i in group for t in texts[i]],
                        "reward_model": [chosen[i]["reward_model"] for i in group for _ in texts[i]],
                        "extra_info": [chosen[i]["extra_info"] for i in group for _ in texts[i]]})
    return batches


def reward_funcs(cfg, workers: list[int]) -> dict:
    """The variants: the old per-completion adapter (2 threads) and the de-duplicating one at each worker count."""
    old = functools.partial(cj.code_reward, tag_shaping=cfg.tag_shaping)
    kw = {"mode": cfg.code_reward_mode, "max_tests": cfg.max_tests, "seed": cfg.seed, "tag_shaping": cfg.tag_shaping}
    funcs = {"per_completion.w2": adapters.code_reward_func(judge=old, workers=2, **kw)}
    funcs.update({f"dedup.w{w}": adapters.code_reward_func(workers=w, **kw) for w in workers})
    return funcs


def score_all(func, batches: list[dict]) -> list[list[float]]:
    """Rewards of every batch at step 0 (the adapter's seeds depend on the step)."""
    state = SimpleNamespace(global_step=0)
    return [func(**b, trainer_state=state) for b in batches]


def profile(batches: list[dict], cfg) -> dict:
    """One instrumented old-path pass (one worker): start-up vs test execution vs the rest, sandboxes, duplicates."""
    spent = Counter()
    real = cj.run_in_sandbox

    def timed(source, stdins, *a, **k):
        start = time.perf_counter()
        found = real(source, stdins, *a, **k)
        spent["sandbox"] += time.perf_counter() - start
        spent["tests"] += sum(r.wall_s for r in found)
        spent["starts"] += 1
        return found
    old = functools.partial(cj.code_reward, tag_shaping=cfg.tag_shaping)
    cj.run_in_sandbox = timed
    try:
        start = time.perf_counter()
        score_all(adapters.code_reward_func(cfg.code_reward_mode, cfg.max_tests, cfg.seed, old, workers=1), batches)
        total = time.perf_counter() - start
    finally:
        cj.run_in_sandbox = real
    return {"total": total, **spent, **duplicates(batches, cfg)}


def duplicates(batches: list[dict], cfg) -> dict:
    """Completions needing no sandbox, needing one, and distinct (program, tests) jobs, summed over the calls."""
    counts = Counter()
    for b in batches:
        ids = [info["id"] for info in b["extra_info"]]
        plans = [cj.plan_reward(text, adapters.code_tests(rm["ground_truth"], i), cfg.max_tests,
                                stable_seed(cfg.seed, "code-tests", i, 0, k), cfg.tag_shaping)
                 for k, (text, rm, i) in enumerate(zip(b["completions"], b["reward_model"], ids))]
        jobs, job_of = cj.distinct_jobs(plans)
        counts["completions"] += len(plans)
        counts["sandboxed"] += sum(k is not None for k in job_of)
        counts["jobs"] += len(jobs)
    return counts


def differing(a: list[list[float]], b: list[list[float]]) -> int:
    """How many rewards differ between two scorings of the same batches."""
    return sum(x != y for call_a, call_b in zip(a, b) for x, y in zip(call_a, call_b))


def run(args) -> list[dict]:
    torch.set_num_threads(args.threads)
    cfg = get_config(rl_stage_name("code"), "tiny")
    checkpoint = args.checkpoint or stage_checkpoint("sft", recipe("tiny"))
    if checkpoint is None:
        raise SystemExit("no tiny SFT checkpoint is registered: run the SFT stage (notebook 02) or pass --checkpoint")
    batches = rollouts(str(checkpoint), cfg, args.calls, args.seed)
    before = perf.loadavg()
    prof = profile(batches, cfg)
    funcs = reward_funcs(cfg, args.workers)
    scores = {}
    fns = {name: (lambda f=f, name=name: scores.__setitem__(name, score_all(f, batches))) for name, f in funcs.items()}
    times = perf.interleave(fns, args.reps, args.warmup)
    base = "per_completion.w2"
    mismatches = {name: differing(scores[base], found) for name, found in scores.items()}  # of the last round
    n = prof["completions"]
    note = (f"{args.calls} calls x {n // args.calls} completions ({cfg.prompts_per_step}x{cfg.oversample} prompts x "
            f"{cfg.num_generations}) from {checkpoint}; {perf.load_note(before, perf.loadavg())}")
    return rows_of(times, base, mismatches, prof, note)


def rows_of(times: dict, base: str, mismatches: dict, prof: dict, note: str) -> list[dict]:
    """perf rows: seconds per call and speed-up per variant, reward mismatches, and the profile's shares."""
    rows = []
    for name, secs in times.items():
        stats = perf.summary(secs)
        rows.append(perf.row(BENCH, f"call_s.{name}", stats["median"], "s", notes=f"{perf.iqr_note(stats)}; {note}"))
        if name != base:
            ratio = perf.summary(perf.paired_ratios(times, base, name))
            rows.append(perf.row(BENCH, f"speedup.{name}", ratio["median"], "x", base,
                                 notes=f"{perf.iqr_note(ratio)}; rewards differing from {base}: {mismatches[name]}"))
        rows.append(perf.row(BENCH, f"reward_mismatches.{name}", mismatches[name], "count", base, notes=note))
    startup = prof["sandbox"] - prof["tests"]
    split = f"{prof['total']:.1f} s, {prof['starts']} sandboxes, 1 worker, old path"
    rows += [perf.row(BENCH, "share.sandbox_startup", startup / prof["total"], "share", notes=split),
             perf.row(BENCH, "share.test_execution", prof["tests"] / prof["total"], "share", notes=split),
             perf.row(BENCH, "share.other", 1 - prof["sandbox"] / prof["total"], "share", notes=split),
             perf.row(BENCH, "startup_ms_per_sandbox", 1000 * startup / max(1, prof["starts"]), "ms", notes=split)]
    n, boxed, jobs = prof["completions"], prof["sandboxed"], prof["jobs"]
    rows += [perf.row(BENCH, "share.no_sandbox", (n - boxed) / n, "share",
                      notes=f"{n - boxed} of {n} completions: think-tag penalty, no program or no tests"),
             perf.row(BENCH, "share.duplicates", (boxed - jobs) / max(1, boxed), "share",
                      notes=f"{boxed - jobs} of {boxed} sandboxed completions repeat a (program, tests) pair of their "
                            f"call; {jobs} sandboxes instead of {boxed}")]
    return rows


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=1, help="reward calls (RL steps) in the workload")
    parser.add_argument("--workers", type=int, nargs="+", default=[2, 3], help="sandboxes at a time (dedup)")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--checkpoint", help="model sampling the rollouts (default: the registered tiny SFT one)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1, help="torch threads for sampling the rollouts")
    perf.add_output_args(parser)
    args = parser.parse_args(argv)
    perf.emit(run(args), args)


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    main()
