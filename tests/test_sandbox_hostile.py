"""Hostile programs end contained: the harness survives, the reward is a failure, nothing outside changes.

Each program below attacks one thing (processes, memory, CPU, output, disk, network, files, environment,
the parent, the repository, the verdict itself). The reward judge must return -1 for each, the pytest
process must live on, and canaries outside the sandbox must be unread and unchanged.
"""
from __future__ import annotations

import os
import secrets
import shutil
import socket
import threading
import time
from pathlib import Path

import pytest

from klear_lib.paths import REPO
from klear_lib.rewards.code import code_reward, code_rewards

pytestmark = [pytest.mark.firejail,
              pytest.mark.skipif(shutil.which("firejail") is None, reason="firejail is not installed")]

TESTS = [{"input": "1\n", "output": "2\n"}]  # no hostile program prints 2
SECRET = "klear-canary-" + secrets.token_hex(8)
CANARY_NAME = f".klear_canary_{secrets.token_hex(4)}"
PWNED = REPO / f"pwned_{secrets.token_hex(4)}.txt"


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


FORK_BOMB = """import os
while True:
    try:
        os.fork()
    except OSError:
        pass"""
MEMORY_BOMB = """chunks = []
while True:
    chunks.append(bytearray(64 << 20))"""
INFINITE_LOOP = "while True:\n    pass"
ENDLESS_OUTPUT = "while True:\n    print('x' * 4096)"
DISK_FILLER = """import os
block = b'0' * (1 << 20)
for d in ['.', '/tmp', '/var/tmp', '/dev/shm', os.path.expanduser('~'), '/run/lock', '/var/log', '/']:
    for i in range(64):
        try:
            with open(os.path.join(d, f'fill_{i}'), 'wb') as f:
                for _ in range(64):
                    f.write(block)
        except OSError:
            break
raise SystemExit(1)"""
KILL_PARENTS = """import os, signal
for target in (lambda: os.killpg(os.getpgid(os.getppid()), 9), lambda: os.kill(os.getppid(), 9),
               lambda: os.kill(-1, 9), lambda: os.kill(1, 9), lambda: os.killpg(0, 9)):
    try:
        target()
    except OSError:
        pass"""
SETUID = "import os\nos.setuid(0)\nprint(open('/etc/shadow').read())"


def read_files(paths) -> str:
    return ("import glob\nfor p in " + repr([str(p) for p in paths]) +
            " + glob.glob('/work/*/.klear_canary_*'):\n"
            "    try:\n        print(open(p).read())\n    except OSError as e:\n        print('denied', e)\n"
            "raise SystemExit(1)")


ENV_SECRETS = """import os, glob
print(dict(os.environ))
for p in glob.glob('/proc/*/environ'):
    try:
        print(open(p, 'rb').read())
    except OSError:
        pass
raise SystemExit(1)"""


def repo_write() -> str:
    target = REPO / "klear_lib" / "__init__.py"
    return (f"for p in [{str(PWNED)!r}, {str(target)!r}]:\n"
            "    try:\n        open(p, 'a').write('pwned')\n    except OSError as e:\n        print('denied', e)\n"
            "raise SystemExit(1)")


def connect(port: int) -> str:
    return ("import socket\ns = socket.create_connection(('127.0.0.1', %d), timeout=2)\n"
            "s.sendall(b'exfiltrated')\nprint(2)" % port)


FORGE_VERDICT = """import os, json
fake = json.dumps([{"status": "ok", "returncode": 0, "stdout": "2\\n", "stderr": "", "wall_s": 0.0}])
for fd in (1, 2):
    try:
        with open(f"/proc/{os.getppid()}/fd/{fd}", "w") as f:
            f.write(fake)
    except OSError as e:
        print("denied", e)
os.kill(os.getppid(), 9)"""
DAEMON_MARK = "klear-hostile-daemon-7f3a"
DAEMON = f"""import os, sys
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.execv(sys.executable, [sys.executable, "-c", "import time\\nwhile True: time.sleep(0.1)", "{DAEMON_MARK}"])
raise SystemExit(1)"""


def test_fork_bomb_is_contained():
    start = time.monotonic()
    assert code_reward(respond(FORK_BOMB), TESTS, timeout_s=2) == -1.0
    assert time.monotonic() - start < 30


def test_memory_bomb_is_contained():
    assert code_reward(respond(MEMORY_BOMB), TESTS, timeout_s=5) == -1.0


def test_infinite_loop_times_out():
    assert code_reward(respond(INFINITE_LOOP), TESTS, timeout_s=1) == -1.0


def test_endless_output_is_cut():
    assert code_reward(respond(ENDLESS_OUTPUT), TESTS, timeout_s=5) == -1.0


def test_disk_filler_changes_nothing_outside():
    before = set(os.listdir(REPO)), set(os.listdir("/tmp")), shutil.disk_usage("/").free
    assert code_reward(respond(DISK_FILLER), TESTS, timeout_s=5) == -1.0
    assert set(os.listdir(REPO)) == before[0] and set(os.listdir("/tmp")) <= before[1] | {CANARY_NAME}
    assert shutil.disk_usage("/").free > before[2] - (256 << 20)  # no 100s of MB written by the filler


def test_network_connection_is_refused(listener):
    port, hits = listener
    assert code_reward(respond(connect(port)), TESTS, timeout_s=5) == -1.0
    time.sleep(0.3)
    assert hits == []


def test_files_outside_are_unreadable(canaries):
    from klear_lib.rewards.sandbox import execute

    result = execute(read_files(canaries), timeout_s=5)
    assert SECRET not in result.stdout + result.stderr
    assert code_reward(respond(read_files(canaries)), TESTS, timeout_s=5) == -1.0
    assert all(p.read_text() == SECRET for p in canaries)


def test_environment_secrets_are_not_passed(canaries):
    from klear_lib.rewards.sandbox import execute

    result = execute(ENV_SECRETS, timeout_s=5)
    assert "KLEAR_CANARY_SECRET" not in result.stdout and SECRET not in result.stdout + result.stderr


def test_killing_the_parent_group_leaves_the_harness_alive():
    pgid = os.getpgrp()
    assert code_reward(respond(KILL_PARENTS), TESTS, timeout_s=5) == -1.0
    assert os.getpgrp() == pgid and os.getpid() > 0
    assert code_reward(respond("print(int(input()) + 1)"), TESTS, timeout_s=5) == 1.0  # still works


def test_repository_is_read_only():
    init = REPO / "klear_lib" / "__init__.py"
    before = init.read_bytes()
    assert code_reward(respond(repo_write()), TESTS, timeout_s=5) == -1.0
    assert not PWNED.exists() and init.read_bytes() == before


def test_setuid_and_shadow_are_denied():
    assert code_reward(respond(SETUID), TESTS, timeout_s=5) == -1.0


def test_verdict_cannot_be_forged():
    assert code_reward(respond(FORGE_VERDICT), TESTS, timeout_s=5) == -1.0


def test_daemon_does_not_outlive_its_test():
    """A double-forked daemon of test 1 is reaped before test 2 and gone after the sandbox ends."""
    tests = TESTS * 3
    assert code_reward(respond(DAEMON), tests, timeout_s=2) == -1.0
    time.sleep(0.5)
    # only this test's daemon (marked in its argv): sandboxes of other runs on the machine may be alive
    assert not [p for p in os.listdir("/proc") if p.isdigit() and DAEMON_MARK in _cmdline(p)]


def _cmdline(pid: str) -> str:
    try:
        return open(f"/proc/{pid}/cmdline", "rb").read().decode(errors="replace")
    except OSError:
        return ""


def test_hostile_programs_cost_only_their_own_reward():
    """Parallel sandboxes: a fork bomb and a memory bomb beside correct programs do not fail them."""
    good = respond("print(int(input()) + 1)")
    batch = [respond(FORK_BOMB), good, respond(MEMORY_BOMB), good, respond(INFINITE_LOOP), good]
    scores = code_rewards(batch, [TESTS] * len(batch), timeout_s=3, workers=3)
    assert scores == [-1.0, 1.0, -1.0, 1.0, -1.0, 1.0]


def test_the_attacks_work_without_the_sandbox(canaries, listener, tmp_path):
    """Control: outside the sandbox the same programs do read, leak, connect and write (so the tests above bite)."""
    import subprocess
    import sys

    def run(src: str) -> str:
        return subprocess.run([sys.executable, "-c", src], capture_output=True, text=True, timeout=20).stdout

    port, hits = listener
    assert SECRET in run(read_files(canaries))
    assert SECRET in run(ENV_SECRETS)
    run(connect(port))
    time.sleep(0.3)
    assert hits and "exfiltrated" in hits[-1]
    hits.clear()
    try:
        run(f"open({str(PWNED)!r}, 'w').write('pwned')")
        assert PWNED.exists()
    finally:
        PWNED.unlink(missing_ok=True)
