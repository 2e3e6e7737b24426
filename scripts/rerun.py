"""The study re-run (issue 40), drawn as ``results/tiny/preregistration.md`` registers it: each registered
experiment's runs, into ``results/<preset>/rerun/`` beside the study they will replace, and how far they got.

    .venv/bin/python scripts/rerun.py sweep fig2 --workers 2 --stop-by 07:40   # resumes from the stored rows
    .venv/bin/python scripts/rerun.py sweep fig3 fig4 --stop-by 12:45          # one run shared; one after the other
    .venv/bin/python scripts/rerun.py sweep fig5 table6                        # both reuse fig2's gppo runs
    .venv/bin/python scripts/rerun.py sweep main --workers 2                   # the main job (section 4)
    .venv/bin/python scripts/rerun.py sweep main --arm task --stop-by 09:05    # its task arms only (50 min each)
    .venv/bin/python scripts/rerun.py sweep table2 table4 --stop-by 21:00      # SFT Tables 2 and 4 (section 6)
    .venv/bin/python scripts/rerun.py sweep table3 --stop-by 21:00             # SFT Table 3 (section 7)
    .venv/bin/python scripts/rerun.py sweep table5 --stop-by 21:00             # SFT Table 5 (section 8)
    .venv/bin/python scripts/rerun.py status                                   # runs stored, no result shown
    .venv/bin/python scripts/rerun.py claims                                   # verdicts of complete experiments

``sweep`` runs the experiment's registered seeds (``RLScale.fixed_seeds``, ``SFTScale.fixed_seeds``) not yet stored, a
chunk of ``workers`` seeds at a time, every arm of a seed in the same chunk, so a sweep cut between chunks leaves whole
paired seeds; the seeds' start evaluations run ``workers`` at a time too. A run's rows are written the moment it ends
(``Family.run_experiment``), so a killed sweep loses only the runs in flight. ``--stop-by HH:MM`` (UTC; an hour already
past is tomorrow's) starts no chunk that the time per round of runs so far says would end after it, and a smaller chunk
(fewer seeds) where that one would still end in time; its first chunk, with no time measured yet, is one seed. Rounds
count the runs that train only: one whose checkpoint this machine's store already holds (Fig. 4's filtered arm is Fig.
3's soft) is stored in a minute. Experiments named together run in turn and hand the time per round on, so the next
one's first chunk is judged by it too (a chained ``&&`` sweep started a 13-min one-seed chunk 6 min before its stop-by).
Neither command prints a result: the registration forbids an interim look, so the verdicts are computed once, after
every registered run is stored (docs/design.md, "Verdicts"). ``claims`` writes ``results/<preset>/rerun/claims.csv``:
the claims of every experiment whose registered runs are all stored, Figs. 3 and 4 only once both are
(``READ_TOGETHER``; the others "not run", whatever rows they have), the main job's among them once its seeds are all
stored, and the Benjamini-Hochberg q-values only once nothing registered is missing; ``ablations_rl_summary.csv`` and
``ablations_sft_summary.csv`` beside it, every arm of the experiments read over their registered seeds; the forest plots
of the claims read (``figures/``); and ``claims_by_cpu.csv``, each read paired claim's seed differences split by the CPU
model that drew the seed (the pre-registration's section 5).

The main job (``sweep main``) trains its RL seeds (``Study.main_rl_seeds``) with the task's reward and with its
control, one arm of one seed per worker, and stores every stage's per-problem counts in ``problems/main.csv`` as
each ends; its checkpoints and samples are the ones notebooks 03 and 04 read at the preset, so they reuse them
where they are in this machine's artifact store (a run stored from another machine is trained again there).

Once every registered experiment is stored in full, its files replace the study's (``results/<preset>/``) and
notebooks 05-07 are executed on them; until then the committed study is the earlier design's.
"""
from __future__ import annotations

import argparse
import dataclasses
import math
import time
from datetime import datetime, timedelta, timezone

import klear_lib  # noqa: F401  (first: the numerics mode is set before torch, MKL or NumPy load)

SUBDIR = "rerun"
# experiments with a section of the pre-registration, committed before their rows: RL (sections 1-3), SFT (6-8)
REGISTERED = ("fig2", "fig3", "fig4", "fig5", "table6", "table2", "table4", "table3", "table5")
# read only together, once every run of each is stored: section 2 holds Figs. 3 and 4 (they share a run) until all
# four arms are in, so Fig. 3 complete is not read while Fig. 4 is drawn
READ_TOGETHER = (("fig3", "fig4"),)
MAIN = "main"  # the main job (section 4): not an ablation family; its own sweep and count
MAIN_SEED = 0  # notebook 03's SEED: its labels name the stages, and seed the sampling of each
# ``claims_by_cpu.csv`` (section 5 of the pre-registration): a paired claim's differences per CPU model
BY_CPU = ("claim_id", "experiment", "benchmark", "better", "worse", "cpu", "n_seeds", "mean_pts", "ci_low_pts",
          "ci_high_pts", "seeds")


def rerun_recipe(preset: str):
    from klear_lib.configs import recipe
    return dataclasses.replace(recipe(preset), results_subdir=SUBDIR)


def progress(preset: str, experiment: str) -> dict:
    """How many of the experiment's registered runs are stored under their current identity: runs, and seeds
    with every arm stored (read from the table's keys only)."""
    conds, seeds, done = _stored_runs(preset, experiment)
    whole = [s for s in seeds if all((c, s) in done for c in conds)]
    return {"experiment": experiment, "arms": len(conds), "seeds_registered": len(seeds),
            "seeds_stored": len(whole), "runs_stored": len(done), "runs_registered": len(conds) * len(seeds)}


def family_of(experiment: str):
    """The ablation family that runs ``experiment`` (SFT: Tables 2-5; RL: Figs. 2-5 and Table 6)."""
    from klear_lib.ablations.claims import FAMILIES

    for family in FAMILIES.values():
        if experiment in family.experiments:
            return family
    raise SystemExit(f"{experiment} is no ablation experiment")


def _stored_runs(preset: str, experiment: str) -> tuple[list[str], list[int], set[tuple[str, int]]]:
    """The experiment's arms, registered seeds and {(arm, seed)} stored under their current identity."""
    family, r = family_of(experiment), rerun_recipe(preset)
    conds, seeds = family.conditions_for(r, experiment), family.seeds(r, experiment)
    held = family._held(r, conds, seeds, family.csv(r.results))[1]
    return conds, seeds, {cs for cs, (_, ok) in held.items() if ok}


def main_progress(preset: str) -> dict:
    """How many of the main job's runs (one seed's two stages in one arm) are stored, each stage read on every
    benchmark under the current reading (read from the problems file's keys only)."""
    r = rerun_recipe(preset).main_job
    seeds, done, arms = _main_seeds(r), *_stored_main_runs(r)
    return {"experiment": MAIN, "arms": len(arms), "seeds_registered": len(seeds),
            "seeds_stored": sum(all((a, s) in done for a in arms) for s in seeds), "runs_stored": len(done),
            "runs_registered": len(arms) * len(seeds)}


def _stored_main_runs(r) -> tuple[set[tuple[str, int]], tuple[str, ...]]:
    """({(arm prefix, seed)} stored in full under ``r``'s reading, the arm prefixes: "" and the control's)."""
    from klear_lib import tables
    from klear_lib.configs import config_hash
    from klear_lib.results import CONTROL, PROBLEMS, problems_csv

    arms = ("", CONTROL) if r.study.main_control else ("",)
    path = problems_csv(r.results, MAIN)
    rows = tables.read(PROBLEMS, path) if path.exists() else None
    held = set() if rows is None else set(map(tuple, rows.loc[rows["config_hash"] == config_hash(r.eval),
                                                              ["condition", "seed", "benchmark"]].to_numpy()))
    return {(arm, s) for arm in arms for s in _main_seeds(r)
            if all((f"{arm}rl_{x}", s, b) in held for x in ("math", "code") for b in r.eval.benchmarks)}, arms


def _main_seeds(r) -> list[int]:
    return [MAIN_SEED + i for i in range(r.study.main_rl_seeds)]


def sweep_main(preset: str, workers: int, stop_by: str | None, only: str | None = None) -> None:
    """The main job's runs (a seed's arm: its two stages, read) not stored yet, ``workers`` at a time (one torch
    thread each), seed by seed (``_main_todo``), only ``only``'s arm ("task" or "control") if given; a run starts
    only while the longest run of its arm so far (of any arm, before one of its own ends) says it would end before
    ``stop_by``, so a task arm still starts where a control no longer fits. The SFT model is read first, once."""
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
    import multiprocessing

    from klear_lib import tables
    from klear_lib.pipeline import main_problems, sft_stage, stage_samples
    from klear_lib.results import PROBLEMS, problems_csv

    r = rerun_recipe(preset).main_job
    out = problems_csv(r.results, MAIN)
    sft = sft_stage(r)
    tables.upsert_file(PROBLEMS, main_problems(r, {}, {("sft", b): df for b, df in
                                                       stage_samples(r, "sft", sft).items()}), out)
    done, arms = _stored_main_runs(r)
    todo = _main_todo(done, arms, _main_seeds(r), only)
    deadline, longest = _deadline(stop_by), {}  # arm -> its longest run so far, in seconds
    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        running = {}
        while todo or running:
            while len(running) < workers and (pick := _next_run(todo, longest, deadline, time.time())):
                todo.remove(pick)
                arm, seed = pick
                running[pool.submit(_main_run, preset, seed, arm, str(sft))] = (arm, seed, time.time())
            if not running:
                took = ", ".join(f"{a or 'task'} arm {v / 60:.0f} min" for a, v in sorted(longest.items()))
                print(f"stopping before {len(todo)} runs: the longest took {took or '0 min'}, past --stop-by "
                      f"{stop_by}")
                break
            for future in wait(running, return_when=FIRST_COMPLETED).done:
                arm, seed, start = running.pop(future)
                tables.upsert_file(PROBLEMS, future.result(), out)  # stored as each run ends: a killed sweep resumes
                longest[arm] = max(longest.get(arm, 0.0), time.time() - start)
                took = (time.time() - start) / 60
                print(f"main {arm or 'task'} arm, seed {seed}: stored ({took:.0f} min)", flush=True)
    print(main_progress(preset))


def _main_todo(done: set[tuple[str, int]], arms: tuple[str, ...], seeds: list[int],
               only: str | None = None) -> list[tuple[str, int]]:
    """The (arm prefix, seed) runs not in ``done``, seed by seed, a seed's task arm first, of ``only``'s arm
    ("task": the prefix "", "control": the control's) if given. Seed by seed, two workers run a task arm (44-68 min
    so far) beside a control (50-92): the task arm usually ends first, and the next run it frees a worker for is a
    task arm again, judged against ``--stop-by`` by its own arm's time rather than a guess from the other arm's."""
    return [(a, s) for s in seeds for a in sorted(arms)
            if (a, s) not in done and only in (None, "control" if a else "task")]


def _next_run(todo: list[tuple[str, int]], longest: dict[str, float], deadline: float | None,
              now: float) -> tuple[str, int] | None:
    """The first (arm, seed) of ``todo`` that its arm's longest run so far (any arm's, before one of its own has
    ended; none before any has) says would end by ``deadline``; None if none would."""
    guess = max(longest.values(), default=0.0)
    return next((t for t in todo if deadline is None or now + longest.get(t[0], guess) <= deadline), None)


def _main_run(preset: str, seed: int, arm: str, sft: str) -> list[dict]:
    """One arm of one seed of the main job in a spawned worker with one torch thread: its per-problem rows."""
    from klear_lib.pipeline import main_job, main_problems
    from klear_lib.seeding import torch_threads

    r = rerun_recipe(preset).main_job
    with torch_threads(1):
        stages, samples = main_job(r, sft, [seed], main_seed=MAIN_SEED, control=r.study.main_control, arms=(arm,))
    return main_problems(r, stages, samples)


def sweep(preset: str, experiment: str, workers: int, stop_by: str | None, arm: str | None = None,
          per_round: float | None = None) -> float | None:
    """Run ``experiment``'s missing seeds; ``per_round``: seconds per round of ``workers`` runs measured before (an
    experiment swept just before this one), judged against ``stop_by`` until this one has its own. Returns the time
    per round it last measured, or ``per_round`` if it ran nothing."""
    from klear_lib.ablations.rl import RL

    if experiment == MAIN:
        return sweep_main(preset, workers, stop_by, arm)  # its arms differ in time: judged by their own runs
    if arm is not None:
        raise SystemExit(f"--arm picks an arm of the main job only, not of {experiment}")
    if experiment not in REGISTERED:
        raise SystemExit(f"{experiment} has no section in results/{preset}/preregistration.md yet; registered: "
                         f"{', '.join(REGISTERED + (MAIN,))}")
    r, family = rerun_recipe(preset), family_of(experiment)
    deadline = _deadline(stop_by)
    conds, seeds, done = _stored_runs(preset, experiment)
    while todo := {s: due for s in seeds if (due := [c for c in conds if (c, s) not in done])}:
        # an SFT run shares no checkpoint with another experiment's: each one missing trains
        train = _to_train(r, todo) if family is RL else {s: len(c) for s, c in todo.items()}
        chunk = _next_chunk(train, workers, per_round, deadline, time.time())
        if not chunk:
            print(f"stopping before seeds {list(todo)[:workers]}: a round of training took {per_round / 60:.0f} min, "
                  f"past --stop-by {stop_by}")
            break
        start = time.time()
        family.run_experiment(r, experiment, seeds=chunk, workers=workers)
        stored = _stored_runs(preset, experiment)[2]
        if not stored - done:
            raise SystemExit(f"the chunk of seeds {chunk} stored no run: see the log above")
        done, trained = stored, sum(train[s] for s in chunk)
        if trained:  # a chunk of reused runs only (a minute) says nothing of a round of training
            per_round = (time.time() - start) / math.ceil(trained / workers)
    print(progress(preset, experiment))
    return per_round


def _to_train(r, todo: dict[int, list]) -> dict[int, int]:
    """Seed -> how many of its runs not stored (``todo``: seed -> their conditions) train here; the others reuse a
    checkpoint in this machine's artifact store (``klear_lib.ablations.rl.trains``)."""
    from klear_lib.ablations.rl import trains
    from klear_lib.pipeline import trained_sft

    init = trained_sft(r)
    return {s: sum(trains(r, c, s, init) for c in conds) for s, conds in todo.items()}


def _next_chunk(missing: dict[int, int], workers: int, per_round: float | None, deadline: float | None,
                now: float) -> list[int]:
    """The next chunk of seeds (``missing``: seed -> its runs not stored that train, in seed order): the first
    ``workers`` seeds, or fewer where the time per round so far says those would end after ``deadline``; empty if
    not even one seed would end by it. Runs that reuse a stored checkpoint are not counted: they take a minute, and
    counting them as rounds would both halve the time per round measured and let a chunk start that ends past the
    deadline. No deadline: the first ``workers`` seeds. A deadline but nothing measured yet (a fresh sweep): the
    first seed alone, so the chunk that measures the time per round is the shortest one (a whole chunk of Fig. 2 is
    40 min, more than the time left when a session starts a sweep near its end)."""
    order = list(missing)
    if per_round is None and deadline is not None:
        return order[:1]
    for k in range(min(workers, len(order)), 0, -1):
        rounds = math.ceil(sum(missing[s] for s in order[:k]) / workers)
        if deadline is None or now + rounds * per_round <= deadline:
            return order[:k]
    return []


def claims(preset: str) -> None:
    """The re-run's claims table from its stored rows: an experiment is read only once all its registered runs are
    stored, and those of the experiments it is read with (no interim look), and BH runs across the claims only once
    every registered experiment is in."""
    import pandas as pd

    from klear_lib import tables
    from klear_lib.ablations import claims as C
    from klear_lib.results import PROBLEMS, problems_csv

    r = rerun_recipe(preset)
    counts = [progress(preset, e) for e in REGISTERED] + [main_progress(preset)]
    done, held = readable(counts)
    for line in held:
        print(line)
    # each on its registered seeds only: extra seeds stored beside them are not read
    main = C.main_claims(r.main_job, tables.read(PROBLEMS, problems_csv(r.results, MAIN)), _main_seeds(r.main_job)) \
        if MAIN in done else pd.DataFrame(columns=C.MAIN_COLUMNS)
    registered = {e: family_of(e).seeds(r, e) for e in REGISTERED if e in done}
    table = C.with_main(C.build_claims(r, experiments=registered), main, q_bh=len(done) == len(counts))
    if MAIN in done:  # the README's headline reads it (klear_lib.report), as it reads notebook 03's
        tables.write(C.MAIN_CLAIMS, main, r.results / "main_claims.csv")
    path = tables.write(C.CLAIMS, table, C.claims_csv(r.results))
    print(f"{path}: {int((table['verdict'] != C.NOT_RUN).sum())} of {len(table)} claims read"
          + ("" if len(done) == len(counts) else "; no q-values until every registered experiment is stored"))
    if registered:
        rows = []
        for family in C.FAMILIES.values():
            if not (mine := {e: s for e, s in registered.items() if e in family.experiments}):
                continue
            held = family.current_rows(r)
            rows.append(held[[e in mine and s in mine[e] for e, s in zip(held["experiment"], held["seed"])]])
            # every arm's mean over the registered seeds, claimed or not (the README reads the unclaimed ones from it)
            print(*family.write_reports(family.aggregate(rows[-1]), r.results), sep="\n")
        print(*C.write_forests(r, table[table["experiment"].isin(registered)]), sep="\n")  # rerun/figures/
        # section 5's check, on the experiments read
        split = by_cpu(table[table["experiment"].isin(registered)], pd.concat(rows, ignore_index=True), registered)
        by = tables.Table("claim by CPU", BY_CPU, ("claim_id", "cpu"), types=(("seeds", str),), float_format="%.4f",
                          sort=False)
        print(f"{tables.write(by, split, r.results / 'claims_by_cpu.csv')}: {len(split)} rows")


def readable(counts: list[dict]) -> tuple[set[str], list[str]]:
    """The experiments ``claims`` may read (``counts``: ``progress`` rows): those with every registered run stored,
    and every run of the experiments they are read together with; and a line for each one held back, saying why."""
    complete = {c["experiment"] for c in counts if c["runs_stored"] == c["runs_registered"]}
    with_ = {e: group for group in READ_TOGETHER for e in group}
    done = {e for e in complete if set(with_.get(e, ())) <= complete}
    held = [f"{e}: not read, {c['runs_stored']} of {c['runs_registered']} registered runs stored" if e not in complete
            else f"{e}: not read, all its runs stored, but read only together with {' and '.join(with_[e])}"
            for c in counts if (e := c["experiment"]) not in done]
    return done, held


def by_cpu(claims, rows, registered: dict[str, list[int]]):
    """The pre-registration's section 5 check: each read paired claim's per-seed differences (``seed_diffs_pts``,
    over the experiment's ``registered`` seeds, in seed order) split by the CPU model that drew both arms of the
    seed, with their mean and 95% t-interval. A seed whose two arms came from different models is left out.
    Descriptive: it decides nothing."""
    import pandas as pd

    from klear_lib import stats as S

    cpu = {(e, c, b, int(s)): m for e, c, b, s, m, k in rows[["experiment", "condition", "benchmark", "seed", "cpu",
                                                               "metric"]].itertuples(index=False)
           if k == "avg@k" and int(s) in registered.get(e, ())}
    out = []
    for c in claims.to_dict("records"):
        if c["test"] != "paired" or not isinstance(c["seed_diffs_pts"], str) or not c["seed_diffs_pts"]:
            continue
        arms = [{s: m for (e, cond, b, s), m in cpu.items() if (e, cond, b) == (c["experiment"], arm, c["benchmark"])}
                for arm in (c["better"], c["worse"])]
        seeds, diffs = sorted(set(arms[0]) & set(arms[1])), [float(x) for x in c["seed_diffs_pts"].split(";")]
        if len(seeds) != len(diffs):
            raise ValueError(f"claim {c['claim_id']}: {len(diffs)} seed differences but {len(seeds)} seeds with both "
                             f"arms' avg@k rows; the claims table and the stored rows disagree")
        for model in sorted({arms[0][s] for s in seeds if arms[0][s] == arms[1][s]}):
            mine = [(s, d) for s, d in zip(seeds, diffs) if arms[0][s] == arms[1][s] == model]
            mean, low, high = S.t_interval([d for _, d in mine])
            out.append({"claim_id": c["claim_id"], "experiment": c["experiment"], "benchmark": c["benchmark"],
                        "better": c["better"], "worse": c["worse"], "cpu": model, "n_seeds": len(mine),
                        "mean_pts": mean, "ci_low_pts": low, "ci_high_pts": high,
                        "seeds": ";".join(str(s) for s, _ in mine)})
    return pd.DataFrame(out, columns=list(BY_CPU))


def _deadline(stop_by: str | None, now: datetime | None = None) -> float | None:
    if not stop_by:
        return None
    hour, minute = (int(x) for x in stop_by.split(":"))
    now = datetime.now(timezone.utc) if now is None else now
    deadline = now.replace(hour=hour, minute=minute, second=0, microsecond=0)
    # an hour already past today is tomorrow's: a sweep started at 22:00 with --stop-by 00:30 runs past midnight
    return (deadline + timedelta(days=deadline <= now)).timestamp()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("command", choices=("sweep", "status", "claims"))
    ap.add_argument("experiments", nargs="*", default=["fig2"], help="sweep: in turn (status, claims: all of them)")
    ap.add_argument("--preset", default="tiny")
    ap.add_argument("--workers", type=int, default=2, help="runs at a time (one torch thread each)")
    ap.add_argument("--stop-by", help="HH:MM UTC (tomorrow once past): start no chunk of seeds that would end after it")
    ap.add_argument("--arm", choices=("task", "control"),
                    help="main job only: run this arm's runs only (on 2 cores, two at a time: a task arm 44-68 min, "
                         "a control 50-92)")
    args = ap.parse_args()
    if args.command == "sweep":
        per_round = None
        for experiment in args.experiments:
            per_round = sweep(args.preset, experiment, args.workers, args.stop_by, args.arm, per_round)
    elif args.command == "claims":
        claims(args.preset)
    else:
        for experiment in REGISTERED:
            print(progress(args.preset, experiment))
        print(main_progress(args.preset))


if __name__ == "__main__":  # spawned sweep workers re-import this file
    main()
