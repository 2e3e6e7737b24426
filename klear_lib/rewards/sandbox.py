"""Run untrusted Python under Firejail, as the paper does; never unsandboxed.

Firejail flags of the official ``firejail_exec.py`` (docs/paper.md §2.5): ``--private --seccomp=socket
--rlimit-nproc=32 --rlimit-nofile=32 --rlimit-fsize=8m --rlimit-as=1024m`` and a wall-clock timeout.
NOTE(paper): measured here as root, those flags alone let a program write into the repository, read
world-readable files anywhere and fork without limit (the kernel does not apply RLIMIT_NPROC to root), and
``--rlimit-as`` bounds each process, not the sandbox (3 processes held 2.4 GB). We add: ``--net=none``,
``--private-dev``, ``--private-tmp``, every scratch directory read-only (no disk filler), every top-level
directory that Python does not need hidden (the repository, data, artifacts), a clean environment (the official
code passes the parent's environment on), and — when the harness runs as root — a drop to a dedicated
unprivileged uid per concurrent sandbox (``setpriv``), so RLIMIT_NPROC holds and one fork bomb cannot starve
another sandbox. As root, where a memory cgroup (v1 or v2) is writable, the whole sandbox (every process, and
the private ``/dev/shm``, whose pages are charged to it) runs in a cgroup of its own capped at
``SandboxLimits.total_memory`` (1.5 GiB), and ``/dev/shm`` is a private tmpfs (``--tmpfs``) that dies with the
sandbox, so ``multiprocessing`` works; without such a cgroup ``/dev/shm`` stays read-only and only the
per-process limit holds. Each test's stdout and stderr are read to the end; 4 MiB of stdout and 64 KiB of
stderr are kept, and either stream going past 4 MiB ends the test as ``killed``.

As root, where a cpu cgroup is writable, each sandbox also gets its own CPU share (``SandboxLimits.cpus``: a
quota of one core at the weight of every other sandbox), and a reaper clears what a killed run's sandbox left on
its uid (``sandbox_uids``). The runner runs under a uid of its own (``uid + RUNNER_OFFSET``) and the program under
the sandbox uid, so the program cannot signal (stop, kill) its runner: its wall clock stays its tests' own.

Programs run under the system Python (``/usr/bin/python3``, or ``$KLEAR_SANDBOX_PYTHON``), standard library
plus whatever that Python has installed. A small runner (``sandbox_runner.py``) executes all tests of one
program in one sandbox start, each test in its own child with its own timeout, the program read from a file
(an argument holds at most 128 KiB).
"""
from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from klear_lib.rewards.sandbox_uids import RUNNER_OFFSET, make_cgroups, sandbox_uid, user_tasks

log = logging.getLogger(__name__)
DEFAULT_TIMEOUT_S = 10.0     # per test; the official default is 35 s (docs/paper.md §2.5), far above tiny programs
MAX_TIMEOUTS = 2             # timed-out tests after which a program's other tests are not run (ours)
START_SLACK_S = 10.0         # sandbox start-up allowance on a loaded 2-core machine
KEEP_TOP_LEVEL = {"bin", "sbin", "lib", "lib32", "lib64", "libx32", "usr", "etc", "dev", "proc", "sys", "run",
                  "tmp", "var", "home", "root"}
READ_ONLY_SCRATCH = ("/tmp", "/var/tmp", "/run/lock", "/var/log", "/run/user")  # and /dev/shm without a cgroup
# sh: move itself into each cgroup named before "--", then become firejail
JOIN_CGROUPS = 'for f; do [ "$f" = -- ] && break; echo $$ > "$f" || exit 1; shift; done; shift; exec "$@"'
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
    total_memory: str | None = "1536m"  # ours: all its processes and its /dev/shm together (None: no cgroup)
    cpus: float | None = 1.0           # ours: CPU quota in cores, at the weight of any other sandbox (None: none)
    runner_apart: bool = True          # ours: the runner under a uid of its own (False: the program's; controls)
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
    system = next((p for p in ("/usr/bin/python3", "/usr/local/bin/python3") if os.path.exists(p)), None)
    if chosen := os.environ.get("KLEAR_SANDBOX_PYTHON") or system:
        return chosen
    found = shutil.which("python3")
    if found is None:
        raise SandboxUnavailable("no python3 found for the sandbox; set KLEAR_SANDBOX_PYTHON")
    return os.path.realpath(found)


def hidden_paths(python: str) -> list[str]:
    """Top-level entries of ``/`` the sandbox must not see: all but the system dirs and Python's own."""
    keep = KEEP_TOP_LEVEL | {Path(os.path.realpath(python)).parts[1]}
    tops = [f"/{name}" for name in sorted(os.listdir("/")) if name not in keep]
    return tops + [p for p in ALWAYS_HIDDEN if os.path.exists(p)]


NPROC_SLACK = 64  # threads the harness may start while a sandbox runs (a pool, a tokenizer) when not root


def nproc_limit(uid: int | None, limits: SandboxLimits) -> int:
    """RLIMIT_NPROC for the sandbox: ``limits.nproc`` for a dedicated uid; as a normal user the kernel counts every
    task (thread) of that user against it, so it is raised by their current number plus ``NPROC_SLACK`` (else a
    harness with many threads could not fork at all)."""
    return limits.nproc if uid is not None else limits.nproc + user_tasks(os.getuid()) + NPROC_SLACK


def firejail_command(uid: int | None, limits: SandboxLimits, python: str, cgroups: dict[str, Path] | None = None
                     ) -> list[str]:
    """The full argv: (in its cgroups) firejail with our flags, then (as root) ``setpriv`` to the runner's uids, the
    runner stub. ``cgroups``: controller -> the sandbox's cgroup (``sandbox_cgroups``).

    NOTE(paper): no ``--timeout`` (it adds ~2 s to every start); the harness kills the group on its deadline.
    """
    cgroups = cgroups or {}
    cmd = [firejail_path(), "--quiet", "--noprofile", "--private", "--private-dev", "--private-tmp",
           "--net=none", "--seccomp=socket", "--nonewprivs", "--nogroups", "--nosound", "--no3d",
           f"--rlimit-nproc={nproc_limit(uid, limits)}", f"--rlimit-nofile={limits.nofile}",
           f"--rlimit-fsize={limits.fsize}", f"--rlimit-as={limits.address_space}"]
    cmd += [f"--read-only={d}" for d in READ_ONLY_SCRATCH if os.path.isdir(d) or d == "/tmp"]
    # a private /dev/shm only where the cgroup bounds what it can hold (tmpfs pages are charged to the writer's)
    cmd.append("--tmpfs=/dev/shm" if "memory" in cgroups else "--read-only=/dev/shm")
    cmd += [f"--blacklist={p}" for p in hidden_paths(python)]
    cmd += ["--", *_drop_to(uid, limits), python, "-I", "-B", "-c", BOOTSTRAP]
    procs = list(dict.fromkeys(str(path / "cgroup.procs") for path in cgroups.values()))  # v2: one for all
    return ["/bin/sh", "-c", JOIN_CGROUPS, "klear-sandbox", *procs, "--", *cmd] if procs else cmd


def _drop_to(uid: int | None, limits: SandboxLimits) -> list[str]:
    """``setpriv`` to the sandbox uid; with ``runner_apart`` the real uid is the runner's own (``uid +
    RUNNER_OFFSET``), which the runner also makes its saved uid, so the program (all three uids ``uid``) cannot signal
    it while the runner (effective uid ``uid``) can still signal and kill the program."""
    if uid is None:
        return []
    real = uid + RUNNER_OFFSET if limits.runner_apart else uid
    return [shutil.which("setpriv") or "/usr/bin/setpriv", f"--ruid={real}", f"--euid={uid}", f"--regid={uid}",
            "--clear-groups", "--inh-caps=-all", "--bounding-set=-all"]


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
        cgroups = make_cgroups(uid, limits.total_memory, limits.cpus)
        job.update(reap_all=uid is not None, program_uid=uid, clear_shm="memory" in cgroups)
        cmd = firejail_command(uid, limits, python, cgroups)
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
        with suppress(ProcessLookupError):  # SIGKILL the firejail group we started (its sandbox dies with it)
            os.killpg(proc.pid, 9)
        try:
            out, err = proc.communicate(timeout=START_SLACK_S)
        except subprocess.TimeoutExpired:  # something still holds the pipes: give up on them, never hang
            proc.kill()
            out, err = b"", b"[sandbox] did not end after SIGKILL"
        return out, err, proc.returncode, True


def _parse(out: bytes, err: bytes, rc: int | None, timed_out: bool, n: int) -> list[ExecutionResult]:
    """The runner's JSON, or ``n`` failures when the sandbox itself died (killed runner, limit, timeout)."""
    with suppress(ValueError, KeyError, TypeError, RecursionError):
        rows = json.loads(out.decode("utf-8", "replace"))
        if isinstance(rows, list) and len(rows) == n:
            return [ExecutionResult(r["stdout"], r["stderr"], r["status"], r["returncode"], r["wall_s"])
                    for r in rows]
    status = "timeout" if timed_out else ("killed" if rc is not None and rc < 0 else "error")
    note = err.decode("utf-8", "replace")[-2000:] or f"sandbox exited with {rc} and no verdict"
    return [ExecutionResult("", note, status, rc, 0.0) for _ in range(n)]
