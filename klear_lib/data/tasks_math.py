"""Miniature math: chained integer arithmetic, tier k = number of operations (k = 1..5).

Prompt ``Compute ((19*2)-20)+7.``; response ``<think>\\n19*2=10*2+9*2=20+18=38\\n...\\n</think>\\n\\boxed{25}``.
Numbers stay small (start, summands and subtrahends <= ``max_operand``; products only of values <= ``max_operand``),
so that the arithmetic facts are learnable by the tiny model (docs/stack.md §7: a world with 2-digit operands
up to 99 left the 0.8 M model at 2% on one operation).
Steps are written either directly (``19*2=38``) or decomposed into tens and units
(``19*2=10*2+9*2=20+18=38``, ``58+27=58+20+7=78+7=85``): the reliable and unreliable strategies of docs/stack.md §7's
probe. Intermediate values stay >= 0; multiplications are (1-2 digit) x (1 digit).
"""
from __future__ import annotations

import dataclasses
import itertools
import random
import re

from klear_lib.data.schema import make_rl_row

TIERS = (1, 2, 3, 4, 5)
DATA_SOURCE = "tiny_math"
_BOXED = re.compile(r"\\boxed\{(-?\d+)\}")
_OP_WEIGHTS = (("*", 0.4), ("+", 0.3), ("-", 0.3))


@dataclasses.dataclass(frozen=True)
class MathItem:
    """A chained arithmetic problem: ``start`` then ``ops`` ((op, operand), ...) applied left to right."""

    start: int
    ops: tuple[tuple[str, int], ...]

    @property
    def tier(self) -> int:
        return len(self.ops)

    @property
    def prompt(self) -> str:
        """``Compute ((a op b) op c) op d.``"""
        expr = str(self.start)
        for i, (op, b) in enumerate(self.ops):
            expr = f"{expr}{op}{b}" if i == 0 else f"({expr}){op}{b}"
        return f"Compute {expr}."

    def values(self) -> list[int]:
        """Intermediate results after each operation (the last is the answer)."""
        return list(itertools.accumulate(self.ops, lambda cur, op: apply(cur, *op), initial=self.start))[1:]

    @property
    def answer(self) -> int:
        return self.values()[-1]


def apply(a: int, op: str, b: int) -> int:
    return a + b if op == "+" else a - b if op == "-" else a * b


DEFAULT_MAX_OPERAND = 29


def sample_item(rng: random.Random, tier: int, max_operand: int = DEFAULT_MAX_OPERAND) -> MathItem:
    """A random problem with ``tier`` operations (start 2..``max_operand``)."""
    if max_operand < 2:
        raise ValueError(f"max_operand must be >= 2, got {max_operand}")
    start = rng.randint(2, max_operand)
    ops, cur = [], start
    for _ in range(tier):
        allowed = [(op, w) for op, w in _OP_WEIGHTS
                   if (op != "*" or 2 <= cur <= max_operand) and (op != "-" or cur >= 2)]
        op = rng.choices([o for o, _ in allowed], weights=[w for _, w in allowed])[0]
        b = rng.randint(2, 9) if op == "*" else rng.randint(1, min(cur, max_operand) if op == "-" else max_operand)
        ops.append((op, b))
        cur = apply(cur, op, b)
    return MathItem(start, tuple(ops))


def to_row(item: MathItem, split: str, *, ground_truth: int | None = None, noise: str | None = None) -> dict:
    """The verl-schema row; ``ground_truth`` overrides the true answer (injected wrong-answer noise)."""
    gt = item.answer if ground_truth is None else ground_truth
    extra = {"true_answer": str(item.answer), "noise": noise, "start": item.start,
             "ops": [[op, b] for op, b in item.ops]}
    return make_rl_row(item.prompt, str(gt), ability="math", data_source=DATA_SOURCE, split=split,
                       tier=item.tier, extra=extra)


def item_from_row(row: dict) -> MathItem:
    """Rebuild the ``MathItem`` of a miniature math row (from ``extra_info``)."""
    info = row["extra_info"]
    return MathItem(int(info["start"]), tuple((op, int(b)) for op, b in info["ops"]))


def decomposed(a: int, op: str, b: int, result: int) -> str:
    """The decomposed form of one step ending in ``result`` (which may be wrong), e.g. ``19*2=10*2+9*2=20+18=38``."""
    if op == "*":
        t, u = a // 10 * 10, a % 10
        if t == 0 or u == 0:
            return f"{a}*{b}={result}"
        return f"{a}*{b}={t}*{b}+{u}*{b}={t * b}+{u * b}={result}"
    t, u = b // 10 * 10, b % 10
    if t == 0 or u == 0:
        return f"{a}{op}{b}={result}"
    return f"{a}{op}{b}={a}{op}{t}{op}{u}={apply(a, op, t)}{op}{u}={result}"


def check_line(a: int, op: str, b: int, result: int) -> str:
    """A self-check of one step: the inverse operation, or a decomposed product for ``*``."""
    if op == "+":
        return f"check: {result}-{b}={result - b}"
    if op == "-":
        return f"check: {result}+{b}={result + b}"
    t, u = a // 10 * 10, a % 10
    if t == 0 or u == 0:
        return f"check: {b}*{a}={a * b}"
    return f"check: {t}*{b}+{u}*{b}={t * b + u * b}"


def boxed_int(response: str) -> int | None:
    """The integer in the last ``\\boxed{}`` after ``</think>``; None if absent or unparsable."""
    if "</think>" not in response:
        return None
    found = _BOXED.findall(response.split("</think>")[-1])
    return int(found[-1]) if found else None


def judge(response: str, ground_truth: str) -> bool:
    """Miniature curation judge: exact integer match of the boxed answer after ``</think>``.

    Used for speed on miniature data; tests check it agrees with the kit's math judge (math-verify).
    """
    got = boxed_int(response)
    return got is not None and str(got) == ground_truth.strip()
