"""The math judge: the paper's shaping and its order, AIME answer forms, the fast path, threads and processes."""
from __future__ import annotations

import logging
import multiprocessing
import signal
import threading
import time
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor

import pytest

from klear_lib.rewards import math as math_judge
from klear_lib.rewards.math import (LOG_CHARS, PARSE_TIMEOUT_S, _in_pool, ascii_digits, integer_fast_path,
                                    is_correct, math_reward, math_rewards, verify_answer)
from klear_lib.seeding import py_rng


def wrap(answer_text: str) -> str:
    return f"<think>\nsome reasoning\n</think>\n{answer_text}"


def test_shaping_values_and_order():
    """docs/paper.md §2.5: missing </think> is checked first (-0.5), then missing <think> (-2)."""
    assert math_reward(wrap("\\boxed{12}"), "12") == 1.0
    assert math_reward(wrap("\\boxed{13}"), "12") == -1.0
    assert math_reward("\\boxed{12}", "12") == -0.5                      # no tag at all: </think> first
    assert math_reward("<think>\nstill thinking \\boxed{12}", "12") == -0.5  # truncated inside the think block
    assert math_reward("reasoning</think>\n\\boxed{12}", "12") == -2.0   # closed but never opened
    assert math_reward(wrap("no answer here"), "12") == -1.0


def test_binary_tag_shaping_scores_a_missing_tag_as_wrong():
    """The paper's text: a binary reward; a missing think tag is penalised like a wrong answer (-1)."""
    assert math_reward("<think>\nstill thinking \\boxed{12}", "12", tag_shaping="binary") == -1.0
    assert math_reward("reasoning</think>\n\\boxed{12}", "12", tag_shaping="binary") == -1.0
    assert math_reward(wrap("\\boxed{12}"), "12", tag_shaping="binary") == 1.0
    with pytest.raises(ValueError, match="tag_shaping"):
        math_reward(wrap("\\boxed{12}"), "12", tag_shaping="soft")


@pytest.mark.parametrize("text,truth", [
    ("\\boxed{073}", "73"), ("\\boxed{73}", "073"), ("The answer is $\\boxed{204}$.", "204"),
    ("\\boxed{ 25 }", "025"), ("so the result is \\(\\boxed{\\dfrac{1}{576}}\\)", "\\frac{1}{576}"),
    ("\\boxed{8\\sqrt{10}}", "8\\sqrt{10}"), ("\\boxed{\\frac{2}{4}}", "\\frac{1}{2}"), ("\\boxed{1,000}", "1000"),
    ("Final answer: \\boxed{-3}", "-3"),
])
def test_aime_style_forms_judge_right(text, truth):
    assert is_correct(wrap(text), truth)


@pytest.mark.parametrize("text,truth", [("\\boxed{74}", "73"), ("\\boxed{\\frac{1}{3}}", "\\frac{1}{2}"),
                                        ("\\boxed{730}", "073")])
def test_wrong_answers_judge_wrong(text, truth):
    assert not is_correct(wrap(text), truth)


def test_only_text_after_the_last_think_close_counts():
    assert math_reward("<think>\n\\boxed{5}\n</think>\nno answer", "5") == -1.0
    assert math_reward("<think>a</think> \\boxed{1} </think> \\boxed{2}", "2") == 1.0


def test_integer_fast_path_agrees_with_math_verify():
    """On integer-style answers the fast path gives exactly math-verify's verdict (200 seeded cases)."""
    rng = py_rng(0, "fast-path-agreement")
    forms = ["\\boxed{%s}", "The answer is $\\boxed{%s}$.", "\\boxed{ %s }", "so \\boxed{%s} units", "\\boxed{+%s}"]
    checked = 0
    for _ in range(200):
        truth = rng.randrange(0, 1000)
        pred = truth if rng.random() < 0.5 else rng.randrange(0, 1000)
        pad = f"{pred:03d}" if rng.random() < 0.3 else str(pred)
        text = rng.choice(forms) % pad
        gt = f"{truth:03d}" if rng.random() < 0.3 else str(truth)
        fast = integer_fast_path(text, gt)
        assert fast is not None
        assert fast == verify_answer(text, gt), (text, gt)
        checked += 1
    assert checked == 200


def test_fast_path_declines_what_it_cannot_decide():
    assert integer_fast_path("\\boxed{1} or \\boxed{2}", "2") is None
    assert integer_fast_path("\\boxed{\\frac{1}{2}}", "3") is None
    assert integer_fast_path("\\boxed{3}", "\\frac{1}{2}") is None
    assert integer_fast_path("answer 3", "3") is None


def test_fast_on_integer_answers():
    responses = [wrap(f"\\boxed{{{i % 997}}}") for i in range(2000)]
    start = time.perf_counter()
    scores = math_rewards(responses, [str(i % 997) for i in range(2000)])
    assert all(s == 1.0 for s in scores)
    assert time.perf_counter() - start < 1.0


def test_judge_works_off_the_main_thread():
    """math-verify's signal timeouts need a main thread: from a thread the judge uses worker processes."""
    out = {}

    def work():
        out["scores"] = [math_reward(wrap("\\boxed{\\dfrac{1}{576}}"), "\\frac{1}{576}"),
                         math_reward(wrap("\\boxed{\\frac{1}{3}}"), "\\frac{1}{2}"),
                         math_reward(wrap("\\boxed{7}"), "7")]
    thread = threading.Thread(target=work)
    thread.start()
    thread.join(120)
    assert out["scores"] == [1.0, -1.0, 1.0]


def test_math_verify_itself_refuses_threads():
    """Control: calling math-verify directly from a thread fails, which is why the judge routes around it."""
    caught = {}

    def work():
        try:
            from math_verify import parse

            parse("\\boxed{\\frac{1}{2}}", parsing_timeout=5)
            caught["error"] = None
        except Exception as exc:  # noqa: BLE001
            caught["error"] = exc
    thread = threading.Thread(target=work)
    thread.start()
    thread.join(60)
    assert caught["error"] is not None


def test_judge_works_in_worker_processes():
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=2, mp_context=ctx) as pool:
        scores = list(pool.map(math_reward, [wrap("\\boxed{\\dfrac{3}{4}}"), wrap("\\boxed{9}"), "x"],
                               ["\\frac{3}{4}", "8", "1"]))
    assert scores == [1.0, -1.0, -0.5]


def test_batch_with_workers_equals_sequential():
    responses = [wrap("\\boxed{\\frac{2}{4}}"), wrap("\\boxed{5}"), "junk", "a</think>\\boxed{1}",
                 wrap("\\boxed{\\sqrt{2}}")]
    truths = ["\\frac12", "5", "3", "1", "\\sqrt{3}"]
    assert math_rewards(responses, truths, workers=2) == math_rewards(responses, truths) == [1.0, 1.0, -0.5, -2.0, -1.0]
    with pytest.raises(ValueError, match="2 responses but 1"):
        math_rewards(["a", "b"], ["1"])


# ---- issue 22: every judge call bounded in time and size, one digit rule -------------------------------------

def nested_fracs(depth: int, core: str = "2") -> str:
    """``\\frac{1}{\\frac{1}{...core...}}``: ``depth`` reciprocals, so the value is ``core`` when depth is even."""
    return "\\frac{1}{" * depth + core + "}" * depth


def test_integers_past_pythons_digit_limit_get_a_verdict():
    """Python refuses int() on strings over 4,300 digits; the fast path compares digit strings instead."""
    big = "7" * 5000
    assert math_reward(wrap(f"\\boxed{{{big}}}"), big) == 1.0
    assert math_reward(wrap(f"\\boxed{{000{big}}}"), big) == 1.0         # leading zeros, as AIME's "073"
    assert math_reward(wrap(f"\\boxed{{{big}8}}"), big) == -1.0
    assert math_reward(wrap("\\boxed{12}"), big) == -1.0                  # a ground truth that long too
    assert math_reward(wrap(f"\\boxed{{{'9' * 100_000}}}"), "12") == -1.0
    assert integer_fast_path("\\boxed{-0}", "0") is True and integer_fast_path("\\boxed{+5}", "5") is True


# Arabic-Indic, fullwidth, Devanagari, Bengali, mathematical bold, and a mix with ASCII: all decimal digits.
NON_ASCII_42 = ["٤٢", "４２", "४२", "৪২", "𝟒𝟐", "4٢"]


@pytest.mark.parametrize("digits", NON_ASCII_42)
def test_non_ascii_digits_judge_alike_on_the_fast_path_and_math_verify(digits):
    """One rule for both paths: Unicode decimal digits count as their ASCII digits, in answers and ground truths.

    ``\\boxed{٤٢}`` takes the integer fast path; ``\\boxed{\\frac{٨٤}{٢}}`` and two boxes go to math-verify."""
    fast_forms = [f"\\boxed{{{digits}}}", f"The answer is $\\boxed{{ {digits} }}$."]
    slow_forms = [f"\\boxed{{{digits}}} and again \\boxed{{{digits}}}", f"\\boxed{{{digits}.0}}"]
    for form in fast_forms:
        assert integer_fast_path(ascii_digits(form), "42") is not None
    for form in fast_forms + slow_forms:
        assert is_correct(wrap(form), "42"), form
        assert not is_correct(wrap(form), "43"), form
    assert is_correct(wrap("\\boxed{42}"), digits) and is_correct(wrap("\\boxed{{42}}"), digits)
    assert is_correct(wrap("\\boxed{\\frac{٨٤}{٢}}"), "42")
    assert is_correct(wrap("\\boxed{\\frac{1}{2}}"), "\\frac{١}{٢}")


def test_deep_nesting_is_a_clean_wrong_verdict():
    """Past ~100 reciprocals latex2sympy overflows the stack and math-verify falls back to an inner part of the box
    (here ``\\frac{1}{2}``), so a wrong answer scored +1; deeper than the nesting cap is now simply wrong."""
    deep = wrap(f"\\boxed{{{nested_fracs(200)}}}")    # value 2
    assert math_reward(deep, "\\frac{1}{2}") == -1.0
    assert math_reward(deep, "2") == -1.0
    assert is_correct(wrap(f"\\boxed{{{nested_fracs(6)}}}"), "2")      # honest nesting still judged
    assert is_correct(wrap("\\boxed{1+\\frac{1}{1+\\frac{1}{1+\\frac{1}{2}}}}"), "\\frac{8}{5}")


def test_a_long_operator_chain_is_a_clean_wrong_verdict():
    """600 chained "+1" overflow sympy's expression parser and math-verify fell back to the last term, so the sum
    "1+1+...+1" was judged equal to 1; past ``MAX_OPERATORS`` the answer is wrong, whatever the truth."""
    chain = "+".join(["1"] * 600)
    assert math_reward(wrap(chain), "1") == -1.0
    assert math_reward(wrap(f"${chain}$"), "600") == -1.0
    assert is_correct(wrap("\\boxed{x^4+4x^3+6x^2+4x+1}"), "(x+1)^4")   # an honest polynomial is still judged


ADVERSARIAL_100KB = {
    "nested braces": "\\boxed{" + "{" * 50_000 + "1" + "}" * 50_000 + "}",
    "nested parens": "\\boxed{" + "(" * 50_000 + "1" + ")" * 50_000 + "}",
    "nested fracs": "\\boxed{" + nested_fracs(10_000, "1") + "}",
    "10^5 digits": "\\boxed{" + "1" * 100_000 + "}",
    "over the size cap": "\\boxed{1} " * 20_000,
}


def _timed_rewards(texts: list[str]) -> tuple[list[float], float]:
    start = time.perf_counter()
    return [math_reward(wrap(t), "1") for t in texts], time.perf_counter() - start


def test_adversarial_answers_are_bounded_in_the_main_thread():
    """Each 100 KB attack gets -1 at once from the size and nesting caps (before: seconds to a crash)."""
    scores, seconds = _timed_rewards(list(ADVERSARIAL_100KB.values()))
    assert scores == [-1.0] * len(ADVERSARIAL_100KB)
    assert seconds < 10  # a hang guard (caps answer in ~0.1 s; uncapped, each took seconds to a crash)


def test_adversarial_answers_are_bounded_in_a_worker_thread():
    """The same from a thread pool, as a reward function run off the main thread would be."""
    with ThreadPoolExecutor(max_workers=2) as pool:
        scores, seconds = pool.submit(_timed_rewards, list(ADVERSARIAL_100KB.values())).result(timeout=60)
    assert scores == [-1.0] * len(ADVERSARIAL_100KB)
    assert seconds < 10  # a hang guard (caps answer in ~0.1 s; uncapped, each took seconds to a crash)


def test_a_huge_power_times_out_as_wrong_in_both_threads():
    """``9^{9^{9^9}}`` is short but math-verify cannot settle it: its 5 s parse timeout gives -1, in the main
    thread by signal and off it inside a pool worker's main thread."""
    text = wrap("\\boxed{9^{9^{9^9}}}")
    start = time.perf_counter()
    assert math_reward(text, "0") == -1.0
    assert time.perf_counter() - start < PARSE_TIMEOUT_S + 10  # a hang guard: the alarm fired
    with ThreadPoolExecutor(max_workers=1) as pool:
        assert pool.submit(math_reward, text, "0").result(timeout=120) == -1.0


def _exit_code(proc, within_s: float = 3.0) -> int | None:
    """The exit code of a pool worker once it is gone (the pool's own thread may reap it first), else None."""
    deadline = time.monotonic() + within_s
    while proc.exitcode is None and time.monotonic() < deadline:
        time.sleep(0.05)
    return proc.exitcode


def test_a_stuck_pool_worker_is_killed_and_counted_wrong(monkeypatch):
    """A chunk past its time bound is wrong and its worker process is killed, not left running."""
    assert _in_pool(verify_answer, [("\\boxed{\\frac{1}{2}}", "\\frac{1}{2}")]) == [True]   # starts the pool
    workers = list(math_judge._pool()._processes.values())  # private: the test checks the kill
    monkeypatch.setattr(math_judge, "POOL_START_S", 0.0)
    monkeypatch.setattr(math_judge, "CALL_BOUND_S", 1.0)
    start = time.perf_counter()
    assert _in_pool(verify_answer, [("\\boxed{9^{9^{9^9}}}", "0")]) == [False]
    assert time.perf_counter() - start < 10  # a hang guard: the bound fired, the tower did not finish
    assert [_exit_code(proc) for proc in workers] == [-signal.SIGKILL] * len(workers)   # killed, not finished
    monkeypatch.undo()
    assert _in_pool(verify_answer, [("\\boxed{3}", "3")]) == [True]  # a fresh pool serves the next call


def test_math_verify_logs_a_timed_out_answer_cut_short(caplog, monkeypatch):
    """math-verify logs each timed-out input whole; one 100 KB answer must not become one 100 KB log line."""
    # a 1 s parse timeout: on an idle fast machine the 5 s one let this parse finish, and nothing was logged
    monkeypatch.setattr(math_judge, "PARSE_TIMEOUT_S", 1)
    halves = "\\boxed{" + "+".join(["\\frac{1}{2}"] * 8000) + "}"   # ~96 KB: its parse times out
    with caplog.at_level(logging.WARNING, logger="math_verify"):
        assert math_reward(wrap(halves), "0") == -1.0
    assert caplog.records and max(len(r.getMessage()) for r in caplog.records) < LOG_CHARS + 40


def test_the_lenient_reading_needs_no_think_tag_and_never_passes_a_wrong_answer():
    """The strict judge scores a right answer without ``</think>`` as wrong; the lenient reading (a control beside
    it, never a reward) takes the answer from the whole text then, and from after ``</think>`` when there is one."""
    bare, tagged = "so it is \\boxed{42}", "<think>\n\\boxed{7}\n</think>\n\\boxed{42}"
    assert not math_judge.is_correct(bare, "42") and math_judge.is_correct_lenient(bare, "42")
    assert math_judge.is_correct(tagged, "42") and math_judge.is_correct_lenient(tagged, "42")
    assert not math_judge.is_correct_lenient("<think>\n\\boxed{42}\n</think>\n\\boxed{7}", "42")
    assert not math_judge.is_correct_lenient("so it is \\boxed{41}", "42")
