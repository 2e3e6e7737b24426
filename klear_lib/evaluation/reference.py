"""Judge checks on the real files: reference answers must judge correct, shuffled answers wrong, and reference
programs must pass their tests in the sandbox — through the same judge as the RL reward and the metric.
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Sequence

import pandas as pd

from klear_lib.evaluation.benchmarks import load_rows
from klear_lib.rewards import code as code_judge
from klear_lib.rewards.judge import correct, row_tests
from klear_lib.seeding import py_rng



def reference_response(answer: str) -> str:
    """A well-formed response whose final answer is ``answer``: ``<think>...</think>\\n\\boxed{answer}``."""
    return f"<think>\nreference answer\n</think>\n\\boxed{{{answer}}}"


def program_response(program: str) -> str:
    """A well-formed response carrying ``program`` in a python block after ``</think>``."""
    return f"<think>\nreference solution\n</think>\n```python\n{program.rstrip()}\n```"


def shuffled(values: Sequence[str], seed: int) -> list[str]:
    """A derangement of ``values``: a seeded cyclic shift by 1..n-1 (no item keeps its own answer)."""
    n = len(values)
    shift = py_rng(seed, "shuffle-answers").randrange(1, n) if n > 1 else 0
    return [values[(i + shift) % n] for i in range(n)]


def math_reference_check(name: str, seed: int = 0, max_problems: int | None = None) -> pd.DataFrame:
    """Per problem of benchmark ``name``: is the reference answer judged correct, and a shuffled one?"""
    rows = load_rows(name, max_problems=max_problems)
    answers = [r["reward_model"]["ground_truth"] for r in rows]
    wrong = shuffled(answers, seed)
    return pd.DataFrame({
        "benchmark": name, "id": [r["extra_info"]["id"] for r in rows], "answer": answers,
        "reference_correct": [correct(reference_response(a), r) for a, r in zip(answers, rows)],
        "shuffled_answer": wrong,
        "shuffled_correct": [correct(reference_response(w), r) for w, r in zip(wrong, rows)],
    })


def leetcode_rows(max_problems: int | None = None) -> tuple[list[dict], list[str]]:
    """rLLM LeetCode training problems as code rows (assert tests), with their reference solutions."""
    from klear_lib.data.sources import get_source, local_records, map_rllm_leetcode

    src = get_source("rllm_leetcode")
    raw = local_records(src)[:max_problems]
    return [map_rllm_leetcode(src, i, r) for i, r in enumerate(raw)], [r["solutions"] for r in raw]


def _check_program(row: dict, program: str, timeout_s: float) -> dict:
    """The harness verdict on ``program``; for a failure, the first failing test's status and stderr tail."""
    out = {"id": row["extra_info"]["id"], "index": row["extra_info"].get("index"), "n_tests": len(row_tests(row)),
           "passed": correct(program_response(program), row, timeout_s=timeout_s), "status": "ok", "error": ""}
    if not out["passed"]:
        tests = row_tests(row)
        results = code_judge.execute_tests(program, tests, timeout_s)
        first = next((r for t, r in zip(tests, results) if not code_judge.passes(t, r)), None)
        if first is not None:
            out["status"] = first.status
            out["error"] = (first.stderr.strip().splitlines() or ["wrong output"])[-1][:200]
    return out


def code_reference_check(rows: Sequence[dict], programs: Sequence[str], timeout_s: float = 10.0,
                         workers: int = 2) -> pd.DataFrame:
    """Per problem: do the reference ``programs`` pass every test in the sandbox? (one failure reason each)"""
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        found = list(pool.map(lambda rp: _check_program(rp[0], rp[1], timeout_s), zip(rows, programs)))
    return pd.DataFrame(found)


def summarize_math_check(frames: Sequence[pd.DataFrame]) -> pd.DataFrame:
    """Counts per benchmark: problems, reference correct, shuffled judged correct."""
    df = pd.concat(frames, ignore_index=True)
    out = df.groupby("benchmark", sort=True).agg(problems=("id", "size"), reference_correct=("reference_correct",
                                                 "sum"), shuffled_correct=("shuffled_correct", "sum"))
    return out.reset_index()
