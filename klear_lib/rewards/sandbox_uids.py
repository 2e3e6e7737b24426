"""Sandbox uids, their cgroups and the reaper (used by ``klear_lib.rewards.sandbox``).

As root each sandbox gets a uid of its own (``UID_BASE`` .. ``UID_BASE + UID_COUNT - 1``, one lock file each) for
its program, the uid ``RUNNER_OFFSET`` above for its runner, and cgroups named after it (and a fresh token, so a
busy leftover never blocks them): ``memory`` (its processes and its ``/dev/shm`` together) and ``cpu`` (a quota, and
the weight of any other sandbox, so a program that splits into many sessions cannot take a neighbour's time; kernel
autogroup, the fairness otherwise, is per session). Where a controller is missing or not writable the sandbox runs
without it, the reason logged once. The reaper SIGKILLs every process of the two uids and of the cgroups (firejail
itself runs as root) and removes the cgroups: before a uid is handed out, after its sandbox ends, and once per
process for every idle uid; a run killed while its sandbox was stopped otherwise leaves that sandbox alive, holding
the uid's process quota for the next program given the uid.
"""
from __future__ import annotations

import fcntl
import functools
import glob
import logging
import os
import secrets
import signal
import tempfile
import time
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Iterable, Iterator

log = logging.getLogger(__name__)
UID_BASE, UID_COUNT = 61000, 256  # program uids handed out
RUNNER_OFFSET = 256          # the runner of the sandbox of uid u runs as u + RUNNER_OFFSET
REAP_TRIES = 100             # rounds of SIGKILL (50 ms apart) before a sandbox uid is given up as still busy
CPU_PERIOD_US = 100_000
CGROUP_ROOT = Path("/sys/fs/cgroup")


def user_tasks(uid: int) -> int:
    """How many tasks (threads of every process) run under real uid ``uid``: what RLIMIT_NPROC counts."""
    return sum(len(glob.glob(f"/proc/{pid}/task/*")) for pid in _pids() if _real_uid(pid) == uid)  # a pid gone: 0


def _pids() -> list[int]:
    return [int(p) for p in os.listdir("/proc") if p.isdigit()]


def _real_uid(pid: int) -> int | None:
    """The real uid of ``pid`` (what RLIMIT_NPROC and the reaper go by; the owner of ``/proc/<pid>`` is the
    effective one, or root for a non-dumpable process), or None when it is gone."""
    try:
        with open(f"/proc/{pid}/status") as fh:
            return next(int(line.split()[1]) for line in fh if line.startswith("Uid:"))
    except (OSError, ValueError, IndexError, StopIteration):
        return None


def _controller(name: str) -> tuple[Path, bool] | None:
    """Where cgroups of controller ``name`` are made and whether that is cgroup v2, or None when not mounted."""
    v2 = CGROUP_ROOT / "cgroup.subtree_control"
    if v2.exists():
        return (CGROUP_ROOT, True) if name in v2.read_text().split() else None
    found = {"memory": "memory.limit_in_bytes", "cpu": "cpu.cfs_quota_us"}[name]
    return (CGROUP_ROOT / name, False) if (CGROUP_ROOT / name / found).exists() else None


def _cgroup_available(name: str) -> bool:
    """Whether sandboxes here get a cgroup of controller ``name`` (root, and that controller writable)."""
    found = _controller(name)
    return os.geteuid() == 0 and found is not None and os.access(found[0], os.W_OK)


memory_cgroup_available = functools.partial(_cgroup_available, "memory")
cpu_cgroup_available = functools.partial(_cgroup_available, "cpu")


def _bytes(size: str) -> int:
    """``"1536m"`` -> bytes (k, m, g suffixes, as firejail's rlimits)."""
    scale = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}.get(size[-1:].lower(), 1)
    return int(size[:-1] if scale > 1 else size) * scale


def _settings(name: str, v2: bool, limit) -> dict[str, str]:
    """The files to write in a new cgroup of controller ``name`` capped at ``limit`` (memory: a size as ``"1536m"``,
    swap off as it would lift the cap; cpu: cores)."""
    if name == "memory":
        size = str(_bytes(limit))
        # v1 swappiness 0: reclaim at the cgroup's limit then never swaps, so the cap holds even where the kernel
        # does not account swap (no memsw file; swapaccount=0, long the default), where 3 x 600 MiB ran in 1.5 GiB
        return {"memory.max": size, "memory.swap.max": "0"} if v2 else \
            {"memory.limit_in_bytes": size, "memory.memsw.limit_in_bytes": size, "memory.swappiness": "0"}
    quota = str(int(limit * CPU_PERIOD_US))
    return {"cpu.max": f"{quota} {CPU_PERIOD_US}", "cpu.weight": "100"} if v2 else \
        {"cpu.cfs_period_us": str(CPU_PERIOD_US), "cpu.cfs_quota_us": quota, "cpu.shares": "1024"}


def _cgroup_roots() -> list[Path]:
    """Where sandbox cgroups are made, one folder per mounted controller (cgroup v2: one for all)."""
    found = (_controller(name) for name in ("memory", "cpu"))
    return list(dict.fromkeys(root for root, _ in filter(None, found)))


def _existing_cgroups(uid: int) -> list[Path]:
    """Every cgroup left of the sandboxes of ``uid``: this one's, and any an earlier reap found busy."""
    return [path for root in _cgroup_roots()
            for path in [*root.glob(f"klear-sandbox-{uid}"), *root.glob(f"klear-sandbox-{uid}-*")]]


def _make_cgroup(name: str, cgroup: str, limit) -> Path | None:
    """The new cgroup ``cgroup`` of controller ``name`` capped at ``limit``, or None with the reason logged when it
    cannot be made here."""
    found = _controller(name)
    if found is None:
        _log_once(f"no {name} cgroup controller is mounted here: sandboxes get no {name} cgroup")
        return None
    path, v2 = found[0] / cgroup, found[1]
    try:
        made = not path.exists()
        path.mkdir(exist_ok=v2)  # v2: memory and cpu share the one cgroup; fails when not writable here
        try:
            for file, value in _settings(name, v2, limit).items():
                if (path / file).exists():  # memsw / swap.max only where swap accounting is on
                    (path / file).write_text(value)
            if name == "memory" and _swap_lifts_cap(path):
                _log_once("swap is on and this kernel controls no sandbox's swap: a program can exceed its memory "
                          "cap by swapping (boot with swapaccount=1 or turn swap off)")
        except OSError:
            if made:
                _remove_cgroup(path)
            raise
    except OSError as err:
        _log_once(f"no {name} cgroup for sandboxes ({err}): " + (
            "their total memory is not capped" if name == "memory" else "their CPU share rests on the scheduler"))
        return None
    return path


def _swap_lifts_cap(path: Path) -> bool:
    """Whether the memory cgroup at ``path`` can swap past its cap: swap is on and it has none of the files that
    stop that (cgroup v2 without ``memory.swap.max``)."""
    controls = ("memory.swap.max", "memory.memsw.limit_in_bytes", "memory.swappiness")
    return not any((path / file).exists() for file in controls) and swap_on()


def swap_on() -> bool:
    """Whether this machine has any swap device or file on (``/proc/swaps`` lists one below its header)."""
    return Path("/proc/swaps").read_text().count("\n") > 1


@functools.cache
def _log_once(why: str) -> None:
    log.warning("%s", why)


def make_cgroups(uid: int | None, total_memory: str | None, cpus: float | None) -> dict[str, Path]:
    """The cgroups of the sandbox of ``uid``, controller -> path: ``memory`` capped at ``total_memory`` and ``cpu``
    at ``cpus`` (None: not made); empty when not root; a controller that cannot be had here is left out (logged).
    ``sandbox_uid`` removes them (``reap``) once the sandbox is over."""
    wanted = {"memory": total_memory, "cpu": cpus} if uid is not None else {}
    # a name no sandbox had: one the reaper found busy (the kernel still letting go) is left for a later reap,
    # where reusing its name would fail and leave this sandbox uncapped
    cgroup = f"klear-sandbox-{uid}-{secrets.token_hex(4)}"
    made = {name: _make_cgroup(name, cgroup, limit) for name, limit in wanted.items() if limit}
    return {name: path for name, path in made.items() if path is not None}


def _remove_cgroup(path: Path) -> None:
    """rmdir the cgroup once its last process is gone (the kernel may take a moment to let go)."""
    for _ in range(50):
        try:
            path.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.02)
    log.warning("sandbox cgroup %s still busy; left in place", path)


def _uid_lock(uid: int) -> int | None:
    """An fd holding the exclusive lock of sandbox ``uid`` (file locks work across threads and processes), or None
    when another sandbox holds it."""
    lock_dir = Path(tempfile.gettempdir()) / "klear-sandbox-uids"
    lock_dir.mkdir(mode=0o700, exist_ok=True)
    fd = os.open(lock_dir / f"{uid}.lock", os.O_CREAT | os.O_RDWR, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return fd
    except BlockingIOError:
        os.close(fd)
        return None


def sandbox_pids(uid: int) -> set[int]:
    """Live processes of the sandbox of ``uid``: those of its program and runner uids and those in its cgroups
    (firejail itself, which runs as root)."""
    uids = {uid, uid + RUNNER_OFFSET}
    found = {pid for pid in _pids() if _real_uid(pid) in uids}
    for path in _existing_cgroups(uid):
        with suppress(OSError):
            found |= {int(p) for p in (path / "cgroup.procs").read_text().split()}
    return found


def reap(uid: int) -> None:
    """SIGKILL every process of the sandbox of ``uid`` (stopped ones too) until none is left, then remove its
    cgroups. Call it only holding the uid's lock: the sandbox is dead or its run was killed."""
    for _ in range(REAP_TRIES):
        pids = sandbox_pids(uid)
        if not pids:
            break
        for pid in pids:
            with suppress(OSError):  # gone already (pids are handed out in a cycle: none is reused within ms)
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.05)
    else:
        log.warning("sandbox uid %d: processes %s survived SIGKILL", uid, sorted(sandbox_pids(uid)))
    for path in _existing_cgroups(uid):
        _remove_cgroup(path)


def reap_idle(uids: Iterable[int] | None = None) -> None:
    """``reap`` every sandbox uid (of ``uids``, default all) no live sandbox holds that has processes or cgroups
    left (a killed run's)."""
    left = {_real_uid(pid) for pid in _pids()}
    for uid in range(UID_BASE, UID_BASE + UID_COUNT) if uids is None else uids:
        if not ({uid, uid + RUNNER_OFFSET} & left or _existing_cgroups(uid)):
            continue
        fd = _uid_lock(uid)
        if fd is not None:
            try:
                reap(uid)
            finally:
                os.close(fd)


@functools.cache
def _reap_idle_at_start() -> None:
    """``reap_idle`` once per process, before its first sandbox (the harness starting)."""
    if os.geteuid() == 0:
        reap_idle()


@contextmanager
def sandbox_uid() -> Iterator[int | None]:
    """A uid no other live sandbox uses, reaped before and after its use; None if not root."""
    if os.geteuid() != 0:
        _log_once("not root: sandboxes run under the caller's uid, so a program can signal its runner (the wall "
                  "clock still ends it) and shares the caller's process quota; no cgroups")
        yield None
        return
    _reap_idle_at_start()
    for uid in range(UID_BASE, UID_BASE + UID_COUNT):
        fd = _uid_lock(uid)
        if fd is None:
            continue
        try:
            reap(uid)  # what a killed run left under this uid would fail every fork of the next program
            yield uid
        finally:
            reap(uid)
            os.close(fd)
        return
    raise RuntimeError(f"all {UID_COUNT} sandbox uids are busy")
