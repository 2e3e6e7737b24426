"""The math judge: math-verify on the text after the last ``</think>``, shared by the RL reward and the metric.

As the official ``math_dapo.compute_score(is_longcot=True, is_use_math_verify=True)`` (docs/paper.md §2.5): think-tag
checks, then ``parse(answer, parsing_timeout=5)``, a quick string match of the parsed answer against the ground
truth, else ``verify(parse("\\boxed{gt}"), parsed, timeout_seconds=5)``. Scores: +1 / -1 / -0.5 / -2.

math-verify's timeouts use ``signal.alarm``, which works only in a main thread. In a main thread (the trainer, a
notebook, a worker process) we call it directly; from any other thread the call goes to a small spawned
process pool whose workers run it in their own main thread, so timeouts still hold and nothing hangs.
NOTE(paper): an integer fast path (one ``\\boxed{int}`` against an integer ground truth, compared as integers)
skips math-verify where it would give the same verdict (a test checks agreement); it makes the judge ~100x
faster on the miniature world and AIME-style answers ("073" == "73").
"""
from __future__ import annotations

import logging
import multiprocessing
import re
import threading
from concurrent.futures import CancelledError, ProcessPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from concurrent.futures.process import BrokenProcessPool
from typing import Sequence

from math_verify import parse, verify

from klear_lib.rewards.format import answer_text, binary_score, is_correct_score, think_tag_score

log = logging.getLogger(__name__)

PARSE_TIMEOUT_S = 5    # docs/paper.md §2.5 (parsing_timeout=5)
VERIFY_TIMEOUT_S = 5   # docs/paper.md §2.5 (timeout_seconds=5)
POOL_RESULT_TIMEOUT_S = 60.0
_INTEGER = re.compile(r"^\s*[+-]?\d+\s*$")
_ONE_BOX = re.compile(r"\\boxed\{([^{}]*)\}")
_POOL: ProcessPoolExecutor | None = None
_POOL_LOCK = threading.Lock()


def integer_fast_path(text: str, ground_truth: str) -> bool | None:
    """Verdict for one ``\\boxed{int}`` in ``text`` against an integer ground truth; None when it does not apply."""
    if not _INTEGER.match(ground_truth) or text.count("\\boxed") != 1:
        return None
    match = _ONE_BOX.search(text)
    if match is None or not _INTEGER.match(match.group(1)):
        return None
    return int(match.group(1)) == int(ground_truth)


def verify_answer(text: str, ground_truth: str) -> bool:
    """math-verify as the official judge, with signal timeouts; call it from a main thread only."""
    try:
        parsed = parse(text, parsing_timeout=PARSE_TIMEOUT_S)
        if len(parsed) < 2:
            return False
        if parsed[1] == ground_truth:
            return True
        gold = parse(f"\\boxed{{{ground_truth}}}", parsing_timeout=PARSE_TIMEOUT_S)
        return bool(verify(gold, parsed, timeout_seconds=VERIFY_TIMEOUT_S))
    except Exception as exc:  # math-verify raises on timeouts and odd LaTeX: a wrong answer, as officially
        log.debug("math-verify failed on %r: %s", text[-200:], exc)
        return False


def answer_is_correct(text: str, ground_truth: str | int) -> bool:
    """Whether the answer ``text`` (already past ``</think>``) matches ``ground_truth``, from any thread."""
    gt = str(ground_truth).strip()
    fast = integer_fast_path(text, gt)
    if fast is not None:
        return fast
    if threading.current_thread() is threading.main_thread():
        return verify_answer(text, gt)
    return _verify_in_pool([text], [gt])[0]


def math_reward(response: str, ground_truth: str | int, tag_shaping: str = "official") -> float:
    """The paper's shaped math reward: -0.5 no ``</think>``, -2 no ``<think>`` (both -1 with ``tag_shaping=
    "binary"``), else +1 correct / -1 wrong."""
    penalty = think_tag_score(response, tag_shaping)
    if penalty is not None:
        return penalty
    return binary_score(answer_is_correct(answer_text(response), ground_truth))


def is_correct(response: str, ground_truth: str | int) -> bool:
    """True iff ``math_reward`` is +1: both think tags present and the final answer verifies."""
    return is_correct_score(math_reward(response, ground_truth))


def math_rewards(responses: Sequence[str], ground_truths: Sequence[str | int], workers: int = 0) -> list[float]:
    """``math_reward`` for many responses; with ``workers > 0`` the slow math-verify calls use the process pool."""
    if len(responses) != len(ground_truths):
        raise ValueError(f"{len(responses)} responses but {len(ground_truths)} ground truths")
    if workers <= 0:
        return [math_reward(r, g) for r, g in zip(responses, ground_truths)]
    scores = [think_tag_score(r) for r in responses]
    texts = [answer_text(r) for r in responses]
    gts = [str(g).strip() for g in ground_truths]
    fast = [integer_fast_path(t, g) if s is None else False for s, t, g in zip(scores, texts, gts)]
    slow = [i for i, (s, f) in enumerate(zip(scores, fast)) if s is None and f is None]
    verdicts = dict(zip(slow, _verify_in_pool([texts[i] for i in slow], [gts[i] for i in slow], workers)))
    return [s if s is not None else binary_score(verdicts.get(i, f)) for i, (s, f) in enumerate(zip(scores, fast))]


def _verify_batch(texts: list[str], gts: list[str]) -> list[bool]:
    """Worker-process entry: ``verify_answer`` over a chunk (runs in the worker's main thread)."""
    return [verify_answer(t, g) for t, g in zip(texts, gts)]


def _pool(workers: int = 1) -> ProcessPoolExecutor:
    """The shared spawned pool (spawn: safe beside torch threads), grown to ``workers`` on demand."""
    global _POOL
    with _POOL_LOCK:
        if _POOL is None or _POOL._max_workers < workers:  # noqa: SLF001 (sizing only)
            if _POOL is not None:
                _POOL.shutdown(wait=False, cancel_futures=True)
            ctx = multiprocessing.get_context("spawn")
            _POOL = ProcessPoolExecutor(max_workers=max(1, workers), mp_context=ctx)
        return _POOL


def _reset_pool() -> None:
    """Drop a broken or stuck pool; the next call starts a fresh one."""
    global _POOL
    with _POOL_LOCK:
        if _POOL is not None:
            _POOL.shutdown(wait=False, cancel_futures=True)
        _POOL = None


def _verify_in_pool(texts: list[str], gts: list[str], workers: int = 1) -> list[bool]:
    """``verify_answer`` in worker processes, in chunks; a stuck or crashed chunk counts as incorrect."""
    if not texts:
        return []
    size = max(1, -(-len(texts) // (4 * max(1, workers))))
    chunks = [(texts[i:i + size], gts[i:i + size]) for i in range(0, len(texts), size)]
    futures = [_pool(workers).submit(_verify_batch, t, g) for t, g in chunks]
    out: list[bool] = []
    for fut, (t, _) in zip(futures, chunks):
        try:
            out.extend(fut.result(timeout=POOL_RESULT_TIMEOUT_S + 2 * len(t) * PARSE_TIMEOUT_S))
        except (FutureTimeout, BrokenProcessPool, CancelledError) as exc:
            log.warning("math judge pool failed on a chunk of %d (%s): counted incorrect", len(t), type(exc).__name__)
            _reset_pool()
            out.extend([False] * len(t))
    return out
