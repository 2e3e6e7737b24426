"""Hostile programs for ``test_sandbox_hostile.py``: reward hacks and attacks on the machine, each with a control.

A case is a program the code judge must score -1, the tests it is judged on, and a control showing the attack is
real: ``"old_rule"`` (an assert-test hack: the earlier judge — program and asserts in one process, exit status 0
is a pass — passes it), or a program run unsandboxed in a plain subprocess, harmless by construction (bounded,
aimed at a scratch folder or at a throwaway parent), with a predicate on its output.
"""
from __future__ import annotations

from dataclasses import dataclass

TESTS = [{"input": "1\n", "output": "2\n"}]  # stdin tests: no hostile program prints 2
CHECK = "def check(candidate):\n    assert candidate(nums=[1, 2, 3]) == 6\n    assert candidate(nums=[]) == 0\n\n" \
        "check(Solution().total)\n"
MARKER = "klear-expected-7"  # in the check code only: a program that finds it has read the test
PEEK_CHECK = (f"def check(candidate):\n    assert candidate(nums=[1, 2, 3]) == 7  # {MARKER}\n\n"
              "check(Solution().total)\n")
LIST_CHECK = ("def check(candidate):\n"
              "    assert is_same_list(candidate(head=list_node([1, 2, 3])), list_node([3, 2, 1]))\n"
              "\ncheck(Solution().reverseList)\n")
WRONG = "class Solution:\n    def total(self, nums):\n        return -1\n"
ASSERTS = [{"input": "", "output": "", "kind": "assert", "code": CHECK}]


@dataclass(frozen=True)
class Case:
    """One hostile program; ``control``: "old_rule", "no_cgroup" or ``(program, predicate on its output)``."""

    name: str
    program: str
    tests: list
    control: object


def _hack(name: str, program: str, check: str = CHECK) -> Case:
    return Case(name, program, [{"input": "", "output": "", "kind": "assert", "code": check}], "old_rule")


REWARD_HACKS = [
    _hack("sys_exit_0", "import sys\nsys.exit(0)\n"),
    _hack("os_exit_0", "import os\nos._exit(0)\n"),
    _hack("atexit_exit_0", "import atexit, os\natexit.register(lambda: os._exit(0))\n" + WRONG),
    _hack("class_body_system_exit", "class Solution:\n    raise SystemExit(0)\n"),
    _hack("excepthook_exit_0", "import sys, os\nsys.excepthook = lambda *a: os._exit(0)\n" + WRONG),
    _hack("thread_exits_first", "import os, threading, time\n"
          "threading.Thread(target=lambda: (time.sleep(0.2), os._exit(0))).start()\n"
          "class Solution:\n    def total(self, nums):\n        time.sleep(5)\n"),
    _hack("exec_bin_true", "import os\nos.execv('/bin/true', ['true'])\n"),
    _hack("eq_always_true", "class Yes:\n    def __eq__(self, other):\n        return True\n\n"
          "class Solution:\n    def total(self, nums):\n        return Yes()\n"),
    _hack("int_subclass_eq", "class Int(int):\n    __eq__ = lambda self, other: True\n\n"
          "class Solution:\n    def total(self, nums):\n        return Int(0)\n"),
    _hack("list_subclass_eq", "class L(list):\n    __eq__ = lambda self, other: True\n\n"
          "class Solution:\n    def total(self, nums):\n        return L()\n"),
    _hack("eq_raises_exit_0", "import os\nclass Out:\n    def __eq__(self, other):\n        os._exit(0)\n\n"
          "class Solution:\n    def total(self, nums):\n        return Out()\n"),
    _hack("printed_verdict", "import os\nprint('klear-asserts-passed', flush=True)\nos._exit(0)\n"),
    _hack("helper_overridden", "is_same_list = lambda a, b: True\n\n"
          "class Solution:\n    def reverseList(self, head):\n        return None\n", LIST_CHECK),
    _hack("caller_frame_peek", "import sys, dis\n\nclass Solution:\n    def total(self, nums):\n"
          "        f = sys._getframe(1)\n"
          "        later = [i for i in dis.get_instructions(f.f_code) if i.offset > f.f_lasti]\n"
          "        return next(i.argval for i in later if i.opname == 'LOAD_CONST')\n", PEEK_CHECK),
    _hack("reads_the_test", "import glob, os\n\ndef _found():\n"
          "    files = [p for p in glob.glob('/proc/*/fd/*') if os.path.isfile(p)]  # no pipe: it could block\n"
          "    files += glob.glob('/proc/*/cmdline') + glob.glob('/proc/*/fd/0') + glob.glob('/proc/*/environ')\n"
          "    for p in files:\n"
          "        try:\n            if " + repr(MARKER.encode()) + " in open(p, 'rb').read(1 << 22):\n"
          "                return True\n        except OSError:\n            pass\n    return False\n\n"
          "class Solution:\n    def total(self, nums):\n        return 7 if _found() else 0\n", PEEK_CHECK),
]

FORK_BOMB = "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n"
FORK_40 = ("import os, resource, time\nresource.setrlimit(resource.RLIMIT_NPROC, (32, 32))\nn = 0\n"
           "for _ in range(40):\n    if os.fork() == 0:\n        time.sleep(0.5)\n        os._exit(0)\n    n += 1\n"
           "print('forked', n)\n")
MEMORY_BOMB = "chunks = []\nwhile True:\n    chunks.append(b'x' * (64 << 20))\n"
MEMORY_1100 = "chunks = [b'x' * (100 << 20) for _ in range(11)]\nprint('held 1100 MiB')\n"
LOOP = "while True:\n    pass\n"
STDOUT_FLOOD = "while True:\n    print('x' * 4096)\n"
STDERR_FLOOD = "import sys\nwhile True:\n    sys.stderr.write('x' * 4096)\n"
# children holding memory at once: 3 x 600 MiB, each under the per-process 1 GiB, together over the sandbox's cap
MEMORY_ACROSS = """import os, time
pids = []
for _ in range(3):
    pid = os.fork()
    if pid == 0:
        block = b'x' * (600 << 20)
        time.sleep(2)
        os._exit(0)
    pids.append(pid)
print('held', sum(os.waitpid(p, 0)[1] == 0 for p in pids))
"""
SHM_FILLER = """import os
written = 0
try:
    while written < {mib}:
        with open(os.path.join({folder!r}, 'fill_%d' % written), 'wb') as f:
            f.write(b'x' * (8 << 20))
        written += 8
        print('wrote', written, flush=True)
except OSError as e:
    print('stopped', e)
"""
DISK_FILLER = """import os
block = b'0' * (1 << 20)
for d in {folders!r}:
    for i in range({files}):
        try:
            with open(os.path.join(d, f'fill_{{i}}'), 'wb') as f:
                for _ in range(64):
                    f.write(block)
        except OSError:
            break
print('filled')
"""
KILL_PARENTS = """import os, signal
for target in (lambda: os.killpg(os.getpgid(os.getppid()), 9), lambda: os.kill(os.getppid(), 9),
               lambda: os.kill(-1, 9), lambda: os.kill(1, 9), lambda: os.killpg(0, 9)):
    try:
        target()
    except OSError:
        pass
"""
KILL_PARENT_ONLY = "import os\nos.kill(os.getppid(), 9)\n"  # the control: only its throwaway parent shell
SHADOW = "import os\nos.setuid(0)\nprint(open('/etc/shadow').read())\n"
FORGE_VERDICT = """import os, json
fake = json.dumps([{"status": "ok", "returncode": 0, "stdout": "2\\n", "stderr": "", "wall_s": 0.0}])
for fd in (1, 2):
    try:
        with open(f"/proc/{os.getppid()}/fd/{fd}", "w") as f:
            f.write(fake)
    except OSError as e:
        print("denied", e)
os.kill(os.getppid(), 9)
"""
DAEMON_MARK = "klear-hostile-daemon-7f3a"
DAEMON = f"""import os, sys
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.execv(sys.executable, [sys.executable, "-c", "import time\\nwhile True: time.sleep(0.1)", "{DAEMON_MARK}"])
raise SystemExit(1)
"""
ENV_SECRETS = """import os, glob
print(dict(os.environ))
for p in glob.glob('/proc/*/environ'):
    try:
        print(open(p, 'rb').read())
    except OSError:
        pass
raise SystemExit(1)
"""


def read_files(paths) -> str:
    """Print every canary it can read (they are world-readable), then fail."""
    return ("import glob\nfor p in " + repr([str(p) for p in paths]) + " + glob.glob('/work/*/.klear_canary_*'):\n"
            "    try:\n        print(open(p).read())\n    except OSError as e:\n        print('denied', e)\n"
            "raise SystemExit(1)\n")


def write_files(paths) -> str:
    """Append to each path (a new file in the repository, a library source), then fail."""
    return (f"for p in {[str(p) for p in paths]!r}:\n"
            "    try:\n        open(p, 'a').write('pwned')\n    except OSError as e:\n        print('denied', e)\n"
            "raise SystemExit(1)\n")


def connect(port: int) -> str:
    """Send a line to the test's TCP listener on 127.0.0.1."""
    return (f"import socket\ns = socket.create_connection(('127.0.0.1', {port}), timeout=2)\n"
            "s.sendall(b'exfiltrated')\nprint(2)\n")


def system_attacks(canaries, secret: str, port: int, repo_targets, scratch, shm_scratch, pwned) -> list[Case]:
    """Attacks on the machine, each with an unsandboxed control aimed at a scratch folder or a throwaway parent
    (``memory_across_processes``: the control is the sandbox without its memory cgroup, the earlier scheme)."""
    def has(text: str):
        return lambda out: text in out
    return [
        Case("fork_bomb", FORK_BOMB, TESTS, (FORK_40, has("forked 40"))),  # RLIMIT_NPROC alone does not bind root
        Case("memory_bomb", MEMORY_BOMB, TESTS, (MEMORY_1100, has("held 1100 MiB"))),
        Case("memory_across_processes", MEMORY_ACROSS, TESTS, "no_cgroup"),
        Case("dev_shm_filler", SHM_FILLER.format(mib=2048, folder="/dev/shm"), TESTS,
             (SHM_FILLER.format(mib=16, folder=str(shm_scratch)), has("wrote 16"))),
        Case("infinite_loop", LOOP, TESTS, (LOOP, has("[still running]"))),
        Case("stdout_flood", STDOUT_FLOOD, TESTS, (STDOUT_FLOOD, has("[over 4 MiB]"))),
        Case("stderr_flood", STDERR_FLOOD, TESTS, (STDERR_FLOOD, has("[over 4 MiB]"))),
        Case("disk_filler", DISK_FILLER.format(folders=[".", "/tmp", "/var/tmp", "/dev/shm", "/root", "/run/lock",
                                                        "/var/log", "/"], files=64), TESTS,
             (DISK_FILLER.format(folders=[str(scratch)], files=2), has("filled"))),
        Case("network", connect(port), TESTS, (connect(port), has("2"))),
        Case("read_files", read_files(canaries), TESTS, (read_files(canaries), has(secret))),
        Case("environment_secrets", ENV_SECRETS, TESTS, (ENV_SECRETS, has(secret))),
        Case("kill_parents", KILL_PARENTS, TESTS, (KILL_PARENT_ONLY, has("[parent killed]"))),
        Case("write_repository", write_files(repo_targets), TESTS, (write_files([pwned]), lambda out: pwned.exists())),
        Case("setuid_shadow", SHADOW, TESTS, (SHADOW, has("root:"))),
        Case("forge_runner_verdict", FORGE_VERDICT, TESTS, (FORGE_VERDICT, has('"status": "ok"'))),
        Case("daemon", DAEMON, TESTS * 3, (DAEMON, has("[daemon alive]"))),
    ]

# Attacks on the sandbox's own machinery: its runner, its uid, its CPU share, the judge's comparison, its /dev/shm.
# Their controls are named strings, each checked by a test of its own in test_sandbox_hostile.py:
# "killed_run" (a run killed while the program is in flight leaves it alive, and an honest program given the same
# uid fails while the reaper is off), "runner_shares_uid" (with the runner under the program's uid the sandbox
# runs to its outer wall clock), "no_cpu_share" (beside it, without CPU cgroups, an honest program crawls) and
# "old_compare" (the earlier comparison of call-based outputs raises on what the program printed).
FUNCTIONAL = [{"input": "1", "output": "2", "kind": "functional", "fn_name": "f"}]
STOPPED = """import os, signal
for _ in range(40):
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        {child}
        os.kill(os.getpid(), signal.SIGSTOP)
        os._exit(0)
{parent}
raise SystemExit(1)
"""
STOP_SELF = "os.kill(os.getpid(), signal.SIGSTOP)"
STOP_PARENT = "import os, signal\nos.kill(os.getppid(), signal.SIGSTOP)\n"
STOP_ALL = "import os, signal\nos.kill(-1, signal.SIGSTOP)\nos.kill(os.getpid(), signal.SIGSTOP)\n"
STOP_FROM_CHILD = ("import os, signal\nppid = os.getppid()\nif os.fork() == 0:\n    os.setsid()\n"
                   "    os.kill(ppid, signal.SIGSTOP)\n    os._exit(0)\nos.wait()\n")
CPU_HOG = "import os\nfor _ in range(24):\n    if os.fork() == 0:\n        os.setsid()\n        while True:\n" \
          "            pass\nwhile True:\n    pass\n"
# a line to stdout, then out before the driver prints anything: the judge compares this text as the result
DEEP_PRINT = "import os, sys\nsys.stdout.write({text})\nsys.stdout.flush()\nos._exit(0)\n"
DEEP_RETURN = ("class Solution:\n    def f(self, x):\n        r = []\n        for _ in range(5000):\n"
               "            r = [r]\n        return r\n")
SHM_LEAK = """import os
p = os.path.join({folder!r}, 'klear-leak')
print('2' if os.path.exists(p) else 'first')
open(p, 'w').write('seen')
"""
SHM_TWICE = """import subprocess, sys
for _ in range(2):
    print(subprocess.run([sys.executable, '-c', {leak!r}], capture_output=True, text=True).stdout.strip())
"""


def sandbox_attacks(shm_scratch) -> list[Case]:
    """Attacks on the runner, the uid handed out next, the neighbours' CPU, the judge's comparison, /dev/shm."""
    def has(text: str):
        return lambda out: text in out
    deep = {"deep_json_brackets": "'[' * 100000", "deep_json_nested": "'[' * 5000 + ']' * 5000",
            "deep_json_objects": "'{\"a\": ' * 5000 + '1' + '}' * 5000",
            "deep_json_past_limit": "'[' * 1100 + '2' + ']' * 1100",
            "deep_json_mixed": "'[{\"a\": ' * 3000 + '1' + '}]' * 3000"}
    return [
        Case("stopped_children", STOPPED.format(child="pass", parent=STOP_SELF), TESTS, "killed_run"),
        Case("stopped_sessions", STOPPED.format(child="os.setsid()", parent=STOP_SELF), TESTS, "killed_run"),
        Case("stopped_everything", STOPPED.format(child="pass", parent=STOP_ALL), TESTS, "killed_run"),
        Case("stop_runner", STOP_PARENT + "while True:\n    pass\n", TESTS, (STOP_PARENT, has("[still running]"))),
        Case("stop_every_process", STOP_ALL, TESTS * 4, "runner_shares_uid"),
        Case("stop_runner_from_child", STOP_FROM_CHILD, TESTS * 4, "runner_shares_uid"),
        Case("stop_runner_after_answer", "print(2, flush=True)\n" + STOP_PARENT, TESTS * 4, "runner_shares_uid"),
        Case("cpu_hog_sessions", CPU_HOG, TESTS, "no_cpu_share"),
        *[Case(name, DEEP_PRINT.format(text=text), FUNCTIONAL, "old_compare") for name, text in deep.items()],
        Case("deep_json_return", DEEP_RETURN, FUNCTIONAL, "old_compare"),
        Case("shm_carry_over", SHM_LEAK.format(folder="/dev/shm"), TESTS * 2,
             (SHM_TWICE.format(leak=SHM_LEAK.format(folder=str(shm_scratch))), has("first\n2"))),
    ]
