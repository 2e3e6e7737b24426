"""Worst-case seconds of the judges on adversarial 100 KB model outputs, and the code extraction beside the regex;
of the output comparison, the evaluation's judge call and the loaders on 1 MiB ones.

    .venv/bin/python benchmarks/bench_adversarial.py [--size 100000] [--regex-size 6000] [--large 1048000]
                                                     [--no-record]

Three questions (issue 22): how long can one crafted response hold an RL step?
- **Code extraction**: ``rewards.code.extract_program`` (a linear scan) on six crafted 100 KB texts, and, side by
  side on the same shapes cut to ``--regex-size`` characters, the official regex it replaces (which backtracks
  super-linearly: 186 s on 36 KB); the ratio is the median over shapes of regex seconds / scan seconds.
- **Code judge**: one whole ``code_reward`` call (think checks, extraction, sandboxed tests) per crafted response.
- **Math judge**: one ``math_reward`` call per crafted 100 KB answer (deep nesting, towers of powers, 10^5 digits,
  long operator chains, thousands of boxes ...), in the main thread and in a worker thread (the pool path).
- **Output comparison** (issue 43): ``rewards.code.passes`` of a call-based test on ``--large``-character program
  outputs (100,000s of nested brackets, quotes, flat lists), and **the evaluation's judge call**
  (``rewards.judge.verdict``, the sandbox included) on programs printing them: each must be a wrong answer, none
  may raise.
- **Loaders** (issue 43): a mirror file (JSONL and JSON), a samples file, a code ground truth nested ``--large``
  deep, a run record and a table with a ``--large``-character field: each must raise ``ValueError`` naming where.
Each figure is the worst over its inputs; the notes name the input that took longest. Every verdict must be -1
(except a long answer whose last box is the truth, which must be +1): a fast wrong verdict is the point.
"""
from __future__ import annotations

import argparse
import logging
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from klear_lib import tables
from klear_lib.data import fetch
from klear_lib.evaluation import harness
from klear_lib.results import EVAL
from klear_lib.rewards import code as cj
from klear_lib.rewards import judge
from klear_lib.rewards.math import math_reward
from klear_lib.rewards.sandbox import ExecutionResult
from klear_lib.training import rewards as reward_adapters
from klear_lib.training.run_record import read_rows

import perf  # benchmarks/perf.py, beside this script

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


FUNCTIONAL = [{"input": "1", "output": "2", "kind": "functional", "fn_name": "f"}]


def outputs(n: int) -> dict[str, str]:
    """Program outputs of about ``n`` characters a call-based test compares (none of them the expected 2)."""
    half = n // 2
    return {"brackets": "[" * n, "nested": "[" * half + "]" * half, "objects": nest('{"a": ', "}", n),
            "flat": "[" + "1," * (half - 1) + "1]", "quotes": '"' * n, "escapes": '"' + "\\" * (n - 2) + '"',
            "digits": "9" * n}


def compare_row(n: int) -> dict:
    times = {}
    for name, text in outputs(n).items():
        ok, times[name] = timed(cj.passes, FUNCTIONAL[0], ExecutionResult(text, "", "ok", 0))
        if ok:
            raise RuntimeError(f"output {name} passed")
    secs, name = worst(times)
    return perf.row(BENCH, "compare.worst_s", secs, "s", notes=f"{len(times)} outputs of ~{n} chars; worst {name}")


def verdict_row(n: int) -> dict:
    """``judge.verdict`` (as the evaluation calls it) on programs printing the outputs, each a wrong answer."""
    times = {}
    for name in ("brackets", "nested", "objects", "quotes"):
        program = f"import sys\nsys.stdout.write({outputs(n)[name]!r})\n"
        response = f"<think>\nx\n</think>\n```python\n{program}\n```"
        row = {"ability": "code", "extra_info": {"id": name, "tests": FUNCTIONAL}}
        found, times[name] = timed(judge.verdict, response, row)
        if found != {"correct": False, "reward": -1.0}:
            raise RuntimeError(f"verdict {found} on {name}")
    secs, name = worst(times)
    return perf.row(BENCH, "eval_verdict.worst_s", secs, "s",
                    notes=f"{len(times)} programs printing ~{n} chars (sandbox included); worst {name}")


def loader_inputs(n: int, folder: Path) -> dict:
    """(loader, path or text) pairs, each of which must raise ``ValueError``: JSON nested ``n`` deep, a field of
    ``n`` characters."""
    deep, half = "[" * n, n // 2
    files = {"mirror.jsonl": '{"a": 1}\n' + deep + "\n", "mirror.json": "[\n" + "[" * half + "]" * half + "\n]",
             "t.samples.jsonl": deep + "\n", "record.csv": f"step,loss,config_hash\r\n1,{'7' * n}x,h\r\n",
             "eval.csv": ",".join(EVAL.columns) + "\n" + f"sft,b,avg@k,1,{'0' * n}x,0,0,1,1,1,0,h,m\n"}
    for name, text in files.items():
        (folder / name).write_text(text)
    return {"fetch.read_records jsonl": (fetch.read_records, folder / "mirror.jsonl"),
            "fetch.read_records json": (fetch.read_records, folder / "mirror.json"),
            "harness.parse_samples": (harness.parse_samples, folder / "t.samples.jsonl"),
            "code ground truth": (reward_adapters.code_tests, deep),
            "run_record.read_rows": (read_rows, folder / "record.csv"),
            "tables.read": (lambda path: tables.read(EVAL, path), folder / "eval.csv")}


def loaders_row(n: int) -> dict:
    times = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, (load, arg) in loader_inputs(n, Path(tmp)).items():
            start = time.perf_counter()
            try:
                load(arg)
            except ValueError:
                times[name] = time.perf_counter() - start
            else:
                raise RuntimeError(f"{name} accepted its input")
    secs, name = worst(times)
    return perf.row(BENCH, "loaders.worst_s", secs, "s", notes=f"{len(times)} inputs of ~{n} chars, each refused "
                    f"naming where; worst {name}")


def run(args) -> list[dict]:
    before = perf.loadavg()
    rows = extraction_rows(args.size, args.regex_size) + [code_judge_row(args.size)] + math_judge_rows(args.size)
    rows += [compare_row(args.large), verdict_row(args.large), loaders_row(args.large)]
    note = perf.load_note(before, perf.loadavg())
    return [{**r, "notes": f"{r['notes']}; {note}"} for r in rows]


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--regex-size", type=int, default=6_000)
    parser.add_argument("--large", type=int, default=1_048_000)  # under the 1 MiB response cap with its wrapping
    perf.add_output_args(parser)
    args = parser.parse_args(argv)
    perf.emit(run(args), args)


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING, format="%(message)s")
    logging.getLogger("math_verify").setLevel(logging.ERROR)  # it logs each timed-out input in full (100 KB)
    main()
