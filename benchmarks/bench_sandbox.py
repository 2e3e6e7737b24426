"""Sandbox throughput: tests/s with one Firejail start per test vs one per program (batched), 1..N workers.

    .venv/bin/python benchmarks/bench_sandbox.py --programs 16 --tests 16 --workers 1 2

Every program reads numbers from stdin and prints their sum; each row runs the same programs x tests.
"""
from __future__ import annotations

import argparse
import time

from klear_lib.rewards.code import code_rewards

PROGRAM = "import sys\nprint(sum(int(x) for x in sys.stdin.read().split()))"


def workload(n_programs: int, n_tests: int) -> tuple[list[str], list[list[dict]]]:
    """``n_programs`` responses and, for each, ``n_tests`` stdin tests."""
    tests = [{"input": f"{i} {i + 1} {i + 2}\n", "output": f"{3 * i + 3}\n"} for i in range(n_tests)]
    response = f"<think>\nsum them\n</think>\n```python\n{PROGRAM}\n```"
    return [response] * n_programs, [tests] * n_programs


def measure(batched: bool, workers: int, n_programs: int, n_tests: int) -> float:
    """Seconds to score the workload (all rewards must be +1)."""
    responses, tests = workload(n_programs, n_tests)
    start = time.perf_counter()
    scores = code_rewards(responses, tests, max_tests=None, workers=workers, batched=batched)
    elapsed = time.perf_counter() - start
    assert all(s == 1.0 for s in scores), scores
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--programs", type=int, default=16)
    parser.add_argument("--tests", type=int, default=16)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    args = parser.parse_args()
    n = args.programs * args.tests
    rows = [(mode, w, measure(mode == "batched", w, args.programs, args.tests))
            for mode in ("per-test", "batched") for w in args.workers]
    base = rows[0][2]
    print(f"{args.programs} programs x {args.tests} tests = {n} tests per row")
    print(f"{'mode':10s} {'workers':>7s} {'seconds':>8s} {'tests/s':>8s} {'x per-test/1':>13s}")
    for mode, w, secs in rows:
        print(f"{mode:10s} {w:7d} {secs:8.2f} {n / secs:8.1f} {base / secs:13.2f}")


if __name__ == "__main__":
    main()
