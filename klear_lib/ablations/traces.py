"""What a student imitates: the style of the responses an SFT-ablation model samples at evaluation.

A teacher's quality in the miniature world comes partly from self-checks that catch and correct its own slips
(``klear_lib.data.teachers``). A student can copy the *form* of a check without its *function*. This module reads
stored evaluation samples and measures both, per run:

- math (``tiny_aime``): steps per response, the share of steps whose arithmetic is wrong, check lines per step,
  the share of check lines whose own arithmetic is wrong, and the share of wrong steps followed by a ``wait, ...``
  correction (``detect``);
- code (``tiny_lcb``): the share of one-expression programs, of responses with a check line, of rewrites, and of
  check lines whose claim ``program gives G`` matches what the written program prints (``check_true``), plus
  accuracy by program style.

>>> from klear_lib.ablations import traces
>>> traces.response_features("<think>\\n3+4=8\\ncheck: 8-4=4\\n</think>\\n\\boxed{8}", "math")["step_errors"]
1

``stored_styles`` finds each stored run's sample file in the artifact store and keeps it only if it reproduces the
run's stored score (so a sample file of an older configuration is never read by mistake), and keeps the rows in
``results/<preset>/ablations_sft_styles.csv``, so a fresh clone (no samples) shows the same table.
Runs found in neither place are counted in a warning, never silently dropped.
"""
from __future__ import annotations

import logging
import math
import re
from pathlib import Path
from typing import Iterable

import pandas as pd

from klear_lib import tables
from klear_lib.ablations.family import run_name
from klear_lib.data import tasks_code as tc
from klear_lib.data import tasks_math as tm
from klear_lib.evaluation import harness
from klear_lib.tables import Table

log = logging.getLogger(__name__)

ABILITY = {"tiny_aime": "math", "tiny_lcb": "code"}  # the benchmarks whose samples carry a known trace grammar
_STEP = re.compile(r"^(-?\d+)([+\-*])(\d+)=(?:.*=)?(-?\d+)$")
_CHECK_MATH = re.compile(r"^check: (-?\d+(?:[+\-*]\d+)*)=(-?\d+)")
_CHECK_CODE = re.compile(r"^check x=(-?\d+): .*program gives (.+)$")
_PROGRAM = re.compile(r"```python\n(.*?)\n```", re.DOTALL)


def arith(expr: str) -> int:
    """Value of a sum of products of integers, e.g. ``10*9+1*9-3`` or ``-4+10`` (the grammar of check lines)."""
    return sum((-1 if sign == "-" else 1) * math.prod(int(f) for f in term.split("*"))
               for sign, term in re.findall(r"([+\-]?)(\d+(?:\*\d+)*)", expr))


def _think(response: str) -> list[str]:
    body = response.split("</think>")[0].replace("<think>", "")
    return [ln.strip() for ln in body.splitlines() if ln.strip()]


def math_features(response: str) -> dict:
    """Counts over the think lines of one math response (see the module docstring)."""
    out = dict(steps=0, step_errors=0, checks=0, check_errors=0, fixes=0, detected=0)
    wrong_pending = False
    for line in _think(response):
        step = _STEP.match(line)
        if step:
            wrong_pending = int(step[4]) != tm.apply(int(step[1]), step[2], int(step[3]))
            out["steps"] += 1
            out["step_errors"] += wrong_pending
        elif line.startswith("check:"):  # a malformed check line (a student's) counts as a wrong one
            stated = _CHECK_MATH.match(line)
            out["checks"] += 1
            out["check_errors"] += not stated or arith(stated[1]) != int(stated[2])
        elif line.startswith("wait,"):
            out["fixes"] += 1
            out["detected"] += wrong_pending
            wrong_pending = False
    return out


def code_features(response: str) -> dict:
    """Style flags of one code response: one-expression program, check line, rewrite, and whether the check's
    ``program gives G`` is what the final program prints for that input."""
    lines = _think(response)
    program = (_PROGRAM.findall(response.split("</think>")[-1]) or [""])[0]
    checks = [m for m in (_CHECK_CODE.match(ln) for ln in lines) if m]
    check_true = [(tc.interpret(program, int(m[1])) or "an error").strip() == m[2].strip() for m in checks]
    return dict(oneliner="write it as one expression" in lines[:1], check=bool(checks), checks_true=sum(check_true),
                checks=len(checks), rewrite=any(ln.startswith("wait,") for ln in lines), program=bool(program))


def response_features(response: str, ability: str) -> dict:
    """``math_features`` or ``code_features`` of one response."""
    if ability not in ("math", "code"):
        raise ValueError(f"ability must be 'math' or 'code', got {ability!r}")
    return math_features(response) if ability == "math" else code_features(response)


def summarize(samples: Iterable[dict], ability: str) -> dict:
    """Per-run style shares of ``samples`` (dicts with ``response`` and ``correct``)."""
    df = pd.DataFrame([{**response_features(s["response"], ability), "correct": bool(s["correct"])}
                       for s in samples])
    if df.empty:
        raise ValueError("no samples to summarize")
    out = {"n_samples": len(df), "accuracy": df.correct.mean()}
    if ability == "math":
        steps, checks, errors = df.steps.sum(), df.checks.sum(), df.step_errors.sum()
        return {**out, "steps_per_response": steps / len(df), "step_error": errors / max(steps, 1),
                "checks_per_step": checks / max(steps, 1), "check_error": df.check_errors.sum() / max(checks, 1),
                "detect": df.detected.sum() / max(errors, 1)}
    by_style = df.groupby("oneliner").correct.mean()
    return {**out, "oneliner": df.oneliner.mean(), "check": df.check.mean(), "rewrite": df.rewrite.mean(),
            "check_true": df.checks_true.sum() / max(df.checks.sum(), 1),
            "acc_stepwise": by_style.get(False, float("nan")), "acc_oneliner": by_style.get(True, float("nan"))}


def matching_samples(candidates: Iterable[Path], mean: float, n_samples: int) -> list[dict] | None:
    """The samples of the newest candidate file that reproduces a stored row: ``n_samples`` samples whose share
    correct is ``mean`` (to 1e-6); None if no candidate does."""
    for path in sorted(candidates, key=lambda p: (Path(p).stat().st_mtime, str(p)), reverse=True):
        samples = list(harness.read_samples(path).values())
        if len(samples) == n_samples and abs(sum(s["correct"] for s in samples) / n_samples - mean) < 1e-6:
            return samples
    return None


KEY = ["experiment", "condition", "seed", "benchmark", "config_hash"]
COLUMNS = {"math": ["accuracy", "steps_per_response", "step_error", "checks_per_step", "check_error", "detect"],
           "code": ["accuracy", "oneliner", "check", "check_true", "rewrite", "acc_stepwise", "acc_oneliner"]}
# ``results/<preset>/<family>_styles.csv``: a run's shares, blank where the other ability's columns are
SHARES = ("accuracy", "steps_per_response", "step_error", "checks_per_step", "check_error", "detect", "oneliner",
          "check", "rewrite", "check_true", "acc_stepwise", "acc_oneliner")
STYLES = Table("SFT styles", (*KEY, "n_samples", *SHARES), tuple(KEY), nullable=SHARES,
               types=(("seed", int), ("config_hash", str), ("n_samples", int)))


def stored_styles(recipe, runs: pd.DataFrame, family: str = "ablations_sft") -> pd.DataFrame:
    """One row per stored run x benchmark in ``ABILITY`` (``avg@k`` rows of ``runs``) with ``summarize``'s shares:
    from the run's sample file in the artifact store where it reproduces the stored score, else the row stored for
    the same run and config hash in ``<recipe.results>/<family>_styles.csv`` (a fresh clone has no samples); the
    union is written back. Returns the rows of ``runs``; a run found in neither place is logged and left out."""
    rows, missing = [], 0
    for r in runs[(runs.metric == "avg@k") & runs.benchmark.isin(list(ABILITY))].itertuples(index=False):
        stage = run_name(family, r.experiment, r.condition, int(r.seed)).replace("/", "--")
        files = (recipe.artifacts / "eval").glob(f"*/{stage}__{r.benchmark}__*.samples.jsonl")
        samples = matching_samples(files, float(r.mean), int(r.n_samples))
        if samples is None:
            missing += 1
        else:
            rows.append({"experiment": r.experiment, "condition": r.condition, "seed": int(r.seed),
                         "benchmark": r.benchmark, "config_hash": r.config_hash,
                         **summarize(samples, ABILITY[r.benchmark])})
    # a run of one ability lacks the other's columns
    fresh = pd.DataFrame(rows, columns=None if rows else KEY).reindex(columns=list(STYLES.columns))
    path = recipe.results / f"{family}_styles.csv"
    both = tables.upsert_file(STYLES, fresh, path) if len(fresh) else tables.read(STYLES, path)
    out = both.merge(runs[KEY].drop_duplicates(), on=KEY)
    if len(out) < len(fresh) + missing:
        log.warning("%d run(s) have neither samples matching their stored score nor a stored style row",
                    len(fresh) + missing - len(out))
    return out


def style_table(styles: pd.DataFrame, ability: str) -> pd.DataFrame:
    """Mean over seeds of ``ability``'s style columns per (experiment, condition), with the seed count."""
    grouped = styles[styles.benchmark.map(ABILITY) == ability].groupby(["experiment", "condition"], sort=False)
    return grouped[COLUMNS[ability]].mean().assign(seeds=grouped.size())


def teacher_styles(pool: Iterable[dict]) -> pd.DataFrame:
    """``summarize``'s shares of each teacher's responses in an SFT pool (rows with ``teacher``, ``ability``,
    ``correct`` and the assistant turn last in ``messages``): what its students are shown."""
    by_teacher: dict[tuple[str, int, str], list[dict]] = {}
    for row in pool:
        key = (row["ability"], row["teacher_rank"], row["teacher"])
        by_teacher.setdefault(key, []).append({"response": row["messages"][-1]["content"], "correct": row["correct"]})
    rows = [{"ability": ability, "teacher": name, "rank": rank, **summarize(samples, ability)}
            for (ability, rank, name), samples in sorted(by_teacher.items())]
    return pd.DataFrame(rows).set_index(["ability", "teacher"])
