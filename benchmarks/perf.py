"""Collect benchmark rows into ``results/perf.csv`` and regenerate docs/perf.md (the README links it) from it.

    python benchmarks/perf.py                        # docs/perf.md from results/perf.csv
    python benchmarks/perf.py --collect gpu.csv ...  # first merge rows written elsewhere (e.g. on a GPU node)

Each ``bench_*.py`` here records its own rows (``klear_lib.perf.record``) unless run with ``--no-record``; a
collected file replaces the rows of the same (benchmark, machine) pairs.
"""
from __future__ import annotations

import argparse
import logging

from klear_lib import perf

log = logging.getLogger("perf")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--csv", default=str(perf.PERF_CSV), help="the perf table (default results/perf.csv)")
    parser.add_argument("--readme", default=str(perf.README))
    parser.add_argument("--collect", nargs="*", default=[], help="perf CSVs to merge in first")
    args = parser.parse_args(argv)
    rows = perf.read(args.csv)
    for path in args.collect:
        rows = perf.merge(rows, perf.read(path))
        log.info("merged %s", path)
    if args.collect:
        perf.write(rows, args.csv)
    perf.update_readme(rows, args.readme)
    log.info("%d rows -> %s and the perf section of %s", len(rows), args.csv, args.readme)


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    main()
