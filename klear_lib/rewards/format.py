"""Response format shared by every judge: the think tags and the answer after the last ``</think>``.

Scores follow the official ``reward_config.py`` (docs/paper.md §2.5): correct +1, incorrect -1, format error -1,
missing ``</think>`` -0.5, missing ``<think>`` -2. The two tag checks run in that order, so a response with no
tag at all (e.g. truncated before it closed its reasoning) scores -0.5, better than a wrong answer.

The paper's text describes a *binary* reward that penalises responses without ``<think>...</think>``
(docs/paper.md §2.5); ``tag_shaping="binary"`` scores a missing tag -1, like a wrong answer. ``"official"`` keeps the
released code's -0.5 / -2. RL defaults to binary (``klear_lib.configs.rl``): with the official scores a policy
whose accuracy is below 25% gains by never closing ``</think>`` (2p - 1 < -0.5), which the tiny runs found
(results/LOG.md).
"""
from __future__ import annotations

THINK_OPEN, THINK_CLOSE = "<think>", "</think>"
CORRECT_SCORE = 1.0          # docs/paper.md §2.5
INCORRECT_SCORE = -1.0       # docs/paper.md §2.5
FORMAT_ERROR_SCORE = -1.0    # docs/paper.md §2.5 (e.g. no ```python block after </think>)
NO_THINK_CLOSE_SCORE = -0.5  # docs/paper.md §2.5, checked first
NO_THINK_OPEN_SCORE = -2.0   # docs/paper.md §2.5, checked second
TAG_SHAPINGS = ("official", "binary")


def think_tag_score(response: str, tag_shaping: str = "official") -> float | None:
    """The shaping score when a think tag is missing (``</think>`` checked before ``<think>``), else None.

    ``tag_shaping``: "official" (-0.5 / -2, the released code) or "binary" (-1 for either, the paper's text).
    """
    if tag_shaping not in TAG_SHAPINGS:
        raise ValueError(f"tag_shaping={tag_shaping!r}; choose one of {TAG_SHAPINGS}")
    if THINK_CLOSE not in response:
        return NO_THINK_CLOSE_SCORE if tag_shaping == "official" else INCORRECT_SCORE
    if THINK_OPEN not in response:
        return NO_THINK_OPEN_SCORE if tag_shaping == "official" else INCORRECT_SCORE
    return None


def answer_text(response: str) -> str:
    """The text after the last ``</think>`` (the whole response when there is none)."""
    return response.rsplit(THINK_CLOSE, 1)[-1]


def is_correct_score(score: float) -> bool:
    """The verdict of a score, for every judge and the benchmarks: correct iff +1 (answer verified, or every test
    run passed); a soft code reward below 1 or any shaped format score is not."""
    return score == CORRECT_SCORE


def binary_score(correct: bool) -> float:
    """+1 for a correct answer, -1 otherwise."""
    return CORRECT_SCORE if correct else INCORRECT_SCORE
