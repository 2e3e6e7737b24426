"""The claims table: one row per claim tested in miniature — every claimed pair (better, worse) of Tables 2-6 and
Figures 2-5, and other papers' claims on the same runs (DGPO's GRPO > GPPO), on its experiment's primary
benchmarks as the preset reads them — with the claimed difference and which statistic of the paper it is, ours
with its 95% interval over seeds (paired by seed) and the per-seed differences it rests on, the power analysis (the spreads, the minimum detectable effect
at the seeds run, the seeds the claimed size would need) and the decision; a claim without stored runs under the
current config is "not run" (no number).

>>> from klear_lib.ablations import claims
>>> path = claims.write_claims("tiny")   # results/tiny/claims.csv, read by klear_lib.report.claims_section
>>> figures = claims.write_forests("tiny")   # results/figures/tiny_claims_forest*.png, from that file
"""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from klear_lib import plots, tables
from klear_lib.ablations import stats as S
from klear_lib.ablations import verdicts as V
from klear_lib.ablations.family import Family
from klear_lib.ablations.rl import RL
from klear_lib.ablations.sft import SFT
from klear_lib.evaluation.benchmarks import SPECS
from klear_lib.paths import results_dir
from klear_lib.results import ANALOGUE, load_reported

FAMILIES: dict[str, Family] = {"sft": SFT, "rl": RL}
NOT_RUN = "not run"
COLUMNS = ["claim_id", "family", "table", "experiment", "benchmark", "better", "worse", "source", "paper_benchmark",
           "paper_statistic", "paper_better", "paper_worse", "paper_diff_pts", "ours_better_pct", "ours_worse_pct",
           "ours_diff_pts", "ci_low_pts", "ci_high_pts", "test", "df", "n_seeds", "sd_seed_pts", "eval_se_pts",
           "sd_diff_pts", "mde_pts", "seeds_needed", "verdict", "seed_diffs_pts", "shares_runs", "claim"]
# ``claims.csv``: rows in definition order; a claim not run keeps its numbers blank (NaN when read)
CLAIMS = tables.Table("claim", tuple(COLUMNS), ("claim_id",), float_format="%.4f", sort=False, provenance=True,
                      nullable=tuple(c for c in COLUMNS if c.endswith(("pts", "pct")))
                      + ("test", "df", "seeds_needed", "seed_diffs_pts", "shares_runs"))


def readings(family: Family, exp, preset: str | None = None) -> list[tuple[str, str]]:
    """(primary benchmark, benchmark read) pairs of ``exp``: each primary benchmark as ``preset``'s scale maps it
    (tiny also reads ``tiny_aime`` on a held-out tier; full reads the paper's benchmarks), or as is."""
    mapping = family.get_scale(preset).benchmarks if preset else {}
    return [(b, m) for b in exp.primary for m in mapping.get(b, (b,))]


def _paper_benchmark(primary: str, read: str) -> str:
    """The paper's benchmark behind a reading: a miniature one stands for its primary benchmark's analogue."""
    return ANALOGUE.get(primary, primary) if read not in SPECS or SPECS[read].source == "world" else read


def statistic(table: str, setting: str) -> str:
    """Which statistic of its source a reported value is: a table's entry ("table"), or, read off a figure, the
    curve's "final", "peak" (or best) point or one end of a "range"; another study's reported result is "final"."""
    if table.startswith("Table"):
        return "table"
    low = setting.lower()
    return next((name for key, name in (("peak", "peak"), ("best", "peak"), ("range", "range"), ("end", "final"))
                 if f"({key}" in low), "final")


def pair_statistic(table: str, better: str, worse: str) -> str:
    """``statistic`` of both sides: one word when they agree, "<better> vs <worse>" otherwise."""
    a, b = statistic(table, better), statistic(table, worse)
    return a if a == b else f"{a} vs {b}"


def shared_runs(family: Family, exp, better: str, worse: str, preset: str | None) -> str:
    """The other experiments' conditions trained by the same runs as ``better`` or ``worse`` ("fig5/filtered"),
    ';'-joined; '' where the family does not say which runs are the same (``Family.identity``)."""
    if family.identity is None or preset is None:
        return ""
    mine = {family.identity(preset, exp.condition(label)) for label in (better, worse)}
    return ";".join(f"{e.id}/{c.label}" for e in family.experiments.values() if e.id != exp.id
                    for c in e.conditions if family.identity(preset, c) in mine)


def expected(reported: pd.DataFrame | None = None, preset: str | None = None) -> pd.DataFrame:
    """Every claim the kit tests (on ``preset``'s readings of the primary benchmarks), with the claimed numbers
    (``results/reported.csv``: the paper's, or an external claim's on its own benchmark) and no result yet."""
    rows = []
    for name, family in FAMILIES.items():
        for exp in family.experiments.values():
            for (better, worse) in exp.pairs:
                ext = exp.external_claim(better, worse)
                shares = shared_runs(family, exp, better, worse, preset)
                for primary, bench in readings(family, exp, preset):
                    if ext is None:
                        paper, table = _paper_benchmark(primary, bench), exp.table
                        pb, pw = (V.paper_value(reported, exp, label, paper) for label in (better, worse))
                        settings = tuple(exp.condition(label).paper_setting for label in (better, worse))
                    else:
                        paper, table, settings = ext.benchmark, ext.table, ext.settings
                        pb, pw = (V.reported_value(reported, ext.table, s, ext.benchmark) for s in ext.settings)
                    rows.append({"claim_id": f"{exp.id}:{better}>{worse}@{bench}", "family": name,
                                 "table": exp.table, "experiment": exp.id, "benchmark": bench, "better": better,
                                 "worse": worse, "source": V.PAPER if ext is None else ext.table,
                                 "paper_benchmark": paper, "paper_statistic": pair_statistic(table, *settings),
                                 "paper_better": pb, "paper_worse": pw, "paper_diff_pts": pb - pw,
                                 "shares_runs": shares, "claim": exp.claim if ext is None else ext.claim})
    return pd.DataFrame(rows)


def measured(preset: str, paths: dict | None = None, metric: str = "avg@k",
             reported: pd.DataFrame | None = None) -> pd.DataFrame:
    """Pairwise verdicts of every family from its stored rows (``paths``: family -> table path override), read
    against the claimed sizes in ``reported``."""
    out = []
    for name, family in FAMILIES.items():
        rows = family.current_rows(preset, (paths or {}).get(name))
        if len(rows):
            summary = family.aggregate(rows)
            pairs = family.verdicts(summary, metric, reported)
            pairs["seed_diffs"] = seed_diffs(pairs, summary)
            out.append(pairs)
    return (pd.concat(out, ignore_index=True) if out
            else pd.DataFrame(columns=V.VERDICT_COLUMNS + ["seed_diffs"]))


def seed_diffs(pairs: pd.DataFrame, summary: pd.DataFrame) -> list[str]:
    """Per verdict row, the per-seed differences better - worse in points (';'-joined, seed order) that a paired
    test used; '' for a Welch or one-seed comparison, which pairs no seeds (the figures draw them as dots)."""
    cells = {(r["experiment"], r["condition"], r["benchmark"], r["metric"]): r for r in summary.to_dict("records")}
    out = []
    for r in pairs.to_dict("records"):
        if r["test"] != "paired":
            out.append("")
            continue
        b, w = (cells[(r["experiment"], c, r["benchmark"], r["metric"])] for c in (r["better"], r["worse"]))
        pb, pw = S.paired(b["values"], b["seeds"], w["values"], w["seeds"])
        out.append(";".join(f"{100 * (x - y):.2f}" for x, y in zip(pb, pw)))
    return out


def build_claims(preset: str, reported: pd.DataFrame | None = None, paths: dict | None = None) -> pd.DataFrame:
    """One row per expected claim: the paper's numbers, ours (in points) and the verdict, or "not run"."""
    reported = load_reported() if reported is None else reported
    claims = expected(reported, preset)
    pairs = measured(preset, paths, reported=reported).rename(columns={"ci_low": "pair_ci_low", "ci_high": "pair_ci_high"})
    merged = claims.merge(pairs[["experiment", "benchmark", "better", "worse", "mean_better", "mean_worse", "diff",
                                 "pair_ci_low", "pair_ci_high", "test", "df", "n_seeds", "sd_seed", "eval_se",
                                 "sd_diff", "mde", "seeds_needed", "verdict", "note", "seed_diffs"]],
                          on=["experiment", "benchmark", "better", "worse"], how="left")
    for col, src in (("ours_better_pct", "mean_better"), ("ours_worse_pct", "mean_worse"),
                     ("ours_diff_pts", "diff"), ("ci_low_pts", "pair_ci_low"), ("ci_high_pts", "pair_ci_high"),
                     ("sd_seed_pts", "sd_seed"), ("eval_se_pts", "eval_se"), ("sd_diff_pts", "sd_diff"),
                     ("mde_pts", "mde")):
        merged[col] = 100 * merged[src]
    # the decision and the seeds needed read the claimed size of the claim's own paper benchmark (a held-out
    # tier such as math_eval_t2 stands for its primary benchmark's analogue, which the family's files do not know)
    ran = merged["test"].notna()
    merged.loc[ran, "verdict"] = [V.decision({"diff": d, "low": lo, "high": hi}, p, note == V.FLOOR)
                                  for d, lo, hi, p, note in merged.loc[ran, ["diff", "pair_ci_low", "pair_ci_high",
                                                                             "paper_diff_pts", "note"]].values]
    merged["seeds_needed"] = pd.array([S.seeds_needed(sd, p / 100, paired_design=t == "paired") if r else None
                                       for r, sd, p, t in zip(ran, merged["sd_diff"], merged["paper_diff_pts"],
                                                              merged["test"])], dtype="Int64")
    merged["verdict"] = merged["verdict"].fillna(NOT_RUN)
    merged["n_seeds"] = merged["n_seeds"].fillna(0).astype(int)
    merged["seed_diffs_pts"] = merged["seed_diffs"].fillna("")
    return merged[COLUMNS]


def claims_csv(preset: str) -> Path:
    """``results/<preset>/claims.csv``."""
    return results_dir(preset) / "claims.csv"


def write_claims(preset: str, reported: pd.DataFrame | None = None, paths: dict | None = None,
                 path: Path | str | None = None) -> Path:
    """Build the claims table and write it (rows in definition order, floats at fixed precision)."""
    return tables.write(CLAIMS, build_claims(preset, reported, paths), path or claims_csv(preset))


def forest_name(preset: str, experiment: str | None = None) -> str:
    """The figure stem of the claims' forest plot: all claims, or one experiment's (``tiny_claims_forest_fig2``)."""
    return f"{preset}_claims_forest" + (f"_{experiment}" if experiment else "")


def write_forests(preset: str, claims: pd.DataFrame | None = None) -> list[Path]:
    """The forest plots of ``claims`` (default: the stored claims.csv): one of every claim run, then one per
    experiment with a claim run, in ``results/figures/`` (``forest_name``)."""
    claims = tables.read(CLAIMS, claims_csv(preset)) if claims is None else claims
    ran = claims[claims["n_seeds"] > 0]
    paths = [plots.save(plots.claims_forest(ran, f"{preset}: every claim run, our Δ beside the claimed one"),
                        forest_name(preset))]
    for exp, sub in ran.groupby("experiment", sort=False):
        title = f"{preset}: {sub['table'].iloc[0]}, our Δ beside the claimed one"
        paths.append(plots.save(plots.claims_forest(sub, title), forest_name(preset, exp)))
    return paths


def readme_table(claims: pd.DataFrame) -> pd.DataFrame:
    """The README view: claim, benchmark, the claimed difference and ours with its interval, seeds, the minimum
    detectable effect at those seeds and the seeds the claimed size needs, and the decision."""
    def pts(v, sign="+"):
        return "—" if pd.isna(v) else f"{v:{sign}.1f}".replace("inf", "∞")

    def interval(lo, hi):
        return "—" if pd.isna(lo) else f"[{lo:+.1f}, {hi:+.1f}]".replace("inf", "∞")

    def need(n, verdict):
        return "—" if verdict == NOT_RUN else ("≤ run" if verdict in ("replicated", "opposite") else
                                               (f"{int(n)}" if pd.notna(n) else "?"))
    source = ["" if s == V.PAPER else f" ({s})" for s in claims["source"]]
    return pd.DataFrame({
        "paper": [t + s for t, s in zip(claims["table"], source)],
        "claim (better > worse)": claims["better"] + " > " + claims["worse"],
        "ours on (paper on)": claims["benchmark"] + " (" + claims["paper_benchmark"] + ")",
        "paper Δ pts": claims["paper_diff_pts"].map(pts) + " (" + claims["paper_statistic"] + ")",
        "ours Δ pts": claims["ours_diff_pts"].map(pts),
        "95% CI": [interval(lo, hi) for lo, hi in zip(claims["ci_low_pts"], claims["ci_high_pts"])],
        "seeds": claims["n_seeds"], "MDE pts": claims["mde_pts"].map(lambda v: pts(v, "")),
        "seeds for paper Δ": [need(n, v) for n, v in zip(claims["seeds_needed"], claims["verdict"])],
        "verdict": claims["verdict"]})
