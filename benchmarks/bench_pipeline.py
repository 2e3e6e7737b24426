"""Wall time of the main job (`make reproduce`) and of the CI run, each from scratch in a fresh clone.

The stages (notebooks 01-04) run one by one in a clone of the committed tree with its own artifact store, so
nothing is reused; each stage row names its slowest cells. The run also checks whether the clone's results tables
come out byte-identical to the committed ones (the tiny path promises bit-reproducibility on one machine).

    .venv/bin/python benchmarks/bench_pipeline.py [--preset tiny] [--stages 01_data_curation ...] [--keep]
                                                  [--no-record]
    .venv/bin/python benchmarks/bench_pipeline.py --ci      # the CI run: `bash .ci/run` in a fresh clone

`--targets` prints issue 23's speed targets against the rows recorded on this machine (the step ratios come
from bench_sft.py, bench_vllm_rl.py and bench_code_judge.py; `make bench` ends with it).

Runs as long as the stages themselves (`--preset ci`: a few minutes). The clone is of HEAD: commit first.
Uncommitted changes are not measured. `--ci` installs the clone's own environment, as CI does (registry access).
`--workdir DIR` keeps the clone in DIR and reuses it when called again, so the tiny stages (hours in all) can be
timed one sitting at a time: a stage needs only the stages before it to have run there, and its row is its own
time. Each call replaces only the rows it measures in perf.csv.
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from klear_lib.data.fetch import MIRROR_ENV, mirror_dir
from klear_lib.paths import REPO

import perf  # benchmarks/perf.py, beside this script

log = logging.getLogger("bench_pipeline")
BENCH = "pipeline"
STAGES = ("01_data_curation", "02_long_cot_sft", "03_gppo_rl", "04_evaluation")  # as the Makefile's STAGES
# Issue 23's speed targets: (what, benchmark, metric, "<=" or ">=", target). Each is read from the rows that
# benchmark recorded on this machine (the ratios come from old and new paths run side by side).
TARGETS = (
    ("make reproduce from a fresh clone (s)", BENCH, "tiny.total_s", "<=", 1200.0),
    ("SFT step, same rows and epochs (x faster)", "sft_step", "step_s.ratio.padded", ">=", 2.0),
    ("SFT padding share", "sft_step", "padding_share.grouped", "<=", 0.05),
    ("math RL step, vLLM rollouts (x faster)", "vllm_rl", "speedup.vllm", ">=", 2.0),
    ("code RL reward call, the judge (x faster)", "code_judge", "speedup.dedup.w2", ">=", 2.0),
)


def clone(dest: Path) -> Path:
    """A fresh clone of HEAD at ``dest/main``; with ``$KLEAR_BENCHMARKS`` set, ``dest/shared/benchmarks`` links to
    that mirror, where ``.ci/run`` looks for one (CI lays its mirror there)."""
    subprocess.run(["git", "clone", "--quiet", str(REPO), str(dest / "main")], check=True)
    if (mirror := mirror_dir()) is not None:
        (dest / "shared").mkdir()
        (dest / "shared" / "benchmarks").symlink_to(mirror)
    return dest / "main"


def run_stage(repo: Path, stage: str, preset: str) -> tuple[float, Path]:
    """Execute one stage notebook in ``repo`` with papermill (its own klear_lib and artifact store)."""
    out = repo / "results" / preset / "notebooks" / f"{stage}.ipynb"
    out.parent.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PYTHONPATH": str(repo), "KLEAR_ARTIFACTS": str(repo / ".artifacts"),
           MIRROR_ENV: os.environ.get(MIRROR_ENV, ""), "TQDM_DISABLE": "1"}
    cmd = [sys.executable, "-m", "papermill", str(repo / "notebooks" / f"{stage}.ipynb"), str(out),
           "-p", "PRESET", preset, "-k", "python3", "--no-progress-bar", "--cwd", str(repo)]
    start = time.perf_counter()
    subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start, out


def slowest_cells(notebook: Path, n: int = 3) -> list[tuple[float, str]]:
    """The ``n`` slowest code cells of an executed notebook: (seconds, first line that is not a comment)."""
    cells = json.loads(notebook.read_text())["cells"]
    timed = []
    for cell in cells:
        secs = (cell.get("metadata", {}).get("papermill") or {}).get("duration")
        if cell["cell_type"] == "code" and secs is not None:
            lines = [ln for ln in "".join(cell["source"]).splitlines() if ln.strip() and not ln.startswith("#")]
            timed.append((float(secs), (lines[0] if lines else "")[:60]))
    return sorted(timed, reverse=True)[:n]


def changed_tables(repo: Path, preset: str) -> tuple[int, list[str]]:
    """(tracked CSV files under ``results/<preset>``, those the run changed), per ``git status`` in the clone."""
    tracked = subprocess.run(["git", "-C", str(repo), "ls-files", f"results/{preset}/*.csv",
                              f"results/{preset}/**/*.csv"], capture_output=True, text=True, check=True)
    status = subprocess.run(["git", "-C", str(repo), "status", "--porcelain", f"results/{preset}"],
                            capture_output=True, text=True, check=True)
    changed = [ln[3:] for ln in status.stdout.splitlines() if ln.startswith(" M") and ln.endswith(".csv")]
    return len(set(tracked.stdout.split())), changed


def run_ci(repo: Path, head: str) -> list[dict]:
    """``bash .ci/run`` (the README's test command) in ``repo``; its output goes to ``ci.log`` beside the clone."""
    logfile, before = repo.parent / "ci.log", perf.loadavg()
    start = time.perf_counter()
    with logfile.open("w") as out:
        done = subprocess.run(["bash", ".ci/run"], check=False, cwd=repo, env={**os.environ, "CI": "true"}, stdout=out,
                              stderr=subprocess.STDOUT)
    secs = time.perf_counter() - start
    if done.returncode:
        raise RuntimeError(f"CI failed (rc {done.returncode}); last lines of {logfile}:\n"
                           + "\n".join(logfile.read_text().splitlines()[-30:]))
    return [perf.row(BENCH, "ci.run_s", secs, "s", notes=f"`bash .ci/run` in a fresh clone at {head}, setup "
                                                          f"included; {perf.load_note(before, perf.loadavg())}")]


def revision(repo: Path) -> str:
    """The clone's short HEAD, plus the code files changed in its working tree (a kept clone may carry a fix)."""
    head = subprocess.run(["git", "-C", str(repo), "rev-parse", "--short", "HEAD"], capture_output=True,
                          text=True, check=True).stdout.strip()
    status = subprocess.run(["git", "-C", str(repo), "status", "--porcelain", "--", "klear_lib", "notebooks",
                             "configs"], capture_output=True, text=True, check=True).stdout.splitlines()
    return head + "".join(f" + uncommitted {line[3:]}" for line in status)


def run(args) -> list[dict]:
    tmp = Path(args.workdir or tempfile.mkdtemp(prefix="klear-pipeline-")).resolve()
    try:
        repo = tmp / "main" if (tmp / "main" / ".git").exists() else clone(tmp)
        head = revision(repo)
        if args.ci:
            return run_ci(repo, head)
        rows, total, before = [], 0.0, perf.loadavg()
        for stage in args.stages:
            log.info("== %s (preset %s)", stage, args.preset)
            secs, executed = run_stage(repo, stage, args.preset)
            total += secs
            cells = "; ".join(f"{s:.0f} s `{src}`" for s, src in slowest_cells(executed))
            rows.append(perf.row(BENCH, f"{args.preset}.stage_s.{stage}", secs, "s",
                                 notes=f"from scratch at {head}; slowest cells: {cells}"))
            log.info("   %.0f s", secs)
        if set(args.stages) == set(STAGES):
            note = f"{len(STAGES)} stages from scratch at {head}; {perf.load_note(before, perf.loadavg())}"
            rows.append(perf.row(BENCH, f"{args.preset}.total_s", total, "s", notes=note))
        n_tables, changed = changed_tables(repo, args.preset)
        rows.append(perf.row(BENCH, f"{args.preset}.tables_identical", 1 - len(changed) / max(n_tables, 1), "share",
                             notes=f"{n_tables} committed CSV tables after stages {', '.join(args.stages)}; "
                                   f"changed: {', '.join(changed) or 'none'}"))
        return rows
    finally:
        if args.keep or args.workdir:
            log.info("clone kept in %s", tmp)
        else:
            shutil.rmtree(tmp, ignore_errors=True)


def targets(rows: list[dict], machine: str) -> list[str]:
    """One line per target: the value this machine recorded, the target, met or missed (or not measured)."""
    found = {(r["benchmark"], r["metric"]): r for r in rows if r["machine"] == machine}
    lines = []
    for what, bench, metric, op, target in TARGETS:
        row = found.get((bench, metric))
        if row is None:
            lines.append(f"{what:45s} not measured here (run the `{bench}` benchmark)")
            continue
        value = float(row["value"])
        met = value <= target if op == "<=" else value >= target
        lines.append(f"{what:45s} {value:10.4g} (target {op} {target:g}): {'met' if met else 'missed'}")
    return lines


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="tiny", choices=("ci", "tiny"))
    parser.add_argument("--stages", nargs="+", default=list(STAGES))
    parser.add_argument("--ci", action="store_true", help="time the CI run (`bash .ci/run`) instead of the stages")
    parser.add_argument("--keep", action="store_true", help="keep the clone (its artifacts and executed notebooks)")
    parser.add_argument("--workdir", type=Path, help="clone into (or reuse the clone in) this folder; kept")
    parser.add_argument("--targets", action="store_true", help="only print the speed targets from perf.csv")
    perf.add_output_args(parser)
    args = parser.parse_args(argv)
    if not args.targets:
        perf.emit(run(args), args, by="metric")  # stages, presets and the CI run are measured in separate calls
    print(f"\nSpeed targets (issue 23) on {perf.machine()}:")
    print("\n".join(targets(perf.read(args.out), perf.machine())))


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    main()
