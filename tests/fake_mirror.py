"""A small offline mirror written by the tests: every registered mirror file, in its source's real schema, with
invented rows (never copies of the real ones) and a few malformed records that the loaders must count.

``write(root)`` lays the files out at their registered paths and returns the records written per source, so a
test can set ``$KLEAR_BENCHMARKS`` to ``root`` and run the real loaders end to end without the real data.
"""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from klear_lib.data.sources import SOURCES

MATH = [("Find the remainder when $7^{2024}$ is divided by $11$ in this invented contest problem.", "5"),
        ("How many positive divisors does $360$ have, counting $1$ and $360$ itself?", "24"),
        ("A fair coin is tossed $6$ times. In how many sequences do exactly $2$ heads appear?", "15")]
STDIN_TESTS = [{"input": f"{n}\n", "output": f"{n * n}\n", "testtype": "stdin"} for n in (2, 3, 4)]
CALL_TESTS = [{"input": "[1, 2, 3]", "output": "6", "testtype": "functional"},
              {"input": "[5]", "output": "5", "testtype": "functional"}]
STARTER = "class Solution:\n    def total(self, nums: List[int]) -> int:\n        "
LEETCODE_CHECK = ("def check(candidate):\n    assert candidate(nums=[1, 2, 3]) == 6\n"
                  "    assert candidate(nums=[]) == 0\n\ncheck(Solution().total)\n")
LEETCODE_SOLUTION = "class Solution:\n    def total(self, nums):\n        return sum(nums)\n"


def _klear_aime24() -> list[dict]:
    return [{"messages": [{"role": "user", "content": q}],
             "meta": {"unique_id": f"2024-I-{i + 1}", "Year": "2024", "Problem Number": i + 1, "problem": q,
                      "solution": a, "Part": "I", "know_type": "", "know_point": "", "level": "Hard", "answer": a}}
            for i, (q, a) in enumerate(MATH)]


def _klear_aime25() -> list[dict]:
    return [{"meta": {"unique_id": i, "Year": 2025, "Problem Number": i, "problem": q, "solution": a, "Part": i},
             "messages": [{"role": "user", "content": q}]} for i, (q, a) in enumerate(MATH)]


def _hmmt() -> list[dict]:
    rows = [{"id": i, "messages": [{"role": "user", "content": q}], "solution": f"\\boxed{{{a}}}", "answer": a}
            for i, (q, a) in enumerate(MATH)]
    return rows + [{"id": 9, "messages": [{"role": "user", "content": "Compute $\\frac{1}{2}+\\frac{1}{3}$."}],
                    "solution": "\\boxed{\\frac{5}{6}}", "answer": "\\frac{5}{6}"}]


def _math500() -> list[dict]:
    return [{"problem": q, "solution": "Invented worked solution.", "answer": a, "subject": "Number Theory",
             "level": 3, "unique_id": f"test/number_theory/{i}.json"} for i, (q, a) in enumerate(MATH)]


def _lcb_meta() -> list[dict]:
    dates = ["2024-08-03T00:00:00", "2024-12-28T00:00:00", "2024-07-20T00:00:00"]  # the last is outside v5
    return [{"global_id": 500 + i, "question_id": f"abc9{i}_a", "contest_id": f"abc9{i}", "contest_date": d,
             "prompt": f"You will be given a question (problem specification) ... invented problem {i}.",
             "tests": {"fname": f"{500 + i}.json", "md5": "0" * 32}} for i, d in enumerate(dates)]


def _lcb_tests() -> list[dict]:
    return [{"problem": "Read n and print its square.", "starter_code": "", "tests": STDIN_TESTS},
            {"problem": "Return the sum of nums.", "starter_code": STARTER, "tests": CALL_TESTS},
            {"problem": "Print the input back.", "starter_code": "", "tests": STDIN_TESTS[:1]}]


def _rllm_train() -> list[dict]:
    return _lcb_tests() + [{"problem": "", "starter_code": "", "tests": STDIN_TESTS}]  # empty prompt: counted


def _leetcode() -> list[dict]:
    return [{"problem": "Please solve the programming task below ... Return the sum of nums.",
             "solutions": LEETCODE_SOLUTION, "tests": {"functional": LEETCODE_CHECK}},
            {"problem": "Please solve ... a record without tests.", "solutions": LEETCODE_SOLUTION, "tests": {}}]


def _deepscaler_aime() -> list[dict]:
    return [{"problem": q, "solution": "Invented.", "answer": a, "year": 1990 + i, "aime_number": 1,
             "problem_number": i + 1, "difficulty": 4.0} for i, (q, a) in enumerate(MATH)]


def _deepscaler_math() -> list[dict]:
    rows = [{"problem": q, "answer": a, "difficulty": 2.0, "type": "Algebra"} for q, a in MATH]
    return rows + [{"problem": "An invented problem whose answer is missing.", "difficulty": 1.0, "type": "Algebra"}]


FILES = {"klear_reasoner_eval/aime24.qs.jsonl": _klear_aime24, "klear_reasoner_eval/aime25.qs.jsonl": _klear_aime25,
         "klear_reasoner_eval/HMMT-202502.jsonl": _hmmt, "math500/test.jsonl": _math500,
         "qwq_eval/livecodebench_v5.jsonl": _lcb_meta,
         "livecodebench_v5_rllm_public_tests/livecodebench.json": _lcb_tests,
         "code_rl_train_rllm/livecodebench.json": _rllm_train, "code_rl_train_rllm/leetcode.json": _leetcode,
         "math_train_deepscaler/aime.json": _deepscaler_aime, "math_train_deepscaler/math.json": _deepscaler_math}


PROBLEMS = {"aime2024": 3, "aime2025": 3, "hmmt2025": 4, "math500": 3, "lcb_v5": 2}  # lcb_v5: 1 record off-window


def expect(monkeypatch, problems: dict[str, int] = PROBLEMS) -> None:
    """Set the registry's benchmark sizes (``Source.problems``) to a fixture's for one test: loaders check them,
    and the invented files are far smaller than the real benchmarks (whose sizes ``test_real_data.py`` checks)."""
    for name, n in problems.items():
        monkeypatch.setitem(SOURCES, name, dataclasses.replace(SOURCES[name], problems=n))


def write(root: Path) -> dict[str, list]:
    """Write every registered mirror file under ``root``; returns ``{relative path: records}``."""
    registered = {f.path for s in SOURCES.values() for f in s.mirror_files}
    assert registered == set(FILES), f"fixture and registry disagree: {sorted(registered ^ set(FILES))}"
    out = {}
    for rel, make in FILES.items():
        records = make()
        path = Path(root) / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        text = (json.dumps(records) if rel.endswith(".json")
                else "".join(json.dumps(r) + "\n" for r in records))
        path.write_text(text, encoding="utf-8")
        out[rel] = records
    return out
