"""The curation pipeline as pure functions (docs/paper.md §2.2-2.3): each returns ``(kept_rows, Step)``.

A ``Step`` reports what a filter kept and dropped, by reason; a ``Funnel`` collects steps per pool and
becomes ``results/<preset>/data_funnel.csv``. No I/O, no global RNG.
"""
from __future__ import annotations

import dataclasses
import re
from collections import Counter
from typing import Callable, Iterable, Mapping, Sequence

from klear_lib.data.schema import RowError, normalise_prompt, prompt_text, validate_rl_row, validate_sft_row
from klear_lib.rewards.judge import row_id

_TOKEN = re.compile(r"[a-z0-9]+")


@dataclasses.dataclass(frozen=True)
class Step:
    """One filter's report: ``rows_in`` -> ``rows_out`` with ``dropped`` counts by reason."""

    stage: str
    rows_in: int
    rows_out: int
    dropped: dict[str, int]
    note: str = ""


@dataclasses.dataclass
class Funnel:
    """Steps per pool, in order; ``records()`` gives the long-format table rows."""

    steps: list[tuple[str, Step]] = dataclasses.field(default_factory=list)

    def add(self, pool: str, step: Step) -> None:
        self.steps.append((pool, step))

    def run(self, pool: str, rows: Sequence[dict], *filters: Callable) -> list[dict]:
        """Apply each ``filter(rows) -> (rows, Step)`` in turn, adding its ``Step`` under ``pool``; the rows kept."""
        for fn in filters:
            rows, step = fn(rows)
            self.add(pool, step)
        return rows

    def records(self) -> list[dict]:
        """One dict per (pool, stage): pool, order, stage, rows_in, rows_out, dropped, dropped_by, note.

        ``dropped`` sums the reasons (a step that expands prompts into responses drops nothing)."""
        order: Counter = Counter()
        out = []
        for pool, s in self.steps:
            order[pool] += 1
            reasons = ";".join(f"{k}={v}" for k, v in sorted(s.dropped.items()))
            out.append({"pool": pool, "order": order[pool], "stage": s.stage, "rows_in": s.rows_in,
                        "rows_out": s.rows_out, "dropped": sum(s.dropped.values()), "dropped_by": reasons,
                        "note": s.note})
        return out


@dataclasses.dataclass
class World:
    """All splits (name -> rows) and the funnel of the curation that produced them (miniature or real)."""

    splits: dict[str, list[dict]]
    funnel: Funnel
    config_hash: str


def keep_where(rows: Sequence[dict], stage: str, reason_of: Callable[[dict], str | None],
               note: str = "") -> tuple[list[dict], Step]:
    """Keep rows whose ``reason_of(row)`` is None; count the others by the reason returned."""
    kept, dropped = [], Counter()
    for row in rows:
        reason = reason_of(row)
        if reason is None:
            kept.append(row)
        else:
            dropped[reason] += 1
    return kept, Step(stage, len(rows), len(kept), dict(sorted(dropped.items())), note)


def validate_rows(rows: Sequence, *, kind: str = "rl", on_error: str = "drop", **kwargs) -> tuple[list[dict], Step]:
    """Schema check. ``on_error="raise"`` raises ``RowError`` (id + field); ``"drop"`` counts ``invalid:<field>``."""
    check = validate_rl_row if kind == "rl" else validate_sft_row

    def reason(row):
        try:
            check(row, **kwargs)
        except RowError as err:
            if on_error == "raise":
                raise
            return f"invalid:{err.field}"
        return None

    return keep_where(rows, "validate", reason, note=f"policy={on_error}")


def exact_dedup(rows: Sequence[dict], key: Callable[[dict], str] | None = None) -> tuple[list[dict], Step]:
    """Keep the first row of each normalised prompt (or ``key(row)``); later copies are ``duplicate``."""
    key = key or (lambda r: normalise_prompt(prompt_text(r)))
    seen: set[str] = set()

    def reason(row):
        k = key(row)
        if k in seen:
            return "duplicate"
        seen.add(k)
        return None

    return keep_where(rows, "exact_dedup", reason)


def tokens(text: str) -> list[str]:
    """Lower-case alphanumeric word tokens (punctuation and LaTeX markup dropped)."""
    return _TOKEN.findall(text.lower())


def ngrams(text: str, n: int) -> set[tuple[str, ...]]:
    """Word n-grams of ``text``; a text shorter than ``n`` tokens is one gram (its whole token sequence)."""
    toks = tokens(text)
    if len(toks) < n:
        return {tuple(toks)} if toks else set()
    return {tuple(toks[i:i + n]) for i in range(len(toks) - n + 1)}


@dataclasses.dataclass(frozen=True)
class NgramIndex:
    """The n-grams of the evaluation texts, plus the whole token sequences of eval texts shorter than ``n``."""

    n: int
    grams: frozenset
    short: dict  # length -> set of token tuples

    def hits(self, text: str) -> bool:
        """True when ``text`` shares an n-gram with an eval text, or contains a short eval text's tokens."""
        toks = tokens(text)
        if ngrams(text, self.n) & self.grams:
            return True
        return any(tuple(toks[i:i + k]) in seqs for k, seqs in self.short.items() for i in range(len(toks) - k + 1))


def ngram_index(texts: Iterable[str], n: int, boilerplate_df: int | None = None) -> NgramIndex:
    """Index every evaluation text for ``decontaminate``.

    ``boilerplate_df``: n-grams found in that many or more distinct eval texts are template text ("the input is
    given from standard input in the following format") and are not indexed; None indexes every n-gram.
    NOTE(paper): the paper only says "9-gram overlap" (docs/paper.md §2.2); the template cut is ours (UNVERIFIED).
    """
    df: Counter = Counter()
    short: dict[int, set] = {}
    for text in {normalise_prompt(t) for t in texts}:
        toks = tuple(tokens(text))
        if 0 < len(toks) < n:
            short.setdefault(len(toks), set()).add(toks)
        else:
            df.update(ngrams(text, n))
    keep = {g for g, c in df.items() if boilerplate_df is None or c < boilerplate_df}
    return NgramIndex(n, frozenset(keep), short)


def decontaminate(rows: Sequence[dict], eval_texts: Iterable[str], n: int = 9, index: NgramIndex | None = None,
                  text: Callable[[dict], str] = prompt_text, boilerplate_df: int | None = None
                  ) -> tuple[list[dict], Step]:
    """Drop rows whose prompt shares a word n-gram with any evaluation text (AceReason-style 9-gram).

    Policy for short eval texts (fewer than ``n`` tokens, e.g. "Evaluate $\\log_264$."): a training prompt that
    contains their whole token sequence is contaminated too. A training prompt that is only a fragment of a
    longer eval text is not (it does not reveal the eval item).
    """
    index = ngram_index(eval_texts, n, boilerplate_df) if index is None else index
    return keep_where(rows, f"decontaminate_{index.n}gram", lambda r: "contaminated" if index.hits(text(r)) else None)


def decontaminate_heldout(rows: Sequence[dict], train_texts: Iterable[str], n: int = 9,
                          boilerplate_df: int | None = None, heldout_texts: Iterable[str] = ()
                          ) -> tuple[list[dict], Step]:
    """Drop held-out candidates that a training text would have been dropped against by ``decontaminate``: the
    same rule, applied from the other side, for a held-out split drawn after the training pools (which must stay
    as they are). Boilerplate is counted over the held-out texts (``heldout_texts`` and the candidates), as there."""
    index = ngram_index([*heldout_texts, *map(prompt_text, rows)], n, boilerplate_df)
    train = {normalise_prompt(t) for t in train_texts}
    train_grams = set().union(*(ngrams(t, n) for t in train)) & index.grams

    def reason(row):
        toks = tokens(prompt_text(row))
        if len(toks) >= n:
            return "contaminated" if ngrams(prompt_text(row), n) & train_grams else None
        seq = " ".join(toks)  # shorter than n: contaminated when a training text holds its whole token sequence
        return "contaminated" if any(f" {seq} " in f" {' '.join(tokens(t))} " for t in train) else None

    return keep_where(rows, f"decontaminate_{n}gram_vs_training", reason)


def exclude_ids(rows: Sequence[dict], ids: set[str], stage: str = "exclude_heldout_ids",
                reason: str = "heldout_id") -> tuple[list[dict], Step]:
    """Drop rows whose id is in ``ids`` (by default the held-out items), counted under ``reason``."""
    return keep_where(rows, stage, lambda r: reason if item_of(r) in ids else None)


def item_of(row: dict) -> str:
    """The item (prompt) id of a row: ``extra_info.id`` or an SFT row's ``item_id``."""
    return row.get("item_id") or row_id(row)


def tier_of(row: dict) -> int | None:
    """The tier of an SFT row (``tier``) or an RL row (``extra_info.tier``)."""
    return row.get("tier") if "messages" in row else row["extra_info"].get("tier")


def label_difficulty(rows: Sequence[dict], pass_rates: Mapping[str, float], *, threshold: float = 0.5,
                     hard_tier_min: int = 3) -> tuple[list[dict], Step]:
    """Set ``difficulty``: reference pass rate < ``threshold`` -> hard; tier >= ``hard_tier_min`` as fallback.

    Works on SFT rows (``difficulty`` key) and RL rows (``extra_info.difficulty``); nothing is dropped.
    """
    out, counts = [], Counter()
    for row in rows:
        rate = pass_rates.get(item_of(row))
        if rate is None:
            label, how = ("hard" if (tier_of(row) or 0) >= hard_tier_min else "easy"), "tier_fallback"
        else:
            label, how = ("hard" if rate < threshold else "easy"), "reference_model"
        counts[f"{label}:{how}"] += 1
        out.append({**row, "difficulty": label} if "messages" in row
                   else {**row, "extra_info": {**row["extra_info"], "difficulty": label}})
    note = ";".join(f"{k}={v}" for k, v in sorted(counts.items()))
    return out, Step("label_difficulty", len(rows), len(out), {}, note)


def filter_correctness(rows: Sequence[dict], policy: str = "by_difficulty") -> tuple[list[dict], Step]:
    """SFT correctness filter (docs/paper.md §2.2, Table 2).

    ``all``/``mixed``: keep correct and incorrect; ``only_correct``: drop incorrect;
    ``by_difficulty``: easy rows keep only correct responses, hard rows keep all.
    """
    if policy not in ("all", "mixed", "only_correct", "by_difficulty"):
        raise ValueError(f"unknown correctness policy {policy!r}")
    return keep_where(rows, f"correctness_{policy}", lambda r: None if r["correct"] or policy in ("all", "mixed") or (
        policy == "by_difficulty" and r["difficulty"] == "hard") else "incorrect")


def filter_code_tests(rows: Sequence[dict], pass_rates: Mapping[str, float], n_tests: Callable[[dict], int], *,
                      min_tests: int = 16, min_pass_rate: float = 0.5) -> tuple[list[dict], Step]:
    """Code RL filter (docs/paper.md §2.3): >= ``min_tests`` tests and teacher pass rate over 16 samples > 0.5."""
    def reason(row):
        if n_tests(row) < min_tests:
            return "too_few_tests"
        if pass_rates.get(item_of(row), 0.0) <= min_pass_rate:
            return "teacher_pass_rate<=%.2f" % min_pass_rate
        return None

    return keep_where(rows, "code_tests_and_pass_rate", reason)


def filter_math_majority(rows: Sequence[dict], pass_rates: Mapping[str, float], *,
                         majority: float = 0.5) -> tuple[list[dict], Step]:
    """Math RL filter (docs/paper.md §2.3): keep items where more than half of 16 teacher answers verify."""
    return keep_where(rows, "math_majority_verify",
                      lambda r: None if pass_rates.get(item_of(r), 0.0) > majority else "no_majority")


def take_first(rows: Sequence[dict], n: int, stage: str = "truncate_to_size") -> tuple[list[dict], Step]:
    """Keep the first ``n`` rows (the target size); the rest are ``over_budget``."""
    kept = list(rows[:n])
    return kept, Step(stage, len(rows), len(kept), {"over_budget": len(rows) - n} if len(rows) > n else {})
