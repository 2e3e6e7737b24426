"""The code judge: extract the program after ``</think>``, run sampled tests in Firejail, score pass rates.

As the official ``code_r1_compute.compute_score(is_longcot=True)`` (docs/paper.md §2.5): think-tag checks (-0.5 /
-2), the program from the last ```python block after ``</think>`` (none: -1), up to 16 tests sampled with a
seed, each run in the sandbox; soft reward = mean of +1 pass / -1 fail (= 2·pass_rate - 1), hard reward = +1
only if every sampled test passes (Fig. 3's baseline). A test is ``{"input": str, "output": str}`` (stdin to
expected stdout), optionally ``"kind": "functional"`` with ``"fn_name"`` (LiveCodeBench's call-based tests:
one JSON argument per input line, JSON result) or ``"kind": "assert"`` (LeetCode ``check(candidate)`` code ending
in ``check(Solution().name)``).
Assert tests run in two processes (``assert_check.py``): the check code in one that the program never runs in,
the program in a child answering its calls with JSON, so a pass is the checker's own line, printed only when every
assert ran (with program and asserts in one process and exit status 0 as the pass, ``sys.exit(0)``, any other
early exit, an exception hook or an ``__eq__`` that is always true scored +1). The program is found by a linear
scan equal to the official regex (which is super-linear on crafted text), and responses over
``MAX_RESPONSE_CHARS`` score -1 unread. ``code_rewards`` (the RL reward's path) runs each distinct (program, sampled
tests) pair of a call once and gives its duplicates the same verdict.
NOTE(paper): outputs are compared after stripping the whole text and each line's trailing spaces (official:
``.strip()`` of the whole text only); the import prelude of functional tests is ours (the official one also
imports numpy and pandas, which costs ~0.3 s per test).
"""
from __future__ import annotations

import itertools
import json
import logging
import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Sequence

from klear_lib.rewards.assert_check import VERDICT
from klear_lib.rewards.format import FORMAT_ERROR_SCORE, INCORRECT_SCORE, think_tag_score
from klear_lib.rewards.sandbox import (DEFAULT_TIMEOUT_S, ExecutionResult, SandboxLimits, SandboxUnavailable,
                                       execute, run_in_sandbox)
from klear_lib.seeding import py_rng

__all__ = ["execute", "ExecutionResult", "SandboxUnavailable", "extract_program", "code_reward", "code_rewards",
           "plan_reward", "distinct_jobs", "run_tests", "execute_tests", "sample_tests",
           "parse_tests", "parse_rllm_tests", "outputs_match", "MAX_TESTS"]

log = logging.getLogger(__name__)
MAX_TESTS = 16  # docs/paper.md §2.5 (MAX_TEST_CASES)
# The official regex (docs/paper.md §2.5), kept as the reference ``extract_program`` is tested against; it is
# super-linear on crafted text, so the judge never runs it.
CODE_PATTERN = re.compile(r"</think>.*```python\n(.*?)\n```", re.DOTALL)
FENCE_OPEN, FENCE_CLOSE = "```python\n", "\n```"
MAX_RESPONSE_CHARS = 1 << 20  # ours: 8x a 32K-token completion (~4 chars a token); longer ones score -1 unread
CHECKER_SOURCE = Path(__file__).with_name("assert_check.py").read_text()  # run as a script in the sandbox
_FN_NAME = re.compile(r"def\s+(\w+)\s*\(\s*self")
MAX_JSON_DEPTH = 100  # ours: call-based results nest a few levels (lists of lists); deeper ones compare as text
_NOT_BRACKET = re.compile(r'"(?:[^"\\]|\\.)*"?|[^\[\]{}"]+')  # a string (maybe unclosed), or no bracket
_BRACKET_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}

PRELUDE = '''import sys, os, io, re, math, copy, heapq, bisect, string, random, operator, itertools, functools
import collections, datetime
from typing import *
from collections import *
from itertools import *
from functools import *
from heapq import *
from bisect import *
from math import inf, gcd, lcm, comb, perm, isqrt, sqrt, ceil, floor, log, log2, log10, factorial, pi, prod
from math import atan2, hypot, exp, sin, cos, tan, radians, degrees
from string import ascii_lowercase, ascii_uppercase, digits
from operator import itemgetter, attrgetter, add, sub, mul, xor, or_, and_, iand, ior, ixor, neg
from copy import deepcopy
from random import randint, randrange, shuffle, choice
try:
    from sortedcontainers import SortedList, SortedDict, SortedSet
except ImportError:
    pass
sys.setrecursionlimit(10 ** 6)


class ListNode:
    def __init__(self, val=0, next=None):
        self.val, self.next = val, next


class TreeNode:
    def __init__(self, val=0, left=None, right=None):
        self.val, self.left, self.right = val, left, right


def list_node(values):
    head = cur = ListNode()
    for v in values:
        cur.next = ListNode(v)
        cur = cur.next
    return head.next


def is_same_list(a, b):
    while a and b and a.val == b.val:
        a, b = a.next, b.next
    return a is None and b is None


def tree_node(values):
    if not values:
        return None
    nodes = [None if v is None else TreeNode(v) for v in values]
    kids, root = nodes[::-1], nodes[0]
    kids.pop()
    for node in nodes:
        if node is not None:
            node.left = kids.pop() if kids else None
            node.right = kids.pop() if kids else None
    return root


def is_same_tree(p, q):
    if p is None or q is None:
        return p is q
    return p.val == q.val and is_same_tree(p.left, q.left) and is_same_tree(p.right, q.right)

'''
DRIVER = '''
if __name__ == "__main__":
    import json as _json, sys as _sys
    _args = [_json.loads(_line) for _line in _sys.stdin.read().split("\\n") if _line.strip()]
    print(_json.dumps(Solution().{fn}(*_args)))
'''


def extract_program(response: str) -> str | None:
    """The last ```python block after ``</think>``, or None: ``CODE_PATTERN.search(response).group(1)`` in linear time.

    The regex's greedy ``.*`` picks the last opening fence after the first ``</think>`` that some closing fence
    still follows, i.e. the last one ending at or before the start of the last closing fence; its lazy group ends
    at the first closing fence after it.
    """
    think = response.find("</think>")
    last_close = response.rfind(FENCE_CLOSE)
    if think < 0 or last_close < 0:
        return None
    start = response.rfind(FENCE_OPEN, think + len("</think>"), last_close)
    if start < 0:
        return None
    body = start + len(FENCE_OPEN)
    return response[body:response.find(FENCE_CLOSE, body)]


def parse_tests(ground_truth: str | dict, row_id: Any = None) -> list[dict]:
    """Tests from a row's ``reward_model.ground_truth``: ``{"inputs","outputs"[,"fn_name"]}`` or ``{"functional"}``."""
    try:
        gt = json.loads(ground_truth) if isinstance(ground_truth, str) else ground_truth
    except RecursionError:
        raise ValueError(f"row {row_id}: ground_truth is JSON nested too deep to parse") from None
    if not isinstance(gt, dict):
        raise ValueError(f"row {row_id}: ground_truth must be a JSON object, got {type(gt).__name__}")
    if "inputs" in gt and "outputs" in gt:  # stdin (or call-based, with fn_name) tests from parallel lists
        ins, outs = gt["inputs"], gt["outputs"]
        for field, value in (("inputs", ins), ("outputs", outs)):
            if not isinstance(value, list):  # a string would become one test per character
                raise ValueError(f"row {row_id}: ground_truth field {field} must be a list (one entry per test), "
                                 f"got {type(value).__name__}")
        if len(ins) != len(outs):
            raise ValueError(f"row {row_id}: ground_truth has {len(ins)} inputs but {len(outs)} outputs")
        fn = gt.get("fn_name")
        if gt.get("testtype") == "functional" and not fn:
            raise ValueError(f"row {row_id}: call-based tests (testtype functional) need fn_name in the ground truth")
        kind = {"kind": "functional", "fn_name": fn} if fn else {}
        return [{"input": _text(i), "output": _text(o), **kind} for i, o in zip(ins, outs)]
    if "functional" in gt:
        code = gt["functional"]
        snippets = [code] if isinstance(code, str) else code
        if not isinstance(snippets, list) or not all(isinstance(c, str) for c in snippets):
            raise ValueError(f"row {row_id}: ground_truth field functional must be check code (a string or a list "
                             f"of strings), got {type(code).__name__}")
        if not all("Solution()" in c for c in snippets):  # the checker judges only calls on the program's Solution
            raise ValueError(f"row {row_id}: ground_truth field functional must call Solution() (LeetCode's "
                             "check(Solution().name)); check code that never calls it fails every program")
        return [{"input": "", "output": "", "kind": "assert", "code": c} for c in snippets]
    raise ValueError(f"row {row_id}: ground_truth has keys {sorted(gt)}; expected inputs/outputs or functional")


def _text(value: Any) -> str:
    """A test value as text (lists of lines joined, as the official sampler does)."""
    return "\n".join(map(str, value)) if isinstance(value, list) else str(value)


def parse_rllm_tests(tests: Sequence[dict], starter_code: str = "", row_id: Any = None) -> list[dict]:
    """Tests of the rLLM LiveCodeBench files: ``{"input","output","testtype": "stdin"|"functional"}``."""
    fn = _FN_NAME.search(starter_code or "")
    if fn is None and any(t.get("testtype", "stdin") == "functional" for t in tests):
        raise ValueError(f"row {row_id}: functional test but no `def name(self` in starter_code")
    return [{"input": t["input"], "output": t["output"],
             **({"kind": "functional", "fn_name": fn.group(1)} if t.get("testtype", "stdin") == "functional" else {})}
            for t in tests]


def sample_tests(tests: Sequence[dict], max_tests: int | None = MAX_TESTS, seed: int = 0) -> list[dict]:
    """Up to ``max_tests`` tests drawn without replacement by a seeded generator (order kept)."""
    if max_tests is None or len(tests) <= max_tests:
        return list(tests)
    idx = sorted(py_rng(seed, "code-tests", len(tests)).sample(range(len(tests)), max_tests))
    return [tests[i] for i in idx]


def outputs_match(actual: str, expected: str) -> bool:
    """Equal after stripping the text and every line's trailing whitespace."""
    def norm(s: str) -> list[str]:
        return [line.rstrip() for line in s.strip().splitlines()]
    return actual.strip() == expected.strip() or norm(actual) == norm(expected)


def _json_match(actual: str, expected: str) -> bool:
    """Call-based tests: JSON-equal results (falls back to text equality). A result nested deeper than
    ``MAX_JSON_DEPTH`` is compared as text (JSON parsing and ``==`` recurse once per level, and a model's output
    must fail as a wrong answer, never raise); its size is bounded by the sandbox's output cap."""
    if json_depth(actual) > MAX_JSON_DEPTH:
        return outputs_match(actual, expected)
    try:
        return json.loads(actual.strip()) == json.loads(expected.strip())
    except (ValueError, RecursionError):  # RecursionError: a deep expected output, or a thread's small stack
        return outputs_match(actual, expected)


def json_depth(text: str) -> int:
    """The deepest bracket nesting of JSON ``text`` outside its strings (an upper bound on the parser's
    recursion), in linear time."""
    brackets = _NOT_BRACKET.sub("", text)
    return max(itertools.accumulate(map(_BRACKET_STEP.__getitem__, brackets)), default=0)


def build_run(program: str, test: dict) -> tuple[str, str]:
    """The (source, stdin) actually run for ``test``: the program on its input (stdin), with the prelude and a
    driver (call-based), or the checker with the program and the check code as its job (asserts)."""
    kind = test.get("kind", "stdin")
    if kind == "functional":
        return PRELUDE + program + "\n" + DRIVER.format(fn=test["fn_name"]), test["input"]
    if kind == "assert":
        job = {"prelude": PRELUDE, "program": program, "check": test["code"], "self": CHECKER_SOURCE}
        return CHECKER_SOURCE, json.dumps(job)
    return program, test["input"]


def passes(test: dict, result: ExecutionResult) -> bool:
    """Whether one result passes its test (status ok, then the kind's comparison)."""
    if result.status != "ok":
        return False
    kind = test.get("kind", "stdin")
    if kind == "assert":  # only the checker writes its stdout, and only when every assert ran
        return result.stdout == VERDICT + "\n"
    return (_json_match if kind == "functional" else outputs_match)(result.stdout, test["output"])


def execute_tests(program: str, tests: Sequence[dict], timeout_s: float = DEFAULT_TIMEOUT_S, batched: bool = True,
                  limits: SandboxLimits = SandboxLimits()) -> list[ExecutionResult]:
    """One sandbox result per test; ``batched`` runs all tests sharing a source in one sandbox start."""
    groups: dict[str, dict[int, str]] = {}  # source -> {test index: stdin}
    for i, (source, stdin) in enumerate(build_run(program, t) for t in tests):
        groups.setdefault(source, {})[i] = stdin
    results: dict[int, ExecutionResult] = {}
    for source, stdins in groups.items():
        found = run_in_sandbox(source, list(stdins.values()), timeout_s, limits) if batched else \
            [execute(source, s, timeout_s, limits) for s in stdins.values()]
        results.update(zip(stdins, found))
    return [results[i] for i in range(len(tests))]


def run_tests(program: str, tests: Sequence[dict], timeout_s: float = DEFAULT_TIMEOUT_S, batched: bool = True,
              limits: SandboxLimits = SandboxLimits()) -> list[bool]:
    """Pass/fail per test (see ``execute_tests``)."""
    return [passes(t, r) for t, r in zip(tests, execute_tests(program, tests, timeout_s, batched, limits))]


def score_passes(passed: Sequence[bool], mode: str = "soft") -> float:
    """soft: mean of +1/-1 per test (= 2p - 1); hard: +1 iff all pass, else -1 (docs/paper.md §2.5, Fig. 3)."""
    if mode not in ("soft", "hard"):
        raise ValueError(f"mode must be 'soft' or 'hard', got {mode!r}")
    if not passed:
        return FORMAT_ERROR_SCORE
    if mode == "hard":
        return 1.0 if all(passed) else -1.0
    return sum(1.0 if p else -1.0 for p in passed) / len(passed)


def plan_reward(response: str, tests: Sequence[dict] | str | dict, max_tests: int | None = MAX_TESTS,
                seed: int = 0, tag_shaping: str = "official") -> float | tuple[str, list[dict]]:
    """The reward of a response that needs no sandbox (size cap, think tags, no program, no tests) as a float,
    else the ``(program, sampled tests)`` the sandbox must judge."""
    if len(response) > MAX_RESPONSE_CHARS:
        return INCORRECT_SCORE
    if (penalty := think_tag_score(response, tag_shaping)) is not None:
        return penalty
    if isinstance(tests, (str, dict)):  # a row's ground truth (JSON text or object) instead of parsed tests
        tests = parse_tests(tests)
    if (program := extract_program(response)) is None or not tests:
        return FORMAT_ERROR_SCORE
    return program, sample_tests(tests, max_tests, seed)


def code_reward(response: str, tests: Sequence[dict], mode: str = "soft", max_tests: int | None = MAX_TESTS,
                seed: int = 0, timeout_s: float = DEFAULT_TIMEOUT_S, batched: bool = True,
                tag_shaping: str = "official") -> float:
    """The paper's code reward of one response (think checks, extraction, sampled tests in the sandbox);
    ``tag_shaping`` as in ``klear_lib.rewards.format.think_tag_score``."""
    plan = plan_reward(response, tests, max_tests, seed, tag_shaping)
    if not isinstance(plan, tuple):
        return plan
    return score_passes(run_tests(*plan, timeout_s, batched), mode)


def code_rewards(responses: Sequence[str], tests: Sequence[Sequence[dict] | str | dict], mode: str = "soft",
                 max_tests: int | None = MAX_TESTS, seed: int | Sequence[int] = 0,
                 timeout_s: float = DEFAULT_TIMEOUT_S, workers: int = 2, batched: bool = True,
                 tag_shaping: str = "official", dedup: bool = True) -> list[float]:
    """``code_reward`` for many responses (``seed``: one for all, or one per response), ``workers`` sandboxes at a
    time; with ``dedup`` each distinct (program, sampled tests) pair runs once and its duplicates share the verdict.

    A small policy repeats itself (in a tiny code-RL step of 8 prompts x 8 rollouts, 34-38% of the sandboxed
    rollouts repeat a program of their prompt under the SFT policy, 67% under the trained one), and a duplicate's
    run would be the same program on the same stdin in an identical fresh sandbox, so containment is unchanged: no
    sandbox ever holds a second program.
    NOTE(paper): the official judge runs every rollout; a program whose output is random (or that runs close to its
    timeout) gets one draw per call here instead of one per rollout. ``dedup=False`` restores that.
    A response that breaks its judge scores -1 (logged), never raising out of the RL step; ground truths are parsed
    first, so a bad row still raises, and so does a missing sandbox (every reward would be wrong).
    """
    if len(responses) != len(tests):
        raise ValueError(f"{len(responses)} responses but {len(tests)} test lists")
    seeds = [seed] * len(responses) if isinstance(seed, int) else list(seed)
    if len(seeds) != len(responses):
        raise ValueError(f"{len(responses)} responses but {len(seeds)} seeds")
    parsed = [parse_tests(t, i) if isinstance(t, (str, dict)) else t for i, t in enumerate(tests)]
    plans: list[float | tuple[str, list[dict]]] = []
    for i, response in enumerate(responses):
        try:
            plans.append(plan_reward(response, parsed[i], max_tests, seeds[i], tag_shaping))
        except Exception:  # one response costs only its own reward
            log.exception("code reward of response %d failed; scored -1", i)
            plans.append(INCORRECT_SCORE)
    jobs, job_of = distinct_jobs(plans, dedup)

    def judge(k: int) -> list[bool] | None:
        """Pass/fail per test of job ``k``, or None (logged) when judging it raised; a missing sandbox still raises."""
        try:
            return run_tests(*jobs[k][1:], timeout_s, batched)
        except SandboxUnavailable:
            raise  # a setup error, not the response's: every reward would be wrong
        except Exception:  # one program costs only its own rewards
            log.exception("code judge of job %d (response %d) failed; its responses scored -1", k, jobs[k][0])
            return None
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        passed = list(pool.map(judge, range(len(jobs))))
    return [plan if k is None else (INCORRECT_SCORE if passed[k] is None else score_passes(passed[k], mode))
            for plan, k in zip(plans, job_of)]


def distinct_jobs(plans: Sequence[float | tuple[str, list[dict]]], dedup: bool = True
                  ) -> tuple[list[tuple[int, str, list[dict]]], list[int | None]]:
    """The sandbox jobs of ``plan_reward`` results, ``(first response index, program, tests)`` in first-seen order
    (one per distinct pair with ``dedup``, else one per response), and each plan's job index (None: no job)."""
    jobs: list[tuple[int, str, list[dict]]] = []
    index: dict[tuple[str, str], int] = {}
    job_of: list[int | None] = []
    for i, plan in enumerate(plans):
        if not isinstance(plan, tuple):  # a reward already, no sandbox
            job_of.append(None)
            continue
        key = (plan[0], repr(plan[1])) if dedup else (str(i), "")  # repr never raises; equal tests print alike
        if index.setdefault(key, len(jobs)) == len(jobs):
            jobs.append((i, *plan))
        job_of.append(index[key])
    return jobs, job_of
