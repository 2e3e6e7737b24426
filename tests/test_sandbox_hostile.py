"""Hostile programs end contained: the harness survives, the reward is a failure, nothing outside changes.

The cases (``hostile_programs.py``) are reward hacks on assert tests (early exits, exception hooks, forged verdict
lines, ``__eq__`` overrides, peeking at the expected values), attacks on the machine (processes, memory, CPU,
output, disk, network, files, environment, the parent, the repository, the runner's verdict) and on the sandbox's
own machinery (stopping the runner, stopped processes outliving a killed run, CPU hogs in many sessions, deeply
nested results, files left in /dev/shm for the next test). All of them are judged in one batch and must score -1;
each case's control shows the attack is real: the earlier judge passes the hacks, the machine attacks do read,
leak, connect, write, flood or outlive their parent when run unsandboxed (bounded, aimed at scratch folders or a
throwaway parent), and the attacks on the machinery work where its defence is off (a test of its own each).
"""
from __future__ import annotations

import json
import os
import re
import secrets
import select
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

import hostile_programs as hp
import pytest

from klear_lib.paths import REPO
from klear_lib.rewards import code as cj
from klear_lib.rewards import judge
from klear_lib.rewards import sandbox
from klear_lib.rewards import sandbox_uids as uids

pytestmark = [pytest.mark.firejail,
              pytest.mark.skipif(shutil.which("firejail") is None, reason="firejail is not installed")]

SECRET = "klear-canary-" + secrets.token_hex(8)
CANARY_NAME = f".klear_canary_{secrets.token_hex(4)}"
PWNED = REPO / f"pwned_{secrets.token_hex(4)}.txt"
ROOT_ONLY_CONTROLS = {"fork_bomb", "setuid_shadow"}  # what they show (root ignores RLIMIT_NPROC) needs root
IS_ROOT = os.geteuid() == 0
GOOD, GOOD_COPIES = "print(int(input()) + 1)", 3


def respond(program: str) -> str:
    """A well-formed response around ``program``."""
    return f"<think>\nplan\n</think>\n```python\n{program}\n```"


@pytest.fixture(scope="module")
def canaries():
    """Secret files in the repository, $HOME and /tmp, and a secret in the parent's environment."""
    paths = [REPO / CANARY_NAME, Path.home() / CANARY_NAME, Path("/tmp") / CANARY_NAME]
    for p in paths:
        p.write_text(SECRET)
        p.chmod(0o644)  # world-readable on purpose: only the sandbox may stop the read
    os.environ["KLEAR_CANARY_SECRET"] = SECRET
    yield paths
    os.environ.pop("KLEAR_CANARY_SECRET", None)
    for p in paths:
        p.unlink(missing_ok=True)


@pytest.fixture(scope="module")
def listener():
    """A TCP server on 127.0.0.1 that records every connection it accepts."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)
    srv.settimeout(0.2)
    hits: list[str] = []
    stop = threading.Event()

    def serve():
        while not stop.is_set():
            try:
                conn, _ = srv.accept()
                hits.append(conn.recv(100).decode(errors="replace"))
                conn.close()
            except OSError:
                continue
    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield srv.getsockname()[1], hits
    stop.set()
    thread.join(2)
    srv.close()


@pytest.fixture(scope="module")
def cases(canaries, listener, tmp_path_factory):
    """Every hostile case, the machine attacks aimed at this module's canaries, listener and scratch folders."""
    shm = Path(tempfile.mkdtemp(prefix="klear-hostile-", dir="/dev/shm"))
    targets = [PWNED, REPO / "klear_lib" / "__init__.py"]
    found = hp.REWARD_HACKS + hp.system_attacks(canaries, SECRET, listener[0], targets,
                                                tmp_path_factory.mktemp("scratch"), shm, PWNED) + \
        hp.sandbox_attacks(shm)
    yield {c.name: c for c in found}
    shutil.rmtree(shm, ignore_errors=True)


@pytest.fixture(scope="module")
def judged(cases, listener):
    """All cases judged in one batch (two sandboxes at a time), with what the machine looked like around it."""
    init = REPO / "klear_lib" / "__init__.py"
    before = {"repo": set(os.listdir(REPO)), "init": init.read_bytes(), "shm": shutil.disk_usage("/dev/shm").used,
              "free": shutil.disk_usage("/").free, "pgid": os.getpgrp()}
    start = time.monotonic()
    names = [*cases, *(f"good_{i}" for i in range(GOOD_COPIES))]  # honest programs beside them (sandboxed in parallel)
    # each copy distinct, so the judge's de-duplication still runs every one in a sandbox of its own
    programs = [c.program for c in cases.values()] + [f"{GOOD}  # copy {i}" for i in range(GOOD_COPIES)]
    tests = [c.tests for c in cases.values()] + [hp.TESTS] * GOOD_COPIES
    order = sorted(range(len(names)), key=lambda i: (i % 10, i))  # the good ones run amid the attacks
    found = cj.code_rewards([respond(programs[i]) for i in order], [tests[i] for i in order], timeout_s=3, workers=2)
    scores = {names[i]: s for i, s in zip(order, found)}
    time.sleep(0.3)  # let the listener record a late connection, if any
    after = {"repo": set(os.listdir(REPO)), "init": init.read_bytes(), "shm": shutil.disk_usage("/dev/shm").used,
             "free": shutil.disk_usage("/").free, "pgid": os.getpgrp()}
    return scores, before, after, time.monotonic() - start


NAMED_CONTROLS = {"old_rule", "no_cgroup", "killed_run", "runner_shares_uid", "no_cpu_share", "old_compare"}


def test_the_suite_has_forty_five_cases_each_with_a_control(cases):
    assert len(cases) >= 45 and all(isinstance(c.control, tuple) or c.control in NAMED_CONTROLS
                                    for c in cases.values())


def test_every_hostile_program_scores_minus_one(judged):
    scores = judged[0]
    assert {name: s for name, s in scores.items() if s != -1.0 and not name.startswith("good_")} == {}


def test_hostile_programs_cost_only_their_own_reward(judged):
    """Fork bombs, memory bombs and floods in the other sandbox do not fail honest programs beside them."""
    assert [s for name, s in judged[0].items() if name.startswith("good_")] == [1.0] * GOOD_COPIES


def test_secrets_stay_unread(cases):
    """What the readers print inside the sandbox holds no canary, no parent environment and no shadow file."""
    for name in ("read_files", "environment_secrets", "setuid_shadow"):
        result = sandbox.execute(cases[name].program, timeout_s=5)
        assert SECRET not in result.stdout + result.stderr and "root:" not in result.stdout, name


def test_nothing_outside_the_sandbox_changed(judged, canaries, listener):
    _, before, after, _ = judged
    assert after["repo"] == before["repo"] and after["init"] == before["init"] and not PWNED.exists()
    assert after["free"] > before["free"] - (256 << 20)  # the disk filler wrote no 100s of MB
    assert after["shm"] < before["shm"] + (64 << 20)  # nor did the /dev/shm filler, on the host's /dev/shm
    assert after["pgid"] == before["pgid"] and all(p.read_text() == SECRET for p in canaries)
    assert listener[1] == []
    assert not [p for p in os.listdir("/proc") if p.isdigit() and hp.DAEMON_MARK in _cmdline(p)]


def test_the_harness_still_judges_after_the_batch(judged):
    assert cj.code_reward(respond("print(int(input()) + 1)"), hp.TESTS, timeout_s=5) == 1.0


def _old_rule_passes(program: str, test: dict) -> bool:
    """The earlier judge of an assert test: program and check code in one process, exit status 0 is a pass."""
    return sandbox.execute(cj.PRELUDE + program + "\n\n" + test["code"], "", timeout_s=3).status == "ok"


def test_reward_hacks_passed_the_earlier_judge(cases):
    hacks = [c for c in cases.values() if c.control == "old_rule"]
    with ThreadPoolExecutor(2) as pool:
        passed = list(pool.map(lambda c: _old_rule_passes(c.program, c.tests[0]), hacks))
    assert len(hacks) >= 14 and {c.name for c, ok in zip(hacks, passed) if not ok} == set()


def test_honest_solutions_still_pass_the_asserts():
    ok = "class Solution:\n    def total(self, nums):\n        return sum(nums)\n"
    rev = ("class Solution:\n    def reverseList(self, head):\n        prev = None\n        while head:\n"
           "            head.next, prev, head = prev, head, head.next\n        return prev\n")
    lists = [{"input": "", "output": "", "kind": "assert", "code": hp.LIST_CHECK}]
    assert cj.code_rewards([respond(ok), respond(rev)], [hp.ASSERTS, lists]) == [1.0, 1.0]


def _run_plain(program: str, cwd: Path, wait_s: float = 6.0) -> str:
    """``program`` unsandboxed under a throwaway ``sh`` (its parent), output read up to 4 MiB or ``wait_s``; notes
    what happened in brackets: still running, over 4 MiB, parent killed, a daemon left alive (then killed)."""
    proc = subprocess.Popen(["/bin/sh", "-c", '"$0" -c "$1"; echo "[parent lived]"', sys.executable, program],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, cwd=cwd, start_new_session=True)
    data, eof, deadline = bytearray(), False, time.monotonic() + wait_s
    while not eof and len(data) <= 4 << 20 and time.monotonic() < deadline:
        if select.select([proc.stdout], [], [], 0.1)[0]:
            chunk = os.read(proc.stdout.fileno(), 1 << 16)
            eof, data = not chunk, data + chunk
    notes = ["[over 4 MiB]"] if len(data) > 4 << 20 else [] if eof else ["[still running]"]
    daemons = _daemons(wait_s=20.0 if hp.DAEMON_MARK in program else 0.0)  # before its group is killed
    rc = proc.poll()
    _kill_group(proc.pid)
    proc.wait()
    proc.stdout.close()
    notes += ["[parent killed]"] if eof and rc == -9 else []
    for pid in daemons + _daemons():  # started by this control only (the mark is in its argv)
        os.kill(int(pid), 9)
    return data.decode(errors="replace") + "".join(notes) + ("[daemon alive]" if daemons else "")


def _daemons(wait_s: float = 0.0) -> list[str]:
    """Pids of live processes carrying the daemon mark, waiting up to ``wait_s`` for one to appear (on a loaded
    machine its double fork and exec can take longer than the time the control reads output for)."""
    deadline = time.monotonic() + wait_s
    while True:
        found = [p for p in os.listdir("/proc") if p.isdigit() and hp.DAEMON_MARK in _cmdline(p)]
        if found or time.monotonic() >= deadline:
            return found
        time.sleep(0.1)


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, 9)
    except ProcessLookupError:
        pass


def _cmdline(pid: str) -> str:
    try:
        return open(f"/proc/{pid}/cmdline", "rb").read().decode(errors="replace")
    except OSError:
        return ""


def test_machine_attacks_work_unsandboxed(cases, listener, tmp_path):
    """Controls: each machine attack's bounded twin does harm outside the sandbox (so the -1 above bites)."""
    failed = []
    try:
        for case in cases.values():
            if not isinstance(case.control, tuple) or (case.name in ROOT_ONLY_CONTROLS and not IS_ROOT):
                continue
            program, shows = case.control
            if not shows(_run_plain(program, tmp_path)):
                failed.append(case.name)
        assert failed == [] and listener[1] and "exfiltrated" in listener[1][-1]
    finally:
        listener[1].clear()
        PWNED.unlink(missing_ok=True)


def _held(result: sandbox.ExecutionResult) -> int:
    """How many of ``MEMORY_ACROSS``'s children held their 600 MiB to the end."""
    found = re.search(r"held (\d)", result.stdout)
    return int(found.group(1)) if found else 0


@pytest.mark.skipif(uids.memory_cgroup_available() is False, reason="no writable memory cgroup here")
def test_memory_is_capped_across_processes():
    """3 x 600 MiB: all three held at once without the cgroup (the earlier scheme), at most two with it."""
    capped = sandbox.execute(hp.MEMORY_ACROSS, timeout_s=10)
    uncapped = sandbox.execute(hp.MEMORY_ACROSS, timeout_s=10, limits=sandbox.SandboxLimits(total_memory=None))
    assert _held(capped) <= 2 and _held(uncapped) == 3


@pytest.mark.skipif(not (uids.memory_cgroup_available() and uids._controller("memory")[1] is False and uids.swap_on()),
                    reason="needs a writable cgroup v1 memory controller and swap (without swap nothing lifts the cap)")
def test_memory_cap_holds_where_swap_is_not_accounted(monkeypatch):
    """With swap on and no swap accounting (v1, no memsw file), all 3 x 600 MiB ran in a 1.5 GiB cgroup by swapping
    (the likely cause of a CI host's "held 3" in 6 s); swappiness 0 keeps the cap. Hiding the memsw file stands in
    for such a kernel."""
    settings = uids._settings
    monkeypatch.setattr(uids, "_settings", lambda *a: {k: v for k, v in settings(*a).items() if "memsw" not in k})
    assert _held(sandbox.execute(hp.MEMORY_ACROSS, timeout_s=10)) <= 2


@pytest.mark.skipif(uids.memory_cgroup_available() is False, reason="no writable memory cgroup here")
def test_dev_shm_is_private_and_bounded():
    """A 2 GiB /dev/shm filler stops below the sandbox's 1.5 GiB cap, and nothing reaches the host's /dev/shm."""
    before = shutil.disk_usage("/dev/shm").used
    result = sandbox.execute(hp.SHM_FILLER.format(mib=2048, folder="/dev/shm"), timeout_s=20)
    written = max([int(n) for n in re.findall(r"wrote (\d+)", result.stdout)] or [0])
    assert 0 < written < 1536 and shutil.disk_usage("/dev/shm").used < before + (64 << 20)


POOL = ("from multiprocessing import Pool\n\nclass Solution:\n    def total(self, nums):\n"
        "        with Pool(2) as pool:\n            return sum(pool.map(abs, nums))\n")


@pytest.mark.skipif(uids.memory_cgroup_available() is False, reason="no writable memory cgroup here")
def test_multiprocessing_pool_works():
    """Legitimate ``multiprocessing.Pool`` code passes; with the earlier read-only /dev/shm it failed."""
    assert cj.code_reward(respond(POOL), hp.ASSERTS, timeout_s=10) == 1.0
    earlier = sandbox.SandboxLimits(total_memory=None)
    assert not cj.run_tests(POOL, hp.ASSERTS, timeout_s=10, limits=earlier)[0]


HONEST_FORKS = (hp.WRONG.replace("return -1", "return sum(nums)"), hp.ASSERTS)  # the checker forks the program
KILLED_UID = 61240  # a uid of its own, the only one handed out while a test pins the range to it
CHILD = ("import sys\nfrom klear_lib.rewards import sandbox, sandbox_uids\n"
         "sandbox_uids.UID_BASE, sandbox_uids.UID_COUNT = int(sys.argv[2]), 1\n"
         "sandbox.run_in_sandbox(sys.argv[1], ['1\\n'], timeout_s=120)\n")


def _pinned(monkeypatch) -> None:
    """Sandboxes of this process get ``KILLED_UID`` only."""
    monkeypatch.setattr(uids, "UID_BASE", KILLED_UID)
    monkeypatch.setattr(uids, "UID_COUNT", 1)


def _killed_in_flight(program: str, at_least: int = 20) -> set[int]:
    """Run ``program`` in a child harness on ``KILLED_UID``, SIGKILL the child once the sandbox holds
    ``at_least`` processes; the sandbox's processes still alive a moment later."""
    child = subprocess.Popen([sys.executable, "-c", CHILD, program, str(KILLED_UID)], cwd=REPO)
    deadline = time.monotonic() + 120
    while len(uids.sandbox_pids(KILLED_UID)) < at_least and time.monotonic() < deadline and child.poll() is None:
        time.sleep(0.2)
    child.kill()
    child.wait()
    time.sleep(0.5)
    return uids.sandbox_pids(KILLED_UID)


@pytest.mark.skipif(not IS_ROOT, reason="sandbox uids (and their reaper) need root")
def test_a_killed_run_leaves_stopped_sandboxes_that_the_reaper_clears(cases, monkeypatch):
    """Control: a run killed while a self-stopped program is in flight leaves its processes alive, and with the
    reaper off an honest program given that uid fails (its forks hit the uid's process limit); with the reaper
    the same uid scores it +1 and nothing of the old sandbox is left, its cgroups included."""
    _pinned(monkeypatch)
    reap = uids.reap
    for case in [c for c in cases.values() if c.control == "killed_run"]:
        assert len(_killed_in_flight(case.program)) >= 20, case.name
        monkeypatch.setattr(uids, "reap", lambda uid: None)
        assert cj.code_reward(respond(HONEST_FORKS[0]), HONEST_FORKS[1], timeout_s=10) == -1.0, case.name
        monkeypatch.setattr(uids, "reap", reap)
        assert cj.code_reward(respond(HONEST_FORKS[0]), HONEST_FORKS[1], timeout_s=10) == 1.0, case.name
        assert uids.sandbox_pids(KILLED_UID) == set() and not _cgroups_of(KILLED_UID), case.name


def _cgroups_of(uid: int) -> list[Path]:
    names = (f"klear-sandbox-{uid}", f"klear-sandbox-{uid}-*")  # v1 under each controller, v2 at the root
    return [path for name in names for path in [*uids.CGROUP_ROOT.glob(f"*/{name}"), *uids.CGROUP_ROOT.glob(name)]]


@pytest.mark.skipif(not IS_ROOT, reason="sandbox uids (and their reaper) need root")
def test_the_harness_reaps_idle_uids_when_it_starts(cases, monkeypatch):
    """What a killed run left on a uid nobody holds is gone after ``reap_idle`` (run once as a harness starts)."""
    _pinned(monkeypatch)
    assert len(_killed_in_flight(cases["stopped_sessions"].program)) >= 20
    uids.reap_idle([KILLED_UID])
    assert uids.sandbox_pids(KILLED_UID) == set() and not _cgroups_of(KILLED_UID)


def _timed_run(program: str, limits: sandbox.SandboxLimits) -> float:
    start = time.monotonic()
    sandbox.run_in_sandbox(program, ["1\n"] * 2, timeout_s=1, limits=limits)
    return time.monotonic() - start


@pytest.mark.skipif(not IS_ROOT, reason="the runner's own uid needs root")
def test_a_program_cannot_stall_its_runner(cases):
    """Control: with the runner under the program's uid (the earlier scheme) a program that stops it holds the
    sandbox to its outer wall clock (n x (t + 1) + slack); with the runner apart it ends within its tests' time."""
    stallers = [c for c in cases.values() if c.control == "runner_shares_uid"]
    wall = 2 * (1 + 1.0) + sandbox.START_SLACK_S
    with ThreadPoolExecutor(2) as pool:
        earlier = list(pool.map(lambda c: _timed_run(c.program, sandbox.SandboxLimits(runner_apart=False)), stallers))
        now = list(pool.map(lambda c: _timed_run(c.program, sandbox.SandboxLimits()), stallers))
    assert [c.name for c, secs in zip(stallers, earlier) if secs < wall] == []
    assert [c.name for c, secs in zip(stallers, now) if secs > wall / 2] == []


WORK = "n = 0\nfor i in range(3_000_000):\n    n += i\nprint(int(input()) + 1)\n"  # ~0.3 s of CPU


SANDBOX_UIDS = range(uids.UID_BASE, uids.UID_BASE + uids.UID_COUNT)


def _beside_hog(limits: sandbox.SandboxLimits) -> sandbox.ExecutionResult:
    """``WORK`` run while ``CPU_HOG`` (24 busy children, each in a session of its own) runs in another sandbox: from
    when all 25 of its processes are up (not after a fixed wait, which a loaded machine may outlast) to before its
    timeout ends it, or the comparison would measure the honest program beside nothing."""
    with ThreadPoolExecutor(1) as pool:
        hog = pool.submit(sandbox.run_in_sandbox, hp.CPU_HOG, ["1\n"], 12, limits)
        up_by = time.monotonic() + 10
        while sum(uids._real_uid(pid) in SANDBOX_UIDS for pid in uids._pids()) < 25:
            assert time.monotonic() < up_by and not hog.done(), "the hog's 25 processes were not up within 10 s"
            time.sleep(0.05)
        found = sandbox.execute(WORK, "1\n", timeout_s=30, limits=limits)
        assert not hog.done(), f"the hog ended before the honest program did ({found.wall_s:.1f} s)"
        hog.result()
    return found


@pytest.mark.skipif(not uids.cpu_cgroup_available(), reason="no writable cpu cgroup here")
def test_a_neighbour_cannot_starve_an_honest_program(cases):
    """Control: without CPU cgroups (fairness per session only) the hog beside it slows the honest program at least
    twice as much as with each sandbox's own share; measured against each other, so a loaded machine only scales
    both."""
    assert hp.CPU_HOG == cases["cpu_hog_sessions"].program
    shared = _beside_hog(sandbox.SandboxLimits())
    unshared = _beside_hog(sandbox.SandboxLimits(cpus=None))
    assert shared.stdout == "2\n" and unshared.wall_s > 2 * shared.wall_s, (shared, unshared)


@contextmanager
def default_recursion_limit():
    """Python's default recursion limit for the block, whatever an earlier test of the session set."""
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(1000)
    try:
        yield
    finally:
        sys.setrecursionlimit(limit)


def _earlier_json_match(actual: str, expected: str) -> bool:
    """The earlier comparison of call-based results: JSON-equal, falling back to text only on ``ValueError``."""
    try:
        return json.loads(actual.strip()) == json.loads(expected.strip())
    except ValueError:
        return cj.outputs_match(actual, expected)


def test_deep_json_outputs_are_wrong_answers_not_errors(cases):
    """Control: the earlier comparison raises ``RecursionError`` on what each program prints; now each is a wrong
    answer, and the evaluation's judge call returns a verdict."""
    deep = [c for c in cases.values() if c.control == "old_compare"]
    for case in deep:
        result = cj.execute_tests(case.program, case.tests, timeout_s=10)[0]
        with pytest.raises(RecursionError), default_recursion_limit():  # a raised limit would crash, not raise
            _earlier_json_match(result.stdout, case.tests[0]["output"])
        assert cj.passes(case.tests[0], result) is False, case.name
        row = {"ability": "code", "extra_info": {"id": case.name, "tests": case.tests}}
        assert judge.verdict(respond(case.program), row, timeout_s=10) == {"correct": False, "reward": -1.0}


BIG_TABLE = "TABLE = " + repr("x" * (200 << 10)) + "\n"  # a lookup table, say: 200 KiB of source


def test_honest_programs_over_128_kib_pass():
    """Control: one argument holds at most 128 KiB, so such a program given as ``python -c`` does not even start."""
    big = BIG_TABLE + "print(int(input()) + 1)\n"
    with pytest.raises(OSError, match="Argument list too long"):
        subprocess.run([sys.executable, "-c", big], input=b"1\n", capture_output=True)
    solution = BIG_TABLE + "class Solution:\n    def f(self, x):\n        return x + 1\n"
    assert cj.code_rewards([respond(big), respond(solution)], [hp.TESTS, hp.FUNCTIONAL], timeout_s=10) == [1.0, 1.0]


def test_nproc_limit_counts_threads_when_not_root(monkeypatch):
    """RLIMIT_NPROC counts every thread of the user: 40 more harness threads must raise the limit by as many, or
    a harness with many threads leaves the sandbox unable to fork. Only this process's tasks are counted here: the
    user's other processes (a sweep beside the tests) start and end threads between the two readings."""
    monkeypatch.setattr(uids, "_pids", lambda: [os.getpid()])
    before = sandbox.nproc_limit(None, sandbox.SandboxLimits())
    stop = threading.Event()
    threads = [threading.Thread(target=stop.wait) for _ in range(40)]
    for t in threads:
        t.start()
    try:
        assert sandbox.nproc_limit(None, sandbox.SandboxLimits()) >= before + 40
    finally:
        stop.set()
        for t in threads:
            t.join()
