"""The math judge: the paper's shaping and its order, AIME answer forms, the fast path, threads and processes."""
from __future__ import annotations

import threading
import time
from concurrent.futures import ProcessPoolExecutor
import multiprocessing

import pytest

from klear_lib.rewards.math import (integer_fast_path, is_correct, math_reward, math_rewards, verify_answer)
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
