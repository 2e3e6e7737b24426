"""Import time of GPPO for other people's code: a fresh interpreter importing ``GPPOConfig`` and ``GPPOTrainer``.

    .venv/bin/python benchmarks/bench_import.py [--reps 3] [--no-record]

Three variants, each a new process timed from start to exit, interleaved by round:

- ``kit_before``: in the kit's environment, the trainer with what its module imported before issue 42 (the kit's
  rewards, so math-verify and the sandbox, and its row checks, so the data code);
- ``kit``: the trainer alone in the kit's environment (TRL still imports vLLM there, because it is installed);
- ``light``: the light install (pyproject's ``trl`` extra, emulated by ``klear_lib.light``: only the distributions
  torch, packaging and TRL require), where neither vLLM nor math-verify exists.
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

from klear_lib import light
from klear_lib.paths import REPO

import perf  # benchmarks/perf.py, beside this script

BENCH = "import_gppo"
TRAINER = "from klear_lib.training import GPPOConfig, GPPOTrainer"
BEFORE = TRAINER + "; import klear_lib.training.rewards, klear_lib.training.rl_rows"
KIT_ONLY = ("vllm", "math_verify", "klear_lib.data")
REPORT = f"; import sys; print(','.join(m for m in {KIT_ONLY!r} if m in sys.modules))"


def runner(argv: list[str], env: dict | None, loaded: dict, name: str):
    def call():
        out = subprocess.run(argv, env=env, cwd=REPO, capture_output=True, text=True, check=True, timeout=900)
        loaded[name] = out.stdout.strip().splitlines()[-1] if out.stdout.strip() else ""
    return call


def run(args) -> list[dict]:
    site = light.light_site(Path(tempfile.mkdtemp(prefix="light-")) / "site")
    loaded: dict[str, str] = {}
    code = {"kit_before": BEFORE, "kit": TRAINER, "light": TRAINER}
    fns = {"kit_before": runner([sys.executable, "-W", "ignore", "-c", BEFORE + REPORT], None, loaded, "kit_before"),
           "kit": runner([sys.executable, "-W", "ignore", "-c", TRAINER + REPORT], None, loaded, "kit"),
           "light": runner(*light.command(site, TRAINER + REPORT), loaded, "light")}
    before = perf.loadavg()
    times = perf.interleave(fns, args.reps, args.warmup)
    note = perf.load_note(before, perf.loadavg())
    rows = []
    for name, secs in times.items():
        stats = perf.summary(secs)
        what = loaded[name] or "none of vllm, math_verify, klear_lib.data"
        rows.append(perf.row(BENCH, f"import_s.{name}", stats["median"], "s",
                             notes=f"fresh interpreter, `{code[name]}`; loaded: {what}; {perf.iqr_note(stats)}; {note}"))
    for name in ("kit", "light"):
        ratio = perf.summary(perf.paired_ratios(times, "kit_before", name))
        rows.append(perf.row(BENCH, f"speedup.{name}", ratio["median"], "x", "kit_before",
                             f"{perf.iqr_note(ratio)}; {note}"))
    return rows


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--warmup", type=int, default=1)
    perf.add_output_args(parser)
    args = parser.parse_args(argv)
    perf.emit(run(args), args)


if __name__ == "__main__":
    main()
