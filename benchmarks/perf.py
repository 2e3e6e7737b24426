"""Speed benchmarks: interleaved timing, median/IQR, and ``results/perf.csv`` with its generated section of
docs/perf.md (the README links it). The ``bench_*.py`` scripts beside this file import it as ``perf``.

    python benchmarks/perf.py                        # docs/perf.md from results/perf.csv
    python benchmarks/perf.py --collect gpu.csv ...  # first merge rows written elsewhere (e.g. on a GPU node)

Speed goals live in ``benchmarks/`` as ratios measured side by side in one run, never as timed assertions in
tests. ``perf.csv`` is long-format, one row per (benchmark, machine, metric); a rerun of a benchmark on a
machine replaces all of that benchmark's rows from that machine, so renamed metrics never linger. Each
``bench_*.py`` records its own rows (``record``) unless run with ``--no-record``; a collected file replaces the
rows of the same (benchmark, machine) pairs.
"""
from __future__ import annotations

import argparse
import logging
import math
import os
import re
import statistics
import time
from dataclasses import replace
from pathlib import Path
from typing import Callable, Iterable, Mapping

import klear_lib  # noqa: F401  (first: the numerics mode before pandas loads)
import pandas as pd

from klear_lib import numerics, tables
from klear_lib.paths import REPO, RESULTS

log = logging.getLogger("perf")
PERF_CSV = RESULTS / "perf.csv"
README = REPO / "docs" / "perf.md"  # the rows rendered (the README links it)
COLUMNS = ["benchmark", "metric", "value", "unit", "ratio_to", "notes", "machine"]
KEY = ["benchmark", "machine", "metric"]
PERF = tables.Table(
    "perf", tuple(COLUMNS), tuple(KEY), required=("unit",), float_format="%.4g",
    types=tuple((c, float if c == "value" else str) for c in COLUMNS),
    checks=(("a missing field", lambda df: df[[c for c in COLUMNS if c != "value"]].isna().any(axis=1)),
            ("a non-finite value", lambda df: ~df["value"].astype(float).map(math.isfinite))))
START, END = "<!-- perf:start -->", "<!-- perf:end -->"


# ---- timing -------------------------------------------------------------------------------------------------
def interleave(fns: Mapping[str, Callable[[], object]], reps: int, warmup: int = 1,
               clock: Callable[[], float] = time.perf_counter) -> dict[str, list[float]]:
    """Seconds per call of each fn, run interleaved ``reps`` times after ``warmup`` untimed rounds.

    Round r runs the fns in order rotated by r (A B C, B C A, ...), so no variant always runs first or after
    the same neighbour; load drift on a shared machine then hits every variant alike.
    """
    names = list(fns)
    times: dict[str, list[float]] = {name: [] for name in names}
    for r in range(warmup + reps):
        for name in names[r % len(names):] + names[:r % len(names)]:
            start = clock()
            fns[name]()
            if r >= warmup:
                times[name].append(clock() - start)
    return times


def summary(xs: Iterable[float]) -> dict[str, float]:
    """Median and interquartile range (``q1``, ``q3``; inclusive quartiles) of ``xs``."""
    xs = sorted(xs)
    if not xs:
        raise ValueError("no samples to summarise")
    q1, _, q3 = statistics.quantiles(xs, n=4, method="inclusive") if len(xs) > 1 else (xs[0],) * 3
    return {"median": statistics.median(xs), "q1": q1, "q3": q3, "n": len(xs)}


def paired_ratios(times: Mapping[str, list[float]], num: str, den: str) -> list[float]:
    """Per-round ratios ``times[num][i] / times[den][i]`` (same round = same machine load)."""
    if len(times[num]) != len(times[den]):
        raise ValueError(f"{num} has {len(times[num])} samples, {den} has {len(times[den])}")
    return [a / b for a, b in zip(times[num], times[den])]


def iqr_note(stats: Mapping[str, float], fmt: str = "{:.4g}") -> str:
    """``"IQR q1-q3, n=N"`` for a ``summary`` dict."""
    return f"IQR {fmt.format(stats['q1'])}-{fmt.format(stats['q3'])}, n={stats['n']}"


# ---- machine ------------------------------------------------------------------------------------------------
def machine(gpu: str | None = None) -> str:
    """A short machine label for ``perf.csv``: usable CPU cores and model, plus the GPU when one is used."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    label = f"{cores} cores {numerics.cpu_model()}"
    return f"{gpu}; {label}" if gpu else label


def loadavg() -> float:
    """The 1-minute load average (NaN where the OS has none): absolute times on a shared machine depend on it."""
    return os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")


def load_note(before: float, after: float) -> str:
    """``"load 5.4->5.8 on 2 cores"``: the machine's load around a run."""
    return f"load {before:.1f}->{after:.1f} on {os.cpu_count()} cores"


# ---- rows and the CSV ---------------------------------------------------------------------------------------
def row(benchmark: str, metric: str, value: float, unit: str, ratio_to: str = "", notes: str = "") -> dict:
    """One ``perf.csv`` row (``machine`` is filled in by ``record``)."""
    return {"benchmark": benchmark, "metric": metric, "value": value, "unit": unit, "ratio_to": ratio_to,
            "notes": notes}


def validate(rows: list[dict]) -> list[dict]:
    """``rows``, or ``ValueError`` naming the rows (benchmark, machine, metric) with a missing or empty field or a
    non-finite value."""
    tables.validate(PERF, pd.DataFrame(rows, columns=COLUMNS))
    return rows


def read(path: Path | str = PERF_CSV) -> list[dict]:
    """Rows of ``perf.csv`` (validated, values as float); an absent file has none."""
    return tables.read(PERF, path).to_dict("records")


def merge(old: list[dict], new: list[dict], by: str = "benchmark") -> list[dict]:
    """``old`` without the (benchmark, machine) pairs present in ``new`` (``by="metric"``: without the
    (benchmark, machine, metric) rows only, for benchmarks measured a part at a time), plus ``new``; sorted by key."""
    if by not in ("benchmark", "metric"):
        raise ValueError(f"by must be 'benchmark' or 'metric', got {by!r}")
    schema = replace(PERF, run_key=("benchmark", "machine") + (("metric",) if by == "metric" else ()))
    merged = tables.upsert(schema, pd.DataFrame(old, columns=COLUMNS), pd.DataFrame(new, columns=COLUMNS))
    return merged.to_dict("records")


def write(rows: list[dict], path: Path | str = PERF_CSV) -> Path:
    """Write rows in ``COLUMNS`` order, sorted by key, values at 4 significant digits."""
    return tables.write(PERF, pd.DataFrame(rows, columns=COLUMNS), path)


# An absolute path up to the artifact store or the repository names one machine's folders: a row keeps the part
# from the store on (".artifacts/tiny/sft/<hash>/final"), which names the same thing anywhere.
MACHINE_PATH = re.compile(r"(?<![\w.~])(?:/[\w.+-]+)+/(?=\.artifacts/)")


def portable(text: str) -> str:
    """``text`` without the machine-specific head of artifact-store paths (``MACHINE_PATH``)."""
    return MACHINE_PATH.sub("", text)


def record(rows: list[dict], machine_label: str, path: Path | str = PERF_CSV, by: str = "benchmark") -> Path:
    """Upsert one benchmark run's ``rows`` (all from ``machine_label``) into ``perf.csv`` (``by``: see ``merge``);
    notes keep no machine path (``portable``)."""
    new = [{**r, "notes": portable(str(r["notes"])), "machine": machine_label} for r in rows]
    return write(merge(read(path), new, by), path)


def add_output_args(parser) -> None:
    """``--out`` (default ``results/perf.csv``) and ``--no-record``: the output options every benchmark takes."""
    parser.add_argument("--out", default=str(PERF_CSV))
    parser.add_argument("--no-record", action="store_true", help="print only; leave results/perf.csv alone")


def emit(rows: list[dict], args, machine_label: str | None = None, by: str = "benchmark") -> Path | None:
    """Print one line per row, then ``record`` them in ``args.out`` (and say where) unless ``args.no_record``."""
    width = max((len(r["metric"]) for r in rows), default=0)
    for r in rows:
        print(f"{r['metric']:{width}s}  {float(r['value']):10.4g} {r['unit']:9s} {r['notes']}")
    if args.no_record:
        return None
    path = record(rows, machine_label or machine(), args.out, by)
    print(f"recorded in {path}")
    return path


# ---- README section -----------------------------------------------------------------------------------------
def _cell(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def render(rows: list[dict]) -> str:
    """The README section body: one markdown table per machine, rows as in ``perf.csv``."""
    lines = ["## Speed benchmarks", "", "Generated from `results/perf.csv` by `python benchmarks/perf.py`; commands in "
             "`benchmarks/README.md`. Ratios were measured interleaved in one run; absolute times depend on "
             "the machine and its load (see notes)."]
    for label in sorted({r["machine"] for r in rows}):
        lines += ["", f"Machine: {_cell(label)}", "",
                  "| benchmark | metric | value | unit | ratio to | notes |", "|---|---|---|---|---|---|"]
        lines += [f"| {_cell(r['benchmark'])} | {_cell(r['metric'])} | {float(r['value']):.4g} | {_cell(r['unit'])}"
                  f" | {_cell(r['ratio_to'])} | {_cell(r['notes'])} |" for r in rows if r["machine"] == label]
    if not rows:
        lines += ["", "No benchmark has been recorded yet."]
    return "\n".join(lines)


def splice(text: str, body: str) -> str:
    """``text`` with ``body`` between the perf markers; markers appended at the end when absent."""
    if text.count(START) != text.count(END) or text.count(START) > 1:
        raise ValueError(f"README must hold {START} and {END} once each, in that order")
    if START not in text:
        text = text.rstrip("\n") + f"\n\n{START}\n{END}\n"
    head, rest = text.split(START, 1)
    if END not in rest:
        raise ValueError(f"{END} comes before {START} in the README")
    return f"{head}{START}\n{body.strip()}\n{END}{rest.split(END, 1)[1]}"


def update_readme(rows: list[dict], readme: Path | str = README) -> Path:
    """Rewrite the README's perf section from ``rows`` (only the text between the markers changes)."""
    readme = Path(readme)
    readme.write_text(splice(readme.read_text(), render(rows)))
    return readme


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Collect rows into results/perf.csv; regenerate docs/perf.md.")
    parser.add_argument("--csv", default=str(PERF_CSV), help="the perf table (default results/perf.csv)")
    parser.add_argument("--readme", default=str(README))
    parser.add_argument("--collect", nargs="*", default=[], help="perf CSVs to merge in first")
    args = parser.parse_args(argv)
    rows = read(args.csv)
    for path in args.collect:
        rows = merge(rows, read(path))
        log.info("merged %s", path)
    if args.collect:
        write(rows, args.csv)
    update_readme(rows, args.readme)
    log.info("%d rows -> %s and the perf section of %s", len(rows), args.csv, args.readme)


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    main()
