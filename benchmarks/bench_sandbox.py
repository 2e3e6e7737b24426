"""Sandbox throughput: tests/s with one Firejail start per test vs one per program (batched), 1..N workers.

    .venv/bin/python benchmarks/bench_sandbox.py [--programs 16] [--tests 16] [--workers 1 2] [--reps 3] [--no-record]

Every program reads numbers from stdin and prints their sum; each variant scores the same programs x tests
through ``klear_lib.rewards.code.code_rewards`` (all rewards must be +1). Variants run interleaved (round r in
an order rotated by r) and each ratio is the median of per-round ratios to per-test with one worker. The
batched scheme is the kit's default, so ``tests/test_sandbox_hostile.py`` checks that it still contains the
hostile suite (fork and memory bombs, network, reading and writing outside, forged verdicts).
"""
from __future__ import annotations

import argparse
import logging

from klear_lib.rewards.code import code_rewards

import perf  # benchmarks/perf.py, beside this script

BENCH = "sandbox"
PROGRAM = "import sys\nprint(sum(int(x) for x in sys.stdin.read().split()))"


def workload(n_programs: int, n_tests: int) -> tuple[list[str], list[list[dict]]]:
    """``n_programs`` distinct responses (a comment tells them apart, else the judge would run one program once for
    all) and, for each, ``n_tests`` stdin tests."""
    tests = [{"input": f"{i} {i + 1} {i + 2}\n", "output": f"{3 * i + 3}\n"} for i in range(n_tests)]
    responses = [f"<think>\nsum them\n</think>\n```python\n{PROGRAM}  # program {k}\n```" for k in range(n_programs)]
    return responses, [tests] * n_programs


def scorer(batched: bool, workers: int, responses: list[str], tests: list[list[dict]]):
    """A call that scores the workload once and checks every reward is +1."""
    def score() -> None:
        scores = code_rewards(responses, tests, max_tests=None, workers=workers, batched=batched)
        if not all(s == 1.0 for s in scores):
            raise RuntimeError(f"{'batched' if batched else 'per-test'}/{workers}: rewards {scores}")
    return score


def run(args) -> list[dict]:
    responses, tests = workload(args.programs, args.tests)
    n = args.programs * args.tests
    fns = {f"{mode}.w{w}": scorer(mode == "batched", w, responses, tests)
           for mode in ("per_test", "batched") for w in args.workers}
    base = f"per_test.w{args.workers[0]}"
    before = perf.loadavg()
    times = perf.interleave(fns, args.reps, args.warmup)
    note = f"{args.programs} programs x {args.tests} tests = {n} tests; {perf.load_note(before, perf.loadavg())}"
    rows = []
    for name, secs in times.items():
        stats = perf.summary(n / s for s in secs)
        rows.append(perf.row(BENCH, f"tests_per_s.{name}", stats["median"], "tests/s",
                             notes=f"{perf.iqr_note(stats)}; {note}"))
        if name != base:
            ratio = perf.summary(perf.paired_ratios(times, base, name))  # speed-up: base time / this time
            rows.append(perf.row(BENCH, f"speedup.{name}", ratio["median"], "x", base,
                                 notes=f"{perf.iqr_note(ratio)}; {note}"))
    return rows


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--programs", type=int, default=16)
    parser.add_argument("--tests", type=int, default=16)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--warmup", type=int, default=1)
    perf.add_output_args(parser)
    args = parser.parse_args(argv)
    perf.emit(run(args), args)


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    main()
