"""Tables about a world for the notebook and the data cards (pandas; deterministic order and rounding)."""
from __future__ import annotations

from collections import Counter
from typing import Sequence

import matplotlib.pyplot as plt
import pandas as pd

from klear_lib.data.curation import Funnel, item_of, ngram_index, prompt_text, tier_of
from klear_lib.data.sources import BENCHMARKS, get_source, try_load_benchmark


def funnel_frame(funnel: Funnel) -> pd.DataFrame:
    return pd.DataFrame(funnel.records())


def split_counts(splits: dict[str, list[dict]]) -> pd.DataFrame:
    """Per split: rows, distinct items, rows per ability and per tier."""
    recs = []
    for name, rows in sorted(splits.items()):
        ab, tiers = Counter(r["ability"] for r in rows), Counter(tier_of(r) for r in rows)
        recs.append({"split": name, "rows": len(rows), "items": len({item_of(r) for r in rows}),
                     "math": ab.get("math", 0), "code": ab.get("code", 0),
                     **{f"t{k}": tiers.get(k, 0) for k in range(1, 6)}})
    return pd.DataFrame(recs).set_index("split")


def teacher_table(pool: Sequence[dict]) -> pd.DataFrame:
    """Per teacher: rank, rows, accuracy overall and per tier, mean response length (characters)."""
    df = pd.DataFrame(pool, columns=["teacher", "teacher_rank", "ability", "tier", "correct"]).rename(
        columns={"teacher_rank": "rank"}).assign(chars=[len(r["messages"][1]["content"]) for r in pool])
    out = df.groupby(["ability", "rank", "teacher"]).agg(rows=("correct", "size"), accuracy=("correct", "mean"),
                                                         mean_chars=("chars", "mean"))
    by_tier = df.pivot_table(index=["ability", "rank", "teacher"], columns="tier", values="correct", aggfunc="mean")
    by_tier.columns = [f"acc_t{int(c)}" for c in by_tier.columns]
    return out.join(by_tier).round(3)


def difficulty_table(pool: Sequence[dict]) -> pd.DataFrame:
    """Per ability and difficulty label: prompts, rows and the share of correct responses."""
    df = pd.DataFrame(pool, columns=["ability", "difficulty", "item_id", "correct"]).rename(columns={"item_id": "item"})
    return df.groupby(["ability", "difficulty"]).agg(prompts=("item", "nunique"), rows=("correct", "size"),
                                                    correct_share=("correct", "mean")).round(3)


def noise_table(splits: dict[str, list[dict]]) -> pd.DataFrame:
    """Injected-noise rows that survived into each RL/eval split (should be zero after the filters)."""
    recs = [{"split": name, "rows": len(rows), "noisy_rows": sum(bool(r["extra_info"].get("noise")) for r in rows)}
            for name in sorted(splits) if (rows := [r for r in splits[name] if "extra_info" in r])]
    return pd.DataFrame(recs).set_index("split")


def teacher_examples(pool: Sequence[dict], item: str) -> str:
    """Every teacher's first response to prompt ``item``, as printable text."""
    rows = sorted((r for r in pool if r["item_id"] == item and r["sample"] == 0), key=lambda r: r["teacher_rank"])
    if not rows:
        raise KeyError(f"no pool rows for item {item!r}")
    head = f"PROMPT: {rows[0]['messages'][0]['content']}  (reference answer {rows[0]['ground_truth'][:40]})\n"
    parts = [f"--- {r['teacher']} (rank {r['teacher_rank']}, correct={r['correct']})\n{r['messages'][1]['content']}"
             for r in rows]
    return head + "\n".join(parts)


def pick_item(pool: Sequence[dict], ability: str, tier: int) -> str:
    """The first item id (sorted) of ``ability`` and ``tier`` in the pool: a deterministic example."""
    return min(r["item_id"] for r in pool if r["ability"] == ability and r["tier"] == tier)


def plot_teacher_accuracy(table: pd.DataFrame):
    """Accuracy per tier for every teacher (one panel per ability); returns the figure."""
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.5))
    for ax, (ability, df) in zip(axes, table.groupby(level="ability")):
        acc = df[[c for c in df.columns if c.startswith("acc_t")]].dropna(axis=1, how="all")
        for (_, rank, name), vals in acc.iterrows():
            ax.plot(range(1, len(vals) + 1), vals.values, marker="o", label=f"{rank}. {name}")
        ax.set(title=f"{ability} teachers", xlabel="tier (number of operations)", ylabel="accuracy", ylim=(0, 1.02))
        ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def leakage_table(splits: dict[str, list[dict]], heldout: Sequence[str], extra_texts: Sequence[str] = (),
                  n: int = 9, boilerplate_df: int | None = None) -> pd.DataFrame:
    """Per training split: rows whose id is a held-out id, and rows hitting a held-out 9-gram (both must be 0)."""
    held = [r for name in heldout for r in splits[name]]
    ids = {item_of(r) for r in held}
    index = ngram_index([prompt_text(r) for r in held] + list(extra_texts), n, boilerplate_df)
    recs = [{"split": name, "rows": len(splits[name]),
             "heldout_ids": sum(item_of(r) in ids for r in splits[name]),
             "ngram_hits": sum(index.hits(prompt_text(r)) for r in splits[name])}
            for name in sorted(splits) if name not in heldout]
    return pd.DataFrame(recs).set_index("split")


def ablation_sizes(pool: Sequence[dict]) -> pd.DataFrame:
    """Rows available to each Table-2 cell (difficulty x correctness) per ability."""
    df = pd.DataFrame(pool, columns=["ability", "difficulty", "correct"])
    out = df.groupby(["ability", "difficulty"]).agg(mixed=("correct", "size"), only_correct=("correct", "sum"))
    return out.astype(int)


def benchmark_counts(mode: str = "auto") -> pd.DataFrame:
    """Rows per real benchmark in the common schema and where they came from; a skipped one says why."""
    recs = []
    for name in BENCHMARKS:
        rows, where = try_load_benchmark(name, mode)
        recs.append({"benchmark": name, "rows": len(rows or ()), "ability": get_source(name).ability, "from": where})
    return pd.DataFrame(recs).set_index("benchmark")
