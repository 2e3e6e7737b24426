"""The claims table: one row per paper claim tested in miniature — every claimed pair (better, worse) of Tables 2-6
and Figures 2-5 on its experiment's primary benchmarks, as the preset reads them — with the paper's difference,
ours with its 95% interval over seeds, and the verdict; a claim without stored runs under the current config is
"not run" (no number).

>>> from klear_lib.ablations import claims
>>> path = claims.write_claims("tiny")   # results/tiny/claims.csv, read by klear_lib.report.claims_section
"""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from klear_lib import tables
from klear_lib.ablations import verdicts as V
from klear_lib.ablations.family import Family
from klear_lib.ablations.rl import RL
from klear_lib.ablations.sft import SFT
from klear_lib.evaluation.benchmarks import SPECS
from klear_lib.paths import results_dir
from klear_lib.results import ANALOGUE, load_reported

FAMILIES: dict[str, Family] = {"sft": SFT, "rl": RL}
NOT_RUN = "not run"
COLUMNS = ["claim_id", "family", "table", "experiment", "benchmark", "better", "worse", "paper_benchmark",
           "paper_better", "paper_worse", "paper_diff_pts", "ours_better_pct", "ours_worse_pct", "ours_diff_pts",
           "ci_low_pts", "ci_high_pts", "n_seeds", "verdict", "claim"]
# ``claims.csv``: rows in definition order; a claim not run keeps its numbers blank (NaN when read)
CLAIMS = tables.Table("claim", tuple(COLUMNS), ("claim_id",), float_format="%.4f", sort=False,
                      nullable=tuple(c for c in COLUMNS if c.endswith(("pts", "pct"))))


def readings(family: Family, exp, preset: str | None = None) -> list[tuple[str, str]]:
    """(primary benchmark, benchmark read) pairs of ``exp``: each primary benchmark as ``preset``'s scale maps it
    (tiny also reads ``tiny_aime`` on a held-out tier; full reads the paper's benchmarks), or as is."""
    mapping = family.get_scale(preset).benchmarks if preset else {}
    return [(b, m) for b in exp.primary for m in mapping.get(b, (b,))]


def _paper_benchmark(primary: str, read: str) -> str:
    """The paper's benchmark behind a reading: a miniature one stands for its primary benchmark's analogue."""
    return ANALOGUE.get(primary, primary) if read not in SPECS or SPECS[read].source == "world" else read


def expected(reported: pd.DataFrame | None = None, preset: str | None = None) -> pd.DataFrame:
    """Every claim the kit tests (on ``preset``'s readings of the primary benchmarks), with the paper's numbers
    (``results/reported.csv``) and no result yet."""
    rows = []
    for name, family in FAMILIES.items():
        for exp in family.experiments.values():
            for (better, worse) in exp.comparisons:
                for primary, bench in readings(family, exp, preset):
                    paper = _paper_benchmark(primary, bench)
                    pb, pw = (V.paper_value(reported, exp, label, paper) for label in (better, worse))
                    rows.append({"claim_id": f"{exp.id}:{better}>{worse}@{bench}", "family": name,
                                 "table": exp.table, "experiment": exp.id, "benchmark": bench, "better": better,
                                 "worse": worse, "paper_benchmark": paper, "paper_better": pb,
                                 "paper_worse": pw, "paper_diff_pts": pb - pw, "claim": exp.claim})
    return pd.DataFrame(rows)


def measured(preset: str, paths: dict | None = None, metric: str = "avg@k") -> pd.DataFrame:
    """Pairwise verdicts of every family from its stored rows (``paths``: family -> table path override)."""
    out = []
    for name, family in FAMILIES.items():
        rows = family.current_rows(preset, (paths or {}).get(name))
        if len(rows):
            out.append(family.verdicts(family.aggregate(rows), metric))
    return pd.concat(out, ignore_index=True) if out else pd.DataFrame(columns=V.VERDICT_COLUMNS)


def build_claims(preset: str, reported: pd.DataFrame | None = None, paths: dict | None = None) -> pd.DataFrame:
    """One row per expected claim: the paper's numbers, ours (in points) and the verdict, or "not run"."""
    claims = expected(load_reported() if reported is None else reported, preset)
    pairs = measured(preset, paths).rename(columns={"ci_low": "pair_ci_low", "ci_high": "pair_ci_high"})
    merged = claims.merge(pairs[["experiment", "benchmark", "better", "worse", "mean_better", "mean_worse", "diff",
                                 "pair_ci_low", "pair_ci_high", "n_seeds", "verdict"]],
                          on=["experiment", "benchmark", "better", "worse"], how="left")
    for col, src in (("ours_better_pct", "mean_better"), ("ours_worse_pct", "mean_worse"),
                     ("ours_diff_pts", "diff"), ("ci_low_pts", "pair_ci_low"), ("ci_high_pts", "pair_ci_high")):
        merged[col] = 100 * merged[src]
    merged["verdict"] = merged["verdict"].fillna(NOT_RUN)
    merged["n_seeds"] = merged["n_seeds"].fillna(0).astype(int)
    return merged[COLUMNS]


def claims_csv(preset: str) -> Path:
    """``results/<preset>/claims.csv``."""
    return results_dir(preset) / "claims.csv"


def write_claims(preset: str, reported: pd.DataFrame | None = None, paths: dict | None = None,
                 path: Path | str | None = None) -> Path:
    """Build the claims table and write it (rows in definition order, floats at fixed precision)."""
    return tables.write(CLAIMS, build_claims(preset, reported, paths), path or claims_csv(preset))


def readme_table(claims: pd.DataFrame) -> pd.DataFrame:
    """The README view: claim, benchmark, the paper's difference and ours with its interval, seeds, verdict."""
    def pts(v):
        return "—" if pd.isna(v) else f"{v:+.1f}"

    def interval(lo, hi):
        return "—" if pd.isna(lo) else f"[{lo:+.1f}, {hi:+.1f}]".replace("inf", "∞")
    return pd.DataFrame({
        "paper": claims["table"], "claim (better > worse)": claims["better"] + " > " + claims["worse"],
        "ours on (paper on)": claims["benchmark"] + " (" + claims["paper_benchmark"] + ")",
        "paper Δ pts": claims["paper_diff_pts"].map(pts), "ours Δ pts": claims["ours_diff_pts"].map(pts),
        "95% CI": [interval(lo, hi) for lo, hi in zip(claims["ci_low_pts"], claims["ci_high_pts"])],
        "seeds": claims["n_seeds"], "verdict": claims["verdict"]})
