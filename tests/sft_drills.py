"""Multiplication drills in the SFT schema (a user turn, a long-CoT assistant turn), for the tests that train SFT:
a stream per ``tag``, so each test keeps its own rows."""
from __future__ import annotations

from klear_lib.seeding import py_rng


def drill_rows(n: int, tag: str) -> list[dict]:
    """``n`` rows ``Compute a*b.`` with the one-step trace and boxed answer, drawn from ``py_rng(0, tag)``."""
    rng = py_rng(0, tag)
    pairs = [(rng.randint(10, 99), rng.randint(2, 9)) for _ in range(n)]
    return [{"id": f"r{i}", "messages": [
        {"role": "user", "content": f"Compute {a}*{b}."},
        {"role": "assistant", "content": f"<think>\n{a}*{b}={a * b}\n</think>\n\\boxed{{{a * b}}}"}]}
        for i, (a, b) in enumerate(pairs)]
