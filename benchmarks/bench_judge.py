"""Math judge throughput: answers/s on integer answers (fast path vs math-verify) and on LaTeX answers.

    .venv/bin/python benchmarks/bench_judge.py --n 2000 --workers 2
"""
from __future__ import annotations

import argparse
import time

from klear_lib.rewards.format import answer_text
from klear_lib.rewards.math import math_rewards, verify_answer
from klear_lib.seeding import py_rng




def integer_workload(n: int) -> tuple[list[str], list[str]]:
    """AIME-style integer answers, half right, some zero-padded."""
    rng = py_rng(0, "bench-judge")
    truths = [str(rng.randrange(1000)) for _ in range(n)]
    preds = [t if rng.random() < 0.5 else str(rng.randrange(1000)) for t in truths]
    return [f"<think>\nwork\n</think>\nThe answer is $\\boxed{{{p.zfill(3)}}}$." for p in preds], truths


def latex_workload(n: int) -> tuple[list[str], list[str]]:
    """Distinct fractions and radicals that need math-verify (equivalent but differently written, half wrong)."""
    rng = py_rng(0, "bench-judge-latex")
    preds, truths = [], []
    for i in range(n):
        a, b, m = rng.randrange(1, 90), rng.randrange(91, 180), rng.randrange(2, 5)
        if i % 2:
            preds.append(f"\\dfrac{{{a * m}}}{{{b * m}}}")
            truths.append(f"\\frac{{{a}}}{{{b}}}" if rng.random() < 0.5 else f"\\frac{{{a + 1}}}{{{b}}}")
        else:
            preds.append(f"{a}\\sqrt{{{m}}}")
            truths.append(f"\\sqrt{{{a * a * m}}}" if rng.random() < 0.5 else f"{a + 1}\\sqrt{{{m}}}")
    return [f"<think>\nwork\n</think>\nSo \\boxed{{{p}}}." for p in preds], truths


def timed(fn) -> tuple[float, list]:
    start = time.perf_counter()
    out = fn()
    return time.perf_counter() - start, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    ints, int_truths = integer_workload(args.n)
    tex, tex_truths = latex_workload(args.n // 4)
    verify_answer("\\boxed{1}", "1")  # import and warm math-verify outside the timings
    math_rewards(tex[:8], tex_truths[:8], workers=args.workers)  # start the worker pool outside the timings
    rows = [
        ("integer, fast path", len(ints), *timed(lambda: math_rewards(ints, int_truths))),
        ("integer, math-verify only", len(ints),
         *timed(lambda: [verify_answer(answer_text(r), t) for r, t in zip(ints, int_truths)])),
        ("LaTeX, main thread", len(tex), *timed(lambda: math_rewards(tex, tex_truths))),
        (f"LaTeX, {args.workers} worker procs", len(tex),
         *timed(lambda: math_rewards(tex, tex_truths, workers=args.workers))),
    ]
    assert [s == 1.0 for s in rows[0][3]] == rows[1][3], "fast path and math-verify disagree"
    print(f"{'workload':28s} {'answers':>7s} {'seconds':>8s} {'answers/s':>10s}")
    for name, n, secs, _ in rows:
        print(f"{name:28s} {n:7d} {secs:8.3f} {n / secs:10.0f}")
    print(f"fast path / math-verify on integers: {rows[1][2] / rows[0][2]:.0f}x")


if __name__ == "__main__":
    main()
