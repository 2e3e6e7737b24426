"""Invented records in the column layout of each hub dataset the registry names (``klear_lib.data.sources``), as
``datasets`` returns them: one or two good records per source and, where a real dataset has such rows, a bad one.

Layouts follow the datasets' cards; where a card could not be read the layout is UNVERIFIED (the registry's
``revision_note`` says so) and the record is our best reading of it.
"""
from __future__ import annotations

import json

Q = "Find the number of positive integers $n < 100$ such that $n^2 + 1$ is divisible by $5$, in this invented task."
STDIN = json.dumps([{"input": "3\n", "output": "9\n", "testtype": "stdin"}])
VERL_CODE_TRUTH = json.dumps({"inputs": ["3\n"], "outputs": ["9\n"]})

RECORDS = {
    "aime2024": [{"id": 60, "problem": Q, "solution": "Invented.", "answer": "040", "url": "https://example.org/p1",
                  "year": "2024"}],
    "aime2025": [{"problem_idx": 1, "problem": Q, "answer": 40, "problem_type": ["Number Theory"]}],
    "hmmt2025": [{"problem_idx": 1, "problem": "Compute $\\frac{1}{2}+\\frac{1}{3}$.", "answer": "\\frac{5}{6}",
                  "problem_type": ["Algebra"]}],
    "math500": [{"problem": Q, "solution": "Invented.", "answer": "40", "subject": "Number Theory", "level": 3,
                 "unique_id": "test/number_theory/1.json"}, {"problem": "", "answer": "1"}],
    "lcb_v5": [{"question_title": "Square", "question_content": "Read n and print n squared.", "platform": "atcoder",
                "question_id": "abc999_a", "contest_id": "abc999", "contest_date": "2024-09-07T00:00:00",
                "starter_code": "", "difficulty": "easy", "public_test_cases": STDIN, "private_test_cases": "eJw=",
                "metadata": "{}"}],
    "lcb_v6": [{"question_title": "Total", "question_content": "Return the sum of nums.", "platform": "leetcode",
                "question_id": "3999", "contest_id": "weekly-contest-999", "contest_date": "2025-03-01T00:00:00",
                "starter_code": "class Solution:\n    def total(self, nums: List[int]) -> int:\n        ",
                "difficulty": "easy", "private_test_cases": "eJw=", "metadata": json.dumps({"func_name": "total"}),
                "public_test_cases": json.dumps([{"input": "[1, 2]", "output": "3", "testtype": "functional"}])}],
    "klear_math_sub30k": [{"data_source": "math_longcot_math_verify", "prompt": [{"content": Q, "role": "user"}],
                           "ability": "math", "reward_model": {"ground_truth": "40", "style": "rule"},
                           "__index_level_0__": "0"}],
    "klear_code_sub15k": [{"hash": "0" * 32, "ability": "code", "data_source": "coder1_longcot",
                           "prompt": [{"content": "Read n and print n squared.", "role": "user"}],
                           "reward_model": {"ground_truth": VERL_CODE_TRUTH, "style": "rule"}}],
    "openthoughts3": [{"difficulty": 6, "source": "invented", "domain": "math",
                       "conversations": [{"from": "human", "value": Q}, {"from": "gpt", "value": "<think>…"}]},
                      {"difficulty": 3, "source": "invented", "domain": "science",  # a domain the kit does not use
                       "conversations": [{"from": "human", "value": "Why is the sky blue?"}]}],
    "numinamath": [{"problem": Q, "solution": "Invented.", "answer": "40", "problem_type": "Number Theory",
                    "question_type": "math-word-problem", "problem_is_valid": "Yes", "solution_is_valid": "Yes",
                    "source": "invented", "synthetic": False}],
    "acereason_1_1_sft": [{"input": Q, "output": "<think>…", "category": "math"},
                          {"input": "Write a program that prints n squared.", "output": "…", "category": "code"}],
    "opencodereasoning": [{"id": "0", "input": "Read n and print n squared.", "output": "<think>…", "source": "taco",
                           "license": "apache-2.0", "dataset": "taco", "split": "train", "difficulty": "EASY",
                           "solution": "print(int(input())**2)"}],
    "taco": [{"question": "Read n and print n squared.", "solutions": json.dumps(["print(int(input())**2)"]),
              "starter_code": "", "input_output": json.dumps({"inputs": ["3\n"], "outputs": ["9\n"]}),
              "difficulty": "EASY", "raw_tags": "[]", "name": None, "source": "invented", "tags": "[]",
              "skill_types": "[]", "url": "https://example.org/t", "Expected Auxiliary Space": None,
              "time_limit": None, "date": None, "picture_num": "0", "memory_limit": None,
              "Expected Time Complexity": None}],
    "apps": [{"problem_id": 0, "question": "Read n and print n squared.", "solutions": "[]",
              "input_output": json.dumps({"inputs": ["3\n"], "outputs": ["9\n"]}), "difficulty": "introductory",
              "url": "https://example.org/a", "starter_code": ""}],
    "codeforces": [{"id": "9999/A", "aliases": None, "rating": 800, "title": "Square",
                    "description": "Read n and print n squared.", "input_format": "One integer n.",
                    "output_format": "n squared.", "examples": [{"input": "3", "output": "9"}], "tags": ["math"],
                    "editorial": None, "interaction_format": None, "note": None}],
}
# rows each source keeps after mapping and validation (the bad records above are counted, not kept)
KEPT = {name: len(recs) for name, recs in RECORDS.items()}
KEPT.update({"math500": 1, "openthoughts3": 1})
