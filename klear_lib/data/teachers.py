"""Teachers as data sources: trace generators that differ in quality and style; error rates grow with tier.

Each teacher mixes a reliable strategy (decompose / one statement per step, self-checks that catch and correct
errors) with an unreliable one (direct answers / one-line expressions). A step's error probability is
``err * (1 + growth * (tier - 1))``. Outputs are deterministic given (seed, concern, teacher, item id, sample).
``rank`` is the documented quality rank (1 = best); ``tests/test_data_teachers.py`` checks that measured
accuracy follows it.
"""
from __future__ import annotations

import dataclasses
import itertools
import random
import re

from klear_lib.data import tasks_code as tc
from klear_lib.data import tasks_math as tm
from klear_lib.seeding import py_rng

MAX_RESPONSE_CHARS = 320
FILLERS = ("Let me work through this step.", "Now the next operation.", "OK, carrying on carefully.",
           "I should be careful here.")


@dataclasses.dataclass(frozen=True)
class Teacher:
    """A trace generator (see module docstring for the error model). ``p_reliable``: the chance of the reliable
    strategy (math: decompose a step; code: one statement per step). ``err``: a step's error rate with the
    unreliable and with the reliable strategy (a code op's, either way); ``p_precedence``: the chance that a code
    one-liner drops needed parentheses."""

    name: str
    ability: str
    rank: int
    style: str
    p_reliable: float
    err: tuple[float, float]
    p_precedence: float = 0.0
    growth: float = 0.25
    p_check: float = 0.0
    p_detect: float = 0.0
    p_filler: float = 0.0
    p_noise: float = 0.0

    def error_rate(self, reliable: bool, tier: int) -> float:
        return self.err[reliable] * (1 + self.growth * (tier - 1))


TEACHERS = {t.name: t for t in (
    Teacher("reflective", "math", 1, "long reflective CoT: checks every step, corrects caught errors", 0.5,
            (0.10, 0.01), p_check=0.8, p_detect=0.9),
    Teacher("careful", "math", 2, "decomposes most steps, no checks", 0.8, (0.10, 0.015)),
    Teacher("mixed", "math", 3, "half direct, half decomposed, occasional checks", 0.5, (0.14, 0.03),
            p_check=0.2, p_detect=0.5),
    Teacher("verbose", "math", 4, "long filler sentences, mostly direct, rare checks", 0.3, (0.12, 0.04),
            p_check=0.1, p_detect=0.5, p_filler=0.6),
    Teacher("terse", "math", 5, "terse scratchpad, direct answers only", 0.0, (0.15, 0.15)),
    Teacher("noisy", "math", 6, "noisy: typos, wrong operators, broken format", 0.4, (0.18, 0.06), p_noise=0.3),
    Teacher("code_reflective", "code", 1, "stepwise, checks an example input, rewrites a wrong program", 0.6,
            (0.03, 0.03), 0.5, p_check=0.8, p_detect=0.9),
    Teacher("code_stepwise", "code", 2, "one statement per step, no checks", 0.9, (0.04, 0.04), 0.5),
    Teacher("code_mixed", "code", 3, "half stepwise, half one-liners, occasional checks", 0.5, (0.06, 0.06), 0.5,
            p_check=0.2, p_detect=0.5),
    Teacher("code_oneliner", "code", 4, "terse one-liners with precedence slips, some noise", 0.0, (0.06, 0.06),
            0.6, p_noise=0.1),
)}


def get_teacher(name: str):
    """A teacher by name; unknown names raise ``KeyError`` listing the known ones."""
    if name not in TEACHERS:
        raise KeyError(f"unknown teacher {name!r}; known: {sorted(TEACHERS)}")
    return TEACHERS[name]


def ranked(ability: str) -> list[str]:
    """Teacher names of ``ability`` from best to worst (documented rank)."""
    return sorted((n for n, t in TEACHERS.items() if t.ability == ability), key=lambda n: TEACHERS[n].rank)


def _math_lines(t: Teacher, item: tm.MathItem, rng: random.Random, wrong_op_at: int) -> tuple[list, int]:
    lines, cur = [], item.start
    if t.p_filler:
        lines.append(("filler", "We evaluate the expression one step at a time."))
    for i, (op, b) in enumerate(item.ops):
        if rng.random() < t.p_filler:
            lines.append(("filler", rng.choice(FILLERS)))
        dec = rng.random() < t.p_reliable
        true = tm.apply(cur, op, b)
        wrong = rng.random() < t.error_rate(dec, item.tier)
        got = true + rng.choice([-10, -1, 1, 10] + ([-b, b] if op == "*" else [])) if wrong else true
        if wrong and (got < 0 or got == true):  # a slip never goes negative or lands on the truth
            got = true + abs(rng.choice([1, 10]))
        if i == wrong_op_at:
            got, wrong = max(0, tm.apply(cur, "+" if op != "+" else "*", b)), True
        lines.append(("step", tm.decomposed(cur, op, b, got) if dec else f"{cur}{op}{b}={got}"))
        if rng.random() < t.p_check:  # a check confirms a right step; a detected wrong one is corrected
            detect = rng.random() < t.p_detect
            if not wrong:
                lines.append(("check", tm.check_line(cur, op, b, got)))
            elif detect:
                lines.append(("check", f"{tm.check_line(cur, op, b, got)}, not {cur if op != '*' else got}"))
                lines.append(("fix", f"wait, {cur}{op}{b} is not {got}, so {cur}{op}{b}={true}"))
                got = true
        cur = got
    return lines, cur


def _fit(lines: list, tail: str) -> str:
    for drop in (None, "filler", "check"):
        lines = [ln for ln in lines if ln[0] != drop]
        text = "<think>\n" + "\n".join(s for _, s in lines) + tail
        if len(text) <= MAX_RESPONSE_CHARS:
            return text
    return text[:MAX_RESPONSE_CHARS]


def math_response(t: Teacher, item: tm.MathItem, rng: random.Random) -> str:
    """One response of teacher ``t`` to ``item``."""
    noise = rng.choice(("typo", "wrong_op", "no_answer", "unclosed")) if rng.random() < t.p_noise else None
    wrong_op_at = rng.randrange(item.tier) if noise == "wrong_op" else -1
    lines, answer = _math_lines(t, item, rng, wrong_op_at)
    if noise == "typo":
        i = rng.randrange(len(lines))
        lines[i] = (lines[i][0], lines[i][1].replace("=", "=1", 1))
    tail = {"no_answer": "\n</think>\nDone.", "unclosed": f"\n\\boxed{{{answer}}}"}
    return _fit(lines, tail.get(noise, f"\n</think>\n\\boxed{{{answer}}}"))


def _mutate(op: tuple, rng: random.Random) -> tuple | None:
    name, c = op
    swap = {"add": "sub", "sub": "add", "max": "min", "min": "max", "mul": "add", "mod": "div", "div": "mod"}
    if c is None:
        return None
    if rng.random() < 0.5:
        return swap[name], c
    return name, c + 1 if name in ("mod", "div") or c == -1 else c + rng.choice((-1, 1))


def code_response(t: Teacher, item: tc.CodeItem, rng: random.Random) -> str:
    """One response of teacher ``t`` to ``item``."""
    rate = t.error_rate(False, item.tier)
    ops = [op if rng.random() >= rate else _mutate(op, rng) for op in item.ops]
    ops = [op for op in ops if op is not None] or list(item.ops[:1])
    stepwise = rng.random() < t.p_reliable
    program = tc.stepwise_program(ops) if stepwise else tc.oneliner(ops, lambda: rng.random() < t.p_precedence)
    think = ["one statement per step" if stepwise else "write it as one expression"]
    if rng.random() < t.p_check:  # the program on an example input, beside the ops worked by hand
        trace = list(itertools.accumulate(item.ops, lambda x, op: tc.apply_op(*op, x), initial=rng.randint(1, 5)))
        got = (tc.interpret(program, trace[0]) or "an error").strip()
        ok = got == str(trace[-1])
        if ok or rng.random() < t.p_detect:
            think.append(f"check x={trace[0]}: {' -> '.join(map(str, trace[1:]))}; program gives {got}")
        if not ok and len(think) == 2:
            think.append("wait, that is wrong, so one statement per step")
            program = tc.stepwise_program(item.ops)
    if rng.random() < t.p_noise:
        program = program.replace(")", "", 1) if rng.random() < 0.5 else program.replace("print(x)", "x")
    return "<think>\n" + "\n".join(think) + "\n</think>\n```python\n" + program + "\n```"


def respond(teacher: str, item, item_key: str, sample: int, *, seed: int = 0, concern: str = "sft") -> str:
    """Response ``sample`` (0..15) of ``teacher`` to a ``MathItem``/``CodeItem`` keyed by its id; stable in
    (seed, concern, teacher, item id, sample index)."""
    t = get_teacher(teacher)
    rng = py_rng(seed, "teacher", concern, teacher, item_key, sample)
    return math_response(t, item, rng) if t.ability == "math" else code_response(t, item, rng)


_FIX = re.compile(r"^wait, (-?\d+)([+\-*])(\d+) is not -?\d+, so -?\d+[+\-*]\d+=(-?\d+)$")


def without_checks(response: str, ability: str) -> str:
    """``response`` with its self-checks taken out but their effect kept: the trace a teacher that never errs
    where it caught itself would have written. Math: check lines go, and a ``wait, ...`` correction replaces the
    wrong step it follows with the corrected one (decomposed if the step was). Code: check lines and the
    ``wait, ...`` line go; a rewritten program's plan line becomes ``one statement per step``. The answer or
    program after ``</think>`` is unchanged. Used by Table 3's ``rank1/no_checks`` condition (beyond the paper)."""
    if "</think>" not in response:
        return response
    head, tail = response.split("</think>", 1)
    lines = [ln for ln in head.replace("<think>\n", "", 1).split("\n") if ln]
    kept: list[str] = []
    for line in lines:
        fix = _FIX.match(line) if ability == "math" else None
        if fix and kept:
            a, op, b, true = int(fix[1]), fix[2], int(fix[3]), int(fix[4])
            kept[-1] = tm.decomposed(a, op, b, true) if kept[-1].count("=") > 1 else f"{a}{op}{b}={true}"
        elif line.startswith("wait,") and ability == "code":
            kept[:1] = ["one statement per step"]
        elif not line.startswith("check"):
            kept.append(line)
    return "<think>\n" + "\n".join(kept) + "\n</think>" + tail
