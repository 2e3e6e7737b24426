"""Is one tiny evaluation repeatable, and what does it cost? vLLM's engine core in-process (the kit's setting)
against its own process (vLLM's default), measured interleaved (the SFT batches' padding: bench_sft.py).

    .venv/bin/python benchmarks/bench_eval_repeat.py [--runs 2] [--benchmark tiny_aime] [--no-record]

Each run evaluates the pipeline's SFT checkpoint on the whole benchmark through ``harness.evaluate`` (as notebook
02 does: 200 problems x k = 16 at tiny) into a fresh folder, with ``VLLM_ENABLE_V1_MULTIPROCESSING`` set to 0 or 1
(``generation.vllm_env`` keeps a value the caller sets). A run's sample set is the hash of its (problem, sample,
response) triples; the rows count the distinct sets per setting (1 = repeatable) and the median seconds. The
own-process setting varies only now and then (3 sets in 5 runs when found, 2026-11-30; 1 set in the 2 runs of the
recorded row), so its count is no proof either way; the in-process one never varied (results/LOG.md). Needs
``make reproduce`` to have trained the SFT stage. About 2 minutes per round of both settings on 2 cores.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import logging
import os
import tempfile
from pathlib import Path

from klear_lib.configs import recipe
import perf  # benchmarks/perf.py, beside this script

log = logging.getLogger("bench_eval_repeat")
BENCH = "eval_repeat"
MODES = {"in_process": "0", "own_process": "1"}


def evaluate_once(model: str, name: str, mode: str) -> str:
    """One whole evaluation with the engine core ``mode``; returns the hash of its sample set."""
    from klear_lib.configs import get_config
    from klear_lib.evaluation.benchmarks import get_spec, load_rows
    from klear_lib.evaluation.harness import evaluate

    os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] = MODES[mode]
    with tempfile.TemporaryDirectory(prefix="bench-eval-repeat-") as out:
        df = evaluate(model, get_spec(name), load_rows(name, recipe("tiny")), get_config("eval", "tiny"), Path(out),
                      stage="sft")
    triples = sorted(zip(df["problem_id"], df["sample"].astype(int), df["response"]))
    return hashlib.sha256(json.dumps(triples).encode()).hexdigest()[:12]


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2, help="evaluations per setting")
    parser.add_argument("--benchmark", default="tiny_aime")
    perf.add_output_args(parser)
    args = parser.parse_args(argv)
    from klear_lib.evaluation.checkpoints import stage_checkpoint

    model = stage_checkpoint("sft", recipe("tiny"))
    if model is None:
        raise SystemExit("no tiny SFT checkpoint: run `make reproduce` (or notebook 02 at tiny) first")
    before, sets = perf.loadavg(), {mode: [] for mode in MODES}
    times = perf.interleave({m: (lambda m=m: sets[m].append(evaluate_once(model, args.benchmark, m)))
                             for m in MODES}, reps=args.runs, warmup=0)
    note = f"{args.benchmark}, tiny SFT checkpoint, {args.runs} runs; {perf.load_note(before, perf.loadavg())}"
    rows = []
    for mode in MODES:
        stats = perf.summary(times[mode])
        rows += [perf.row(BENCH, f"eval_s.{mode}", stats["median"], "s", notes=f"{perf.iqr_note(stats)}; {note}"),
                 perf.row(BENCH, f"distinct_sample_sets.{mode}", len(set(sets[mode])), "sets",
                          notes=f"of {args.runs} runs: {', '.join(sets[mode])}")]
    stats = perf.summary(perf.paired_ratios(times, "in_process", "own_process"))
    rows.append(perf.row(BENCH, "eval_s.ratio.in_process", stats["median"], "x", "own_process", perf.iqr_note(stats)))
    perf.emit(rows, args)


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING, format="%(message)s")
    main()
