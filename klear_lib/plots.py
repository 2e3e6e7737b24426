"""Figures built only from results files (run records, eval tables), so every figure has a checked table."""
from __future__ import annotations

from pathlib import Path
from typing import Sequence

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from klear_lib.results import CONTROL, STAGE_ORDER  # noqa: E402
from klear_lib.stats import t_interval  # noqa: E402


# Human names of run-record columns, for panel titles and axes (a column not listed keeps its own name).
LABELS = {"step": "optimizer step", "rl_step": "RL step", "loss": "loss (nats / token)",
          "mean_token_accuracy": "token accuracy", "learning_rate": "learning rate", "reward_mean": "mean reward",
          "accuracy": "training accuracy (share correct)", "entropy": "entropy (nats / token)",
          "grad_norm": "gradient norm", "clip_frac": "clipped-token share", "response_length": "response length (tokens)",
          # the four clipping cases (klear_lib.losses.policy.clip_cases), as shares of the response tokens
          "frac_adv_pos_ratio_high": "A > 0, ratio > 1 + ε_high", "frac_adv_pos_ratio_low": "A > 0, ratio < 1 − ε_low",
          "frac_adv_neg_ratio_low": "A < 0, ratio < 1 − ε_low", "frac_adv_neg_ratio_high": "A < 0, ratio > 1 + ε_high",
          "clipped_grad_share": "clipped tokens' share of |F·A|"}


def label(column: str) -> str:
    """``column``'s human name (``LABELS``)."""
    return LABELS.get(column, column.replace("_", " "))


def training_curves(record: str | Path | pd.DataFrame, columns: Sequence[str], *, x: str = "step",
                    title: str = "", smooth: int = 1):
    """One panel per column of a run record against ``x``: rows sharing an ``x`` (an RL step's several updates)
    are averaged first, so the curve shows progress rather than the updates' saw-tooth; then a rolling mean over
    ``smooth`` points."""
    df = pd.read_csv(record) if not isinstance(record, pd.DataFrame) else record
    df = df.groupby(x, as_index=False)[list(columns)].mean()
    fig, axes = plt.subplots(1, len(columns), figsize=(3.2 * len(columns), 2.6), squeeze=False)
    for ax, col in zip(axes[0], columns):
        ax.plot(df[x], df[col].rolling(smooth, min_periods=1).mean())
        ax.set_title(label(col), fontsize=9)
        ax.set_xlabel(label(x), fontsize=8)
        ax.grid(alpha=0.3)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return fig


# Run-record columns that are shares, drawn in % (their panel titles say so).
PERCENT_COLUMNS = {"accuracy": "training accuracy (% correct)", "clip_frac": "clipped tokens (% of response tokens)"}


def rl_seed_records(runs: Path, reward: str) -> pd.DataFrame:
    """The main job's RL run records of ``reward`` ("math" or "code") over its RL seeds in the folder ``runs``
    (``Recipe.runs``), one ``seed`` column: ``rl_<reward>.csv`` is the main seed (0), ``rl_<reward>-s<N>.csv`` seed N
    (``klear_lib.pipeline.seed_stage``)."""
    frames = []
    for path in sorted(Path(runs).glob(f"rl_{reward}*.csv")):
        suffix = path.stem[len(f"rl_{reward}"):]
        if suffix and not suffix.startswith("-s"):
            continue
        frames.append(pd.read_csv(path).assign(seed=int(suffix[2:]) if suffix else 0, stage=f"rl_{reward}"))
    if not frames:
        raise FileNotFoundError(f"no run record rl_{reward}*.csv under {runs}")
    return pd.concat(frames, ignore_index=True)


def rl_seed_curves(records: pd.DataFrame, columns: Sequence[str], title: str = ""):
    """The main job's RL curves over its seeds (``rl_seed_records``): mean and 95% t-band over seeds, each seed a
    thin line, shares in % (``PERCENT_COLUMNS``), three panels a row, a rolling mean over 1/15 of the run (none for
    runs under 30 steps), which the title says."""
    seeds, steps = records["seed"].nunique(), records["rl_step"].nunique()
    return condition_curves(records, columns, by="stage", band=seeds > 1, smooth=max(1, steps // 15),
                            scale={c: 100 for c in PERCENT_COLUMNS},
                            panel_titles={c: PERCENT_COLUMNS.get(c, label(c)) for c in columns},
                            title=f"{title}: mean and 95% t-band over {seeds} RL seeds (thin: one seed)")


def stage_rows_over_seeds(eval_rows: pd.DataFrame, seed_gains: pd.DataFrame) -> pd.DataFrame:
    """``eval_rows`` (the main seed's avg@k per stage) plus one row per further RL seed and stage, as
    ``<stage>-s<i>`` (i = 1, 2, ... in ``per_seed`` order), for ``stage_bars``: each seed's level is the SFT
    model's avg@k plus that seed's paired gain over SFT (``eval_seed_gains.csv``: the same problems and sampling
    seed, so the paired gain is the difference of the two means). A stage with no row of the main seed in
    ``eval_rows`` (the random-reward control's) gets its main seed the same way, as ``<stage>-s0``."""
    avg = eval_rows[eval_rows["metric"] == "avg@k"].set_index(["stage", "benchmark"])
    extra = []
    for r in seed_gains[seed_gains["before"] == "sft"].itertuples():
        if ("sft", r.benchmark) not in avg.index:
            continue
        sft = avg.loc[("sft", r.benchmark)]
        first = 1 if (r.after, r.benchmark) in avg.index else 0
        for i, gain in list(enumerate(str(r.per_seed).split(";")))[first:]:
            extra.append({"stage": f"{r.after}-s{i}", "benchmark": r.benchmark, "metric": "avg@k", "k": sft["k"],
                          "mean": sft["mean"] + float(gain), "n_problems": sft.get("n_problems", r.n_problems)})
    return pd.concat([eval_rows, pd.DataFrame(extra)], ignore_index=True)


def stage_bars(eval_rows: pd.DataFrame, metric: str = "avg@k", title: str = ""):
    """``metric`` in % per stage, one panel per benchmark with its own y axis (benchmarks differ in scale). A stage
    read once (one model) shows its 95% bootstrap interval over problems; a stage with further RL seeds (stage
    labels ``<stage>-s<N>``, ``klear_lib.pipeline.seed_stage``) shows the mean over seeds, its 95% t-interval over
    seeds (cut at 0) and a dot per seed. Each bar carries its value."""
    df = eval_rows[eval_rows["metric"] == metric].assign(
        base=lambda d: d["stage"].str.replace(r"-s\d+$", "", regex=True))
    rank = {s: i for i, s in enumerate(STAGE_ORDER)}
    benches = sorted(df["benchmark"].unique())
    stages = sorted(dict.fromkeys(df["base"]), key=lambda s: rank.get(s, len(rank)))
    width = max(3.4, 0.75 * len(stages))  # per panel: five stages with the control's two
    fig, axes = plt.subplots(1, len(benches), figsize=(0.8 + width * len(benches), 3.3), squeeze=False,
                             layout="constrained")
    seeds_seen = 1
    for ax, bench in zip(axes[0], benches):
        sub = df[df["benchmark"] == bench]
        first = sub.iloc[0]
        for i, stage in enumerate(stages):
            rows = sub[sub["base"] == stage]
            if rows.empty:
                continue
            values = 100 * rows["mean"].to_numpy()
            if len(rows) == 1:
                mean, lo, hi = values[0], 100 * rows["ci_low"].iloc[0], 100 * rows["ci_high"].iloc[0]
            else:
                seeds_seen = max(seeds_seen, len(rows))
                mean, lo, hi = t_interval(values)
                ax.scatter([i] * len(values), values, s=10, color="black", zorder=3)
            lo, hi = max(lo, 0.0), min(hi, 100.0)  # a share in %
            ax.bar(i, mean, 0.7, color=COLORS[i % len(COLORS)], alpha=0.85)
            if abs(hi) != float("inf"):
                ax.errorbar(i, mean, yerr=[[mean - lo], [hi - mean]], color="black", capsize=3, lw=1)
            ax.text(i, 0, f"{mean:.1f}", ha="center", va="bottom", fontsize=8, color="white", fontweight="bold")
        k = metric.replace("@k", f"@{int(first['k'])}")
        size = f", {int(first['n_problems'])} problems" if "n_problems" in sub else ""
        ax.set_title(f"{bench}: {k}{size}", fontsize=9)
        # the random-reward control's stages on two lines: "random" over the stage it controls
        ax.set_xticks(range(len(stages)), [s.replace(CONTROL, CONTROL[:-1] + "\n", 1) for s in stages], fontsize=8)
        ax.set_ylabel(f"{k} (%)", fontsize=8)
        ax.set_ylim(bottom=0)
        ax.tick_params(labelsize=8)
        ax.grid(axis="y", alpha=0.3)
    note = "whiskers: 95% bootstrap interval over problems"
    if seeds_seen > 1:
        note = (f"RL stages: mean over {seeds_seen} RL seeds (dots: one seed each), whiskers 95% t-interval over "
                f"seeds; SFT and base: one model, {note}")
    fig.suptitle(f"{title}\n{note}" if title else note, fontsize=9)
    return fig


def ablation_bars(summary: pd.DataFrame, metric: str = "avg@k", title: str = ""):
    """Bars per condition (in row order) grouped by benchmark, in %: mean over seeds, 95% t-interval whiskers
    (none when infinite, i.e. one seed) and one dot per seed, from ``klear_lib.ablations.table.aggregate`` rows.
    A benchmark on which every run scored 0 gets no panel space; the title says which."""
    df = summary[summary["metric"] == metric]
    empty = sorted(b for b, g in df.groupby("benchmark") if (g["mean"] == 0).all()
                   and all(max(v, default=0) == 0 for v in g["values"] if isinstance(v, tuple)))
    df = df[~df["benchmark"].isin(empty)]
    benches, conds = sorted(df["benchmark"].unique()), list(dict.fromkeys(df["condition"]))
    ks = df.drop_duplicates("benchmark").set_index("benchmark")["k"] if "k" in df else {}
    fig, ax = plt.subplots(figsize=(1.6 + 0.45 * len(conds) * max(len(benches), 1), 3.0))
    width = 0.8 / max(len(conds), 1)
    for i, cond in enumerate(conds):
        sub = df[df["condition"] == cond].set_index("benchmark").reindex(benches)
        xs = [b + i * width for b in range(len(benches))]
        err = [100 * (sub["mean"] - sub["ci_low"]).where(sub["ci_low"] > -float("inf")),
               100 * (sub["ci_high"] - sub["mean"]).where(sub["ci_high"] < float("inf"))]
        ax.bar(xs, 100 * sub["mean"], width, yerr=err, capsize=2, label=cond)
        for x, vals in zip(xs, sub["values"]):
            if isinstance(vals, tuple):
                ax.scatter([x] * len(vals), [100 * v for v in vals], s=6, color="black", zorder=3)
    ax.set_xticks([b + width * (len(conds) - 1) / 2 for b in range(len(benches))],
                  [f"{b}\n{metric.replace('@k', f'@{int(ks[b])}')}" if b in ks else b for b in benches])
    ax.set_ylabel(f"{metric} (%): mean over seeds", fontsize=8)
    note = "whiskers: 95% t-interval over seeds; dots: one seed each"
    if empty:
        note += f"; {', '.join(empty)} left out: 0 for every run"
    ax.set_title(f"{title}\n{note}" if title else note, fontsize=9)
    if benches:  # every benchmark at 0: no bar, no legend
        ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    return fig


# Distinct colours and markers, so arms stay apart in print and for colour-blind readers (tab10 is built for it).
COLORS = ["tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple", "tab:brown", "tab:pink", "tab:gray"]
MARKERS = ["o", "s", "^", "D", "v", "P", "X", "*"]


def condition_curves(df: pd.DataFrame, columns: Sequence[str], *, x: str = "rl_step", by: str = "condition",
                     title: str = "", smooth: int = 1, band: bool = False, scale: float | dict = 1.0,
                     ylabel: str | dict | None = None, panel_titles: dict | None = None, notes: dict | None = None):
    """One panel per column (three to a row), one line per ``by`` value in its own colour and marker: the mean
    over seeds at each ``x`` (rolling mean over ``smooth`` points, said in the title), each seed as a thin line and,
    with ``band``, the 95% t-interval over seeds as a shaded band; from run records or held-out curve rows (long
    ``df`` with a ``seed`` column). Values are multiplied by ``scale`` (a number, or a dict per column: 100 draws
    fractions as %); ``ylabel`` is one label or a dict per column; ``panel_titles`` maps a column to its panel's
    title (default: its human name, ``label``); ``notes`` a column to a line written inside its panel. Few distinct
    ``x`` values (held-out checkpoints) are each ticked. One legend for the figure, under it."""
    ncols = min(3, len(columns))
    nrows = -(-len(columns) // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(3.6 * ncols, 2.7 * nrows + 0.5), squeeze=False,
                             layout="constrained")
    groups = list(df.groupby(by, sort=False))
    steps = sorted(df[x].dropna().unique())
    for ax, col in zip(axes.flat, columns):
        factor = scale.get(col, 1.0) if isinstance(scale, dict) else scale
        for i, (name, grp) in enumerate(groups):
            color, marker = COLORS[i % len(COLORS)], MARKERS[i % len(MARKERS)]
            # each seed smoothed on its own, then the mean and band over the smoothed seeds (what the lines show)
            smoothed = {}
            for seed_id, seed in grp.groupby("seed"):
                per_x = seed.groupby(x)[col].mean().dropna() * factor
                smoothed[seed_id] = per_x.rolling(smooth, min_periods=1).mean()
                ax.plot(per_x.index, smoothed[seed_id], color=color, lw=0.5, alpha=0.3)
            per_seed = pd.concat(smoothed, names=["seed", x]).swaplevel().sort_index()
            mean = per_seed.groupby(level=0).mean()  # a benchmark read only at the last step: one marker
            every = max(1, len(mean) // 8)  # markers staggered per arm, so lines that coincide stay apart
            ax.plot(mean.index, mean, color=color, lw=1.6, marker=marker,
                    ms=4, markevery=(min(i * max(1, every // len(groups)), max(len(mean) - 1, 0)), every),
                    label=str(name))
            if band:
                floor = 0.0 if (grp[col].dropna() >= 0).all() else -float("inf")  # a share or a norm stays >= 0
                cis = [(at, max(lo, floor), hi) for at, (_, lo, hi) in
                       zip(mean.index, (t_interval(v.to_numpy()) for _, v in per_seed.groupby(level=0)))]
                cis = [c for c in cis if abs(c[1]) != float("inf")]
                if cis:
                    xs, lo, hi = zip(*cis)
                    ax.fill_between(xs, lo, hi, color=color, alpha=0.12, lw=0)
        ax.set_title((panel_titles or {}).get(col, label(col)), fontsize=9)
        ax.set_xlabel(label(x), fontsize=8)
        text = ylabel.get(col) if isinstance(ylabel, dict) else ylabel
        if text:
            ax.set_ylabel(text, fontsize=8)
        if (notes or {}).get(col):
            ax.text(0.02, 0.97, notes[col], transform=ax.transAxes, fontsize=7, va="top", color="0.25")
        if len(steps) <= 12:
            ax.set_xticks(steps)
        ax.tick_params(labelsize=8)
        ax.grid(alpha=0.3)
    for ax in list(axes.flat)[len(columns):]:
        ax.remove()
    handles, labels_ = axes.flat[0].get_legend_handles_labels()
    if len(groups) > 1:
        fig.legend(handles, labels_, fontsize=8, loc="outside lower center", ncol=min(len(groups), 6), frameon=False)
    fig.suptitle(f"{title} (rolling mean over {smooth} {label(x)}s)" if smooth > 1 else title, fontsize=10)
    return fig


def percent_format(values) -> str:
    """A cell format for fractions drawn as %: enough decimals that the largest shows three significant digits
    (0.0042 -> "0.420%", 0.37 -> "37.0%")."""
    top = max((abs(float(v)) for v in values if pd.notna(v)), default=1.0) * 100
    digits = 1 if top >= 10 else 2 if top >= 1 else 3
    return "{:.%df}%%" % digits


def stability_map(summary: pd.DataFrame, metric: str, *, title: str = "", runs: pd.DataFrame | None = None):
    """Heat map of ``metric`` per loss (rows, in order of appearance) × learning rate (columns), one panel per
    updates-per-step setting, each cell annotated with its mean over seeds and, under it, its 95% t-interval over
    seeds (cut at 0): from ``ci_low``/``ci_high`` for the held-out ``mean``, from the per-seed ``runs`` rows
    (``klear_lib.ablations.stability`` rows) for any other metric; ``collapse_share`` shows collapsed / seeds. From
    ``klear_lib.ablations.stability.aggregate`` rows. The metrics are fractions, drawn as % with ``percent_format``
    digits."""
    settings = sorted(summary["updates_per_step"].unique())
    losses = list(dict.fromkeys(summary["loss"]))
    lrs = sorted(summary["learning_rate"].unique())
    fig, axes = plt.subplots(1, len(settings), figsize=(1.8 + 1.25 * len(lrs) * len(settings), 1.3 + 0.5 * len(losses)),
                             squeeze=False, layout="constrained")
    fmt = percent_format(summary[metric])
    spread = _cell_intervals(summary, metric, runs)
    summary = summary.assign(**{metric: summary[metric].astype(float) * 100})
    vmin = float(summary[metric].min())
    vmax = max(float(summary[metric].max()), vmin + 1e-6)
    for ax, updates in zip(axes[0], settings):
        sub = summary[summary["updates_per_step"] == updates].pivot(index="loss", columns="learning_rate",
                                                                   values=metric).reindex(index=losses, columns=lrs)
        image = ax.imshow(sub.to_numpy(dtype=float), aspect="auto", cmap="viridis", vmin=vmin, vmax=vmax)
        for r, loss in enumerate(losses):
            for c, lr in enumerate(lrs):
                v = sub.iloc[r, c]
                if pd.isna(v):
                    continue
                bright = (v - vmin) / (vmax - vmin) > 0.6  # viridis turns light: dark text there
                below = spread.get((loss, lr, updates), "")
                if isinstance(below, tuple):
                    lo, hi = below
                    below = f"[{fmt.format(max(lo, 0) * 100)}, {fmt.format(hi * 100)}]".replace("%", "")
                ax.text(c, r, fmt.format(v) + (f"\n{below}" if below else ""), ha="center", va="center",
                        fontsize=6.5, color="black" if bright else "white", linespacing=1.1)
        ax.set_xticks(range(len(lrs)), [f"{lr:g}" for lr in lrs], fontsize=7)
        ax.set_yticks(range(len(losses)), losses, fontsize=7)
        ax.set_xlabel("learning rate", fontsize=8)
        ax.set_title(f"{updates} updates / step", fontsize=9)
    fig.colorbar(image, ax=axes[0].tolist(), shrink=0.8, label="%")
    how = "collapsed seeds / seeds" if metric == "collapse_share" else "mean over seeds [95% t-interval]"
    fig.suptitle(f"{title or label(metric)} (%): {how}", fontsize=10)
    return fig


def _cell_intervals(summary: pd.DataFrame, metric: str, runs: pd.DataFrame | None) -> dict:
    """Per (loss, learning_rate, updates_per_step): the ``(low, high)`` 95% interval of ``metric`` over seeds, or
    "k/n seeds" for ``collapse_share``; {} when neither the summary nor ``runs`` has what it takes."""
    key = ["loss", "learning_rate", "updates_per_step"]
    if metric == "collapse_share":
        return {tuple(r[:3]): f"{int(r[3])}/{int(r[4])} seeds"
                for r in summary[key + ["collapsed", "n_seeds"]].itertuples(index=False)}
    if metric == "mean" and {"ci_low", "ci_high"} <= set(summary):
        return {tuple(r[:3]): (float(r[3]), float(r[4])) for r in summary[key + ["ci_low", "ci_high"]].itertuples(
            index=False) if abs(r[3]) != float("inf")}
    if runs is None or metric not in runs:
        return {}
    out = {}
    for cell, grp in runs.groupby(key):
        values = grp.groupby("seed")[metric].mean().dropna().to_numpy()
        if len(values) > 1:
            _, lo, hi = t_interval(values)
            out[tuple(cell)] = (float(lo), float(hi))
    return out


def stability_lines(summary: pd.DataFrame, *, title: str = ""):
    """Final accuracy (mean and 95% interval over seeds, cut at 0) against the learning rate, a line per loss in its
    own colour and marker, one panel per updates-per-step setting; a cell where any seed collapsed is drawn with a
    cross. From ``aggregate`` rows (fractions, drawn in %)."""
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
            mean = 100 * sub["mean"]
            err = [mean - 100 * sub["ci_low"].clip(lower=0), 100 * sub["ci_high"] - mean]  # a share is >= 0
            line = ax.errorbar(x, mean, yerr=err, marker=MARKERS[i % len(MARKERS)], color=COLORS[i % len(COLORS)],
                               ms=4, capsize=2, lw=1, label=loss)
            bad = sub["collapsed"] > 0
            ax.scatter(x[bad], mean[bad], marker="x", s=60, color=line[0].get_color(), zorder=3)
        if "start_mean" in summary:
            start = summary.loc[summary["updates_per_step"] == updates, "start_mean"].mean()
            ax.axhline(100 * start, color="grey", ls=":", lw=1, label="start (SFT)")
        ax.set_xscale("log")
        ax.set_xticks(lrs, [f"{lr:g}" for lr in lrs], fontsize=7)
        ax.minorticks_off()
        ax.set_xlabel("learning rate", fontsize=8)
        ax.set_title(f"{updates} updates / step (x: a seed collapsed)", fontsize=9)
        ax.set_ylim(bottom=0)
    axes[0][0].set_ylabel("final held-out avg@k (%)", fontsize=8)
    axes[0][-1].legend(fontsize=7, loc="best")
    fig.suptitle(title, fontsize=10)
    return fig


FOREST_LIMIT = 25.0  # points: a panel's axis never reaches further; longer intervals end in an arrow
VERDICT_COLORS = {"replicated": "tab:green", "opposite": "tab:red", "equivalent": "tab:blue",
                  "smaller than claimed": "tab:purple", "undecided": "tab:gray"}


def _clip_mark(ax, lo: float, hi: float, y: float, limit: float, color: str, lw: float) -> None:
    """The segment [lo, hi] at height ``y`` cut to ±``limit``, with an arrowhead where it runs past the frame."""
    ax.plot([max(lo, -limit), min(hi, limit)], [y, y], color=color, lw=lw, zorder=3, solid_capstyle="butt")
    for end, side in ((lo, -1), (hi, 1)):
        if side * end > limit:
            ax.plot(side * limit, y, marker=">" if side > 0 else "<", color=color, ms=6, zorder=4)


def _span(ax, lo: float, hi: float, y: float, limit: float, **style) -> None:
    """A paper reading at height ``y``: a diamond for one value, a bar for a range (a figure's two ends, or
    several releases of the benchmark), cut to ±``limit``."""
    if pd.isna(lo):
        return
    lo_c, hi_c = max(min(lo, limit), -limit), max(min(hi, limit), -limit)
    if abs(hi - lo) < 0.05:
        ax.plot(lo_c, y, "D", ms=6, zorder=5, **style)
    else:
        ax.plot([lo_c, hi_c], [y, y], lw=5, alpha=0.55, solid_capstyle="butt", zorder=2, color=style["color"])


def _forest_panel(ax, df: pd.DataFrame) -> None:
    """One paper table or figure of the forest plot: a row per claim, top to bottom. The x axis reaches its
    family-wise interval ends, seeds and paper readings, up to ``FOREST_LIMIT`` (an interval beyond gets an arrow)."""
    cols = ("adj_ci_low_pts", "adj_ci_high_pts", "paper_diff_low_pts", "paper_diff_high_pts")
    seeds = [abs(float(v)) for s in df.get("seed_diffs_pts", []) for v in str(s or "").split(";") if v]
    finite = [v for v in list(pd.concat([df[c].abs() for c in cols])) + seeds if pd.notna(v) and v != float("inf")]
    limit = min(FOREST_LIMIT, max(finite + [1.0]) * 1.08)
    for y, r in zip(range(len(df))[::-1], df.to_dict("records")):
        color = VERDICT_COLORS.get(r["verdict"], "tab:gray")
        if pd.notna(r["margin_pts"]):  # the equivalence zone, on the claimed side's scale
            ax.fill_between([-r["margin_pts"], r["margin_pts"]], y - 0.4, y + 0.4, color="tab:blue", alpha=0.08, lw=0)
        table = r["paper_statistic"] == "table"  # a table's number is filled; one read off a figure is hollow
        _span(ax, r["paper_diff_low_pts"], r["paper_diff_high_pts"], y + 0.28, limit, color="0.55",
              mfc="0.55" if table else "none")
        _span(ax, r["carried_low_pts"], r["carried_high_pts"], y + 0.28, limit, color="tab:orange")
        seeds = [float(v) for v in str(r.get("seed_diffs_pts") or "").split(";") if v not in ("", "nan")]
        ax.scatter([min(max(v, -limit), limit) for v in seeds], [y - 0.25] * len(seeds), s=7, color="0.45",
                   zorder=2, lw=0)
        _clip_mark(ax, r["adj_ci_low_pts"], r["adj_ci_high_pts"], y, limit, color, 5.0)
        _clip_mark(ax, r["ci_low_pts"], r["ci_high_pts"], y, limit, "black", 1.0)
        ax.plot(r["ours_diff_pts"], y, "o", color="black", ms=4, zorder=6)
        ax.text(1.01, y, f"{r['verdict']}  ·  base {r['paper_base_pct']:.0f}% → {r['ours_base_pct']:.1f}%",
                transform=ax.get_yaxis_transform(), fontsize=7, color=color, va="center")
    source = ["" if s == "paper" else f" [{s}]" for s in df["source"]]
    ax.set_yticks(range(len(df))[::-1], [f"{b} > {w}{s} · {bench} ({n} seeds)" for b, w, s, bench, n in
                                        zip(df["better"], df["worse"], source, df["benchmark"], df["n_seeds"])],
                  fontsize=7)
    ax.axvline(0, color="black", lw=0.7)
    ax.set_xlim(-limit, limit)
    ax.set_ylim(-0.7, len(df) - 0.3)
    ax.grid(axis="x", alpha=0.3)


def claims_forest(claims: pd.DataFrame, title: str = ""):
    """A forest plot of claims (``klear_lib.ablations.claims`` rows run), one panel and x axis per paper table or
    figure: per claim our Δ = better − worse in points (dot) with its family-wise interval (thick, coloured by the
    decision it gives) and its plain 95% interval (thin), the per-seed paired differences (grey dots), the paper's
    Δ in its own points (grey: a diamond, or a bar for a range) and carried to our base rate (orange: the size the
    verdict reads), and the equivalence zone (blue). The decision and both base rates are written at the right."""
    df = claims[claims["n_seeds"] > 0].reset_index(drop=True)
    groups = list(dict.fromkeys(df["table"]))
    sizes = [int((df["table"] == g).sum()) for g in groups]
    fig, axes = plt.subplots(len(groups), 1, figsize=(9.0, 1.3 + 0.36 * sum(sizes) + 0.45 * len(groups)),
                             gridspec_kw={"height_ratios": [n + 0.6 for n in sizes]}, layout="constrained",
                             squeeze=False)
    for ax, group in zip(axes[:, 0], groups):
        sub = df[df["table"] == group].reset_index(drop=True)
        _forest_panel(ax, sub)
        ax.set_title(group, fontsize=8, loc="left", fontweight="bold")
    axes[-1, 0].set_xlabel("Δ = claimed better − claimed worse, points of avg@k (%)", fontsize=8)
    handles = [plt.Line2D([], [], marker="o", color="black", lw=1.0, ms=4, label="ours: mean Δ, plain 95% CI"),
               plt.Line2D([], [], color="tab:gray", lw=5, label="ours: family-wise CI (verdict; colour = decision)"),
               plt.Line2D([], [], marker="o", color="0.45", lw=0, ms=3, label="ours: one seed's paired Δ"),
               plt.Line2D([], [], marker="D", color="0.55", lw=0, label="paper's Δ, its own points (a table)"),
               plt.Line2D([], [], marker="D", color="0.55", mfc="none", lw=0, label="… read off a figure"),
               plt.Line2D([], [], marker="D", color="tab:orange", lw=0, label="paper's Δ at our base rate"),
               plt.Rectangle((0, 0), 1, 1, color="tab:blue", alpha=0.15, label="equivalence zone (± half of it)"),
               plt.Line2D([], [], color="0.55", lw=5, alpha=0.55, label="a bar: a range of paper readings")]
    fig.legend(handles=handles, fontsize=6.5, loc="outside lower center", ncol=3, frameon=False)
    fig.suptitle(title, fontsize=9)
    return fig


def save(fig, path: Path) -> Path:
    """Save ``fig`` at ``path`` (``Recipe.figure``) and return it (the figure is closed: notebooks display the file)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return path
