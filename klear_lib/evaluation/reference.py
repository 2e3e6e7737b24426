"""Judge checks on the real files: reference answers must judge correct, shuffled answers wrong, and reference
programs must pass their tests in the sandbox — through the same judge as the RL reward and the metric.
"""
from __future__ import annotations

import logging
from concurrent.futures import ThreadPoolExecutor
from typing import Sequence

import pandas as pd

from klear_lib.configs import Recipe
from klear_lib.data.sources import SourceUnavailable, get_source, map_records, raw_records
from klear_lib.evaluation.benchmarks import load_rows
from klear_lib.rewards import code as code_judge
from klear_lib.rewards.judge import correct, row_tests
from klear_lib.seeding import py_rng

log = logging.getLogger(__name__)


def reference_response(answer: str) -> str:
    """A well-formed response whose final answer is ``answer``: ``<think>...</think>\\n\\boxed{answer}``."""
    return f"<think>\nreference answer\n</think>\n\\boxed{{{answer}}}"


def shuffled(values: Sequence[str], seed: int) -> list[str]:
    """A derangement of ``values``: a seeded cyclic shift by 1..n-1 (no item keeps its own answer)."""
    n = len(values)
    shift = py_rng(seed, "shuffle-answers").randrange(1, n) if n > 1 else 0
    return [values[(i + shift) % n] for i in range(n)]


def math_reference_check(name: str, recipe: Recipe, seed: int = 0, max_problems: int | None = None) -> pd.DataFrame:
    """Per problem of benchmark ``name``: is the reference answer judged correct, and a shuffled one?"""
    rows = load_rows(name, recipe, max_problems=max_problems)
    answers = [r["reward_model"]["ground_truth"] for r in rows]
    wrong = shuffled(answers, seed)
    return pd.DataFrame({
        "benchmark": name, "id": [r["extra_info"]["id"] for r in rows], "answer": answers,
        "reference_correct": [correct(reference_response(a), r) for a, r in zip(answers, rows)],
        "shuffled_answer": wrong,
        "shuffled_correct": [correct(reference_response(w), r) for w, r in zip(wrong, rows)],
    })


def math_reference_checks(names: Sequence[str], recipe: Recipe, seed: int = 0) -> tuple[list[pd.DataFrame], dict]:
    """``math_reference_check`` for every benchmark that loads under ``recipe``, and ``{name: reason}`` for the
    rest."""
    frames, skipped = [], {}
    for name in names:
        try:
            frames.append(math_reference_check(name, recipe, seed=seed))
        except SourceUnavailable as err:
            skipped[name] = f"skipped: {err.reason}"
    return frames, skipped


def leetcode_rows(max_problems: int | None = None, real_data: str = "mirror") -> tuple[list[dict], list[str]]:
    """rLLM LeetCode training problems as code rows (assert tests), with their reference solutions; raises
    ``SourceUnavailable`` when the file is not available from ``real_data`` (``Study.real_data``)."""
    src = get_source("rllm_leetcode")
    raw = raw_records(src, real_data)[0][:max_problems]
    rows, step = map_records(src, raw, "rllm_leetcode")
    if step.dropped:
        log.warning("rllm_leetcode: %d of %d records unmappable (%s)", step.rows_in - step.rows_out, step.rows_in,
                    step.dropped)
    return rows, [raw[r["extra_info"]["index"]]["solutions"] for r in rows]


def code_reference_check(rows: Sequence[dict], programs: Sequence[str], timeout_s: float = 10.0,
                         workers: int = 2) -> pd.DataFrame:
    """Per problem: do the reference ``programs`` pass every test in the sandbox? The harness verdict, and for a
    failure the first failing test's status and stderr tail."""
    def check(row: dict, program: str) -> dict:
        tests = row_tests(row)
        out = {"id": row["extra_info"]["id"], "index": row["extra_info"].get("index"), "n_tests": len(tests),
               "passed": correct(f"<think>\nreference solution\n</think>\n```python\n{program.rstrip()}\n```",
                                 row, timeout_s=timeout_s), "status": "ok", "error": ""}
        if not out["passed"]:
            results = code_judge.execute_tests(program, tests, timeout_s)
            first = next((r for t, r in zip(tests, results) if not code_judge.passes(t, r)), None)
            if first is not None:
                out["status"] = first.status
                out["error"] = (first.stderr.strip().splitlines() or ["wrong output"])[-1][:200]
        return out
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        return pd.DataFrame(list(pool.map(check, rows, programs)))


def summarize_math_check(frames: Sequence[pd.DataFrame], skipped: dict | None = None) -> pd.DataFrame:
    """Counts per benchmark: problems, reference correct, shuffled judged correct; a skipped one says why."""
    cols = ["benchmark", "id", "reference_correct", "shuffled_correct"]
    df = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=cols)
    out = df.groupby("benchmark", sort=True).agg(
        problems=("id", "size"), reference_correct=("reference_correct", "sum"),
        shuffled_correct=("shuffled_correct", "sum")).reset_index().assign(status="checked")
    gone = pd.DataFrame([{"benchmark": n, "problems": 0, "reference_correct": 0, "shuffled_correct": 0, "status": why}
                         for n, why in sorted((skipped or {}).items())])
    return pd.concat([out, gone], ignore_index=True) if len(gone) else out


def shuffled_passes(frames: Sequence[pd.DataFrame]) -> pd.DataFrame:
    """The problems whose shuffled answer still judged correct (it equals their own answer), over ``frames``."""
    cols = ["benchmark", "answer", "shuffled_answer"]
    df = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=[*cols, "shuffled_correct"])
    return df[df.shuffled_correct.astype(bool)][cols]


def leetcode_reference_check(recipe: Recipe, timeout_s: float = 10.0, workers: int = 2) -> tuple[pd.DataFrame, str]:
    """``code_reference_check`` on the rLLM LeetCode references (the first ``Study.reference_code_problems``), and a
    one-line summary (or why it was skipped)."""
    try:
        rows, programs = leetcode_rows(recipe.study.reference_code_problems, recipe.study.real_data)
    except SourceUnavailable as err:
        return pd.DataFrame(columns=["id", "passed"]).astype({"passed": bool}), f"skipped: {err.reason}"
    found = code_reference_check(rows, programs, timeout_s=timeout_s, workers=workers)
    return found, f"{int(found.passed.sum())} of {len(found)} reference programs pass all their tests"
