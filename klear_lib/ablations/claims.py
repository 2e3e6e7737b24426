"""The claims table: one row per claim tested in miniature — every claimed pair (better, worse) of Tables 2-6 and
Figures 2-5, and other papers' claims on the same runs (DGPO's GRPO > GPPO), on its experiment's primary
benchmarks as the preset reads them — decided by one protocol (docs/design.md, "Verdicts"): the paper's readings
of the pair (the same statistic on both sides, a figure's range kept as a range, every release of the benchmark
the paper reports), the paper's effect carried to our base rate on the log-odds scale, our paired difference
with its p, Holm within the claim's paper table or figure and Benjamini-Hochberg across all claims, the
decision from the family-wise interval, and the power at the carried claim. A claim without stored runs under
the current config is "not run" (no number).

>>> from klear_lib.ablations import claims
>>> from klear_lib.configs import recipe
>>> path = claims.write_claims(recipe("tiny"))   # results/tiny/claims.csv, read by klear_lib.report
>>> figures = claims.write_forests(recipe("tiny"))   # results/figures/tiny_claims_forest*.png, from that file
"""
from __future__ import annotations

from itertools import groupby
from pathlib import Path

import numpy as np
import pandas as pd

from klear_lib import plots, tables
from klear_lib import stats as S
from klear_lib.ablations import verdicts as V
from klear_lib.ablations.family import Family
from klear_lib.ablations.rl import RL
from klear_lib.ablations.sft import SFT
from klear_lib.configs import Recipe, config_hash
from klear_lib.evaluation.benchmarks import SPECS
from klear_lib.results import ANALOGUE, CONTROL, load_reported

FAMILIES: dict[str, Family] = {"sft": SFT, "rl": RL}
# The paper's own band (its models sit at 40-80%, issue 40 asks 25-75%): a claim read where both arms score inside it
# is not compressed by a floor or a ceiling; ``in_band`` says whether ours did, on every claim and main-job claim.
BAND_PCT = (25.0, 75.0)
NOT_RUN = "not run"
COLUMNS = ["claim_id", "family", "table", "experiment", "benchmark", "better", "worse", "source", "paper_benchmarks",
           "paper_statistic", "paper_readings", "paper_better", "paper_worse", "paper_base_pct", "paper_diff_pts",
           "paper_diff_low_pts", "paper_diff_high_pts", "direction", "ours_better_pct", "ours_worse_pct",
           "ours_base_pct", "in_band", "carried_low_pts", "carried_high_pts", "claimed_pts", "margin_pts",
           "ours_diff_pts", "ci_low_pts", "ci_high_pts", "test", "df", "n_seeds", "p_value", "multiplicity_family",
           "family_size", "p_holm", "q_bh", "adj_ci_low_pts", "adj_ci_high_pts", "sd_seed_pts", "eval_se_pts",
           "sd_diff_pts", "sd_upper_pts", "power_at_claim", "seeds_for_power", "verdict", "seed_diffs_pts",
           "shares_runs", "claim"]
_BLANK = ("paper_readings", "test", "df", "direction", "p_value", "p_holm", "q_bh", "family_size", "power_at_claim",
          "seeds_for_power", "seed_diffs_pts", "shares_runs", "multiplicity_family")
# ``claims.csv``: rows in definition order; a claim not run keeps its numbers blank (NaN when read)
CLAIMS = tables.Table("claim", tuple(COLUMNS), ("claim_id",), float_format="%.4f", sort=False, provenance=True,
                      types=(("in_band", str),),
                      nullable=tuple(c for c in COLUMNS if c.endswith(("pts", "pct"))) + _BLANK
                      + ("paper_better", "paper_worse"))


def shared_runs(family: Family, exp, better: str, worse: str, recipe: Recipe | None) -> list[tuple[str, str]]:
    """(own label, "experiment/condition") for every other experiment's condition trained by the same config as
    ``better`` or ``worse`` (``Family.trains_as``); [] where the family does not say which runs are the same."""
    if family.trains_as is None or recipe is None:
        return []
    mine = {family.trains_as(recipe, exp.condition(label)): label for label in (better, worse)}
    return [(mine[family.trains_as(recipe, c)], f"{e.id}/{c.label}") for e in family.experiments.values()
            if e.id != exp.id for c in e.conditions if family.trains_as(recipe, c) in mine]


def paper_readings(reported: pd.DataFrame | None, table: str, settings: tuple[str, str],
                   benchmarks: tuple[str, ...]) -> tuple[str, list[tuple[float, float]], list[str]]:
    """(statistic, [(benchmark, better, worse in points), ...], benchmarks read): the paper's readings of one pair on each
    of ``benchmarks`` that it reports, every combination of a range's ends; the statistic is the first
    benchmark's (``verdicts.pair_readings``)."""
    stat, out, read = "", [], []
    for bench in benchmarks:
        b, w = (V.statistics_of(reported, table, s, bench) for s in settings)
        if b and w:
            name, bv, wv = V.pair_readings(b, w)
            stat = stat or name
            out += [(bench, x, y) for x in bv for y in wv]
            read.append(bench)
    return stat or "none", out, read


def _claim_readings(reported, exp, better: str, worse: str, primary: str, bench: str) -> dict:
    """The paper's side of one claim: its source, benchmarks, statistic, readings and text."""
    ext = exp.external_claim(better, worse)
    if ext is None:
        # a miniature benchmark stands for its primary benchmark's analogue, in every release the paper reports
        analog = ANALOGUE.get(primary, primary) if bench not in SPECS or SPECS[bench].source == "world" else bench
        benches = V.VERSIONS.get(analog, (analog,)) if analog != bench else (bench,)
        settings = tuple(exp.condition(label).paper_setting for label in (better, worse))
        stat, reads, read = paper_readings(reported, exp.table, settings, benches)
        return {"source": V.PAPER, "paper_benchmarks": ";".join(read or benches[:1]), "paper_statistic": stat,
                "_first": paper_readings(reported, exp.table, settings, benches[:1])[1], "_readings": reads,
                "claim": exp.claim}
    stat, reads, _ = paper_readings(reported, ext.table, ext.settings, (ext.benchmark,))
    more = [r for pair in ext.more_settings for r in paper_readings(reported, ext.table, pair, (ext.benchmark,))[1]]
    return {"source": ext.table, "paper_benchmarks": ext.benchmark, "paper_statistic": stat,
            "_first": reads, "_readings": reads + more, "claim": ext.claim}


def expected(reported: pd.DataFrame | None = None, recipe: Recipe | None = None) -> pd.DataFrame:
    """Every claim the kit tests (on ``recipe``'s readings of the primary benchmarks), with the paper's readings
    (``results/reported.csv``: the paper's, or an external claim's on its own benchmark) and no result yet."""
    rows = []
    for name, family in FAMILIES.items():
        # each primary benchmark as ``recipe``'s scale maps it (tiny also reads ``tiny_aime`` on a held-out tier; full
        # reads the paper's benchmarks), or as is
        for exp in family.experiments.values():
            mapping = family.get_scale(recipe, exp.id).benchmarks if recipe else {}
            for (better, worse) in exp.pairs:
                shares = shared_runs(family, exp, better, worse, recipe)
                for primary, bench in [(b, m) for b in exp.primary for m in mapping.get(b, (b,))]:
                    side = _claim_readings(reported, exp, better, worse, primary, bench)
                    first, reads = side["_first"], side["_readings"]
                    diffs = [b - w for _, b, w in reads]
                    rows.append({"claim_id": f"{exp.id}:{better}>{worse}@{bench}", "family": name,
                                 "table": exp.table, "experiment": exp.id, "benchmark": bench, "better": better,
                                 "worse": worse, **side,
                                 "paper_readings": ";".join(f"{k} {b:.2f}/{w:.2f}" for k, b, w in reads),
                                 "paper_better": np.mean([b for _, b, _ in first]) if first else np.nan,
                                 "paper_worse": np.mean([w for _, _, w in first]) if first else np.nan,
                                 "paper_diff_pts": np.mean(diffs) if diffs else np.nan,
                                 "paper_diff_low_pts": min(diffs, default=np.nan),
                                 "paper_diff_high_pts": max(diffs, default=np.nan),
                                 "direction": -1 if diffs and np.mean(diffs) < 0 else 1,
                                 "_shares": shares})
    out = pd.DataFrame(rows)
    out["paper_base_pct"] = (out["paper_better"] + out["paper_worse"]) / 2
    return out


def measured(recipe: Recipe, paths: dict | None = None, metric: str = "avg@k",
             experiments: dict | None = None) -> tuple[pd.DataFrame, dict]:
    """Every family's comparisons of its claimed pairs from its stored rows (``paths``: family -> table path
    override; ``experiments``: {experiment: its seeds}, only those rows, default all), and every cell's per-seed
    values {(experiment, condition, benchmark): {seed: value}}."""
    out, cells = [], {}
    for name, family in FAMILIES.items():
        rows = family.current_rows(recipe, (paths or {}).get(name))
        if experiments is not None and len(rows):
            rows = rows[[e in experiments and s in experiments[e] for e, s in zip(rows["experiment"], rows["seed"])]]
        if len(rows):
            summary = family.aggregate(rows)
            pairs = family.pairs(summary, metric)
            out.append(pairs.assign(seed_diffs=seed_diffs(pairs, summary)))
            for r in summary[summary["metric"] == metric].to_dict("records"):
                cells[(r["experiment"], r["condition"], r["benchmark"])] = dict(zip(r["seeds"], r["values"]))
    pairs = pd.concat(out, ignore_index=True) if out else pd.DataFrame(
        columns=V.PAIR_COLUMNS + ["seed_diffs", *tables.PROVENANCE])
    return pairs, cells


def seed_diffs(pairs: pd.DataFrame, summary: pd.DataFrame) -> list[str]:
    """Per comparison row, the per-seed differences better - worse in points (';'-joined, seed order) that a
    paired test used; '' for a Welch or one-seed comparison, which pairs no seeds (the figures draw them as dots)."""
    cells = {(r["experiment"], r["condition"], r["benchmark"], r["metric"]): r for r in summary.to_dict("records")}

    def diffs(r: dict) -> str:
        b, w = (cells[(r["experiment"], c, r["benchmark"], r["metric"])] for c in (r["better"], r["worse"]))
        pb, pw = S.paired(b["values"], b["seeds"], w["values"], w["seeds"])
        return ";".join(f"{100 * (x - y):.2f}" for x, y in zip(pb, pw))
    return [diffs(r) if r["test"] == "paired" else "" for r in pairs.to_dict("records")]


def _seed_list(seeds: list[int]) -> str:
    """Seeds (sorted, distinct) as ranges: [0, 1, 2, 5, 6] -> "0-2,5-6"."""
    runs = [[s for _, s in run] for _, run in groupby(enumerate(seeds), lambda pair: pair[1] - pair[0])]
    return ",".join(f"{run[0]}" if len(run) == 1 else f"{run[0]}-{run[-1]}" for run in runs)


def shares_text(shares: list[tuple[str, str]], experiment: str, bench: str, cells: dict) -> str:
    """The other experiments' conditions of the same config, each with the seeds on which its stored value is
    the same as this claim's condition's (the runs are shared there; elsewhere they were drawn apart)."""
    parts = []
    for label, ref in shares:
        mine, theirs = cells.get((experiment, label, bench), {}), cells.get((*ref.split("/", 1), bench), {})
        same = sorted(s for s in mine if s in theirs and mine[s] == theirs[s])
        common = sorted(set(mine) & set(theirs))
        parts.append(ref if same == common and common else f"{ref} (seeds {_seed_list(same) or 'none'} of "
                     f"{_seed_list(common) or 'none'})")
    return ";".join(parts)


def decide_all(claims: pd.DataFrame) -> pd.DataFrame:
    """The protocol on every claim run (``claims`` with our comparison merged in, in rates): carried claim,
    multiplicity, family-wise interval, decision and power; returned in points."""
    out = claims.copy()
    ran = out["test"].notna()  # one seed a side ran but gives no interval: undecided, outside the corrections
    out["multiplicity_family"] = np.where(out["source"] == V.PAPER, out["table"], out["source"])
    out["p_holm"], out["q_bh"], out["family_size"] = np.nan, np.nan, np.nan
    tested = out["p_value"].notna()
    for _, idx in out[tested].groupby("multiplicity_family").groups.items():
        out.loc[idx, "p_holm"] = S.holm(out.loc[idx, "p_value"])
        out.loc[idx, "family_size"] = len(idx)
    out.loc[tested, "q_bh"] = S.bh(out.loc[tested, "p_value"])
    decided = [_decision_fields(out.loc[i]) for i in out.index[ran]]
    return out.join(pd.DataFrame(decided, index=out.index[ran], columns=_DECIDED))


# ``_decision_fields``' columns, also where no claim ran
_DECIDED = ("ours_base_pct", "carried_low_pts", "carried_high_pts", "claimed_pts", "margin_pts", "adj_ci_low_pts",
            "adj_ci_high_pts", "sd_upper_pts", "verdict", "power_at_claim", "seeds_for_power")


def _decision_fields(r: pd.Series) -> dict:
    """One claim's carried size, family-wise interval, decision and power (rates in, points out)."""
    base = (r["mean_better"] + r["mean_worse"]) / 2
    carried = [100 * S.carry(b / 100, w / 100, base) for _, b, w in r["_readings"]]  # each reading at our base
    d, m = int(r["direction"]), int(r["family_size"]) if pd.notna(r["family_size"]) else 1
    claimed = min((d * c for c in carried), default=np.nan)
    # power is read at the claimed size; where the paper's own readings reach 0, at the most they claim
    size = claimed if claimed > 0 else max((d * c for c in carried), default=np.nan)
    lo, hi = S.adjusted_interval(r["diff"], r["se"], r["df"], m)
    floor = r["note"] == V.FLOOR  # two conditions at 0 on every run measured nothing
    paired_design, alpha = r["test"] == "paired", S.ALPHA / m
    sd_up = S.sd_upper(r["sd_diff"], (r["n_seeds"] - 1) * (1 if paired_design else 2))
    need = S.seeds_for_power(size / 100, sd_up, alpha, paired_design) if size > 0 else None
    return {"ours_base_pct": 100 * base, "carried_low_pts": min(carried, default=np.nan),
            "carried_high_pts": max(carried, default=np.nan), "claimed_pts": claimed,
            "margin_pts": S.EQUIVALENCE * claimed if claimed > 0 else np.nan,
            "adj_ci_low_pts": 100 * lo, "adj_ci_high_pts": 100 * hi, "sd_upper_pts": 100 * sd_up,
            "verdict": S.UNDECIDED if floor else S.decide(lo, hi, claimed / 100, d),
            "power_at_claim": S.power(size / 100, r["sd_diff"], int(r["n_seeds"]), alpha, paired_design)
            if size > 0 else np.nan,
            "seeds_for_power": np.nan if need is None else need}


def build_claims(recipe: Recipe, reported: pd.DataFrame | None = None, paths: dict | None = None,
                 experiments: dict | None = None) -> pd.DataFrame:
    """One row per expected claim: the paper's readings, ours (in points) and the decision, or "not run". Given
    ``experiments`` ({experiment: seeds}), only those seeds of those experiments are read, and every other claim is
    "not run" (a registered experiment is read only once all its runs are stored, and on its registered seeds)."""
    reported = load_reported() if reported is None else reported
    claims = expected(reported, recipe)
    pairs, cells = measured(recipe, paths, experiments=experiments)
    ours = [c for c in V.PAIR_COLUMNS if c != "metric"] + ["seed_diffs", *tables.PROVENANCE]
    merged = decide_all(claims.merge(pairs[ours], on=["experiment", "benchmark", "better", "worse"], how="left"))
    for col, src in (("ours_better_pct", "mean_better"), ("ours_worse_pct", "mean_worse"),
                     ("ours_diff_pts", "diff"), ("ci_low_pts", "ci_low"), ("ci_high_pts", "ci_high"),
                     ("sd_seed_pts", "sd_seed"), ("eval_se_pts", "eval_se"), ("sd_diff_pts", "sd_diff")):
        merged[col] = 100 * merged[src]
    merged["in_band"] = in_band(merged["ours_better_pct"], merged["ours_worse_pct"])
    merged["shares_runs"] = [shares_text(sh, e, b, cells) for sh, e, b in
                             zip(merged["_shares"], merged["experiment"], merged["benchmark"])]
    merged["verdict"] = merged["verdict"].fillna(NOT_RUN)
    merged["n_seeds"] = merged["n_seeds"].fillna(0).astype(int)
    merged["seed_diffs_pts"] = merged["seed_diffs"].fillna("")
    for col in ("family_size", "seeds_for_power"):
        merged[col] = pd.array(merged[col], dtype="Int64")
    return merged[COLUMNS + list(tables.PROVENANCE)]  # a claim not run: blank, stamped by the process writing it


def in_band(better_pct, worse_pct) -> list[str]:
    """Per claim, "True" where both arms' mean avg@k (in %) lie inside ``BAND_PCT``, "False" where one does not, ""
    where the claim was not run."""
    lo, hi = BAND_PCT
    return ["" if pd.isna(b) or pd.isna(w) else str(bool(lo <= b <= hi and lo <= w <= hi))
            for b, w in zip(better_pct, worse_pct)]


def claims_csv(results: Path) -> Path:
    """``<results>/claims.csv`` (``results``: a recipe's ``results`` folder)."""
    return Path(results) / "claims.csv"


def write_claims(recipe: Recipe, reported: pd.DataFrame | None = None, paths: dict | None = None,
                 path: Path | str | None = None) -> Path:
    """Build the claims table and write it (rows in definition order, floats at fixed precision)."""
    return tables.write(CLAIMS, build_claims(recipe, reported, paths), path or claims_csv(recipe.results))


def forest_path(recipe: Recipe, experiment: str | None = None) -> Path:
    """The figure of the claims' forest plot: all claims, or one experiment's (``tiny_claims_forest_fig2``)."""
    return recipe.figure("claims_forest" + (f"_{experiment}" if experiment else ""))


def write_forests(recipe: Recipe, claims: pd.DataFrame | None = None) -> list[Path]:
    """The forest plots of ``claims`` (default: the stored claims.csv): one of every claim run, then one per
    experiment with a claim run (``forest_path``)."""
    claims = tables.read(CLAIMS, claims_csv(recipe.results)) if claims is None else claims
    ran = claims[claims["n_seeds"] > 0]
    figures = [(None, ran, "every claim run")] + [(exp, sub, sub["table"].iloc[0])
                                                  for exp, sub in ran.groupby("experiment", sort=False)]
    return [plots.save(plots.claims_forest(sub, f"{recipe.preset}: {what}, our Δ beside the claimed one"),
                       forest_path(recipe, exp)) for exp, sub, what in figures]


def experiment_summary(claims: pd.DataFrame) -> pd.DataFrame:
    """Per experiment with a claim run: how many claims, and how many of each decision."""
    run = claims[claims["verdict"] != NOT_RUN]
    counts = run.groupby(["experiment", "table"], sort=False)["verdict"].value_counts().unstack(fill_value=0)
    counts = counts.reindex(columns=list(S.DECISIONS), fill_value=0)
    counts.columns.name = None
    return counts.assign(claims=counts.sum(axis=1)).reset_index()[["experiment", "table", "claims", *S.DECISIONS]]


def survivors(claims: pd.DataFrame, alpha: float = S.ALPHA) -> dict[str, int]:
    """How many claims run have p below ``alpha``: raw, after Holm within their table or figure, after BH."""
    run = claims[claims["verdict"] != NOT_RUN]
    return {"run": len(run), **{name: int((run[col] < alpha).sum())
                                for name, col in (("raw", "p_value"), ("holm", "p_holm"), ("bh", "q_bh"))}}


def readme_table(claims: pd.DataFrame) -> pd.DataFrame:
    """The README view: claim, benchmark, the paper's difference (its reading and range) and the same effect
    carried to our base rate, ours with its family-wise interval, seeds, p after Holm, the power at the carried
    claim and the seeds 80% power would take, and the decision."""
    def pts(v, sign="+"):
        return "—" if pd.isna(v) else f"{v:{sign}.1f}".replace("inf", "∞")

    def span(lo, hi):
        return pts(lo) if pd.isna(hi) or round(lo, 1) == round(hi, 1) else f"{pts(lo)} to {pts(hi)}"

    source = ["" if s == V.PAPER else f" ({s})" for s in claims["source"]]
    return pd.DataFrame({
        "paper": [t + s for t, s in zip(claims["table"], source)],
        "claim (better > worse)": claims["better"] + " > " + claims["worse"],
        "ours on (paper on)": claims["benchmark"] + " (" + claims["paper_benchmarks"].str.replace(";", ", ") + ")",
        "paper Δ pts (reading)": [f"{span(lo, hi)} ({st})" for lo, hi, st in
                                  zip(claims["paper_diff_low_pts"], claims["paper_diff_high_pts"],
                                      claims["paper_statistic"])],
        "base rate paper → ours %": [f"{pts(p, '')} → {pts(o, '')}" for p, o in
                                     zip(claims["paper_base_pct"], claims["ours_base_pct"])],
        "paper Δ at our base pts": [span(lo, hi) for lo, hi in zip(claims["carried_low_pts"],
                                                                    claims["carried_high_pts"])],
        "ours Δ pts": claims["ours_diff_pts"].map(pts),
        "family-wise CI": ["—" if pd.isna(lo) else f"[{lo:+.1f}, {hi:+.1f}]".replace("inf", "∞")
                           for lo, hi in zip(claims["adj_ci_low_pts"], claims["adj_ci_high_pts"])],
        "seeds": claims["n_seeds"],
        "p (Holm)": claims["p_holm"].map(lambda v: "—" if pd.isna(v) else f"{v:.2f}"),
        "power at claim": claims["power_at_claim"].map(lambda v: "—" if pd.isna(v) else f"{100 * v:.0f}%"),
        "seeds for 80%": ["—" if pd.isna(pw) else "> 10,000" if pd.isna(v) else f"{int(v)}"
                          for v, pw in zip(claims["seeds_for_power"], claims["power_at_claim"])],
        "verdict": claims["verdict"]})


# The main job's claims (results/tiny/preregistration.md, section 4): its final stage over the SFT model and over its
# random-reward control, on each benchmark the main job reads; one family, decided by the protocol above. The paper's
# size of each is its RL gain (Table 1, the SFT model to the released one at 32K); it ran no control, so against the
# control that is the size the reward's part would have if all of the gain came from the reward.
MAIN_FAMILY = "main job"
RL_GAIN = ("Table 1", ("Klear-Reasoner-8B (32K)", "Klear-Reasoner-8B-SFT"))
MAIN_PAIRS = (("rl_code", "sft"), ("rl_code", CONTROL + "rl_code"))
MAIN_COLUMNS = ["claim_id", "benchmark", "better", "worse", "n_seeds", "n_problems", "ours_better_pct",
                "ours_worse_pct", "ours_base_pct", "in_band", "paper_readings", "claimed_pts", "ours_diff_pts",
                "sd_diff_pts", "df", "p_value", "family_size", "p_holm", "adj_ci_low_pts", "adj_ci_high_pts",
                "sd_upper_pts", "power_at_claim", "seeds_for_power", "verdict", "seed_diffs_pts"]
MAIN_CLAIMS = tables.Table("main claim", tuple(MAIN_COLUMNS), ("claim_id",), float_format="%.4f", sort=False,
                           provenance=True, types=(("seed_diffs_pts", str), ("paper_readings", str),
                                                   ("in_band", str)),
                           nullable=("claimed_pts", "power_at_claim", "seeds_for_power", "sd_upper_pts",
                                     "paper_readings"))


# what each main claim says, in the claims table's ``claim`` column (``with_main``)
MAIN_CLAIM_TEXT = {"sft": "RL after long-CoT SFT (math, then code, GPPO) improves the SFT model (Table 1's RL gain)",
                   CONTROL + "rl_code": "RL with the task's reward beats the same RL with random rewards (the paper "
                                        "ran no control; where the control collapses, the lead includes what it "
                                        "lost)"}


def rl_gain(reported: pd.DataFrame | None, bench: str) -> tuple[tuple[str, ...], str, list[tuple[str, float, float]]]:
    """The paper's RL gain where ``bench``'s ability is read (Table 1, the SFT model to the released one at 32K, on
    both releases of AIME or LiveCodeBench): (benchmarks, statistic, [(benchmark, RL, SFT in points), ...])."""
    benches = V.VERSIONS["aime24" if SPECS[bench].ability == "math" else "lcb_v5"]
    stat, reads, _ = paper_readings(reported, RL_GAIN[0], RL_GAIN[1], benches)
    return benches, stat, reads


def main_claims(recipe: Recipe, problems: pd.DataFrame, seeds=None,
                reported: pd.DataFrame | None = None) -> pd.DataFrame:
    """The main job's claims from its per-problem counts (``problems/main.csv`` rows read under ``recipe.eval``:
    ``recipe`` is the main job's, ``Recipe.main_job``). Per RL seed a pair's difference is the mean over the problems
    every run read of the per-problem difference in avg@k (the SFT model is read once, for every seed); a paired t
    over seeds, Holm within the family, the decision from the interval at level 1 − 0.05/m, the power at the carried
    size with the observed spread; two arms at 0 on every problem of every run stay undecided, as in the claims table.
    ``seeds``: the RL seeds (default: every seed with a final stage read). A pair
    with a seed missing on either side gives no row. Each row names what drew the rows it read (``tables.drawn_by``)."""
    reported = load_reported() if reported is None else reported
    rows = problems[problems["config_hash"] == config_hash(recipe.eval)]
    rate = rows.assign(p=rows["correct"] / rows["k"])
    read = {key: g.set_index("problem")["p"] for key, g in rate.groupby(["condition", "seed", "benchmark"])}
    seeds = sorted(int(s) for s in (rows.loc[rows["condition"] == "rl_code", "seed"].unique() if seeds is None
                                    else seeds))
    out = []
    for bench in recipe.eval.benchmarks:
        for better, worse in MAIN_PAIRS:
            runs = {}
            for cond in (better, worse):
                if cond == "sft":  # one reading (the eval seed's) for every RL seed
                    sft = [v for (c, _, b), v in read.items() if (c, b) == (cond, bench)]
                    runs[cond] = {s: sft[0] for s in seeds} if len(sft) == 1 else {}
                else:
                    runs[cond] = {s: read[(cond, s, bench)] for s in seeds if (cond, s, bench) in read}
            if not seeds or any(len(runs[c]) < len(seeds) for c in (better, worse)):
                continue
            shared = sorted(set.intersection(*(set(r.index) for c in runs.values() for r in c.values())))
            d = np.array([(runs[better][s][shared] - runs[worse][s][shared]).mean() for s in seeds])
            levels = [float(np.mean([runs[c][s][shared].mean() for s in seeds])) for c in (better, worse)]
            base = sum(levels) / 2
            reads = rl_gain(reported, bench)[2]
            claimed = min((S.carry(x / 100, y / 100, base) for _, x, y in reads), default=float("nan"))
            sd = float(np.std(d, ddof=1)) if len(d) > 1 else float("nan")
            floor = all(runs[c][s][shared].eq(0).all() for c in (better, worse) for s in seeds)
            used = rows[(rows["benchmark"] == bench) & rows["condition"].isin([better, worse])
                        & (rows["seed"].isin(seeds) | (rows["condition"] == "sft"))]
            out.append({"claim_id": f"main:{bench}:{better}>{worse}", "benchmark": bench, "better": better,
                        "worse": worse, "n_seeds": len(seeds), "n_problems": len(shared),
                        "ours_better_pct": 100 * levels[0], "ours_worse_pct": 100 * levels[1],
                        "ours_base_pct": 100 * base, "in_band": in_band([100 * levels[0]], [100 * levels[1]])[0],
                        "paper_readings": ";".join(f"{x:.1f}/{y:.1f}" for _, x, y in reads),
                        "claimed_pts": 100 * claimed, "ours_diff_pts": 100 * d.mean(), "sd_diff_pts": 100 * sd,
                        "df": len(d) - 1, "p_value": S.p_value(d.mean(), sd / np.sqrt(len(d)), len(d) - 1),
                        "seed_diffs_pts": ";".join(f"{100 * x:+.2f}" for x in d), "_se": sd / np.sqrt(len(d)),
                        "_floor": floor, **tables.drawn_by(used)})
    m = len(out)
    for r, p_holm in zip(out, S.holm([r["p_value"] for r in out]) if m else []):
        lo, hi = S.adjusted_interval(r["ours_diff_pts"], 100 * r.pop("_se"), r["df"], m)
        floor = r.pop("_floor")  # both arms at 0 on every problem of every run measured nothing
        alpha, upper = S.ALPHA / m, S.sd_upper(r["sd_diff_pts"], r["df"])
        r.update(family_size=m, p_holm=float(p_holm), adj_ci_low_pts=lo, adj_ci_high_pts=hi, sd_upper_pts=upper,
                 power_at_claim=S.power(r["claimed_pts"], r["sd_diff_pts"], r["n_seeds"], alpha),
                 seeds_for_power=S.seeds_for_power(r["claimed_pts"], upper, alpha),
                 verdict=S.UNDECIDED if floor else S.decide(lo, hi, r["claimed_pts"]))
    return pd.DataFrame(out, columns=MAIN_COLUMNS + list(tables.PROVENANCE))


def write_main_claims(recipe: Recipe, problems: pd.DataFrame, seeds=None,
                      reported: pd.DataFrame | None = None) -> Path:
    """``main_claims`` written to ``results/<preset>/main_claims.csv`` (read by the README's headline)."""
    return tables.write(MAIN_CLAIMS, main_claims(recipe, problems, seeds, reported), recipe.results / "main_claims.csv")


def with_main(claims: pd.DataFrame, main: pd.DataFrame, reported: pd.DataFrame | None = None,
              q_bh: bool = True) -> pd.DataFrame:
    """One claims table for a whole study: ``claims`` (``build_claims``) with the main job's claims (``main_claims``)
    as rows of the same layout (experiment "main", family and Holm family ``MAIN_FAMILY``, the paper's side its RL
    gain), and Benjamini-Hochberg across every claim with a p (``q_bh=False`` leaves it blank, for a study whose
    registered claims are not all in yet). Holm and every verdict stay as each family decided them."""
    reported = load_reported() if reported is None else reported
    rows = []
    for r in main.to_dict("records"):
        benches, stat, reads = rl_gain(reported, r["benchmark"])
        first = [(b, w) for k, b, w in reads if k == benches[0]]
        diffs = [b - w for _, b, w in reads]
        carried = [100 * S.carry(b / 100, w / 100, r["ours_base_pct"] / 100) for _, b, w in reads]
        lo, hi = S.adjusted_interval(r["ours_diff_pts"], r["sd_diff_pts"] / np.sqrt(r["n_seeds"]), r["df"], 1)
        paper_b, paper_w = (np.mean([x[i] for x in first]) if first else np.nan for i in (0, 1))
        rows.append({
            **{c: r[c] for c in ("claim_id", "benchmark", "better", "worse", "ours_better_pct", "ours_worse_pct",
                                 "ours_base_pct", "in_band", "claimed_pts", "ours_diff_pts", "df", "n_seeds",
                                 "p_value", "family_size", "p_holm", "adj_ci_low_pts", "adj_ci_high_pts",
                                 "sd_diff_pts", "sd_upper_pts", "power_at_claim", "seeds_for_power", "verdict",
                                 *tables.PROVENANCE)},
            "family": MAIN_FAMILY, "table": RL_GAIN[0], "experiment": "main", "source": V.PAPER,
            "paper_benchmarks": ";".join(benches), "paper_statistic": stat,
            "paper_readings": ";".join(f"{k} {b:.2f}/{w:.2f}" for k, b, w in reads),
            "paper_better": paper_b, "paper_worse": paper_w, "paper_base_pct": (paper_b + paper_w) / 2,
            "paper_diff_pts": np.mean(diffs) if diffs else np.nan, "paper_diff_low_pts": min(diffs, default=np.nan),
            "paper_diff_high_pts": max(diffs, default=np.nan), "direction": 1,
            "carried_low_pts": min(carried, default=np.nan), "carried_high_pts": max(carried, default=np.nan),
            "margin_pts": S.EQUIVALENCE * r["claimed_pts"] if r["claimed_pts"] > 0 else np.nan,
            "ci_low_pts": lo, "ci_high_pts": hi, "test": "paired", "multiplicity_family": MAIN_FAMILY,
            "sd_seed_pts": np.nan, "eval_se_pts": np.nan, "q_bh": np.nan,
            "seed_diffs_pts": ";".join(f"{float(x):.2f}" for x in str(r["seed_diffs_pts"]).split(";")),
            "shares_runs": "", "claim": MAIN_CLAIM_TEXT[r["worse"]]})
    out = (pd.concat([claims, pd.DataFrame(rows, columns=COLUMNS + list(tables.PROVENANCE))], ignore_index=True)
           if rows else claims.copy())
    tested = out["p_value"].notna()
    out["q_bh"] = np.nan
    if q_bh and tested.any():
        out.loc[tested, "q_bh"] = S.bh(out.loc[tested, "p_value"])
    for col in ("family_size", "seeds_for_power"):
        out[col] = pd.array(out[col], dtype="Int64")
    return out.reindex(columns=COLUMNS + list(tables.PROVENANCE))
