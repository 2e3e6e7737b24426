"""The evaluation harness: k samples per problem, every sample stored (jsonl) and judged by the RL judges.

``evaluate(model_path, spec, rows, cfg, out_dir)`` resumes: (problem, sample) pairs already in
``<out_dir>/<stage>__<benchmark>__<model hash>.samples.jsonl`` are skipped, the rest are generated a chunk of problems at a
time and appended (a torn last line from an interruption is ignored). Verdicts come from
``klear_lib.rewards.judge`` — the same functions that give the RL reward — so metric and reward cannot drift.
When a chat template pre-fills ``<think>`` in the generation prompt, the judge sees that prefix too.
``stage_gains`` compares two stages on the problems both answered (a paired bootstrap over problems).
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Callable, Sequence

import pandas as pd
from tqdm.auto import tqdm
from transformers import AutoTokenizer

from klear_lib import artifacts
from klear_lib.evaluation import metrics
from klear_lib.evaluation.benchmarks import BenchmarkSpec, samples_per_problem
from klear_lib.evaluation.generation import chat_prompts, generate
from klear_lib.rewards import judge
from klear_lib.rewards.format import THINK_OPEN
from klear_lib.seeding import stable_seed

log = logging.getLogger(__name__)


def samples_path(out_dir: Path, benchmark: str, stage: str, model: str = "", revision: str | None = None) -> Path:
    """Where the samples of (stage, benchmark, model) are stored; the model enters as a short hash of its
    ``artifacts.portable_id`` (or hub id and revision), so a retrained checkpoint never reuses another one's
    samples and a moved artifact store still finds its own."""
    name = f"{stage.replace('/', '--')}__{benchmark}"
    if model:
        ident = artifacts.portable_id(model) if Path(model).exists() else f"{model}@{revision}"
        name += "__" + hashlib.sha256(ident.encode()).hexdigest()[:8]
    return Path(out_dir) / f"{name}.samples.jsonl"


def read_samples(path: Path) -> dict[tuple[str, int], dict]:
    """Stored samples keyed by (problem_id, sample); unparsable lines (an interrupted write) are skipped."""
    done: dict[tuple[str, int], dict] = {}
    if not Path(path).exists():
        return done
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        try:
            rec = json.loads(line)
            done[(rec["problem_id"], int(rec["sample"]))] = rec
        except (ValueError, KeyError, TypeError):
            log.warning("skipping a torn line in %s", path)
    return done


def append_samples(path: Path, records: Sequence[dict]) -> None:
    """Append records as JSON lines and flush them to disk."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a", encoding="utf-8") as f:
        f.writelines(json.dumps(r, sort_keys=True) + "\n" for r in records)
        f.flush()
        os.fsync(f.fileno())


def pending(rows: Sequence[dict], k: int, done: dict) -> dict[int, list[int]]:
    """Problem index -> the sample indices still missing."""
    todo = {i: [j for j in range(k) if (r["extra_info"]["id"], j) not in done] for i, r in enumerate(rows)}
    return {i: js for i, js in todo.items() if js}


def prefill_of(prompt: str) -> str:
    """``<think>\\n`` when the chat template already opened the think block, else empty."""
    return THINK_OPEN + "\n" if prompt.rstrip("\n").endswith(THINK_OPEN) else ""


def _generation_options(cfg, revision: str | None) -> dict:
    """Backend options from the eval config."""
    return {"backend": cfg.backend, "top_k": cfg.top_k, "repetition_penalty": cfg.repetition_penalty,
            "max_model_len": cfg.max_model_len, "hf_overrides": cfg.hf_overrides, "dtype": cfg.dtype,
            "revision": revision, "tensor_parallel_size": cfg.tensor_parallel_size}


def _records(spec, stage, rows, prompts, todo_chunk, outs, cfg) -> list[dict]:
    """Judge one chunk's completions into sample records: math in this thread (math-verify's signal timeouts
    need the main thread), code ``judge_workers`` sandboxes at a time."""
    jobs = [(i, j, text) for (i, js), texts in zip(todo_chunk, outs) for j, text in zip(js, texts)]

    def one(job):
        i, j, text = job
        pre = prefill_of(prompts[i])
        return {"benchmark": spec.name, "stage": stage, "problem_id": rows[i]["extra_info"]["id"],
                "problem_index": i, "sample": j, "prefill": pre, "response": text,
                **judge.verdict(pre + text, rows[i], cfg.code_max_tests, cfg.seed, cfg.code_timeout_s)}
    if spec.ability == "math":
        return [one(job) for job in jobs]
    with ThreadPoolExecutor(max_workers=max(1, cfg.judge_workers)) as pool:
        return list(pool.map(one, jobs))


def evaluate(model_path: str, spec: BenchmarkSpec, rows: Sequence[dict], cfg, out_dir: Path, *,
             stage: str = "model", revision: str | None = None, generate_fn: Callable = generate) -> pd.DataFrame:
    """Generate, store and judge k samples per problem; one DataFrame row per (problem, sample)."""
    rows = list(rows)[: cfg.max_problems] if cfg.max_problems else list(rows)
    path, k = samples_path(out_dir, spec.name, stage, model_path, revision), samples_per_problem(spec, cfg)
    done = read_samples(path)
    todo = sorted(pending(rows, k, done).items())
    if todo:
        prompts = chat_prompts(_tokenizer(model_path, revision), rows)
        chunks = [todo[c:c + cfg.chunk_problems] for c in range(0, len(todo), cfg.chunk_problems)]
        for c, chunk in enumerate(tqdm(chunks, desc=f"{stage}/{spec.name}", unit="chunk")):
            for n, group in _by_count(chunk).items():
                outs = generate_fn(model_path, [prompts[i] for i, _ in group], n=n, temperature=cfg.temperature,
                                   top_p=cfg.top_p, max_new_tokens=cfg.max_new_tokens,
                                   seed=stable_seed(cfg.seed, "eval", spec.name, stage, c, n),
                                   **_generation_options(cfg, revision))
                append_samples(path, _records(spec, stage, rows, prompts, group, outs, cfg))
        done = read_samples(path)
    keep = [done[(r["extra_info"]["id"], j)] for r in rows for j in range(k)]
    return pd.DataFrame(keep).sort_values(["problem_index", "sample"], ignore_index=True)


def _by_count(chunk: list[tuple[int, list[int]]]) -> dict[int, list[tuple[int, list[int]]]]:
    """Group problems by how many samples each still needs (one generate call per count)."""
    groups: dict[int, list[tuple[int, list[int]]]] = {}
    for i, js in chunk:
        groups.setdefault(len(js), []).append((i, js))
    return groups


def _tokenizer(model_path: str, revision: str | None):
    """The model's tokenizer (for its chat template), from a directory or a pinned hub id."""
    return AutoTokenizer.from_pretrained(str(model_path), revision=revision)


def summarize(samples: pd.DataFrame, *, stage: str, benchmark: str, seed: int, config_hash: str,
              model: str = "") -> list[dict]:
    """eval.csv rows: avg@k and pass@k with standard error and bootstrap 95% CI over problems."""
    by_problem = samples.sort_values(["problem_index", "sample"]).groupby("problem_index")["correct"]
    correct = [list(map(bool, v)) for _, v in by_problem]
    k = min(len(c) for c in correct)
    per_metric = {f"avg@{k}": metrics.per_problem_rates(correct),
                  f"pass@{k}": [metrics.pass_at_k(len(c), sum(c), k) for c in correct]}
    out = []
    for name, values in per_metric.items():
        low, high = metrics.bootstrap_ci(values, stable_seed(seed, stage, benchmark, name))
        out.append({"stage": stage, "benchmark": benchmark, "metric": name.split("@")[0] + "@k", "k": k,
                    "mean": float(sum(values) / len(values)), "stderr": metrics.standard_error(values),
                    "ci_low": low, "ci_high": high, "n_problems": len(correct), "n_samples": int(len(samples)),
                    "seed": seed, "config_hash": config_hash, "model": model})
    return out


def _verdicts(samples: pd.DataFrame) -> dict:
    """problem_index -> the sample verdicts of that problem, in sample order."""
    by_problem = samples.sort_values(["problem_index", "sample"]).groupby("problem_index")["correct"]
    return {int(i): list(map(bool, v)) for i, v in by_problem}


STAGE_PAIRS = (("base", "sft"), ("sft", "rl_math"), ("rl_math", "rl_code"), ("sft", "rl_code"))


def stage_gains(samples: dict, seed: int, pairs=STAGE_PAIRS) -> pd.DataFrame:
    """avg@k gain of each later stage over an earlier one on each benchmark, paired over the problems both
    answered (``samples``: (stage, benchmark) -> samples DataFrame, as the harness returns them)."""
    rows = []
    for before, after in pairs:
        for (stage, name), df in samples.items():
            if stage != after or (before, name) not in samples:
                continue
            a, b = _verdicts(samples[(before, name)]), _verdicts(df)
            shared = sorted(set(a) & set(b))
            if not shared:  # e.g. a ci run beside a tiny one: nothing to pair
                continue
            gain = metrics.paired_gain([a[i] for i in shared], [b[i] for i in shared],
                                       stable_seed(seed, before, after, name, "gain"))
            rows.append({"benchmark": name, "before": before, "after": after, **gain,
                         "significant": gain["ci_low"] > 0 or gain["ci_high"] < 0})
    return pd.DataFrame(rows, columns=["benchmark", "before", "after", "gain", "ci_low", "ci_high", "n_problems",
                                       "significant"])
