"""Math judge throughput: answers/s on MATH-500's reference answers (main thread vs a worker pool) and on
AIME-style integers (the fast path vs math-verify).

    .venv/bin/python benchmarks/bench_judge.py [--workers 2] [--reps 3] [--n-int 2000] [--no-record]

MATH-500 workload (500 problems, from the mirror ``$KLEAR_BENCHMARKS`` or the hub): each reference answer boxed in a response and judged
against itself (must be right) and against the next problem's reference (should be wrong), so 1,000 answers of
the real mix of LaTeX forms. The script also records how many of the 500 self-matches math-verify accepts and
how many mismatches it rejects: a throughput without its verdicts would not say much. Variants run interleaved
(round r in an order rotated by r); ratios are medians of per-round ratios.
"""
from __future__ import annotations

import argparse
import logging

from klear_lib.configs import recipe
from klear_lib.evaluation.benchmarks import load_rows
from klear_lib.rewards.format import answer_text
from klear_lib.rewards.math import math_rewards, verify_answer
from klear_lib.seeding import py_rng

import perf  # benchmarks/perf.py, beside this script

BENCH = "judge"


def respond(answer: str) -> str:
    return f"<think>\nwork\n</think>\nSo the answer is $\\boxed{{{answer}}}$."


def math500_workload() -> tuple[list[str], list[str]]:
    """Every MATH-500 reference against itself, then against the next problem's reference."""
    truths = [str(r["reward_model"]["ground_truth"]) for r in load_rows("math500", recipe("full"))]
    shifted = truths[1:] + truths[:1]
    return [respond(t) for t in truths + shifted], truths + truths


def integer_workload(n: int) -> tuple[list[str], list[str]]:
    """AIME-style integer answers, half right, some zero-padded."""
    rng = py_rng(0, "bench-judge")
    truths = [str(rng.randrange(1000)) for _ in range(n)]
    preds = [t if rng.random() < 0.5 else str(rng.randrange(1000)) for t in truths]
    return [respond(p.zfill(3)) for p in preds], truths


def run(args) -> list[dict]:
    tex, tex_truths = math500_workload()
    ints, int_truths = integer_workload(args.n_int)
    verify_answer("\\boxed{1}", "1")                                # import and warm math-verify outside timings
    math_rewards(tex[:8], tex_truths[:8], workers=args.workers)     # start the worker pool outside timings
    out: dict[str, list] = {}

    def keep(name, fn):
        return lambda: out.__setitem__(name, fn())

    fns = {"math500.main": keep("math500.main", lambda: math_rewards(tex, tex_truths)),
           f"math500.w{args.workers}": keep("pool", lambda: math_rewards(tex, tex_truths, workers=args.workers)),
           "integer.fast_path": keep("fast", lambda: math_rewards(ints, int_truths)),
           "integer.math_verify": keep("verify", lambda: [verify_answer(answer_text(r), t)
                                                          for r, t in zip(ints, int_truths)])}
    before = perf.loadavg()
    times = perf.interleave(fns, args.reps, args.warmup)
    if out["math500.main"] != out["pool"] or [s == 1.0 for s in out["fast"]] != out["verify"]:
        raise RuntimeError("judge variants disagree on the same answers")
    note = perf.load_note(before, perf.loadavg())
    sizes = {"math500": len(tex), "integer": len(ints)}
    rows = []
    for name, secs in times.items():
        stats = perf.summary(sizes[name.split(".")[0]] / s for s in secs)
        rows.append(perf.row(BENCH, f"answers_per_s.{name}", stats["median"], "answers/s",
                             notes=f"{sizes[name.split('.')[0]]} answers; {perf.iqr_note(stats)}; {note}"))
    for fast, slow in ((f"math500.w{args.workers}", "math500.main"), ("integer.fast_path", "integer.math_verify")):
        ratio = perf.summary(perf.paired_ratios(times, slow, fast))
        rows.append(perf.row(BENCH, f"speedup.{fast}", ratio["median"], "x", slow, f"{perf.iqr_note(ratio)}; {note}"))
    n = len(tex) // 2
    right, wrong = out["math500.main"][:n], out["math500.main"][n:]
    rows += [perf.row(BENCH, "math500.self_match_accepted", sum(s == 1.0 for s in right) / n, "share",
                      notes=f"reference judged against itself, {n} answers"),
             perf.row(BENCH, "math500.mismatch_rejected", sum(s != 1.0 for s in wrong) / n, "share",
                      notes=f"reference judged against the next problem's, {n} answers")]
    return rows


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--n-int", type=int, default=2000)
    perf.add_output_args(parser)
    args = parser.parse_args(argv)
    perf.emit(run(args), args)


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    main()
