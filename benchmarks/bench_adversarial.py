"""Worst-case seconds of the judges on adversarial 100 KB model outputs, and the code extraction beside the regex.

    .venv/bin/python benchmarks/bench_adversarial.py [--size 100000] [--regex-size 6000] [--no-record]

Three questions (issue 22): how long can one crafted response hold an RL step?
- **Code extraction**: ``rewards.code.extract_program`` (a linear scan) on six crafted 100 KB texts, and, side by
  side on the same shapes cut to ``--regex-size`` characters, the official regex it replaces (which backtracks
  super-linearly: 186 s on 36 KB); the ratio is the median over shapes of regex seconds / scan seconds.
- **Code judge**: one whole ``code_reward`` call (think checks, extraction, sandboxed tests) per crafted response.
- **Math judge**: one ``math_reward`` call per crafted 100 KB answer (deep nesting, towers of powers, 10^5 digits,
  long operator chains, thousands of boxes ...), in the main thread and in a worker thread (the pool path).
Each figure is the worst over its inputs; the notes name the input that took longest. Every verdict must be -1
(except a long answer whose last box is the truth, which must be +1): a fast wrong verdict is the point.
"""
from __future__ import annotations

import argparse
import logging
import time
from concurrent.futures import ThreadPoolExecutor

from klear_lib import perf
from klear_lib.rewards import code as cj
from klear_lib.rewards.math import math_reward

BENCH = "adversarial"
TESTS = [{"input": "1\n", "output": "2\n"}]


def fill(unit: str, size: int) -> str:
    return (unit * (size // len(unit) + 1))[:size]


def code_texts(size: int) -> dict[str, str]:
    """Responses on which the official extraction regex backtracks (think tags and fences in bulk)."""
    return {"opens_no_close": fill("</think>```python\n", size),
            "thinks_then_opens": fill("</think>", size // 2) + fill("```python\n", size // 2),
            "opens_then_thinks": fill("```python\n</think>", size),
            "close_first": "\n```" + fill("</think>```python\nx", size),
            "fences_only": "</think>" + fill("```python\n```", size),
            "newlines": "</think>```python\n" + fill("\n`", size)}


def code_responses(size: int) -> dict[str, str]:
    """Whole responses for the code judge: the crafted texts after a think block, and one real program buried in
    filler (extracted and run in the sandbox)."""
    out = {name: "<think>\nx\n</think>\n" + text for name, text in code_texts(size).items()}
    out["program_in_filler"] = ("<think>\n" + fill("x ", size) + "\n</think>\n```python\nprint(int(input()) + 1)\n```")
    return out


def nest(open_: str, close: str, size: int, core: str = "1") -> str:
    k = (size - len(core)) // (len(open_) + len(close))
    return open_ * k + core + close * k


def math_answers(n: int) -> dict[str, str]:
    """Crafted answers of about ``n`` characters, judged against the ground truth "1"."""
    pad = "x " * (n // 2 - 40)
    nested_boxes = "\\boxed{" + "(" * 10 + "1" + ")" * 10 + "} "
    return {"braces": "\\boxed{" + nest("{", "}", n) + "}", "parens": "\\boxed{" + nest("(", ")", n) + "}",
            "left_right": "\\boxed{" + nest("\\left(", "\\right)", n) + "}",
            "frac_nested": "\\boxed{" + nest("\\frac{1}{", "}", n) + "}",
            "frac_flat": "\\boxed{" + "+".join(["\\frac{1}{2}"] * (n // 12)) + "}",
            "sqrt_nested": "\\boxed{" + nest("\\sqrt{", "}", n, "2") + "}",
            "tower": "\\boxed{9^{9^{9^9}}}", "tower_padded": "x " * (n // 2 - 20) + "\\boxed{9^{9^{9^9}}}",
            "power_big": "\\boxed{99999999999^{99999999999}}", "power_chain": "\\boxed{" + "^".join(["9"] * 2000) + "}",
            "factorial": "\\boxed{(10^{10})!}", "digits": "\\boxed{" + "7" * n + "}",
            "digits_frac": "\\boxed{\\frac{" + "7" * (n // 2) + "}{" + "3" * (n // 2) + "}}",
            "digits_decimal": "\\boxed{0." + "3" * n + "}", "many_boxes": "\\boxed{1} " * (n // 10),
            "many_dollars": "$1$ " * (n // 4), "open_boxes": "\\boxed{" * (n // 7), "dollars_open": "$" * n,
            "final_answer": "The final answer is $" * (n // 21), "plain_sum": "1+" * (n // 2) + "1",
            "plain_parens": nest("(", ")", n), "parens20_padded": pad + "\\boxed{" + "(" * 20 + "1" + ")" * 20 + "}",
            "braces19_padded": pad + "\\boxed{" + "{" * 19 + "1" + "}" * 19 + "}",
            "sin19_padded": pad[:-60] + "\\boxed{" + "\\sin(" * 19 + "1" + ")" * 19 + "}",
            "many_nested_boxes": nested_boxes * (n // len(nested_boxes)),
            "many_empty_fracs": "\\boxed{\\frac{}{}} " * (n // 18), "many_bad_dollars": "$\\frac{}{}$ " * (n // 12)}


RIGHT_MATH = {"many_boxes", "many_dollars", "many_nested_boxes"}  # their last answer is the truth "1"


def timed(fn, *args):
    start = time.perf_counter()
    out = fn(*args)
    return out, time.perf_counter() - start


def worst(times: dict[str, float]) -> tuple[float, str]:
    name = max(times, key=times.get)
    return times[name], name


def extraction_rows(size: int, regex_size: int) -> list[dict]:
    scan = {n: timed(cj.extract_program, t)[1] for n, t in code_texts(size).items()}
    ratios = []
    for name, text in code_texts(regex_size).items():
        (new, t_new), (old, t_old) = timed(cj.extract_program, text), timed(cj.CODE_PATTERN.search, text)
        if new != (old.group(1) if old else None):
            raise RuntimeError(f"scan and regex disagree on {name}")
        ratios.append(t_old / max(t_new, 1e-9))
    secs, name = worst(scan)
    ratio = perf.summary(ratios)
    return [perf.row(BENCH, "extract.worst_s", secs, "s", notes=f"{len(scan)} texts of {size} chars; worst {name}"),
            perf.row(BENCH, "extract.speedup_vs_regex", ratio["median"], "x", "official regex",
                     f"{len(ratios)} shapes of {regex_size} chars; {perf.iqr_note(ratio)}")]


def code_judge_row(size: int) -> dict:
    times = {}
    for name, response in code_responses(size).items():
        score, times[name] = timed(cj.code_reward, response, TESTS)
        if score != (1.0 if name == "program_in_filler" else -1.0):
            raise RuntimeError(f"code judge gave {score} on {name}")
    secs, name = worst(times)
    return perf.row(BENCH, "code_judge.worst_s", secs, "s", notes=f"{len(times)} responses of ~{size} chars; "
                    f"worst {name}")


def judge_all(answers: dict[str, str]) -> dict[str, float]:
    """Seconds of one ``math_reward`` call per answer (in the calling thread); verdicts checked."""
    times = {}
    for name, text in answers.items():
        score, times[name] = timed(math_reward, f"<think>\nx\n</think>\n{text}", "1")
        if score != (1.0 if name in RIGHT_MATH else -1.0):
            raise RuntimeError(f"math judge gave {score} on {name}")
    return times


def math_judge_rows(size: int) -> list[dict]:
    answers = math_answers(size)
    main = judge_all(answers)
    with ThreadPoolExecutor(max_workers=1) as pool:
        pool.submit(math_reward, "\\boxed{1}", "1").result()   # start the judge's process pool outside timings
        thread = pool.submit(judge_all, answers).result()
    rows = []
    for where, times in (("main_thread", main), ("worker_thread", thread)):
        secs, name = worst(times)
        rows.append(perf.row(BENCH, f"math_judge.worst_s.{where}", secs, "s",
                             notes=f"{len(times)} answers of ~{size} chars; worst {name}"))
    return rows


def run(args) -> list[dict]:
    before = perf.loadavg()
    rows = extraction_rows(args.size, args.regex_size) + [code_judge_row(args.size)] + math_judge_rows(args.size)
    note = perf.load_note(before, perf.loadavg())
    return [{**r, "notes": f"{r['notes']}; {note}"} for r in rows]


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--regex-size", type=int, default=6_000)
    perf.add_output_args(parser)
    args = parser.parse_args(argv)
    perf.emit(run(args), args)


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING, format="%(message)s")
    logging.getLogger("math_verify").setLevel(logging.ERROR)  # it logs each timed-out input in full (100 KB)
    main()
