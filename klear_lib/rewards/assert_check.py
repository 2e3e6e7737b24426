"""Runs inside the sandbox: LeetCode ``check(candidate)`` asserts in a process the program never runs in.

Role ``check`` (the default; its source is passed to ``python -c``): reads ``{"prelude", "program", "check",
"self"}`` (``self``: this file's text, to start the other role) as
JSON on stdin, makes itself non-dumpable, starts the program in a child of its own (role ``serve``) and runs the
prelude and the check code with ``Solution`` standing for a proxy. Each ``candidate(...)`` call sends its arguments
to the child and decodes the child's JSON reply into fresh builtin values (linked lists and trees rebuilt with the
prelude's own classes), so every comparison an assert makes is between plain values built here. Nothing the
program does (exit early, hook exceptions, patch builtins, print a verdict, return an object whose ``__eq__`` is
always true) reaches this process; the verdict line is printed only when the check returned after at least one
call, and only this process writes to its stdout (the program's stdout and stderr go to stderr).
Role ``serve``: execs the prelude and the program, then answers ``{"method", "args", "kwargs"}`` requests with
``{"value"}`` or ``{"error"}``. Standard library only: it runs under the sandbox's system Python.
"""
import ctypes
import json
import os
import subprocess
import sys
import traceback
from contextlib import suppress

VERDICT = "klear-asserts-passed"
MAX_REPLY_BYTES = 64 << 20   # a reply longer than this fails the call (no unbounded read)
MAX_NODES = 1 << 20          # a linked list or tree with more nodes than this (or a cycle) cannot be sent


def _undumpable():
    """prctl(PR_SET_DUMPABLE, 0): the program (same uid) cannot open /proc/<self>/fd, mem or environ."""
    with suppress(OSError):
        ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0)


def encode(x):
    """A value as JSON-able data: lists as arrays, everything else non-scalar as a tagged object."""
    if x is None or isinstance(x, (bool, int, float, str)):
        return x
    if isinstance(x, list):
        return [encode(v) for v in x]
    if isinstance(x, (tuple, set, frozenset)):
        tag = "tuple" if isinstance(x, tuple) else "frozenset" if isinstance(x, frozenset) else "set"
        return {"t": tag, "v": [encode(v) for v in x]}
    if isinstance(x, dict):
        return {"t": "dict", "v": [[encode(k), encode(v)] for k, v in x.items()]}
    if hasattr(x, "val") and hasattr(x, "left") and hasattr(x, "right"):  # level order, trailing Nones dropped
        values, queue = [], [x]
        for node in queue:  # the queue grows as the loop reads it
            if len(queue) > 2 * MAX_NODES:
                raise ValueError("tree too large or cyclic")
            values.append(None if node is None else encode(node.val))
            if node is not None:
                queue += [node.left, node.right]
        while values and values[-1] is None:
            values.pop()
        return {"t": "tree_node", "v": values}
    if hasattr(x, "val") and hasattr(x, "next"):
        values, node = [], x
        while node is not None:
            if len(values) >= MAX_NODES:
                raise ValueError("linked list too long or cyclic")
            values.append(encode(node.val))
            node = node.next
        return {"t": "list_node", "v": values}
    if hasattr(x, "item"):  # numpy scalars
        return encode(x.item())
    raise TypeError(f"cannot send a {type(x).__name__}")


def decode(x, ns):
    """The inverse of ``encode``, building linked lists and trees with ``ns``'s ``list_node``/``tree_node``."""
    if isinstance(x, list):
        return [decode(v, ns) for v in x]
    if not isinstance(x, dict):
        return x
    tag, v = x["t"], x["v"]
    if tag == "dict":
        return {_hashable(decode(k, ns)): decode(val, ns) for k, val in v}
    items = [decode(i, ns) for i in v]
    if tag in ("tuple", "set", "frozenset"):
        return {"tuple": tuple, "set": set, "frozenset": frozenset}[tag](_hashable(i) for i in items)
    if tag in ("list_node", "tree_node"):
        return ns[tag](items)
    raise ValueError(f"unknown tag {tag!r}")


def _hashable(x):
    """Lists become tuples where a dict key or set member needs hashing (JSON has no tuples of its own)."""
    return tuple(_hashable(i) for i in x) if isinstance(x, list) else x


def _send(f, obj):
    f.write(json.dumps(obj).encode() + b"\n")
    f.flush()


def _receive(f):
    """One JSON line, at most ``MAX_REPLY_BYTES``; EOFError when the other side is gone."""
    line = f.readline(MAX_REPLY_BYTES + 1)
    if not line.endswith(b"\n"):
        raise EOFError("the program ended or its reply was too long")
    return json.loads(line)


def check(job):
    """Run the check code against the program in its own process; True when every assert ran and held."""
    ns = {"__name__": "__klear_check__"}
    exec(compile(job["prelude"], "prelude", "exec"), ns)  # noqa: S102 (trusted: our prelude)
    (req_r, req_w), (rep_r, rep_w) = os.pipe(), os.pipe()
    argv = [sys.executable, "-B", "-c", job["self"], "serve", str(req_r), str(rep_w)]
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=2, pass_fds=(req_r, rep_w), close_fds=True)
    os.close(req_r)
    os.close(rep_w)
    requests, replies = os.fdopen(req_w, "wb"), os.fdopen(rep_r, "rb")
    _send(requests, {"program": job["prelude"] + job["program"]})
    made, calls = [], []

    def call(instance, method, *args, **kwargs):
        """One ``candidate(...)`` call on ``Solution()`` number ``instance``, answered by the program's process."""
        calls.append(method)
        _send(requests, {"instance": instance, "method": method, "args": encode(list(args)),
                         "kwargs": encode(kwargs)})
        reply = _receive(replies)
        if "error" in reply:
            raise RuntimeError("the program raised: " + str(reply["error"])[:2000])
        return decode(reply["value"], ns)

    class Solution:
        """A stand-in for the program's ``Solution``: ``Solution().name(...)`` calls ``name`` over there."""

        def __init__(self):
            made.append(self)
            self._klear_instance = len(made)

        def __getattr__(self, name):
            return lambda *args, **kwargs: call(self._klear_instance, name, *args, **kwargs)
    ns["Solution"] = Solution
    try:
        exec(compile(job["check"], "check", "exec"), ns)  # noqa: S102 (trusted: the row's check code)
    finally:
        proc.kill()
        proc.wait()
    return bool(calls)


def serve(req_fd, rep_fd):
    """The program's side: exec it, then answer calls until the checker closes the pipe."""
    requests, replies = os.fdopen(req_fd, "rb"), os.fdopen(rep_fd, "wb")
    ns, instances = {"__name__": "__main__"}, {}
    source = _receive(requests)["program"]
    try:
        exec(compile(source, "program", "exec"), ns)  # noqa: S102 (the program, in its own process)
        failure = None
    except BaseException as exc:  # noqa: BLE001 (SystemExit too: the program's failure, reported per call)
        failure = "".join(traceback.format_exception_only(type(exc), exc))
    while True:
        try:
            request = _receive(requests)
        except EOFError:
            return
        _send(replies, {"error": failure} if failure else _answer(ns, instances, request))


def _answer(ns, instances, request):
    """One call, on the program's ``Solution()`` paired with the checker's (one instance each, as in the check)."""
    try:
        if request["instance"] not in instances:
            instances[request["instance"]] = ns["Solution"]()
        method = getattr(instances[request["instance"]], request["method"])
        value = method(*decode(request["args"], ns), **decode(request["kwargs"], ns))
        return {"value": encode(value)}
    except Exception as exc:  # noqa: BLE001 (whatever the program raises fails that call)
        return {"error": "".join(traceback.format_exception_only(type(exc), exc))}


def main():
    if hasattr(sys, "set_int_max_str_digits"):  # Python >= 3.11 refuses ints over 4,300 digits; asserts use them
        sys.set_int_max_str_digits(0)
    if sys.argv[1:2] == ["serve"]:
        return serve(int(sys.argv[2]), int(sys.argv[3]))
    _undumpable()
    job = json.loads(sys.stdin.read())
    if not check(job):
        sys.exit("[checker] the check code never called the candidate")
    sys.stdout.write(VERDICT + "\n")


if __name__ == "__main__":
    main()
