"""Figures built only from results files (run records, eval tables), so every figure has a checked table."""
from __future__ import annotations

from pathlib import Path
from typing import Sequence

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from klear_lib.paths import FIGURES  # noqa: E402


def training_curves(record: str | Path | pd.DataFrame, columns: Sequence[str], *, x: str = "step",
                    title: str = "", smooth: int = 1):
    """One panel per column of a run record against ``x`` (rolling mean over ``smooth`` rows)."""
    df = pd.read_csv(record) if not isinstance(record, pd.DataFrame) else record
    fig, axes = plt.subplots(1, len(columns), figsize=(3.2 * len(columns), 2.6), squeeze=False)
    for ax, col in zip(axes[0], columns):
        ax.plot(df[x], df[col].rolling(smooth, min_periods=1).mean())
        ax.set_title(col, fontsize=9)
        ax.set_xlabel(x, fontsize=8)
        ax.grid(alpha=0.3)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return fig


def stage_bars(eval_rows: pd.DataFrame, metric: str = "avg@k", title: str = ""):
    """Grouped bars of ``metric`` per benchmark and stage, with 95% CI whiskers."""
    df = eval_rows[eval_rows["metric"] == metric]
    benches, stages = sorted(df["benchmark"].unique()), list(dict.fromkeys(df["stage"]))
    fig, ax = plt.subplots(figsize=(1.2 + 1.6 * len(benches), 2.8))
    width = 0.8 / max(len(stages), 1)
    for i, stage in enumerate(stages):
        sub = df[df["stage"] == stage].set_index("benchmark").reindex(benches)
        xs = [b + i * width for b in range(len(benches))]
        err = [sub["mean"] - sub["ci_low"], sub["ci_high"] - sub["mean"]]
        ax.bar(xs, sub["mean"], width, yerr=err, capsize=2, label=stage)
    ax.set_xticks([b + width * (len(stages) - 1) / 2 for b in range(len(benches))], benches)
    ax.set_ylabel(metric)
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def ablation_bars(summary: pd.DataFrame, metric: str = "avg@k", title: str = ""):
    """Bars per condition (in row order) grouped by benchmark: mean over seeds, 95% t-interval whiskers (none
    when infinite, i.e. one seed) and one dot per seed, from ``klear_lib.ablations.table.aggregate`` rows."""
    df = summary[summary["metric"] == metric]
    benches, conds = sorted(df["benchmark"].unique()), list(dict.fromkeys(df["condition"]))
    fig, ax = plt.subplots(figsize=(1.6 + 0.45 * len(conds) * len(benches), 2.8))
    width = 0.8 / max(len(conds), 1)
    for i, cond in enumerate(conds):
        sub = df[df["condition"] == cond].set_index("benchmark").reindex(benches)
        xs = [b + i * width for b in range(len(benches))]
        err = [(sub["mean"] - sub["ci_low"]).where(sub["ci_low"] > -float("inf")),
               (sub["ci_high"] - sub["mean"]).where(sub["ci_high"] < float("inf"))]
        ax.bar(xs, sub["mean"], width, yerr=err, capsize=2, label=cond)
        for x, vals in zip(xs, sub["values"]):
            if isinstance(vals, tuple):
                ax.scatter([x] * len(vals), vals, s=6, color="black", zorder=3)
    ax.set_xticks([b + width * (len(conds) - 1) / 2 for b in range(len(benches))], benches)
    ax.set_ylabel(f"{metric} (mean over seeds)")
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    return fig


def condition_curves(df: pd.DataFrame, columns: Sequence[str], *, x: str = "rl_step", by: str = "condition",
                     title: str = "", smooth: int = 1):
    """One panel per column, one line per ``by`` value: the mean over seeds at each ``x`` (rolling mean over
    ``smooth`` points), each seed as a thin line; from run records or held-out curve rows (long ``df`` with a
    ``seed`` column)."""
    fig, axes = plt.subplots(1, len(columns), figsize=(3.2 * len(columns), 2.7), squeeze=False)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for ax, col in zip(axes[0], columns):
        for i, (name, grp) in enumerate(df.groupby(by, sort=False)):
            color = colors[i % len(colors)]
            for _, seed in grp.groupby("seed"):
                per_x = seed.groupby(x)[col].mean().dropna()
                ax.plot(per_x.index, per_x.rolling(smooth, min_periods=1).mean(), color=color, lw=0.5, alpha=0.4)
            mean = grp.groupby(x)[col].mean().dropna()  # a benchmark read only at the last step: one marker
            ax.plot(mean.index, mean.rolling(smooth, min_periods=1).mean(), color=color, lw=1.5, marker="o", ms=2.5,
                    label=str(name))
        ax.set_title(col, fontsize=9)
        ax.set_xlabel(x, fontsize=8)
        ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize=7)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return fig


def stability_map(summary: pd.DataFrame, metric: str, *, title: str = "", fmt: str = "{:.2f}",
                  vmin: float | None = None, vmax: float | None = None):
    """Heat map of ``metric`` per loss (rows, in order of appearance) × learning rate (columns), one panel per
    updates-per-step setting, each cell annotated; from ``klear_lib.ablations.stability.aggregate`` rows."""
    settings = sorted(summary["updates_per_step"].unique())
    losses = list(dict.fromkeys(summary["loss"]))
    lrs = sorted(summary["learning_rate"].unique())
    fig, axes = plt.subplots(1, len(settings), figsize=(1.8 + 1.1 * len(lrs) * len(settings), 1.2 + 0.4 * len(losses)),
                             squeeze=False, layout="constrained")
    values = summary[metric].astype(float)
    vmin = float(values.min()) if vmin is None else vmin
    vmax = max(float(values.max()) if vmax is None else vmax, vmin + 1e-6)
    for ax, updates in zip(axes[0], settings):
        sub = summary[summary["updates_per_step"] == updates].pivot(index="loss", columns="learning_rate",
                                                                   values=metric).reindex(index=losses, columns=lrs)
        image = ax.imshow(sub.to_numpy(dtype=float), aspect="auto", cmap="viridis", vmin=vmin, vmax=vmax)
        for (r, c), v in pd.DataFrame(sub.to_numpy(dtype=float)).stack().items():
            ax.text(c, r, fmt.format(v), ha="center", va="center", fontsize=7, color="white")
        ax.set_xticks(range(len(lrs)), [f"{lr:g}" for lr in lrs], fontsize=7)
        ax.set_yticks(range(len(losses)), losses, fontsize=7)
        ax.set_xlabel("learning rate", fontsize=8)
        ax.set_title(f"{updates} updates / step", fontsize=9)
    fig.colorbar(image, ax=axes[0].tolist(), shrink=0.8)
    fig.suptitle(title or metric, fontsize=10)
    return fig


def stability_lines(summary: pd.DataFrame, *, title: str = "", ylabel: str = "final held-out avg@k"):
    """Final accuracy (mean and 95% interval over seeds) against the learning rate, a line per loss, one panel per
    updates-per-step setting; a cell where any seed collapsed is drawn with a cross. From ``aggregate`` rows."""
    settings = sorted(summary["updates_per_step"].unique())
    losses = list(dict.fromkeys(summary["loss"]))
    lrs = sorted(summary["learning_rate"].unique())
    fig, axes = plt.subplots(1, len(settings), figsize=(4.2 * len(settings), 3.4), squeeze=False, sharey=True,
                             layout="constrained")
    for ax, updates in zip(axes[0], settings):
        for i, loss in enumerate(losses):
            sub = summary[(summary["updates_per_step"] == updates) & (summary["loss"] == loss)]
            sub = sub.sort_values("learning_rate")
            x = sub["learning_rate"].astype(float) * (1 + 0.04 * (i - len(losses) / 2))  # dodge the bars
            err = [sub["mean"] - sub["ci_low"], sub["ci_high"] - sub["mean"]]
            line = ax.errorbar(x, sub["mean"], yerr=err, marker="o", ms=4, capsize=2, lw=1, label=loss)
            bad = sub["collapsed"] > 0
            ax.scatter(x[bad], sub["mean"][bad], marker="x", s=60, color=line[0].get_color(), zorder=3)
        if "start_mean" in summary:
            start = summary.loc[summary["updates_per_step"] == updates, "start_mean"].mean()
            ax.axhline(start, color="grey", ls=":", lw=1, label="start (SFT)")
        ax.set_xscale("log")
        ax.set_xticks(lrs, [f"{lr:g}" for lr in lrs], fontsize=7)
        ax.minorticks_off()
        ax.set_xlabel("learning rate", fontsize=8)
        ax.set_title(f"{updates} updates / step (x: a seed collapsed)", fontsize=9)
    axes[0][0].set_ylabel(ylabel, fontsize=8)
    axes[0][-1].legend(fontsize=7, loc="best")
    fig.suptitle(title, fontsize=10)
    return fig


VERDICT_COLORS = {"replicated": "tab:green", "opposite": "tab:red", "no effect of the paper's size": "tab:blue",
                  "underpowered": "tab:gray"}


def claims_power(claims: pd.DataFrame, title: str = ""):
    """One row per claim run (``klear_lib.ablations.claims`` rows): the claimed |Δ| (open diamond), the minimum
    detectable effect at the seeds run (bar, coloured by the decision) and our |Δ| with its interval folded onto
    the claimed side (line): a bar past the diamond is a claim the seeds could not have seen."""
    df = claims[claims["n_seeds"] > 0].reset_index(drop=True)
    fig, ax = plt.subplots(figsize=(8.5, 0.8 + 0.24 * max(len(df), 1)))
    ys = range(len(df))[::-1]
    for y, r in zip(ys, df.to_dict("records")):
        sign = 1 if r["paper_diff_pts"] >= 0 else -1  # read every claim on its own side of 0
        ax.barh(y, min(r["mde_pts"], 40), height=0.6, color=VERDICT_COLORS.get(r["verdict"], "tab:gray"), alpha=0.45)
        lo, hi = sorted((sign * r["ci_low_pts"], sign * r["ci_high_pts"]))
        ax.plot([max(lo, -40), min(hi, 40)], [y, y], color="black", lw=1)
        ax.plot(sign * r["ours_diff_pts"], y, "o", color="black", ms=3)
        ax.plot(abs(r["paper_diff_pts"]), y, "D", mfc="none", color="tab:orange", ms=5)
    ax.axvline(0, color="black", lw=0.5)
    ax.set_yticks(list(ys), [f"{r['table']} {r['better']}>{r['worse']} @{r['benchmark']} ({r['n_seeds']}s)"
                             for r in df.to_dict("records")], fontsize=6)
    ax.set_xlabel("points: bar = MDE (80% power, α = 0.05); ◇ = claimed |Δ|; ● and line = ours, 95% CI", fontsize=7)
    handles = [plt.Rectangle((0, 0), 1, 1, color=c, alpha=0.45) for c in VERDICT_COLORS.values()]
    ax.legend(handles, VERDICT_COLORS.keys(), fontsize=6, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    ax.set_title(title, fontsize=9)
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    return fig


def save(fig, name: str) -> Path:
    """Save ``fig`` as ``results/figures/<name>.png`` and return the path."""
    FIGURES.mkdir(parents=True, exist_ok=True)
    path = FIGURES / f"{name}.png"
    fig.savefig(path, dpi=110, bbox_inches="tight")
    return path
