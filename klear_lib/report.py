"""README sections generated from results files (never typed): our numbers beside the paper's.

Each section sits between ``<!-- NAME:start -->`` and ``<!-- NAME:end -->`` markers in README.md; only the text
between them is replaced, so the rest of the README stays hand-written.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
from pathlib import Path

import numpy as np
import pandas as pd

from klear_lib import stats as S
from klear_lib import tables
from klear_lib.ablations import claims as C
from klear_lib.ablations import rl, sft, stability
from klear_lib.configs import Recipe, recipe
from klear_lib.data.sources import SOURCES
from klear_lib.evaluation.benchmarks import SPECS
from klear_lib.paths import REPO
from klear_lib.results import CONTROL, EVAL, EVAL_SEED_GAINS, eval_csv, load_reported, side_by_side
from klear_lib.tables import markdown_table

RERUN = "rerun"  # the study re-run's subfolder of results/<preset>/ (scripts/rerun.py SUBDIR, Recipe.results_subdir)
CLAIMS_PAGE = Path("docs/claims.md")  # the claims table's page (claims_section), relative to the repository
SEED_SUFFIX = r"-s\d+$"  # stage labels of the main job's further RL seeds (klear_lib.pipeline.seed_stage)


def replace_section(text: str, name: str, body: str) -> str:
    """``text`` with the part between the ``name`` markers replaced by ``body`` (markers appended if absent)."""
    start, end = f"<!-- {name}:start -->", f"<!-- {name}:end -->"
    if start not in text or end not in text:
        text = text.rstrip("\n") + f"\n\n{start}\n{end}\n"
    head, rest = text.split(start, 1)
    _, tail = rest.split(end, 1)
    return f"{head}{start}\n{body.strip()}\n{end}{tail}"


def results_section(recipe: Recipe) -> str:
    """Our avg@k per stage (with 95% CI) beside the paper's Table 1 value for the analogous benchmark."""
    path = eval_csv(recipe.results)
    if not path.exists():
        return f"_No `results/{recipe.preset}/eval.csv` yet: run `make reproduce`._"
    rows = tables.read(EVAL, path)
    table = side_by_side(rows[~rows["stage"].str.contains(SEED_SUFFIX, regex=True)], load_reported())
    table = table.assign(ours_pct=table["ours_pct"].round(1)).rename(columns={
        "k": "our k", "ours_pct": "ours % (miniature)", "ci_pct": "ours 95% CI", "paper_model": "paper's model",
        "paper_benchmark": "paper's benchmark", "paper_k": "paper's k",
        "paper_pct": "paper % (real benchmark: not comparable)"})
    note = (f"Ours: `results/{recipe.preset}/eval.csv`: the miniature benchmarks, avg@k in %, bootstrap 95% CI over "
            "problems, the main RL seed only (all seeds: the next table). Paper: `results/reported.csv`, Table 1, the "
            "analogous real benchmark and model. **The two are not comparable**: a 0.8 M-parameter model on a "
            "miniature world beside an 8 B model on AIME and LiveCodeBench; the paper's column says which real test "
            "each miniature one stands in for, not a target.")
    return note + "\n\n" + markdown_table(table)


def seed_gains_section(recipe: Recipe) -> str:
    """The main job's gain of each RL stage over RL seeds and problems (notebook 03, ``eval_seed_gains.csv``)."""
    path = recipe.results / "eval_seed_gains.csv"
    if not path.exists():
        return f"_No `results/{recipe.preset}/eval_seed_gains.csv` yet: run `make reproduce`._"
    df = tables.read(EVAL_SEED_GAINS, path)
    table = pd.DataFrame({"benchmark": df["benchmark"], "gain of": df["after"] + " over " + df["before"],
                          "seeds": df["n_seeds"], "mean gain pts": (100 * df["gain"]).map(lambda v: f"{v:+.1f}"),
                          "95% t-interval over seeds": [f"[{100 * lo:+.1f}, {100 * hi:+.1f}]".replace("inf", "∞")
                                                        for lo, hi in zip(df["seed_ci_low"], df["seed_ci_high"])],
                          "per seed pts": [" ".join(f"{100 * float(g):+.1f}" for g in str(v).split(";"))
                                           for v in df["per_seed"]]})
    note = (f"Generated from `results/{recipe.preset}/eval_seed_gains.csv` (notebook 03): each RL stage's avg@k gain over "
            "the stage before, in points, the mean over RL seeds trained from the one SFT model and read on the same "
            "problems, with the t-interval over seeds (the seed is the unit; at 3 seeds it is wide, which is what 3 "
            "seeds can say).")
    return f"{note}\n\n{markdown_table(table)}"


def standing_section(recipe: Recipe) -> str:
    """Where the study stands, in bullets whose every number is read from the table each one names; a bullet whose
    table is missing is left out."""
    parts = (_headline(recipe), *_rerun_read(recipe), _claims_summary(recipe),
             None if "fig2" in _reread(recipe) else _fig2_arms(recipe), _self_verification(recipe))
    bullets = [f"- {p}" for p in parts if p]
    return "\n".join(bullets) or f"_No results at `{recipe.preset}` yet: run `make reproduce` and `make ablations`._"


def _pts(v: float, scale: float = 100) -> str:
    return f"{scale * v:+.1f}".replace("-", "−")


def _ci(lo: float, hi: float, scale: float = 100) -> str:
    return f"[{_pts(lo, scale)}, {_pts(hi, scale)}]"


CONTROL_TEXT = {"blind": "every reward a coin flip", "format": "every reward a coin flip, except that a response the "
                 "task's reward scores for its form alone keeps that score"}  # pipeline.CONTROLS, in words


def _headline(recipe: Recipe) -> str | None:
    """The main job's claims (``main_claims.csv``: its final stage over the SFT model and over its random-reward
    control, each with its family-wise interval and verdict, and the control's own move beside); where that file is
    absent, the earlier form: math RL's gain on ``tiny_aime`` over RL seeds and what each stage did to ``tiny_lcb``."""
    # notebook 03's, else the study re-run's registered read (scripts/rerun.py claims) until its rows replace these
    for claims_path in (recipe.results / "main_claims.csv", recipe.results / RERUN / "main_claims.csv"):
        if claims_path.exists():
            return _main_claims_headline(recipe, claims_path)
    gains_path, eval_path = recipe.results / "eval_seed_gains.csv", eval_csv(recipe.results)
    if not (gains_path.exists() and eval_path.exists()):
        return None
    gains = tables.read(EVAL_SEED_GAINS, gains_path).set_index(["benchmark", "before", "after"])
    if ("tiny_aime", "sft", "rl_math") not in gains.index:
        return None
    eval_ = tables.read(EVAL, eval_path)
    first = eval_[(eval_["benchmark"] == "tiny_aime") & (eval_["metric"] == "avg@k") & (eval_["stage"] == "sft")]
    if first.empty:
        return None
    g, start = gains.loc[("tiny_aime", "sft", "rl_math")], first["mean"].iloc[0]
    per_seed = ", ".join(_pts(float(v)) for v in str(g["per_seed"]).split(";"))
    # every RL seed starts from the one SFT model and is read on its problems: the seeds' mean is start + mean gain
    lo, hi = g["seed_ci_low"], g["seed_ci_high"]
    verb = "lifts" if lo > 0 else "lowers" if hi < 0 else "moves"  # as the interval says
    text = (f"**GPPO math RL {verb} the held-out `tiny_aime` by {_pts(g['gain'])} points {_ci(lo, hi)}"
            f" over {int(g['n_seeds'])} RL seeds** from the one SFT model (avg@{int(first['k'].iloc[0])} "
            f"{100 * start:.1f}% → {100 * (start + g['gain']):.1f}%, the mean over seeds; per seed {per_seed}; "
            f"95% t-interval over the seeds, each seed read on the same {int(g['n_problems'])} problems).")
    own, ctrl = ("tiny_aime", CONTROL + "rl_math", "rl_math"), ("tiny_aime", "sft", CONTROL + "rl_math")
    if own in gains.index and ctrl in gains.index:  # the random-reward control was trained (Study.main_control)
        o, c = gains.loc[own], gains.loc[ctrl]
        by_seed = ", ".join(_pts(float(v)) for v in str(o["per_seed"]).split(";"))
        text += (f" **Over its random-reward control** (the same runs with every reward drawn at random) **math RL "
                 f"gains {_pts(o['gain'])} points {_ci(o['seed_ci_low'], o['seed_ci_high'])}**, the part the task's "
                 f"reward makes (per seed {by_seed}); the control alone moves `tiny_aime` by {_pts(c['gain'])} "
                 f"{_ci(c['seed_ci_low'], c['seed_ci_high'])}.")
    lcb = [gains.loc[key] for key in (("tiny_lcb", "sft", "rl_math"), ("tiny_lcb", "rl_math", "rl_code"))
           if key in gains.index]
    if len(lcb) == 2:
        by_seed = [", ".join(_pts(float(v)) for v in str(r["per_seed"]).split(";")) for r in lcb]
        text += f" On `tiny_lcb`, per seed, math RL moves it by {by_seed[0]} points and code RL then by {by_seed[1]}."
    return text + f" (`{_rel(gains_path)}`, `{_rel(eval_path)}`)"


def _main_claims_headline(recipe: Recipe, path: Path) -> str | None:
    """The main job's family of claims in words: per benchmark, the final stage over the SFT model, then over the
    control with the control's own move from the SFT model (``eval_seed_gains.csv``) at the same level."""
    claims = tables.read(C.MAIN_CLAIMS, path)
    if claims.empty:
        return None
    gains_path = path.with_name("eval_seed_gains.csv")  # the same run's, beside it
    gains = tables.read(EVAL_SEED_GAINS, gains_path).set_index(["benchmark", "before", "after"]) \
        if gains_path.exists() else None
    m, n = int(claims["family_size"].iloc[0]), int(claims["n_seeds"].iloc[0])
    reading = recipe.main_job.eval
    parts = []
    for bench, rows in claims.groupby("benchmark", sort=False):
        rows = rows.set_index("worse")
        text = f"on `{bench}`"
        if "sft" in rows.index:
            r = rows.loc["sft"]
            k = reading.k_math if SPECS[bench].ability == "math" else reading.k_code
            text += (f" GPPO RL (math, then code) takes the SFT model from {r.ours_worse_pct:.1f}% to "
                     f"{r.ours_better_pct:.1f}% avg@{k}, **{_pts(r.ours_diff_pts, 1)} points "
                     f"{_ci(r.adj_ci_low_pts, r.adj_ci_high_pts, 1)}, *{r.verdict}*** against the paper's RL gain "
                     f"carried to our base rate ({r.claimed_pts:.1f} points; per seed {_seed_pts(r.seed_diffs_pts)})")
        ctrl = CONTROL + "rl_code"
        if ctrl in rows.index:
            r = rows.loc[ctrl]
            text += (f"; over its random-reward control (ending at {r.ours_worse_pct:.1f}%) it leads by "
                     f"**{_pts(r.ours_diff_pts, 1)} points {_ci(r.adj_ci_low_pts, r.adj_ci_high_pts, 1)}, "
                     f"*{r.verdict}***")
            if gains is not None and (bench, "sft", ctrl) in gains.index:
                move = [float(v) for v in str(gains.loc[(bench, "sft", ctrl), "per_seed"]).split(";")]
                lo, hi = _family_interval(move, m)
                text += (f", the control alone moving it by {_pts(sum(move) / len(move))} {_ci(lo, hi)} from the "
                         "SFT model")
        parts.append(text)
    control = recipe.study.main_control
    what = f" ({CONTROL_TEXT[control]})" if control in CONTROL_TEXT else ""
    return (f"**The main job over {n} RL seeds**, its {m} claims decided as one family (docs/design.md, "
            f"\"Verdicts\"; intervals simultaneous at 95%, each at level 1 − 0.05/{m}): " + "; ".join(parts) + "."
            + (f" The control is the same RL with random rewards{what}; where it falls below the SFT model, the "
               f"lead over it is the RL gain plus what the control lost, so it can exceed the RL gain itself."
               if len(claims) > claims["worse"].eq("sft").sum() else "")
            + f" (`{_rel(path)}`" + (f", `{_rel(gains_path)}`)" if gains is not None else ")"))


def _rerun_read(recipe: Recipe) -> list[str]:
    """One bullet per experiment of the study re-run read so far (``rerun/claims.csv`` and the summary beside it,
    written by ``scripts/rerun.py claims`` once the experiment's registered runs are all stored): every arm's mean
    over the registered seeds, each claim's difference with its family-wise interval and verdict, the arms that
    carry no claim as their paired difference from the experiment's first arm (a plain 95% interval: they decide
    nothing), and whether the split by CPU model (``claims_by_cpu.csv``) shows intervals that do not overlap."""
    path = recipe.results / RERUN / "claims.csv"
    summary_path = path.with_name(f"{rl.RL.name}_summary.csv")
    if not (path.exists() and summary_path.exists()):
        return []
    claims = tables.read(C.CLAIMS, path)
    claims = claims[(claims["verdict"] != C.NOT_RUN) & (claims["family"] == "rl")]  # the main job: the headline
    summary = tables.read(rl.RL.summary, summary_path)
    summary = summary[summary["metric"] == "avg@k"]
    split_path = path.with_name("claims_by_cpu.csv")
    split = pd.read_csv(split_path) if split_path.exists() else None
    out = []
    for (exp, bench), rows in claims.groupby(["experiment", "benchmark"], sort=False):
        arms = summary[(summary["experiment"] == exp) & (summary["benchmark"] == bench)]
        if arms.empty:
            continue
        lo, hi = C.BAND_PCT
        means = [100 * float(m) for m in arms["mean"]]
        text = (f"**The re-run's {rows['table'].iloc[0]}** over {int(rows['n_seeds'].max())} paired seeds, "
                f"avg@{int(arms['k'].iloc[0])} on `{bench}` as pre-registered (intervals family-wise at 95%, each "
                "claim beside the paper's size carried to our base rate): arms "
                + ", ".join(f"`{a.condition}` {100 * a.mean:.1f}%" for a in arms.itertuples())
                + (f" (all inside the {lo:.0f}–{hi:.0f}% band)" if all(lo <= m <= hi for m in means)
                   else f" (not all inside the {lo:.0f}–{hi:.0f}% band)") + ". ")
        said = []
        for r in rows.itertuples():
            sized = pd.notna(r.claimed_pts) and r.claimed_pts > 0
            size = (f"carried {r.claimed_pts:.1f}" if sized else
                    "no positive size claimed: only *replicated* or *opposite* can decide it")
            # the rule decides the sign first: a replication whose interval stays under the claimed size says so
            far = max(r.direction * r.adj_ci_low_pts, r.direction * r.adj_ci_high_pts)  # in the claimed direction
            below = sized and r.verdict == "replicated" and far < r.claimed_pts
            need = (f"; 80% power at it would take {int(r.seeds_for_power)} seeds per arm"
                    if sized and r.verdict == "undecided" and pd.notna(r.seeds_for_power) else
                    "; the whole interval below it" if below else "")
            # another experiment's arm trained as one of these, with the same value on every seed both hold
            refs = r.shares_runs.split(";") if isinstance(r.shares_runs, str) else []
            shared = [f"`{ref}`" for ref in refs if ref and "(" not in ref]
            need += f"; runs shared with {_and(shared)}" if shared else ""
            said.append(f"{r.better} > {r.worse} ({r.multiplicity_family}): **{_pts(r.ours_diff_pts, 1)} points "
                        f"{_ci(r.adj_ci_low_pts, r.adj_ci_high_pts, 1)}, *{r.verdict}*** ({size}{need})")
        text += "; ".join(said) + "."
        claimed = set(rows["better"]) | set(rows["worse"])
        first = arms.iloc[0]
        others = []
        for a in arms.itertuples():
            if a.condition in claimed or a.condition == first["condition"]:
                continue
            x, y = S.paired(_floats(a.values), _floats(a.seeds), _floats(first["values"]), _floats(first["seeds"]))
            mean, low, high = S.t_interval([u - v for u, v in zip(x, y)])
            others.append(f"`{a.condition}` − `{first['condition']}` {_pts(mean)} {_ci(low, high)}")
        if others:
            text += (" No claim (paired 95% t-interval, deciding nothing): "
                     + ", ".join(others) + ".")
        if split is not None:
            mine = split[(split["experiment"] == exp) & (split["benchmark"] == bench)]
            apart = [cid for cid, g in mine.groupby("claim_id", sort=False)
                     if len(g) > 1 and g["ci_low_pts"].max() > g["ci_high_pts"].min()]
            if mine["cpu"].nunique() == 1:
                text += f" Every seed drawn on one CPU model ({mine['cpu'].iloc[0]})."
            elif len(mine):
                text += (f" Split by the {mine['cpu'].nunique()} CPU models that drew the seeds (descriptive): "
                         + ("the models' intervals overlap for every claim" if not apart else
                            "the models' intervals do not overlap for " + ", ".join(
                                f"{c.split(':')[1].split('@')[0]}" for c in apart)) + ".")
        files = [path, summary_path] + ([split_path] if split is not None else [])
        forest = C.forest_path(dataclasses.replace(recipe, results_subdir=RERUN), exp)  # rerun.py claims draws it
        out.append(text + (f" [Forest plot]({_rel(forest)})." if forest.exists() else "")
                   + " (" + ", ".join(f"`{_rel(f)}`" for f in files) + ")")
    return out


def _and(items: list[str]) -> str:
    """"a", "a and b", "a, b and c"."""
    return " and ".join([", ".join(items[:-1]), items[-1]] if len(items) > 2 else items)


def _floats(joined) -> list[float]:
    """A ';'-joined list of numbers (a summary's ``values`` or ``seeds``, a claim's ``seed_diffs_pts``)."""
    return [float(v) for v in str(joined).split(";")]


def _seed_pts(joined: str) -> str:
    """A ';'-joined list of points as the README writes it."""
    return ", ".join(_pts(v, 1) for v in _floats(joined))


def _family_interval(values: list[float], family_size: int) -> tuple[float, float]:
    """The t-interval of the mean of ``values`` at level 1 − 0.05/``family_size`` (the family's Bonferroni level)."""
    sd = float(np.std(values, ddof=1)) if len(values) > 1 else float("nan")
    return S.adjusted_interval(float(np.mean(values)), sd / np.sqrt(len(values)), len(values) - 1, family_size)


def _claims_summary(recipe: Recipe) -> str | None:
    """Decision counts per claim family, how many p-values survive multiplicity, the decided claims by name, and
    the power the undecided ones had at the paper's effect carried to our base rate."""
    claims, full = _claims(recipe), _claims(recipe, superseded=True)
    if claims is None:
        return None
    run, ran = claims[claims["verdict"] != C.NOT_RUN], int((full["verdict"] != C.NOT_RUN).sum())
    counts = [f"{family.upper()} {len(rows)} ("
              + ", ".join(f"{n} {v}" for v, n in rows["verdict"].value_counts().sort_index().items()) + ")"
              for family, rows in run.groupby("family", sort=False)]
    alive = C.survivors(claims)
    redone = _and(sorted(set(_reread(recipe).values())))
    text = (f"**{len(run)} claims run**" + (f" (of the earlier design's {ran}; {redone} re-run above)"
                                            if ran != len(run) else "")
            + ", each decided from its family-wise interval (docs/design.md, \"Verdicts\"): "
            + "; ".join(counts) + f". {alive['raw']} has p < 0.05 before correction, {alive['holm']} after Holm "
            f"within its table or figure, {alive['bh']} after Benjamini–Hochberg across all {ran}.")
    decided = run[run["verdict"] != "undecided"]
    if len(decided):
        text += " Decided: " + "; ".join(
            f"{r.table} {r.better} > {r.worse} on `{r.benchmark}` is *{r.verdict}*: {_pts(r.ours_diff_pts, 1)} "
            f"{_ci(r.adj_ci_low_pts, r.adj_ci_high_pts, 1)} at {int(r.n_seeds)} seeds" for r in decided.itertuples()) + "."
    under = run[(run["verdict"] == "undecided") & run["power_at_claim"].notna()]
    if len(under):
        need = under["seeds_for_power"].dropna()
        sized = under[under["claimed_pts"] > 0]["claimed_pts"]
        text += (f" Carried to our base rates the paper's claimed sizes are {sized.min():.2f}–{sized.max():.1f} "
                 f"points ({len(under) - len(sized)} more whose readings reach 0); at the seeds run the undecided "
                 "claims had "
                 f"{100 * under['power_at_claim'].min():.0f}–{100 * under['power_at_claim'].max():.0f}% power to "
                 "see them" + (f", and 80% power would take {int(need.min())}–{int(need.max())} seeds per arm "
                               "(sized on an upper bound of the spread)" if len(need) else "")
                 + (f", more than 10,000 for {len(under) - len(need)}" if len(need) < len(under) else "") + ".")
    return text + f" (`{_rel(C.claims_csv(recipe.results))}`)"


def _fig2_arms(recipe: Recipe) -> str | None:
    """Fig. 2's arms: mean held-out avg@k over their seeds."""
    path = recipe.results / f"{rl.RL.name}_summary.csv"
    if not path.exists():
        return None
    summary = tables.read(rl.RL.summary, path)
    fig2 = summary[(summary["experiment"] == "fig2") & (summary["metric"] == "avg@k")
                   & (summary["benchmark"] == "tiny_aime")]
    if fig2.empty:
        return None
    arms = ", ".join(f"`{r.condition}` {100 * r.mean:.1f}%" for r in fig2.itertuples())
    lo, hi = int(fig2["n_seeds"].min()), int(fig2["n_seeds"].max())
    return (f"**Figure 2's arms**, held-out `tiny_aime` avg@{int(fig2['k'].iloc[0])} over "
            f"{lo if lo == hi else f'{lo}–{hi}'} seeds: {arms}. (`{_rel(path)}`)")


def _self_verification(recipe: Recipe) -> str | None:
    """Table 3's rank-1 teacher: how often its code student writes checks, how many hold, and the student without."""
    table = sft.SFT.csv(recipe.results)
    styles_path = table.with_name(f"{table.stem}_styles.csv")
    if not (styles_path.exists() and table.exists()):
        return None
    styles = pd.read_csv(styles_path)
    rank1 = styles[(styles["experiment"] == "table3") & (styles["condition"] == "rank1")
                   & (styles["benchmark"] == "tiny_lcb")]
    # the table as stored: at tiny, the earlier design's rows, which the SFT scale no longer hashes to since
    # section 6 of the pre-registration, and which stay the study's until the re-run's replace them
    contrast = sft.SFT.contrast(sft.SFT.aggregate(tables.read(sft.SFT.table, table)), "table3", "rank1/no_checks",
                                "rank1")
    contrast = contrast[contrast["benchmark"] == "tiny_lcb"]
    if rank1.empty or contrast.empty:
        return None
    c = contrast.iloc[0]
    return (f"**Table 3's rank-1 teacher and self-verification**: its code student writes "
            f"checks in {100 * rank1['check'].mean():.0f}% of its answers, and {100 * rank1['check_true'].mean():.1f}% "
            f"of the checks are true; trained on the same traces with the checks taken out (a condition beyond the "
            f"paper) the student gains {_pts(c['diff'])} points {_ci(c['ci_low'], c['ci_high'])} on `tiny_lcb` over "
            f"{int(c['n_seeds'])} seeds ({_TESTS[c['test']]}). (`{_rel(styles_path)}`, `{_rel(table)}`)")


_TESTS = {"paired": "paired t-interval over seeds", "welch": "Welch interval", "one seed": "one seed, no interval"}


def _claims(recipe: Recipe, superseded: bool = False) -> pd.DataFrame | None:
    """The earlier design's claims, less (unless ``superseded``) the experiments the study re-run has read: no
    verdict of the old design stands beside the re-run's (its rows stay in git history)."""
    path = C.claims_csv(recipe.results)
    if not path.exists():
        return None
    claims = tables.read(C.CLAIMS, path)
    return claims if superseded else claims[~claims["experiment"].isin(_reread(recipe))].reset_index(drop=True)


def _reread(recipe: Recipe) -> dict[str, str]:
    """{experiment: its table} of the ablations the study re-run has read (``rerun/claims.csv``)."""
    path = recipe.results / RERUN / "claims.csv"
    if not path.exists():
        return {}
    claims = tables.read(C.CLAIMS, path)
    read = claims[(claims["verdict"] != C.NOT_RUN) & (claims["family"] == "rl")]
    return dict(zip(read["experiment"], read["table"]))


def _reread_note(recipe: Recipe) -> str:
    tables_ = sorted(set(_reread(recipe).values()))
    return (f" {_and(tables_)}: the re-run's, in the README's \"What was found\"; the earlier design's rows "
            "leave this table (git history), though the forest plots, drawn by notebook 06, still show them."
            if tables_ else "")


def _link(path: Path, page: Path | None = None) -> str:
    """``path`` as a Markdown link on ``page`` (default: the claims page) writes it: relative to the page's folder."""
    page = REPO / CLAIMS_PAGE if page is None else page
    return Path(os.path.relpath(path, page.parent)).as_posix() if path.is_relative_to(REPO) else path.as_posix()


def _rel(path: Path) -> str:
    """``path`` as the README names it: relative to the repository, else as given."""
    return path.relative_to(REPO).as_posix() if path.is_relative_to(REPO) else path.as_posix()


def claims_section(recipe: Recipe) -> str:
    """The claims (Tables 2-6, Figures 2-5, DGPO's) with the claimed difference, ours, the power and the decision,
    from claims.csv."""
    claims = _claims(recipe)
    if claims is None:
        return f"_No `results/{recipe.preset}/claims.csv` yet: run `make ablations`._"
    counts = claims["verdict"].value_counts().sort_index()
    alive = C.survivors(claims)
    note = (f"Generated from `results/{recipe.preset}/claims.csv` by the protocol of docs/design.md, \"Verdicts\" (terms: "
            "[glossary](../README.md#glossary)); paper readings from `results/reported.csv`, DGPO's where marked; "
            + ", ".join(f"{n} {v}" for v, n in counts.items())
            + f"; p < 0.05: {alive['raw']} raw, {alive['holm']} after Holm, {alive['bh']} after Benjamini–Hochberg."
            + _reread_note(recipe))
    return note + forests(recipe, claims) + "\n\n" + markdown_table(C.readme_table(claims))


def forests(recipe: Recipe, claims: pd.DataFrame) -> str:
    """The README's view of the claims' forest plots (``claims.write_forests``): the one of every claim, embedded,
    and a link to each experiment's; '' before notebook 06 has drawn them."""
    figure = C.forest_path(recipe)
    if not figure.exists():
        return ""
    links = [f"[{table}]({_link(C.forest_path(recipe, exp))})"
             for exp, table in dict(zip(claims["experiment"], claims["table"])).items()
             if C.forest_path(recipe, exp).exists()]
    return (f"\n\n![Every claim run at {recipe.preset}: our difference with its interval and per-seed differences beside "
            f"the claimed one]({_link(figure)})\n\nOne claim family per figure: " + ", ".join(links) + ".")


def stability_section(recipe: Recipe) -> str:
    """Per loss and updates setting: final held-out accuracy at each learning rate (seeds collapsed, if any), from
    ``stability_summary.csv``; then the map in sentences (``stability.reading``)."""
    path = stability.STABILITY.csv(recipe.results).with_name("stability_summary.csv")
    if not path.exists():
        return f"_No `results/{recipe.preset}/stability_summary.csv` yet: run `make stability`._"
    summary = tables.read(stability.SUMMARY, path)
    summary["values"] = [tuple(float(v) for v in str(vals).split(";")) for vals in summary["values"]]
    cell = [f"{100 * m:.1f} [{100 * max(lo, 0):.1f}, {100 * hi:.1f}]" + (f" ({int(c)}/{int(n)} collapsed)" if c else "")
            for m, lo, hi, c, n in summary[["mean", "ci_low", "ci_high", "collapsed", "n_seeds"]].values]
    wide = summary.assign(cell=cell).pivot(index=["loss", "updates_per_step"], columns="learning_rate", values="cell")
    order = {loss.label: i for i, loss in enumerate(stability.LOSSES)}
    wide = wide.sort_index(key=lambda idx: idx.map(order) if idx.name == "loss" else idx)
    wide.columns = [f"LR {lr:g}" for lr in wide.columns]
    start = summary["start_mean"].mean()
    note = (f"Generated from `results/{recipe.preset}/stability_summary.csv` (notebook 07): final held-out avg@k in % "
            f"after the grid's RL run, mean and 95% t-interval over seeds (cut at 0), from the SFT start at {100 * start:.1f}%; "
            "the collapse criterion is `stability.Collapse`.")
    text = stability.reading(summary, stability.ranking(summary))
    return f"{note}\n\n{markdown_table(wide.reset_index())}\n\n" + "\n".join(f"- {t}" for t in text.splitlines())


def sources_section(recipe: Recipe) -> str:
    """The real sources from the registry (``klear_lib.data.sources``): hub id and pin, and the mirror layout."""
    recs = []
    for s in SOURCES.values():
        pin = f"`{s.revision[:12]}`" if s.revision else "none"
        status = "UNVERIFIED" if s.revision_note.startswith("UNVERIFIED") else "checked offline"
        files = "<br>".join(f"`{f.path}` ({f.repo}@`{f.commit[:7]}`)" for f in s.mirror_files) or "— (hub only)"
        recs.append({"source": f"`{s.name}`", "kind": s.kind, "hub id": f"`{s.hub_id}`" if s.hub_id else "—",
                     "revision": f"{pin} ({status})" if s.hub_id else "—", "mirror file(s)": files})
    note = ("Generated from `klear_lib/data/sources.py`, where each pin's note and each mirror file's sha256 live "
            "(and in `data_cards/source_*.md`).")
    return f"{note}\n\n{markdown_table(pd.DataFrame(recs))}"


def runtimes_section(recipe: Recipe) -> str:
    """How long each stored notebook of ``preset`` took the last time it ran, from its own papermill record (start
    time, duration, parameters), and the last from-scratch timing of the main job in ``results/perf.csv``."""
    rows = []
    for path in sorted((recipe.results / "notebooks").glob("*.ipynb")):
        meta = json.loads(path.read_text()).get("metadata", {}).get("papermill", {})
        if not meta.get("duration"):
            continue
        params = {k: v for k, v in (meta.get("parameters") or {}).items() if k != "PRESET"}
        rows.append({"notebook": f"`{path.stem}`", "last run": str(meta.get("start_time", ""))[:10],
                     "wall time": _duration(float(meta["duration"])),
                     "what it did": ", ".join(f"{k}={v}" for k, v in params.items()) or "its stage (`make reproduce`)"})
    if not rows:
        return f"_No executed notebooks in `results/{recipe.preset}/notebooks/` yet: run `make reproduce`._"
    note = (f"Generated by `make readme` from the executed notebooks in `results/{recipe.preset}/notebooks/` (papermill's "
            "record of each one's last run on a 2-core CPU; a stage whose checkpoint was already in the artifact store "
            "reused it, so a time is what that run did, not a from-scratch cost; `SEEDS=stored` redraws from stored "
            "rows without training).")
    scratch = _scratch_timing(recipe)
    return f"{note}\n\n{markdown_table(pd.DataFrame(rows))}" + (f"\n\n{scratch}" if scratch else "")


def _duration(seconds: float) -> str:
    minutes = round(seconds / 60)
    return f"{seconds:.0f} s" if seconds < 90 else (f"{minutes} min" if minutes < 90 else f"{minutes / 60:.1f} h")


def _scratch_timing(recipe: Recipe) -> str:
    """The last from-scratch timing of the main job's stages in ``results/perf.csv`` (``make bench-pipeline``)."""
    path = REPO / "results" / "perf.csv"
    if not path.exists():
        return ""
    perf = pd.read_csv(path)
    stages = perf[(perf["benchmark"] == "pipeline") & perf["metric"].str.startswith(f"{recipe.preset}.stage_s.")]
    if stages.empty:
        return ""
    last = stages.drop_duplicates("metric", keep="last")
    parts = [f"{m.split('.')[-1]} {_duration(v)}" for m, v in zip(last["metric"], last["value"])]
    where = sorted(set(last["notes"].str.extract(r"at (\w+)")[0].dropna()))
    return (f"From scratch (`make bench-pipeline`, `results/perf.csv`, at commit {', '.join(where)}, "
            f"{last['machine'].iloc[0]}): " + "; ".join(parts) + ".")


README = REPO / "README.md"
# Each generated section and its page: the README's, then those of pages of docs/ that the README links (reference,
# not a first read).
SECTIONS = {"standing": (standing_section, README), "results": (results_section, README),
            "seed_gains": (seed_gains_section, README), "claims": (claims_section, REPO / CLAIMS_PAGE),
            "runtimes": (runtimes_section, README), "sources": (sources_section, REPO / "docs" / "sources.md"),
            "stability": (stability_section, REPO / "docs" / "stability.md")}


def write_readme(recipe: Recipe) -> Path:
    """Regenerate the README's generated sections (``SECTIONS``) from ``results/``, and the generated sections of
    the docs pages it links."""
    for name, (section, page) in SECTIONS.items():
        page.write_text(replace_section(page.read_text(), name, section(recipe)))
    return README


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m klear_lib.report", description=write_readme.__doc__.split(";")[0])
    parser.add_argument("--preset", default="tiny", help="whose results/<preset>/ tables to read")
    write_readme(recipe(parser.parse_args(argv).preset))


if __name__ == "__main__":
    main()
