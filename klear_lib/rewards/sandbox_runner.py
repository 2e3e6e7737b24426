"""Runs inside the sandbox (its source arrives on stdin, run by a stub): one program, many stdin tests, one start.

Reads ``{"source", "stdins", "timeout_s", "max_timeouts", "max_output", "max_stderr", "python", "reap_all",
"program_uid", "clear_shm"}`` as JSON on stdin and writes one JSON list of ``{"status", "returncode", "stdout",
"stderr", "wall_s"}`` on stdout. Each test gets its own child process with its own wall-clock timeout. Both its
stdout and its stderr are read to the end (a child blocked on a full pipe would look like a timeout): stdout is kept up to ``max_output`` bytes, stderr up to
``max_stderr``; a stream that goes past ``max_output`` bytes ends the test as ``killed`` with a note saying which.
Once a program has timed out ``max_timeouts`` times, its remaining tests count as timeouts without running. After
each test every process of the sandbox user is killed (``reap_all``), so a stray child of one test cannot touch
the next, and the private ``/dev/shm`` is emptied (``clear_shm``), so no test sees another's files. The runner
makes itself non-dumpable first, so the program cannot open ``/proc/<runner>/fd`` to forge the verdict; given a
``program_uid`` (as root) it runs with real and saved uid of its own and the program's as effective uid, and starts
each test as ``program_uid`` alone, so the program cannot signal (stop) the runner while the runner can kill it.
The program is read from a sealed in-memory file (``memfd``), not an argument: one argument holds 128 KiB at most.
Standard library only: it runs under the sandbox's system Python.
"""
import ctypes
import fcntl
import json
import os
import selectors
import shutil
import signal
import subprocess
import sys
import time
from contextlib import suppress

PR_SET_DUMPABLE = 4
CHUNK = 65536


def _undumpable():
    """prctl(PR_SET_DUMPABLE, 0): /proc/<self>/* becomes root-owned, out of the program's reach."""
    with suppress(OSError):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)


def _kill_group(proc):
    """SIGKILL the child's whole process group (it runs in its own session)."""
    with suppress(OSError):
        os.killpg(proc.pid, signal.SIGKILL)


def _feed(proc, sel, pending):
    """Write the next chunk of stdin; close it when done (or when the program stopped reading)."""
    try:
        pending = pending[os.write(proc.stdin.fileno(), pending[:CHUNK]):]
    except OSError:
        pending = pending[len(pending):]
    if not pending:
        sel.unregister(proc.stdin)
        proc.stdin.close()
    return pending


def _drain(fileobj, sel, stream, limit):
    """Read one chunk into ``stream`` (``[kept bytes, bytes seen, bytes kept at most]``); True past ``limit``."""
    data = os.read(fileobj.fileno(), CHUNK)
    if not data:
        sel.unregister(fileobj)
        return False
    stream[0].extend(data[:max(0, stream[2] - len(stream[0]))])
    stream[1] += len(data)
    return stream[1] > limit


def _pump(proc, stdin_bytes, deadline, caps):
    """Feed stdin and collect stdout/stderr until exit, deadline or cap; returns (out, err, why_stopped)."""
    sel = selectors.DefaultSelector()
    streams = {proc.stdout: [bytearray(), 0, caps[0]], proc.stderr: [bytearray(), 0, caps[1]]}
    for f in streams:
        sel.register(f, selectors.EVENT_READ)
    pending = memoryview(stdin_bytes)
    sel.register(proc.stdin, selectors.EVENT_WRITE) if pending else proc.stdin.close()
    why = ""
    while sel.get_map() and not why:
        left = deadline - time.monotonic()
        if left <= 0:
            why = "timeout"
            break
        for key, _ in sel.select(timeout=min(left, 0.5)):
            if key.fileobj is proc.stdin:
                pending = _feed(proc, sel, pending)
            elif _drain(key.fileobj, sel, streams[key.fileobj], caps[0]):
                why = "stderr" if key.fileobj is proc.stderr else "stdout"
    sel.close()
    return bytes(streams[proc.stdout][0]), bytes(streams[proc.stderr][0]), why


def program_file(source):
    """A sealed in-memory file holding ``source`` (no test can change it for the next); its fd."""
    fd = os.memfd_create("program", os.MFD_ALLOW_SEALING)
    data = source.encode("utf-8", "surrogatepass")  # a lone surrogate: a SyntaxError, not a crash
    while data:
        data = data[os.write(fd, data):]
    seals = fcntl.F_SEAL_WRITE | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_SEAL
    fcntl.fcntl(fd, fcntl.F_ADD_SEALS, seals)
    return fd


def run_one(program_fd, stdin_text, timeout_s, caps, python, uid=None):
    """One test: the program (read from ``program_fd``) in a fresh child under ``uid`` with a wall-clock deadline;
    returns the result dict."""
    start = time.monotonic()
    env = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "PYTHONHASHSEED": "0", "OPENBLAS_NUM_THREADS": "1"}
    try:
        proc = subprocess.Popen([python, "-B", "/proc/self/fd/%d" % program_fd], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, start_new_session=True,
                                close_fds=True, pass_fds=(program_fd,), user=uid)
    except OSError as exc:  # e.g. EAGAIN under nproc
        return {"status": "error", "returncode": None, "stdout": "", "stderr": "[sandbox] " + str(exc),
                "wall_s": round(time.monotonic() - start, 4)}
    out, err, why = _pump(proc, stdin_text.encode(), start + timeout_s, caps)
    if why:
        _kill_group(proc)
    try:
        rc = proc.wait(timeout=max(0.1, start + timeout_s - time.monotonic()))
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        rc, why = proc.wait(), why or "timeout"
    for f in (proc.stdin, proc.stdout, proc.stderr):
        with suppress(OSError):
            f.close()
    # a negative return code: killed by a signal
    status = "timeout" if why == "timeout" else "killed" if why or rc < 0 else "ok" if rc == 0 else "error"
    note = b"" if why in ("", "timeout") else b"\n[sandbox] output limit exceeded: %s over %d bytes" % (
        why.encode(), caps[0])
    return {"status": status, "returncode": rc, "stdout": out.decode("utf-8", "replace"),
            "stderr": (err + note).decode("utf-8", "replace"), "wall_s": round(time.monotonic() - start, 4)}


def _clear_dir(path):
    """Remove what the last test left in ``path`` (the sandbox's private ``/dev/shm``)."""
    for name in os.listdir(path):
        full = os.path.join(path, name)
        with suppress(OSError):
            shutil.rmtree(full) if os.path.isdir(full) and not os.path.islink(full) else os.unlink(full)


def main():
    _undumpable()
    job = json.loads(sys.stdin.read())
    uid = job.get("program_uid")
    if uid is not None and os.getuid() != uid:  # real and saved uid our own (setpriv made only the real one so):
        os.setresuid(-1, -1, os.getuid())       # the program, whose uids are all the effective one, cannot signal us
    caps, fd = (int(job["max_output"]), int(job["max_stderr"])), program_file(job["source"])
    results, max_timeouts = [], job.get("max_timeouts")
    for stdin_text in job["stdins"]:
        if max_timeouts is not None and sum(r["status"] == "timeout" for r in results) >= max_timeouts:
            results.append({"status": "timeout", "returncode": None, "stdout": "", "wall_s": 0.0,
                            "stderr": "[sandbox] not run: the program already timed out %d times" % max_timeouts})
            continue
        results.append(run_one(fd, stdin_text, float(job["timeout_s"]), caps, job["python"], uid))
        if job.get("reap_all"):
            with suppress(OSError):  # SIGKILL all this uid can signal in the sandbox's PID namespace, but us
                os.kill(-1, signal.SIGKILL)
        if job.get("clear_shm"):
            _clear_dir("/dev/shm")
    sys.stdout.write(json.dumps(results))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
