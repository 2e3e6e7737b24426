"""Response format shared by every judge: the think tags and the answer after the last ``</think>``.

Scores follow the official ``reward_config.py`` (PAPER.md §2.5): correct +1, incorrect -1, format error -1,
missing ``</think>`` -0.5, missing ``<think>`` -2. The two tag checks run in that order, so a response with no
tag at all (e.g. truncated before it closed its reasoning) scores -0.5, better than a wrong answer.
"""
from __future__ import annotations

THINK_OPEN, THINK_CLOSE = "<think>", "</think>"
CORRECT_SCORE = 1.0          # PAPER.md §2.5
INCORRECT_SCORE = -1.0       # PAPER.md §2.5
FORMAT_ERROR_SCORE = -1.0    # PAPER.md §2.5 (e.g. no ```python block after </think>)
NO_THINK_CLOSE_SCORE = -0.5  # PAPER.md §2.5, checked first
NO_THINK_OPEN_SCORE = -2.0   # PAPER.md §2.5, checked second


def think_tag_score(response: str) -> float | None:
    """The shaping score when a think tag is missing (``</think>`` checked before ``<think>``), else None."""
    if THINK_CLOSE not in response:
        return NO_THINK_CLOSE_SCORE
    if THINK_OPEN not in response:
        return NO_THINK_OPEN_SCORE
    return None


def answer_text(response: str) -> str:
    """The text after the last ``</think>`` (the whole response when there is none)."""
    return response.rsplit(THINK_CLOSE, 1)[-1]


def binary_score(correct: bool) -> float:
    """+1 for a correct answer, -1 otherwise."""
    return CORRECT_SCORE if correct else INCORRECT_SCORE
