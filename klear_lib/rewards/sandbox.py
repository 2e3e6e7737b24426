"""Run untrusted Python under Firejail, as the paper does; never unsandboxed.

Firejail flags of the official ``firejail_exec.py`` (docs/paper.md §2.5): ``--private --seccomp=socket
--rlimit-nproc=32 --rlimit-nofile=32 --rlimit-fsize=8m --rlimit-as=1024m`` and a wall-clock timeout.
NOTE(paper): measured here as root, those flags alone let a program write into the repository, read
world-readable files anywhere and fork without limit (the kernel does not apply RLIMIT_NPROC to root). We add:
``--net=none``, ``--private-dev``, ``--private-tmp``, every scratch tmpfs read-only (no disk or RAM filler), every
top-level directory that Python does not need hidden (the repository, data, artifacts), a clean environment
(the official code passes the parent's environment on), and — when the harness runs as root — a drop to a
dedicated unprivileged uid per concurrent sandbox (``setpriv``), so RLIMIT_NPROC holds and one fork bomb cannot
starve another sandbox. Outputs are capped (4 MiB stdout, 64 KiB stderr per test).

Programs run under the system Python (``/usr/bin/python3``, or ``$KLEAR_SANDBOX_PYTHON``), standard library
plus whatever that Python has installed. A small runner (``sandbox_runner.py``) executes all tests of one
program in one sandbox start, each test in its own child with its own timeout.
"""
from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Sequence

DEFAULT_TIMEOUT_S = 10.0     # per test; the official default is 35 s (docs/paper.md §2.5), far above tiny programs
MAX_TIMEOUTS = 2             # timed-out tests after which a program's other tests are not run (ours)
START_SLACK_S = 10.0         # sandbox start-up allowance on a loaded 2-core machine
UID_BASE, UID_COUNT = 61000, 256
KEEP_TOP_LEVEL = {"bin", "sbin", "lib", "lib32", "lib64", "libx32", "usr", "etc", "dev", "proc", "sys", "run",
                  "tmp", "var", "home", "root"}
READ_ONLY_SCRATCH = ("/tmp", "/var/tmp", "/dev/shm", "/run/lock", "/var/log", "/run/user")
ALWAYS_HIDDEN = ("/run/secrets",)
RUNNER_SOURCE = (Path(__file__).with_name("sandbox_runner.py")).read_text()
# firejail caps each argument at 4 KiB, so the runner arrives as the first stdin line and this stub runs it.
BOOTSTRAP = "import sys,json;exec(compile(json.loads(sys.stdin.readline()),'sandbox_runner','exec'))"


class SandboxUnavailable(RuntimeError):
    """Firejail is missing: model code is never run without the sandbox."""


@dataclass(frozen=True)
class ExecutionResult:
    """One program run: ``status`` is ``ok | error | timeout | killed``."""

    stdout: str
    stderr: str
    status: str
    returncode: int | None = None
    wall_s: float = 0.0


@dataclass(frozen=True)
class SandboxLimits:
    """Resource limits per sandbox (docs/paper.md §2.5) and output caps per test (ours)."""

    nproc: int = 32                    # docs/paper.md §2.5
    nofile: int = 32                   # docs/paper.md §2.5
    fsize: str = "8m"                  # docs/paper.md §2.5
    address_space: str = "1024m"       # docs/paper.md §2.5
    max_output_bytes: int = 4 << 20    # ours: endless output ends here
    max_stderr_bytes: int = 64 << 10   # ours


def firejail_path() -> str:
    """The firejail executable, or ``SandboxUnavailable`` with how to install it."""
    path = shutil.which("firejail") or next((p for p in ("/usr/bin/firejail",) if os.path.exists(p)), None)
    if path is None:
        raise SandboxUnavailable(
            "firejail is not installed: untrusted code is only ever run inside it. Install it with "
            "`sudo apt-get install firejail` (or `bash scripts/install_sandbox.sh` as root).")
    return path


def sandbox_python() -> str:
    """The interpreter programs run under: ``$KLEAR_SANDBOX_PYTHON``, else the system ``python3``."""
    env = os.environ.get("KLEAR_SANDBOX_PYTHON")
    if env:
        return env
    for cand in ("/usr/bin/python3", "/usr/local/bin/python3"):
        if os.path.exists(cand):
            return cand
    found = shutil.which("python3")
    if found is None:
        raise SandboxUnavailable("no python3 found for the sandbox; set KLEAR_SANDBOX_PYTHON")
    return os.path.realpath(found)


def hidden_paths(python: str) -> list[str]:
    """Top-level entries of ``/`` the sandbox must not see: all but the system dirs and Python's own."""
    keep = KEEP_TOP_LEVEL | {Path(os.path.realpath(python)).parts[1]}
    tops = [f"/{name}" for name in sorted(os.listdir("/")) if name not in keep]
    return tops + [p for p in ALWAYS_HIDDEN if os.path.exists(p)]


def nproc_limit(uid: int | None, limits: SandboxLimits) -> int:
    """RLIMIT_NPROC for the sandbox: ``limits.nproc`` for a dedicated uid; as a normal user the limit counts all
    of that user's processes, so it is raised by their current number (else nothing could fork at all)."""
    if uid is not None:
        return limits.nproc
    mine = sum(1 for p in Path("/proc").iterdir() if p.name.isdigit() and _owner(p) == os.getuid())
    return limits.nproc + mine


def _owner(path: Path) -> int:
    try:
        return path.stat().st_uid
    except OSError:
        return -1


def firejail_command(uid: int | None, limits: SandboxLimits, python: str) -> list[str]:
    """The full argv: firejail with our flags, then (as root) ``setpriv`` to ``uid``, then the runner stub.

    NOTE(paper): no ``--timeout`` (it adds ~2 s to every start); the harness kills the group on its deadline.
    """
    cmd = [firejail_path(), "--quiet", "--noprofile", "--private", "--private-dev", "--private-tmp",
           "--net=none", "--seccomp=socket", "--nonewprivs", "--nogroups", "--nosound", "--no3d",
           f"--rlimit-nproc={nproc_limit(uid, limits)}", f"--rlimit-nofile={limits.nofile}",
           f"--rlimit-fsize={limits.fsize}", f"--rlimit-as={limits.address_space}"]
    cmd += [f"--read-only={d}" for d in READ_ONLY_SCRATCH if os.path.isdir(d) or d in ("/tmp", "/dev/shm")]
    cmd += [f"--blacklist={p}" for p in hidden_paths(python)]
    cmd.append("--")
    if uid is not None:
        cmd += [shutil.which("setpriv") or "/usr/bin/setpriv", f"--reuid={uid}", f"--regid={uid}",
                "--clear-groups", "--inh-caps=-all", "--bounding-set=-all"]
    return cmd + [python, "-I", "-B", "-c", BOOTSTRAP]


@contextmanager
def sandbox_uid() -> Iterator[int | None]:
    """A uid no other live sandbox uses (file locks work across threads and processes); None if not root."""
    if os.geteuid() != 0:
        yield None
        return
    lock_dir = Path(tempfile.gettempdir()) / "klear-sandbox-uids"
    lock_dir.mkdir(mode=0o700, exist_ok=True)
    for uid in range(UID_BASE, UID_BASE + UID_COUNT):
        fd = os.open(lock_dir / f"{uid}.lock", os.O_CREAT | os.O_RDWR, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        try:
            yield uid
        finally:
            os.close(fd)
        return
    raise RuntimeError(f"all {UID_COUNT} sandbox uids are busy")


def run_in_sandbox(source: str, stdins: Sequence[str], timeout_s: float = DEFAULT_TIMEOUT_S,
                   limits: SandboxLimits = SandboxLimits(), max_timeouts: int | None = MAX_TIMEOUTS
                   ) -> list[ExecutionResult]:
    """Run ``source`` once per stdin in ONE sandbox start; each test has its own ``timeout_s``.

    After ``max_timeouts`` timed-out tests the rest count as timeouts without running (None: run them all).
    NOTE(paper): the official code gives every test its full timeout, so a looping program costs 16 x 35 s.
    """
    firejail_path()  # fail first and clearly when the sandbox is missing
    if not stdins:
        return []
    python = sandbox_python()
    job = {"source": source, "stdins": list(stdins), "timeout_s": timeout_s, "python": python,
           "max_timeouts": max_timeouts, "max_output": limits.max_output_bytes, "max_stderr": limits.max_stderr_bytes}
    wall = len(stdins) * (timeout_s + 1.0) + START_SLACK_S  # slow tests that never time out still fit
    with sandbox_uid() as uid:
        job["reap_all"] = uid is not None
        cmd = firejail_command(uid, limits, python)
        payload = (json.dumps(RUNNER_SOURCE) + "\n" + json.dumps(job)).encode()
        out, err, rc, timed_out = _run(cmd, payload, wall)
    return _parse(out, err, rc, timed_out, len(stdins))


def execute(source: str, stdin: str = "", timeout_s: float = DEFAULT_TIMEOUT_S,
            limits: SandboxLimits = SandboxLimits()) -> ExecutionResult:
    """Run one program on one stdin in a fresh sandbox."""
    return run_in_sandbox(source, [stdin], timeout_s, limits)[0]


def _run(cmd: list[str], payload: bytes, wall_s: float) -> tuple[bytes, bytes, int | None, bool]:
    """Start firejail in its own session; on the wall-clock limit kill the whole group."""
    env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8"}
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=env, cwd="/", start_new_session=True, close_fds=True)
    try:
        out, err = proc.communicate(payload, timeout=wall_s)
        return out, err, proc.returncode, False
    except subprocess.TimeoutExpired:
        _kill_group(proc.pid)
        out, err = proc.communicate()
        return out, err, proc.returncode, True


def _kill_group(pgid: int) -> None:
    """SIGKILL the firejail process group we started (its sandbox dies with it)."""
    try:
        os.killpg(pgid, 9)
    except ProcessLookupError:
        pass


def _parse(out: bytes, err: bytes, rc: int | None, timed_out: bool, n: int) -> list[ExecutionResult]:
    """The runner's JSON, or ``n`` failures when the sandbox itself died (killed runner, limit, timeout)."""
    try:
        rows = json.loads(out.decode("utf-8", "replace"))
        if isinstance(rows, list) and len(rows) == n:
            return [ExecutionResult(r["stdout"], r["stderr"], r["status"], r["returncode"], r["wall_s"])
                    for r in rows]
    except (ValueError, KeyError, TypeError):
        pass
    status = "timeout" if timed_out else ("killed" if rc is not None and rc < 0 else "error")
    note = err.decode("utf-8", "replace")[-2000:] or f"sandbox exited with {rc} and no verdict"
    return [ExecutionResult("", note, status, rc, 0.0) for _ in range(n)]
