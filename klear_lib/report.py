"""README sections generated from results files (never typed): our numbers beside the paper's.

Each section sits between ``<!-- NAME:start -->`` and ``<!-- NAME:end -->`` markers in README.md; only the text
between them is replaced, so the rest of the README stays hand-written.
"""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from klear_lib import plots, tables
from klear_lib.ablations import claims as C
from klear_lib.ablations import stability
from klear_lib.data.sources import SOURCES
from klear_lib.paths import REPO, results_dir
from klear_lib.results import EVAL, EVAL_SEED_GAINS, eval_csv, load_reported, side_by_side

SEED_SUFFIX = r"-s\d+$"  # stage labels of the main job's further RL seeds (klear_lib.pipeline.seed_stage)


def replace_section(text: str, name: str, body: str) -> str:
    """``text`` with the part between the ``name`` markers replaced by ``body`` (markers appended if absent)."""
    start, end = f"<!-- {name}:start -->", f"<!-- {name}:end -->"
    if start not in text or end not in text:
        text = text.rstrip("\n") + f"\n\n{start}\n{end}\n"
    head, rest = text.split(start, 1)
    _, tail = rest.split(end, 1)
    return f"{head}{start}\n{body.strip()}\n{end}{tail}"


def markdown_table(df: pd.DataFrame) -> str:
    """A GitHub markdown table of ``df`` (values as printed by pandas, NaN as an em dash)."""
    cells = df.astype(object).where(df.notna(), "—").astype(str)
    lines = ["| " + " | ".join(df.columns) + " |", "|" + "---|" * len(df.columns)]
    lines += ["| " + " | ".join(row) + " |" for row in cells.values.tolist()]
    return "\n".join(lines)


def results_section(preset: str = "tiny") -> str:
    """Our avg@k per stage (with 95% CI) beside the paper's Table 1 value for the analogous benchmark."""
    path = eval_csv(preset)
    if not path.exists():
        return f"_No `results/{preset}/eval.csv` yet: run `make reproduce`._"
    rows = tables.read(EVAL, path)
    table = side_by_side(rows[~rows["stage"].str.contains(SEED_SUFFIX, regex=True)], load_reported())
    table["ours_pct"] = table["ours_pct"].round(1)
    note = (f"Ours: `results/{preset}/eval.csv` (miniature benchmarks, avg@k in %, bootstrap 95% CI over "
            "problems; the main RL seed, the others below). Paper: `results/reported.csv` (Table 1, the analogous "
            "real benchmark and model).")
    return note + "\n\n" + markdown_table(table)


def seed_gains_section(preset: str = "tiny") -> str:
    """The main job's gain of each RL stage over RL seeds and problems (notebook 03, ``eval_seed_gains.csv``)."""
    path = results_dir(preset) / "eval_seed_gains.csv"
    if not path.exists():
        return f"_No `results/{preset}/eval_seed_gains.csv` yet: run `make reproduce`._"
    df = tables.read(EVAL_SEED_GAINS, path)

    def pts(lo, hi):
        return f"[{100 * lo:+.1f}, {100 * hi:+.1f}]".replace("inf", "∞")
    table = pd.DataFrame({"benchmark": df["benchmark"], "gain of": df["after"] + " over " + df["before"],
                          "seeds": df["n_seeds"], "mean gain pts": (100 * df["gain"]).map(lambda v: f"{v:+.1f}"),
                          "95% CI (seeds × problems)": [pts(lo, hi) for lo, hi in zip(df["ci_low"], df["ci_high"])],
                          "95% CI (seeds)": [pts(lo, hi) for lo, hi in zip(df["seed_ci_low"], df["seed_ci_high"])],
                          "per seed pts": [" ".join(f"{100 * float(g):+.1f}" for g in str(v).split(";"))
                                           for v in df["per_seed"]]})
    note = (f"Generated from `results/{preset}/eval_seed_gains.csv` (notebook 03): each RL stage's avg@k gain over "
            "the stage before, in points, the mean over RL seeds trained from the one SFT model and read on the same "
            "problems with the same sampling seed; intervals from a bootstrap over seeds and problems together, "
            "and a t-interval over seeds alone.")
    return f"{note}\n\n{markdown_table(table)}"


def claims_section(preset: str = "tiny") -> str:
    """The claims (Tables 2-6, Figures 2-5, DGPO's) with the claimed difference, ours, the power and the decision,
    from claims.csv."""
    path = C.claims_csv(preset)
    if not path.exists():
        return f"_No `results/{preset}/claims.csv` yet: run `make ablations`._"
    claims = tables.read(C.CLAIMS, path)
    counts = claims["verdict"].value_counts().sort_index()
    note = (f"Generated from `results/{preset}/claims.csv` (claimed numbers from `results/reported.csv`: the paper's, "
            "and DGPO's where marked). Δ = claimed better minus claimed worse, in points (avg@k), with the statistic "
            "the claimed value is; 95% interval over seeds, paired by seed; MDE = the difference those seeds detect "
            "with 80% power; seeds for paper Δ = seeds per arm that would detect the claimed size at our spread "
            "(docs/design.md, \"Verdicts\"); "
            + ", ".join(f"{n} {v}" for v, n in counts.items()) + ".")
    return note + forests(preset, claims) + "\n\n" + markdown_table(C.readme_table(claims))


def forests(preset: str, claims: pd.DataFrame) -> str:
    """The README's view of the claims' forest plots (``claims.write_forests``): the one of every claim, embedded,
    and a link to each experiment's; '' before notebook 06 has drawn them."""
    def link(path: Path) -> str:
        return path.relative_to(REPO).as_posix()
    figure = plots.figure_path(C.forest_name(preset))
    if not figure.exists():
        return ""
    links = [f"[{table}]({link(plots.figure_path(C.forest_name(preset, exp)))})"
             for exp, table in dict(zip(claims["experiment"], claims["table"])).items()
             if plots.figure_path(C.forest_name(preset, exp)).exists()]
    return (f"\n\n![Every claim run at {preset}: our difference with its interval and per-seed differences beside "
            f"the claimed one]({link(figure)})\n\nOne claim family per figure: " + ", ".join(links) + ".")


def stability_section(preset: str = "tiny") -> str:
    """Per loss and updates setting: final held-out accuracy at each learning rate (seeds collapsed, if any), from
    ``stability_summary.csv``; then the map in sentences (``stability.reading``)."""
    path = stability.STABILITY.csv(preset).with_name("stability_summary.csv")
    if not path.exists():
        return f"_No `results/{preset}/stability_summary.csv` yet: run `make stability`._"
    summary = tables.read(stability.SUMMARY, path)
    summary["values"] = [tuple(float(v) for v in str(vals).split(";")) for vals in summary["values"]]
    cell = [f"{100 * m:.1f} [{100 * lo:.1f}, {100 * hi:.1f}]" + (f" ({int(c)}/{int(n)} collapsed)" if c else "")
            for m, lo, hi, c, n in summary[["mean", "ci_low", "ci_high", "collapsed", "n_seeds"]].values]
    wide = summary.assign(cell=cell).pivot(index=["loss", "updates_per_step"], columns="learning_rate", values="cell")
    order = {loss.label: i for i, loss in enumerate(stability.LOSSES)}
    wide = wide.sort_index(key=lambda idx: idx.map(order) if idx.name == "loss" else idx)
    wide.columns = [f"LR {lr:g}" for lr in wide.columns]
    start = summary["start_mean"].mean()
    note = (f"Generated from `results/{preset}/stability_summary.csv` (notebook 07): final held-out avg@k in % "
            f"after the grid's RL run, mean and 95% t-interval over seeds, from the SFT start at {100 * start:.1f}%; "
            "the collapse criterion is `stability.Collapse`.")
    text = stability.reading(summary, stability.ranking(summary))
    return f"{note}\n\n{markdown_table(wide.reset_index())}\n\n" + "\n".join(f"- {t}" for t in text.splitlines())


def sources_section(preset: str = "tiny") -> str:
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


SECTIONS = {"results": results_section, "seed_gains": seed_gains_section, "claims": claims_section,
            "stability": stability_section,
            "sources": sources_section}


def write_readme(preset: str = "tiny", readme: Path = REPO / "README.md", sections=tuple(SECTIONS)) -> Path:
    """Regenerate the README's generated sections (``SECTIONS``) from ``results/``."""
    text = readme.read_text()
    for name in sections:
        text = replace_section(text, name, SECTIONS[name](preset))
    readme.write_text(text)
    return readme
