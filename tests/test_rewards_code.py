"""The code judge: extraction, test formats, sampling, scoring, and the Firejail sandbox's statuses."""
from __future__ import annotations

import json
import shutil

import pytest

from klear_lib.rewards import code as cj
from klear_lib.rewards import sandbox

needs_firejail = pytest.mark.skipif(shutil.which("firejail") is None, reason="firejail is not installed")
SQUARES = cj.parse_tests(json.dumps({"inputs": [f"{i}\n" for i in range(20)], "outputs": [f"{i * i}\n" for i in range(20)]}))


def respond(program: str) -> str:
    return f"<think>\nplan\n</think>\n```python\n{program}\n```"


def test_extract_program_takes_the_last_block_after_think():
    text = "<think>\n```python\nprint(0)\n```\n</think>\n```python\nprint(1)\n```\nthen\n```python\nprint(2)\n```"
    assert cj.extract_program(text) == "print(2)"
    assert cj.extract_program("<think>\n```python\nprint(0)\n```\n</think>\nno code") is None
    assert cj.extract_program("```python\nprint(1)\n```") is None


def test_parse_tests_formats_and_errors():
    assert cj.parse_tests({"inputs": ["1"], "outputs": ["2"]}) == [{"input": "1", "output": "2"}]
    fn = cj.parse_tests('{"inputs": ["[1]"], "outputs": ["1"], "fn_name": "f"}')
    assert fn[0]["kind"] == "functional" and fn[0]["fn_name"] == "f"
    assert cj.parse_tests({"functional": "assert 1"})[0]["kind"] == "assert"
    assert len(cj.parse_tests({"functional": ["assert 1", "assert 2"]})) == 2
    with pytest.raises(ValueError, match="row r7.*2 inputs but 1 outputs"):
        cj.parse_tests({"inputs": ["1", "2"], "outputs": ["2"]}, row_id="r7")
    with pytest.raises(ValueError, match="row r8.*expected inputs/outputs or functional"):
        cj.parse_tests({"cases": []}, row_id="r8")
    with pytest.raises(ValueError, match="row r9.*need fn_name"):
        cj.parse_tests({"inputs": ["1"], "outputs": ["1"], "testtype": "functional"}, row_id="r9")


def test_sample_tests_is_seeded_and_capped():
    a, b = cj.sample_tests(SQUARES, 16, seed=0), cj.sample_tests(SQUARES, 16, seed=0)
    assert a == b and len(a) == 16 and a != cj.sample_tests(SQUARES, 16, seed=1)
    assert cj.sample_tests(SQUARES[:5], 16, seed=0) == SQUARES[:5]
    assert cj.sample_tests(SQUARES, None) == SQUARES


def test_score_passes_soft_and_hard():
    assert cj.score_passes([True] * 4 + [False] * 12, "soft") == pytest.approx(2 * 0.25 - 1)
    assert cj.score_passes([True, True], "hard") == 1.0 and cj.score_passes([True, False], "hard") == -1.0
    with pytest.raises(ValueError, match="soft"):
        cj.score_passes([True], "medium")


def test_outputs_match_ignores_trailing_space_only():
    assert cj.outputs_match("1 2 \n3\n\n", "1 2\n3") and not cj.outputs_match("1 2\n4", "1 2\n3")
    assert not cj.outputs_match("12", "1 2")


def test_format_penalties_need_no_sandbox(monkeypatch):
    monkeypatch.setattr(cj, "run_tests", lambda *a, **k: pytest.fail("must not run code"))
    assert cj.code_reward("```python\nprint(1)\n```", SQUARES) == -0.5
    assert cj.code_reward("x</think>\n```python\nprint(1)\n```", SQUARES) == -2.0
    assert cj.code_reward("<think>\n</think>\nno code block", SQUARES) == -1.0


def test_missing_firejail_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(sandbox.shutil, "which", lambda name: None)
    monkeypatch.setattr(sandbox.os.path, "exists", lambda p: False)
    with pytest.raises(sandbox.SandboxUnavailable, match="firejail is not installed"):
        sandbox.execute("print(1)")


@needs_firejail
def test_execute_statuses():
    assert sandbox.execute("print(input()[::-1])", "abc\n").stdout == "cba\n"
    assert sandbox.execute("print(input()[::-1])", "abc\n").status == "ok"
    err = sandbox.execute("raise ValueError('boom')")
    assert err.status == "error" and "boom" in err.stderr
    assert sandbox.execute("while True: pass", timeout_s=0.5).status == "timeout"
    assert sandbox.execute("import os; os.kill(os.getpid(), 9)").status == "killed"
    big = sandbox.execute("while True: print('x' * 1000)", timeout_s=5)
    assert big.status == "killed" and len(big.stdout) <= sandbox.SandboxLimits().max_output_bytes


@needs_firejail
def test_code_reward_soft_hard_and_partial():
    right, half = respond("print(int(input()) ** 2)"), respond("n = int(input())\nprint(n * n if n % 2 else 0)")
    assert cj.code_reward(right, SQUARES) == 1.0
    assert cj.code_reward(half, SQUARES, max_tests=None) == pytest.approx(0.1)  # 11 of 20 pass (0 too)
    assert cj.code_reward(half, SQUARES, mode="hard") == -1.0
    assert cj.code_reward(right, json.dumps({"inputs": ["3\n"], "outputs": ["9\n"]})) == 1.0  # raw ground truth


@needs_firejail
def test_batched_and_per_test_sandboxes_agree():
    program = "n = int(input())\nprint(n * n if n % 3 else -1)"
    assert cj.run_tests(program, SQUARES, batched=True) == cj.run_tests(program, SQUARES, batched=False)


@needs_firejail
def test_call_based_and_assert_tests_from_the_mirror_schemas(fake_mirror):
    import fake_mirror as fm

    tests = cj.parse_rllm_tests(fm.CALL_TESTS, fm.STARTER)
    good = fm.STARTER.rstrip() + "\n        return sum(nums)"
    assert cj.code_reward(respond(good), tests) == 1.0
    assert cj.code_reward(respond(good.replace("sum(nums)", "max(nums)")), tests) == 0.0  # passes 1 of 2
    asserts = cj.parse_tests({"functional": fm.LEETCODE_CHECK})
    assert cj.code_reward(respond(fm.LEETCODE_SOLUTION), asserts) == 1.0
    assert cj.code_reward(respond("class Solution:\n    def total(self, nums):\n        return 0"), asserts) == -1.0


@needs_firejail
def test_many_programs_in_parallel():
    programs = [respond("print(int(input()) ** 2)"), respond("print(0)"), "no tags"] * 2
    scores = cj.code_rewards(programs, [SQUARES[:4]] * 6, workers=2)
    assert scores == [1.0, -0.5, -0.5, 1.0, -0.5, -0.5]  # print(0) passes only input 0 of 4


@needs_firejail
def test_a_looping_program_stops_after_two_timeouts():
    import time

    start = time.monotonic()
    results = sandbox.run_in_sandbox("while True: pass", ["1"] * 8, timeout_s=0.5)
    assert [r.status for r in results] == ["timeout"] * 8 and "not run" in results[-1].stderr
    assert time.monotonic() - start < 4 * 0.5 + 3
    every = sandbox.run_in_sandbox("import sys\nif sys.stdin.read() == 'x': 0\nelse:\n    while True: pass",
                                   ["y", "y", "x"], timeout_s=0.5, max_timeouts=None)
    assert [r.status for r in every] == ["timeout", "timeout", "ok"]


def test_nproc_limit_counts_the_users_processes_when_not_root():
    limits = sandbox.SandboxLimits()
    assert sandbox.nproc_limit(61000, limits) == 32
    assert sandbox.nproc_limit(None, limits) > 32  # this test process itself counts


@needs_firejail
def test_command_hides_the_repository_and_drops_the_network():
    from klear_lib.paths import REPO

    cmd = sandbox.firejail_command(61000, sandbox.SandboxLimits(), "/usr/bin/python3")
    assert "--rlimit-nproc=32" in cmd and "--net=none" in cmd and "--seccomp=socket" in cmd
    assert "--reuid=61000" in cmd and "--private" in cmd  # --private hides /root and /home
    if REPO.parts[1] not in sandbox.KEEP_TOP_LEVEL:
        assert f"--blacklist=/{REPO.parts[1]}" in cmd
