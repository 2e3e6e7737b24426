"""The study re-run (issue 40), drawn as ``results/tiny/preregistration.md`` registers it: each registered
experiment's runs, into ``results/<preset>/rerun/`` beside the study they will replace, and how far they got.

    .venv/bin/python scripts/rerun.py sweep fig2 --workers 2 --stop-by 07:40   # resumes from the stored rows
    .venv/bin/python scripts/rerun.py sweep fig3 && .venv/bin/python scripts/rerun.py sweep fig4   # one run shared
    .venv/bin/python scripts/rerun.py sweep fig5 && .venv/bin/python scripts/rerun.py sweep table6  # reuse fig2's gppo
    .venv/bin/python scripts/rerun.py status                                   # runs stored, no result shown

``sweep`` runs the experiment's registered seeds (``RLScale.fixed_seeds``) a chunk of ``workers`` seeds at a time,
every arm of a seed in the same chunk, so a sweep cut between chunks leaves whole paired seeds; the seeds' start
evaluations run ``workers`` at a time too. A run's rows are written the moment it ends (``Family.run_experiment``),
so a killed sweep loses only the runs in flight. ``--stop-by HH:MM`` (UTC, today) starts no chunk that the last
chunk's duration says would end after it. Neither command prints a result: the registration forbids an interim look,
so the verdicts are computed once, after every registered run is stored (docs/design.md, "Verdicts").

Once every registered experiment is stored in full, its files replace the study's (``results/<preset>/``) and
notebooks 05-07 are executed on them; until then the committed study is the earlier design's.
"""
from __future__ import annotations

import argparse
import dataclasses
import time
from datetime import datetime, timezone

import klear_lib  # noqa: F401  (first: the numerics mode is set before torch, MKL or NumPy load)

SUBDIR = "rerun"
# experiments with a section of the pre-registration, committed before their rows
REGISTERED = ("fig2", "fig3", "fig4", "fig5", "table6")


def rerun_recipe(preset: str):
    from klear_lib.configs import recipe
    return dataclasses.replace(recipe(preset), results_subdir=SUBDIR)


def progress(preset: str, experiment: str) -> dict:
    """How many of the experiment's registered runs are stored under their current identity: runs, and seeds
    with every arm stored (read from the table's keys only)."""
    from klear_lib.ablations.rl import RL

    r = rerun_recipe(preset)
    conds, seeds = RL.conditions_for(r, experiment), RL.seeds(r, experiment)
    held = RL._held(r, conds, seeds, RL.csv(r.results))[1]
    done = {cs for cs, (_, ok) in held.items() if ok}
    whole = [s for s in seeds if all((c, s) in done for c in conds)]
    return {"experiment": experiment, "arms": len(conds), "seeds_registered": len(seeds),
            "seeds_stored": len(whole), "runs_stored": len(done), "runs_registered": len(held)}


def sweep(preset: str, experiment: str, workers: int, stop_by: str | None) -> None:
    from klear_lib.ablations.rl import RL

    if experiment not in REGISTERED:
        raise SystemExit(f"{experiment} has no section in results/{preset}/preregistration.md yet; registered: "
                         f"{', '.join(REGISTERED)}")
    r = rerun_recipe(preset)
    seeds, last = RL.seeds(r, experiment), None
    deadline = _deadline(stop_by)
    for i in range(0, len(seeds), workers):
        chunk = seeds[i:i + workers]
        if deadline and last and time.time() + last > deadline:
            print(f"stopping before seeds {chunk}: the last chunk took {last / 60:.0f} min, past --stop-by {stop_by}")
            break
        start = time.time()
        RL.run_experiment(r, experiment, seeds=chunk, workers=workers)
        if time.time() - start > 60:  # a chunk stored already takes seconds: it sizes nothing
            last = time.time() - start
    print(progress(preset, experiment))


def _deadline(stop_by: str | None) -> float | None:
    if not stop_by:
        return None
    hour, minute = (int(x) for x in stop_by.split(":"))
    return datetime.now(timezone.utc).replace(hour=hour, minute=minute, second=0, microsecond=0).timestamp()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("command", choices=("sweep", "status"))
    ap.add_argument("experiment", nargs="?", default="fig2")
    ap.add_argument("--preset", default="tiny")
    ap.add_argument("--workers", type=int, default=2, help="runs at a time (one torch thread each)")
    ap.add_argument("--stop-by", help="HH:MM UTC: start no chunk of seeds that would end after it")
    args = ap.parse_args()
    if args.command == "sweep":
        sweep(args.preset, args.experiment, args.workers, args.stop_by)
    else:
        for experiment in REGISTERED:
            print(progress(args.preset, experiment))


if __name__ == "__main__":  # spawned sweep workers re-import this file
    main()
