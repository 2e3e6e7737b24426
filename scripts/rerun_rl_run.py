"""Rerun one stored RL ablation run from scratch and compare it with what is stored, byte for byte.

The run trains and evaluates in a scratch artifact store that holds only the preset's base model, data and SFT
checkpoint (copied from the current store), so nothing is reused; its run record and its table rows are then
compared with the committed ones (the committed record is put back afterwards, whatever the outcome).

    .venv/bin/python scripts/rerun_rl_run.py --experiment fig2 --condition gppo --seed 0

Exit status 0 when both are identical, 1 otherwise. At tiny a math run takes 5-8 minutes on one core.
"""
from __future__ import annotations

import argparse
import filecmp
import os
import shutil
import sys
import tempfile
from pathlib import Path


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--preset", default="tiny")
    ap.add_argument("--experiment", required=True)
    ap.add_argument("--condition", required=True)
    ap.add_argument("--seed", type=int, required=True)
    args = ap.parse_args()

    from klear_lib import artifacts
    source = artifacts.root() / args.preset
    scratch = Path(tempfile.mkdtemp(prefix="klear-rerun-"))
    for part in ("base", "data", "sft"):
        if not (source / part).exists():
            sys.exit(f"{source / part} is missing: run the main job first (make reproduce) so the SFT start exists")
        shutil.copytree(source / part, scratch / args.preset / part)
    os.environ["KLEAR_ARTIFACTS"] = str(scratch)

    import pandas as pd

    from klear_lib import tables
    from klear_lib.ablations import rl
    from klear_lib.ablations import table as T
    from klear_lib.configs import recipe

    R = recipe(args.preset)
    cond = rl.RL.get_experiment(args.experiment).condition(args.condition)
    record = rl.record_path(R.runs, cond, args.seed)
    if not record.exists():
        sys.exit(f"{record}: no stored run record to compare with")
    stored_record = record.read_bytes()
    stored = tables.read(T.ABLATION, rl.RL.csv(R.results))
    mine = stored[(stored["experiment"] == cond.experiment) & (stored["condition"] == cond.label)
                  & (stored["seed"] == args.seed)
                  & (stored["config_hash"] == rl.condition_hash(R, cond))]
    if mine.empty:
        sys.exit(f"{rl.RL.csv(R.results)} holds no row of {cond.experiment}/{cond.label} seed {args.seed} under "
                 "the current config")
    try:
        out = rl.run_condition(R, cond, args.seed)
        fresh_record = record.read_bytes()
    finally:
        record.write_bytes(stored_record)
    a, b = scratch / "rerun_rows.csv", scratch / "stored_rows.csv"
    tables.write(T.ABLATION, pd.DataFrame(out.rows), a)
    tables.write(T.ABLATION, mine, b)
    same_rows, same_record = filecmp.cmp(a, b, shallow=False), fresh_record == stored_record
    print(f"rows identical: {same_rows}\nrun record identical: {same_record} ({record})\nscratch store: {scratch}")
    old_cols, new_cols = (b.split(b"\n", 1)[0].decode().split(",") for b in (stored_record, fresh_record))
    if old_cols != new_cols:  # a record written before the trainer logged more columns
        print(f"the stored record's columns differ: missing {[c for c in new_cols if c not in old_cols]}, "
              f"extra {[c for c in old_cols if c not in new_cols]}")
    return 0 if same_rows and same_record else 1


if __name__ == "__main__":
    sys.exit(main())
