"""The math judge: math-verify on the text after the last ``</think>``, shared by the RL reward and the metric.

As the official ``math_dapo.compute_score(is_longcot=True, is_use_math_verify=True)`` (docs/paper.md §2.5): think-tag
checks, then ``parse(answer, parsing_timeout=5)``, a quick string match of the parsed answer against the ground
truth, else ``verify(parse("\\boxed{gt}"), parsed, timeout_seconds=5)``. Scores: +1 / -1 / -0.5 / -2.

Every call is bounded in size and time, and answers "wrong" at a bound, never raises or hangs (issue 22):

* one digit rule: Unicode decimal digits (``٤٢``, ``４２``, ``४२``) read as ASCII digits in answers and ground
  truths, before both the fast path and math-verify, so the two cannot disagree on them;
* a size cap (``MAX_ANSWER_CHARS``), a bracket-nesting cap (``MAX_NESTING``) and a cap on the operators of the
  answer math-verify picks (``MAX_OPERATORS``): past ~50 nested levels or a few hundred chained operators the
  parsers overflow the stack, and math-verify then silently falls back to a part of the answer (an inner
  ``\\frac{1}{2}``, the last term of a sum), which can turn a wrong answer right;
* time: math-verify's timeouts use ``signal.alarm``, which works only in a main thread (off it, math-verify
  raises, or with ``None`` has no bound at all). In a main thread (the trainer, a notebook, the evaluation) we call
  it directly: at most parse 5 s + gold parse 5 s + one sympy comparison 5 s. From any other thread the call goes
  to a small spawned process pool whose workers run it in their own main thread, so the same timeouts hold; a
  chunk that overruns ``CALL_BOUND_S`` per answer is wrong and its worker processes are killed.

NOTE(paper): an integer fast path (one ``\\boxed{int}`` against an integer ground truth, compared as digit
strings, which also holds past Python's 4,300-digit ``int()`` limit) skips math-verify where it would give the
same verdict (a test checks agreement); it makes the judge ~100x faster on the miniature world and AIME-style
answers ("073" == "73"). The caps and the digit rule are ours; the official code has neither.
"""
from __future__ import annotations

import itertools
import logging
import multiprocessing
import re
import threading
import unicodedata
from collections.abc import Callable, Sequence
from concurrent.futures import CancelledError, ProcessPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from concurrent.futures.process import BrokenProcessPool

from math_verify import parse, verify

from klear_lib.rewards.format import answer_text, binary_score, is_correct_score, think_tag_score

log = logging.getLogger(__name__)

PARSE_TIMEOUT_S = 5    # docs/paper.md §2.5 (parsing_timeout=5)
VERIFY_TIMEOUT_S = 5   # docs/paper.md §2.5 (timeout_seconds=5)
CALL_BOUND_S = 2 * PARSE_TIMEOUT_S + VERIFY_TIMEOUT_S + 5.0  # one call's signal bounds, plus slack, in a worker
POOL_START_S = 60.0    # a fresh spawned worker first imports sympy and math-verify
MAX_ANSWER_CHARS = 131_072  # ours: above any honest 32K-token completion's answer; longer is wrong unread
MAX_NESTING = 20       # ours: honest answers nest < 15 brackets; parens past ~24 already exceed the 5 s timeout
MAX_OPERATORS = 100    # ours: in the answer math-verify picked; ~350 chained "+" overflow sympy's parser the same way
_INTEGER = re.compile(r"^\s*([+-]?)([0-9]+)\s*$")
_ONE_BOX = re.compile(r"\\boxed\{([^{}]*)\}")
_NON_ASCII_DIGIT = re.compile(r"(?![0-9])\d")  # str patterns: \d is any Unicode decimal digit (category Nd)
_BRACKET = re.compile(r"[{}()\[\]]")
_OPERATOR = re.compile(r"[-+*/^]|\\(?:cdot|times|div)")
_BRACKET_STEP = {"{": 1, "(": 1, "[": 1, "}": -1, ")": -1, "]": -1}
_POOL: ProcessPoolExecutor | None = None
_POOL_LOCK = threading.Lock()
LOG_CHARS = 300  # ours: math-verify logs a timed-out input whole (up to MAX_ANSWER_CHARS) at every timeout


def _short_log(record: logging.LogRecord) -> bool:
    """Cut math-verify's log lines to ``LOG_CHARS``: one hostile answer per RL step would otherwise flood the log."""
    text = record.getMessage()
    if len(text) > LOG_CHARS:
        record.msg, record.args = f"{text[:LOG_CHARS]}... [{len(text)} characters]", ()
    return True


for _name in ("math_verify.parser", "math_verify.grader"):  # also in the pool's workers, which import this module
    logging.getLogger(_name).addFilter(_short_log)


def ascii_digits(text: str) -> str:
    """``text`` with each Unicode decimal digit (Arabic-Indic, fullwidth, Devanagari, ...) as its ASCII digit."""
    return text if text.isascii() else _NON_ASCII_DIGIT.sub(lambda m: str(unicodedata.decimal(m.group())), text)


def nesting_depth(text: str) -> int:
    """The deepest bracket nesting of ``{}``, ``()`` and ``[]`` in ``text``; a stray closer (``[0, 1)``) is ignored."""
    steps = map(_BRACKET_STEP.__getitem__, _BRACKET.findall(text))
    return max(itertools.accumulate(steps, lambda depth, step: max(0, depth + step), initial=0))


def operator_count(text: str) -> int:
    """How many binary operators (``+ - * / ^``, ``\\cdot``, ``\\times``, ``\\div``) ``text`` holds."""
    return len(_OPERATOR.findall(text))


def within_caps(text: str) -> bool:
    """Whether ``text`` is small and shallow enough to hand to math-verify (``MAX_ANSWER_CHARS``, ``MAX_NESTING``)."""
    return len(text) <= MAX_ANSWER_CHARS and nesting_depth(text) <= MAX_NESTING


def _integer_key(text: str) -> str | None:
    """The canonical digit string of an integer (sign, no leading zeros; ``-0`` is ``0``), else None."""
    match = _INTEGER.match(text)
    if match is None:
        return None
    digits = match.group(2).lstrip("0") or "0"
    return digits if match.group(1) != "-" or digits == "0" else "-" + digits


def integer_fast_path(text: str, ground_truth: str) -> bool | None:
    """Verdict for one ``\\boxed{int}`` in ``text`` against an integer ground truth; None when it does not apply.

    Compared as digit strings: exact at any length (``int()`` refuses strings over 4,300 digits)."""
    truth = _integer_key(ground_truth)
    if truth is None or text.count("\\boxed") != 1:
        return None
    match = _ONE_BOX.search(text)
    answer = _integer_key(match.group(1)) if match is not None else None
    return None if answer is None else answer == truth


def _prejudge(text: str, ground_truth: str) -> tuple[str, str, bool | None]:
    """The digit rule, the size cap and the fast path, then the nesting cap: ``(text, gt, verdict)``, where
    ``verdict`` is None when math-verify must decide."""
    if len(text) > MAX_ANSWER_CHARS or len(ground_truth) > MAX_ANSWER_CHARS:
        return text, ground_truth, False
    text, ground_truth = ascii_digits(text), ascii_digits(ground_truth)
    fast = integer_fast_path(text, ground_truth)
    if fast is None and not (within_caps(text) and within_caps(ground_truth)):
        fast = False
    return text, ground_truth, fast


def verify_answer(text: str, ground_truth: str) -> bool:
    """math-verify as the official judge, with signal timeouts; call it from a main thread only."""
    try:
        parsed = parse(text, parsing_timeout=PARSE_TIMEOUT_S)
        if len(parsed) < 2 or operator_count(parsed[1]) > MAX_OPERATORS:  # [expr, text of the first candidate]
            return False
        if parsed[1] == ground_truth:
            return True
        gold = parse(f"\\boxed{{{ground_truth}}}", parsing_timeout=PARSE_TIMEOUT_S)
        return bool(verify(gold, parsed, timeout_seconds=VERIFY_TIMEOUT_S))
    except Exception as exc:  # noqa: BLE001 (math-verify raises on odd LaTeX: a wrong answer, as officially)
        log.debug("math-verify failed on %r: %s", text[-200:], exc)
        return False


def answer_is_correct(text: str, ground_truth: str | int) -> bool:
    """Whether the answer ``text`` (already past ``</think>``) matches ``ground_truth``, from any thread, within
    the size, nesting and time bounds (a bound reached is a wrong answer)."""
    text, gt, verdict = _prejudge(text, str(ground_truth).strip())
    return verdict if verdict is not None else _bounded(verify_answer, text, gt)


def gold_parses(answer: str) -> bool:
    """Whether the judge can use ``answer`` as a ground truth, from any thread: an integer, or within the caps and
    parsed by math-verify (``\\boxed{answer}`` to an expression) inside its timeout. For data-curation checks."""
    if len(answer) > MAX_ANSWER_CHARS:
        return False
    answer = ascii_digits(answer.strip())
    if _integer_key(answer) is not None:
        return True
    return within_caps(answer) and operator_count(answer) <= MAX_OPERATORS and _bounded(_gold_parses_here, answer)


def _gold_parses_here(answer: str) -> bool:
    """math-verify's parse of ``\\boxed{answer}`` with its signal timeout: call it from a main thread only."""
    return len(parse("\\boxed{" + answer + "}", parsing_timeout=PARSE_TIMEOUT_S)) >= 2


def _bounded(fn: Callable[..., bool], *args) -> bool:
    """``fn(*args)`` where math-verify's signal-based timeouts work: here in a main thread, else in the pool."""
    if threading.current_thread() is threading.main_thread():
        return fn(*args)
    return _in_pool(fn, [args])[0]


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


def is_correct_lenient(response: str, ground_truth: str | int) -> bool:
    """The lenient reading beside the judge: no think tag required, the answer after the last ``</think>`` if there
    is one, else the whole response. A control for reading scores (how much of one is the answer's format: a model
    that never closes ``</think>`` scores 0 under the judge), never a reward."""
    return answer_is_correct(answer_text(response), ground_truth)


def math_rewards(responses: Sequence[str], ground_truths: Sequence[str | int], workers: int = 0) -> list[float]:
    """``math_reward`` for many responses; with ``workers > 0`` the slow math-verify calls use the process pool."""
    if len(responses) != len(ground_truths):
        raise ValueError(f"{len(responses)} responses but {len(ground_truths)} ground truths")
    if workers <= 0:
        return [math_reward(r, g) for r, g in zip(responses, ground_truths)]
    scores = [think_tag_score(r) for r in responses]
    pre = [_prejudge(answer_text(r), str(g).strip()) for r, g in zip(responses, ground_truths)]
    slow = [i for i, (s, p) in enumerate(zip(scores, pre)) if s is None and p[2] is None]
    verdicts = dict(zip(slow, _in_pool(verify_answer, [pre[i][:2] for i in slow], workers)))
    return [s if s is not None else binary_score(verdicts.get(i, pre[i][2])) for i, s in enumerate(scores)]


def _apply(fn: Callable[..., bool], calls: list[tuple]) -> list[bool]:
    """Worker-process entry: ``fn(*args)`` for each call of a chunk, in the worker's main thread (alarms work)."""
    return [fn(*args) for args in calls]


def _pool(workers: int = 1) -> ProcessPoolExecutor:
    """The shared spawned pool (spawn: safe beside torch threads), grown to ``workers`` on demand."""
    global _POOL
    with _POOL_LOCK:
        if _POOL is None or _POOL._max_workers < workers:  # private, for sizing only
            if _POOL is not None:
                _POOL.shutdown(wait=False, cancel_futures=True)
            _POOL = ProcessPoolExecutor(max_workers=max(1, workers), mp_context=multiprocessing.get_context("spawn"))
        return _POOL


def _reset_pool() -> None:
    """Drop a broken or stuck pool and kill its workers; the next call starts a fresh one."""
    global _POOL
    with _POOL_LOCK:
        if _POOL is not None:
            # shutdown() cannot stop a task already running: a stuck worker would go on burning a core
            for proc in list((_POOL._processes or {}).values()):  # private: no public handle on workers
                proc.kill()
            _POOL.shutdown(wait=False, cancel_futures=True)
        _POOL = None


def _in_pool(fn: Callable[..., bool], calls: list[tuple], workers: int = 1) -> list[bool]:
    """``fn(*args)`` per call in worker processes, in chunks; a chunk past ``CALL_BOUND_S`` per call, or one whose
    worker crashed, counts as False (and the pool is replaced)."""
    size = max(1, -(-len(calls) // (4 * max(1, workers))))  # no calls: no chunk, and no pool started
    chunks = [calls[i:i + size] for i in range(0, len(calls), size)]
    futures = [_pool(workers).submit(_apply, fn, chunk) for chunk in chunks]
    out: list[bool] = []
    for fut, chunk in zip(futures, chunks):
        try:
            out.extend(fut.result(timeout=POOL_START_S + len(chunk) * CALL_BOUND_S))
        except (FutureTimeout, BrokenProcessPool, CancelledError) as exc:
            log.warning("math judge pool failed on a chunk of %d (%s): counted incorrect", len(chunk),
                        type(exc).__name__)
            _reset_pool()
            out.extend([False] * len(chunk))
    return out
