"""SFT subsets for the ablations: difficulty x correctness (Table 2), teacher choice (Table 3), top-K sources at
a fixed budget via K-Center Greedy (Tables 4-5). Pure: rows in, rows out (plus the funnel of what was dropped)."""
from __future__ import annotations

import logging
from typing import Sequence

from klear_lib.data.curation import Funnel, Step, filter_correctness, keep_where
from klear_lib.data.kcenter import kcenter_select

log = logging.getLogger(__name__)


def stratified_budget(counts: dict[str, int], budget: int) -> dict[str, int]:
    """Split ``budget`` over strata proportionally to ``counts`` (largest remainder; ties by name)."""
    total = sum(counts.values())
    if total <= budget:
        return dict(counts)
    exact = {k: budget * v / total for k, v in counts.items()}
    out = {k: int(e) for k, e in exact.items()}
    rest = sorted(counts, key=lambda k: (-(exact[k] - out[k]), k))
    for k in rest[: budget - sum(out.values())]:
        out[k] += 1
    return out


def select_budget(rows: Sequence[dict], budget: int, *, seed: int = 0) -> list[dict]:
    """K-Center Greedy to ``budget`` rows, stratified by ability (shares as in ``rows``), input order kept."""
    by_ability: dict[str, list[dict]] = {}
    for row in rows:
        by_ability.setdefault(row["ability"], []).append(row)
    shares = stratified_budget({k: len(v) for k, v in by_ability.items()}, budget)
    chosen = set()
    for ability, group in sorted(by_ability.items()):
        picked = kcenter_select(group, shares[ability], seed=seed,  # K-Center Greedy sees prompt + response
                                text=lambda r: r["messages"][0]["content"] + "\n" + r["messages"][1]["content"])
        chosen.update(r["id"] for r in picked)
    return [r for r in rows if r["id"] in chosen]


def sft_subset(pool: Sequence[dict], *, difficulty: str | None = None, correctness: str = "all",
               teachers: Sequence[str] | None = None, top_k: int | None = None, budget: int | None = None,
               seed: int = 0, ability: str | None = None, funnel: Funnel | None = None) -> list[dict]:
    """An SFT set from the teacher pool.

    ``difficulty``: None | "easy" | "hard" (reference-model label); ``correctness``: "all" / "mixed" (keep
    correct and incorrect, Table 2's "Mixed") | "only_correct" | "by_difficulty" (easy: correct only, hard: all);
    ``teachers``: names to keep (Table 3); ``top_k``: keep the k best-ranked teachers per ability (Tables 4-5);
    ``budget``: K-Center Greedy down to that many rows, stratified by ability; ``ability``: "math" | "code".
    """
    funnel = funnel if funnel is not None else Funnel()
    steps = [
        ("ability", ability is not None, lambda r: None if r["ability"] == ability else "other_ability"),
        ("teachers", teachers is not None, lambda r: None if r["teacher"] in set(teachers or ()) else "teacher"),
        ("top_k", top_k is not None, lambda r: None if r["teacher_rank"] <= top_k else f"rank>{top_k}"),
        ("difficulty", difficulty is not None, lambda r: None if r["difficulty"] == difficulty else "difficulty"),
    ]
    rows = list(pool)
    for name, active, reason in steps:
        if active:
            rows = funnel.run("sft_subset", rows, lambda r: keep_where(r, name, reason))
    rows = funnel.run("sft_subset", rows, lambda r: filter_correctness(r, correctness))
    if budget is not None:
        if budget > len(rows):
            log.warning("budget %d exceeds the %d rows left; keeping all", budget, len(rows))
        n_in, rows = len(rows), select_budget(rows, budget, seed=seed)
        dropped = {"not_selected": n_in - len(rows)} if n_in > len(rows) else {}
        funnel.add("sft_subset", Step("kcenter_budget", n_in, len(rows), dropped))
    return rows
