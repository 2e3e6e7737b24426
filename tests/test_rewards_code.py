"""The code judge: extraction, test formats, sampling, scoring, and the Firejail sandbox's statuses."""
from __future__ import annotations

import json
import sys
import random
import shutil
import time

import pytest

from klear_lib.rewards import assert_check, sandbox
from klear_lib.rewards import sandbox_uids as uids
from klear_lib.rewards import code as cj
from klear_lib.seeding import stable_seed
from klear_lib.training import rewards as adapters

needs_firejail = pytest.mark.skipif(shutil.which("firejail") is None, reason="firejail is not installed")
SQUARES = cj.parse_tests(json.dumps({"inputs": [f"{i}\n" for i in range(20)],
                                     "outputs": [f"{i * i}\n" for i in range(20)]}))


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
    assert cj.parse_tests({"functional": "check(Solution().f)"})[0]["kind"] == "assert"
    assert len(cj.parse_tests({"functional": ["check(Solution().f)", "check(Solution().g)"]})) == 2
    with pytest.raises(ValueError, match="row r7: ground_truth field functional must call Solution"):
        cj.parse_tests({"functional": "assert 1"}, row_id="r7")  # no program could ever pass it
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
    assert "--euid=61000" in cmd and "--ruid=61256" in cmd and "--private" in cmd  # --private hides /root, /home
    if REPO.parts[1] not in sandbox.KEEP_TOP_LEVEL:
        assert f"--blacklist=/{REPO.parts[1]}" in cmd


FUZZ_TOKENS = ["</think>", "<think>", "```python\n", "```python", "```", "\n```", "\n", "x", "python\n", "`", "``",
               " ", "print(1)", "\n```\n", "```py\n", "``` python\n"]


def test_extract_program_equals_the_official_regex_on_random_text():
    """Many blocks, nested and missing fences, several ``</think>``: the linear scan returns what the regex does."""
    rng = random.Random(0)
    for _ in range(20000):
        text = "".join(rng.choice(FUZZ_TOKENS) for _ in range(rng.randint(0, 60)))
        match = cj.CODE_PATTERN.search(text)
        assert cj.extract_program(text) == (match.group(1) if match else None), repr(text)


def adversarial_texts(size: int = 100_000) -> dict[str, str]:
    """Texts of ``size`` characters on which the backtracking official regex is slow."""
    def fill(unit: str) -> str:
        return (unit * (size // len(unit) + 1))[:size]
    return {"opens_no_close": fill("</think>```python\n"), "thinks_then_opens": fill("</think>") + fill("```python\n"),
            "opens_then_thinks": fill("```python\n</think>"), "close_first": "\n```" + fill("</think>```python\nx"),
            "fences_only": "</think>" + fill("```python\n```"), "newlines": "</think>```python\n" + fill("\n`")}


def test_extract_program_is_linear_on_adversarial_text():
    """100 KB crafted texts end: a hang guard, not a speed goal (the scan takes ~1e-4 s, the official regex took
    186 s on 36 KB; benchmarks/bench_adversarial.py measures both)."""
    worst = 0.0
    for text in adversarial_texts().values():
        start = time.perf_counter()
        cj.extract_program(text)
        worst = max(worst, time.perf_counter() - start)
    assert worst < 2.0, worst


def test_parse_tests_rejects_text_where_lists_belong():
    with pytest.raises(ValueError, match="row r3: ground_truth field inputs must be a list.*got str"):
        cj.parse_tests({"inputs": "abc", "outputs": ["1", "2", "3"]}, row_id="r3")
    with pytest.raises(ValueError, match="row r4: ground_truth field outputs must be a list.*got str"):
        cj.parse_tests('{"inputs": ["a"], "outputs": "a"}', row_id="r4")
    with pytest.raises(ValueError, match="row r5: ground_truth field functional must be check code"):
        cj.parse_tests({"functional": {"code": "x"}}, row_id="r5")


def test_an_assert_test_passes_only_on_the_checkers_verdict_line():
    test = cj.parse_tests({"functional": "check(Solution().f)"})[0]
    assert not cj.passes(test, sandbox.ExecutionResult("", "", "ok", 0))  # exit status 0 alone is no pass
    assert not cj.passes(test, sandbox.ExecutionResult("klear-asserts-passed\n", "", "error", 1))
    assert cj.passes(test, sandbox.ExecutionResult(cj.VERDICT + "\n", "", "ok", 0))


def test_values_cross_between_checker_and_program_as_plain_data():
    """The wire format keeps tuples, sets, int-keyed dicts, big ints, linked lists and trees."""
    ns: dict = {}
    limit = sys.getrecursionlimit()
    try:  # the prelude raises the recursion limit for sandboxed programs; in this process the raised limit would
        exec(cj.PRELUDE, ns)  # noqa: S102  let a later deep parse overflow the C stack (a segfault, not an error)
    finally:
        sys.setrecursionlimit(limit)
    value = [(1, 2), {3, 4}, {5: [6]}, 10 ** 400, None, True, 1.5, "s",
             ns["list_node"]([1, 2]), ns["tree_node"]([1, None, 2, 3])]
    wire = json.loads(json.dumps(assert_check.encode(value)))
    back = assert_check.decode(wire, ns)
    assert back[:8] == value[:8] and [type(v) for v in back[:8]] == [type(v) for v in value[:8]]
    assert ns["is_same_list"](back[8], value[8]) and ns["is_same_tree"](back[9], value[9])
    assert assert_check.encode(ns["tree_node"]([1, None, 2, 3])) == {"t": "tree_node", "v": [1, None, 2, 3]}


def test_checker_runs_the_check_after_every_call_of_a_solution():
    """Stateful solutions keep one instance per ``Solution()`` of the check, as in one process."""
    check = ("def check(candidate):\n    assert candidate() == 1\n    assert candidate() == 2\n\n"
             "check(Solution().tick)\n")
    tests = cj.parse_tests({"functional": check})
    program = "class Solution:\n    n = 0\n    def tick(self):\n        self.n += 1\n        return self.n"
    assert cj.run_tests(program, tests) == [True]
    assert cj.run_tests("class Solution:\n    def tick(self):\n        return 1", tests) == [False]


@needs_firejail
def test_a_correct_program_flooding_stderr_still_passes():
    """300 KiB of stderr is drained (the runner once stopped reading at 64 KiB and the program timed out)."""
    flood = respond("import sys\nsys.stderr.write('e' * (300 << 10))\nprint(int(input()) ** 2)")
    assert cj.code_reward(flood, SQUARES[:2], timeout_s=5) == 1.0  # a blocked child would time out: -1
    endless = sandbox.execute("import sys\nwhile True:\n    sys.stderr.write('e' * 65536)", timeout_s=5)
    assert endless.status == "killed" and "stderr over" in endless.stderr
    assert len(endless.stderr) < sandbox.SandboxLimits().max_stderr_bytes + 200


@needs_firejail
def test_code_rewards_never_raise_on_any_response():
    """Broken, huge, adversarial or non-text responses each score a failure; the batch returns."""
    long_program = respond("x = 1\n" * 40_000)  # over the 128 KiB argument limit of one exec
    responses = [None, "x" * (cj.MAX_RESPONSE_CHARS + 1), respond("print('\ud800')"), respond("print(1)\x00"),
                 long_program, *adversarial_texts(50_000).values(), respond("print(int(input()) ** 2)")]
    start = time.monotonic()
    scores = cj.code_rewards(responses, [SQUARES[:2]] * len(responses), timeout_s=2)
    assert scores[-1] == 1.0 and all(s < 1.0 for s in scores[:-1])
    assert time.monotonic() - start < 60


def test_a_response_over_the_size_cap_runs_nothing(monkeypatch):
    monkeypatch.setattr(cj, "run_tests", lambda *a, **k: pytest.fail("must not run code"))
    assert cj.code_reward(respond("print(1)") + " " * cj.MAX_RESPONSE_CHARS, SQUARES) == -1.0


def test_dev_shm_is_private_only_with_a_memory_cgroup(tmp_path):
    limits = sandbox.SandboxLimits()
    assert "--read-only=/dev/shm" in sandbox.firejail_command(61000, limits, "/usr/bin/python3", None)
    cpu_only = sandbox.firejail_command(61000, limits, "/usr/bin/python3", {"cpu": tmp_path / "c"})
    assert "--read-only=/dev/shm" in cpu_only
    capped = sandbox.firejail_command(61000, limits, "/usr/bin/python3", {"memory": tmp_path / "m",
                                                                         "cpu": tmp_path / "c"})
    assert "--tmpfs=/dev/shm" in capped and "--read-only=/dev/shm" not in capped
    assert capped[:7] == ["/bin/sh", "-c", sandbox.JOIN_CGROUPS, "klear-sandbox", str(tmp_path / "m" / "cgroup.procs"),
                          str(tmp_path / "c" / "cgroup.procs"), "--"]


FAKE_UID = 99990  # outside the sandbox uids, so the reaper here can touch no live sandbox of a run beside it


def _fake_cgroups(root, v2: bool) -> None:
    """A cgroup hierarchy's marker files under ``root`` (v2: one folder for both controllers; v1: one each)."""
    if v2:
        (root / "cgroup.subtree_control").write_text("cpu memory\n")
        return
    for name, marker in {"memory": "memory.limit_in_bytes", "cpu": "cpu.cfs_quota_us"}.items():
        (root / name).mkdir()
        (root / name / marker).write_text("")


def test_cgroup_v2_sandboxes_get_both_controllers_in_one_cgroup(tmp_path, monkeypatch):
    """Under cgroup v2 memory and cpu live in one folder: the cpu cgroup was once refused as already made, leaving
    every sandbox without its CPU share."""
    monkeypatch.setattr(uids, "CGROUP_ROOT", tmp_path)
    _fake_cgroups(tmp_path, v2=True)
    made = uids.make_cgroups(FAKE_UID, "1536m", 1.0)
    assert set(made) == {"memory", "cpu"} and made["memory"] == made["cpu"] and made["cpu"].parent == tmp_path
    assert uids._existing_cgroups(FAKE_UID) == [made["cpu"]]


@pytest.mark.parametrize("v2", [False, True])
def test_a_busy_leftover_cgroup_leaves_the_next_sandbox_capped(tmp_path, monkeypatch, v2):
    """A cgroup the reaper could not remove yet (the kernel letting go) once made the next sandbox of its uid fail
    to make its own and run uncapped. Now each sandbox's cgroups are new, and a later reap removes the leftover."""
    monkeypatch.setattr(uids, "CGROUP_ROOT", tmp_path)
    _fake_cgroups(tmp_path, v2)
    first = uids.make_cgroups(FAKE_UID, "1536m", 1.0)
    roots = [tmp_path] if v2 else [tmp_path / "memory", tmp_path / "cpu"]
    legacy = [root / f"klear-sandbox-{FAKE_UID}" for root in roots]  # the name every cgroup of the uid once had
    for path in legacy:
        path.mkdir(exist_ok=True)
    second = uids.make_cgroups(FAKE_UID, "1536m", 1.0)
    assert set(second) == {"memory", "cpu"} and not set(second.values()) & {*first.values(), *legacy}
    assert sorted(uids._existing_cgroups(FAKE_UID)) == sorted({*first.values(), *second.values(), *legacy})
    uids.reap(FAKE_UID)
    assert uids._existing_cgroups(FAKE_UID) == []


def test_distinct_jobs_keep_first_seen_order_and_split_on_sampled_tests():
    a, b = ("print(1)", SQUARES[:2]), ("print(2)", SQUARES[:2])
    plans = [a, -0.5, b, ("print(1)", SQUARES[:2]), ("print(1)", SQUARES[1:3]), b]
    jobs, job_of = cj.distinct_jobs(plans)
    assert [(first, program) for first, program, _ in jobs] == [(0, "print(1)"), (2, "print(2)"), (4, "print(1)")]
    assert job_of == [0, None, 1, 0, 2, 1]  # the same program on other sampled tests is another job
    jobs, job_of = cj.distinct_jobs(plans, dedup=False)
    assert [first for first, _, _ in jobs] == [0, 2, 3, 4, 5] and job_of == [0, None, 1, 2, 3, 4]


@needs_firejail
def test_duplicate_programs_run_once_and_share_the_verdict(monkeypatch):
    """Same program under other think text runs once; order, format penalties and distinct programs are kept."""
    starts = []
    real = cj.run_in_sandbox
    monkeypatch.setattr(cj, "run_in_sandbox", lambda source, *a, **k: starts.append(source) or real(source, *a, **k))
    square, zero = "print(int(input()) ** 2)", "print(0)"
    responses = [respond(square), "<think>\nother plan\n</think>\n```python\n" + square + "\n```", respond(zero),
                 "no tags", respond(square), "<think>\n</think>\nno code", respond(zero)]
    expected = [1.0, 1.0, -0.5, -0.5, 1.0, -1.0, -0.5]
    assert cj.code_rewards(responses, [SQUARES[:4]] * 7, workers=2) == expected
    assert sorted(starts) == sorted([square, zero])  # one sandbox per distinct program
    starts.clear()
    assert cj.code_rewards(responses, [SQUARES[:4]] * 7, workers=2, dedup=False) == expected
    assert len(starts) == 5  # every response with a program, as before


@needs_firejail
def test_per_response_seeds_sample_their_own_tests():
    """One seed per response: duplicates of a program on differently sampled tests are judged apart."""
    half = respond("n = int(input())\nprint(n * n if n < 10 else 0)")  # right on inputs 0-9 of 20
    seeds = [0, 1, 0]
    found = cj.code_rewards([half] * 3, [SQUARES] * 3, max_tests=4, seed=seeds)
    assert found == [cj.code_reward(half, SQUARES, max_tests=4, seed=s) for s in seeds]
    with pytest.raises(ValueError, match="3 responses but 2 seeds"):
        cj.code_rewards([half] * 3, [SQUARES] * 3, seed=[0, 1])


@needs_firejail
def test_the_rl_reward_function_matches_one_judge_call_per_completion():
    """The TRL adapter's batched, deduplicated judge gives each completion the reward ``code_reward`` gives it."""
    truth = {"ground_truth": json.dumps({"inputs": [t["input"] for t in SQUARES],
                                         "outputs": [t["output"] for t in SQUARES]}), "style": "rule"}
    programs = ["print(int(input()) ** 2)", "n = int(input())\nprint(n * n if n % 2 else 0)", "print(0)"]
    completions = [respond(programs[k % 3]) for k in range(8)] + ["```python\nprint(0)\n```"]
    found = adapters.code_reward_func(max_tests=16)(completions=completions, reward_model=[truth] * 9,
                                                   extra_info=[{"id": "r1"}] * 9)
    expected = [cj.code_reward(c, SQUARES, max_tests=16, seed=stable_seed(0, "code-tests", "r1", 0, k))
                for k, c in enumerate(completions)]
    assert found == expected and found[-1] == -0.5


def test_call_based_results_compare_as_json_up_to_the_depth_bound():
    """Honest results (nested lists) still compare as JSON; deeper ones compare as text, never raising."""
    deep_ok = "[" * cj.MAX_JSON_DEPTH + "1" + "]" * cj.MAX_JSON_DEPTH
    assert cj._json_match("[[1, 2], [3]]\n", "[[1,2],[3]]") and cj._json_match(deep_ok, deep_ok.replace("1", " 1 "))
    too_deep = "[" + deep_ok + "]"
    assert not cj._json_match(too_deep, too_deep.replace("1", " 1 ")) and cj._json_match(too_deep, too_deep)
    assert cj.json_depth('{"a": "[[[", "b": [["\\"]"]]}') == 3
