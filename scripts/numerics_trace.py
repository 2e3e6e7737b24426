"""Every ATen operation of a short ci RL run, hashed, to find the first one a CPU model rounds its own way.

``scripts/numerics_ops.py`` hashes operation families at fixed shapes; this script follows one real run instead:
the ci SFT stage, then the first RL step of the ci random-reward control (``random_rl_math``, seed 0), whose run
record drawn on the AMD EPYC and on the Intel Xeon under the pinned mode differs from its first update on
(docs/stack.md §11). Every operation the dispatcher runs in that step (generation, the loss, the backward pass, the
optimizer) is recorded as its name and a 32-bit hash of its outputs. Two CPU models run the same operations in the
same order, so the first entry whose hash differs is the operation whose kernel rounds differently: its inputs
were all outputs of earlier, equal entries (or tensors made outside torch, which enter through an op of their own).
``results/numerics_trace.json`` keeps one trace per CPU model and mode; the script compares this machine's trace
with every stored one of the same mode and prints the first difference with the operations around it (exit 1 if
any differs). ``--change`` moves one vector-math operation's results by an ulp (or computes them exactly) and
``--record`` holds the updates drawn against a stored run record, column by column: that is how the Xeon alone found
the cause, a ``torch.sqrt`` the AMD rounds one ulp higher (docs/stack.md §11 gives the commands).

    python scripts/numerics_trace.py [--write]
    python scripts/numerics_trace.py --preset tiny --seed 1 --record results/tiny/rerun/runs/random_rl_math-s1.csv \
        --change aten.sqrt.default=up@1.1428571939468384/376.8777160644531
"""
from __future__ import annotations

import argparse
import csv
import dataclasses
import json
import os
import sys
import tempfile
import zlib
from pathlib import Path

from klear_lib import numerics  # first: the numerics mode before torch loads
from klear_lib.tables import PROVENANCE as ROW_PROVENANCE

import torch  # noqa: E402
from torch.utils._python_dispatch import TorchDispatchMode  # noqa: E402
from torch.utils._pytree import tree_leaves  # noqa: E402

TRACES = Path(__file__).resolve().parents[1] / "results" / "numerics_trace.json"
# Operations that round nothing: aliases, reshapes, copies, constants and reads of a value already hashed. Left out
# of the trace (a difference they pass on shows at the next operation that reads them); torch.tensor's
# ``lift_fresh`` and dtype casts stay, since they bring in values made outside torch or round them.
_ATEN = torch.ops.aten
NO_VALUES = {_ATEN.detach.default, _ATEN._unsafe_view.default, _ATEN.clone.default, _ATEN.copy_.default,
             _ATEN.arange.default, _ATEN.arange.start, _ATEN.scalar_tensor.default, _ATEN.ones_like.default,
             _ATEN.new_ones.default, _ATEN.full.default, _ATEN.zeros.default, _ATEN.zeros_like.default,
             _ATEN.new_zeros.default, _ATEN.empty.memory_format, _ATEN.empty_like.default,
             _ATEN._local_scalar_dense.default}
# Where torch computes some float operations on this stack (torch 2.13 CPU wheel, its MKL 2024.2), so that the first
# difference names a library: these nine (and x ** 0.5, a sqrt) change their results with MKL_CBWR's branch
# (measured, docs/stack.md §11), so torch hands them to MKL's vector math; sin, cos, log1p, expm1, sigmoid, rsqrt
# and the softmaxes do not.
VECTOR_MATH = {f"aten.{op}.default" for op in ("exp", "log", "sqrt", "tanh", "erf", "tan", "atan", "log2", "log10")}
GEMM = {"aten.mm.default", "aten.mm.out", "aten.addmm.default", "aten.addmm_.default", "aten.bmm.default",
        "aten.baddbmm.default"}
PROVENANCE = ("config_hash", *ROW_PROVENANCE)  # a run record's columns that are not its values
CONTROL_SEED = 0  # random_rl_math.csv at ci: update 1's policy loss differs between the two CPU models


def tensor_bytes(t: torch.Tensor) -> bytes:
    """The bytes of a dense tensor's values, in row-major order, whatever its dtype."""
    t = t.detach().contiguous()
    if t.dtype in (torch.bfloat16, torch.float16) or t.is_complex():
        t = t.view(torch.uint8) if t.dim() else t.reshape(1).view(torch.uint8)
    return t.numpy().tobytes()


class Trace(TorchDispatchMode):
    """Records every operation run under it: ``names`` (interned op names) and ``steps`` ([name index, hash]).
    ``change``: {op name: how} for ops of ``VECTOR_MATH``, to see which values a kernel's own rounding of them moves:
    "exact" computes their float32 results in float64 and rounds once (nearly always the correctly rounded value),
    "up" and "down" move each result one ulp, "up@x" and "down@x" only the results of inputs equal to x (or to any
    of x/y/...)."""

    def __init__(self, change: dict[str, str] | None = None):
        super().__init__()
        self.change = change or {}
        self.names: list[str] = []
        self.index: dict[str, int] = {}
        self.steps: list[tuple[int, int]] = []
        self.shapes: list[str] = []  # each step's tensor inputs, shape and dtype: printed, not stored (same everywhere)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        how = self.change.get(str(func)) if args and isinstance(args[0], torch.Tensor) and \
            args[0].dtype == torch.float32 else None
        if how == "exact":
            out = func(args[0].double(), *args[1:], **(kwargs or {})).float()
        else:
            out = func(*args, **(kwargs or {}))
        if how and how != "exact":
            way, _, at = how.partition("@")
            moved = torch.nextafter(out, torch.full_like(out, float("inf") if way == "up" else float("-inf")))
            hit = [args[0] == float(x) for x in at.split("/")] if at else []
            out = torch.where(torch.stack(hit).any(0), moved, out) if hit else moved
        # an alias, a shape or a copy of tensors already hashed, or a profiler mark: nothing new rounds
        if func.is_view or func in NO_VALUES or func.namespace == "profiler":
            return out
        crc = 0
        for t in tree_leaves(out):
            if isinstance(t, torch.Tensor) and t.layout == torch.strided and t.device.type == "cpu":
                crc = zlib.crc32(tensor_bytes(t), crc)
        name = str(func)
        self.steps.append((self.index.setdefault(name, len(self.index)), crc))
        self.shapes.append(" ".join(f"{tuple(t.shape)}:{str(t.dtype)[6:]}" for t in tree_leaves((args, kwargs))
                                    if isinstance(t, torch.Tensor)))
        if len(self.index) > len(self.names):
            self.names.append(name)
        return out


def trace_control(work: Path, change: dict[str, str] | None = None, preset: str = "ci",
                  seed: int = CONTROL_SEED) -> tuple[Trace, list[dict]]:
    """The trace of the random-reward control's first RL step at ``preset`` (``seed``) and the step's run record
    (one row per update), under ``work``. The SFT model is the preset's own: at ci trained in the artifact store
    (``main`` points it at a temporary one), at tiny the main job's, from the store (trained there if missing, which
    takes about half an hour). Threads as the stored records were drawn: ci in a notebook kernel, tiny by a sweep
    worker (one torch thread)."""
    from klear_lib.configs import recipe
    from klear_lib.pipeline import CONTROLS, rl_rows, sft_stage
    from klear_lib.seeding import torch_threads
    from klear_lib.training import build_rl_trainer

    rec = dataclasses.replace(recipe(preset), scratch=True).main_job  # records under the artifacts, not results/
    with torch_threads(numerics.THREADS if preset == "ci" else 1):
        sft = sft_stage(rec)
        arm = rec.replace(rl_math={"seed": seed, **CONTROLS["blind"]})
        cfg = dataclasses.replace(arm.rl("math"), max_steps=1)
        record = work / "rl_record.csv"
        trainer = build_rl_trainer(cfg, sft, rl_rows(arm, "math"), "math", work / "rl", run_record=record)
        trace = Trace(change)
        with trace:
            trainer.train()
    return trace, list(csv.DictReader(record.open()))


def _is_change(how: str) -> bool:
    """``--change``'s HOW: exact, up, down, or up/down@x (inputs x, several as x/y/...)."""
    way, at, xs = how.partition("@")
    if how == "exact" or (way in ("up", "down") and not at):
        return True
    try:
        return way in ("up", "down") and all(float(x) == float(x) for x in xs.split("/"))
    except ValueError:
        return False


def record(trace: Trace) -> dict:
    return {**numerics.provenance(), "names": trace.names,
            "steps": ",".join(f"{i:x}:{h:08x}" for i, h in trace.steps)}


def unpack(rec: dict) -> list[tuple[str, str]]:
    return [(rec["names"][int(i, 16)], h) for i, h in (s.split(":") for s in rec["steps"].split(","))]


def first_difference(a: list[tuple[str, str]], b: list[tuple[str, str]]) -> int | None:
    """Index of the first entry where the two traces differ (op or hash), or None if they are equal."""
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return i
    return None if len(a) == len(b) else min(len(a), len(b))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write", action="store_true", help="store this machine's trace in " + str(TRACES.name))
    ap.add_argument("--change", default="", help="comma-separated OP=HOW, HOW exact, up, down, up@x or down@x (e.g. "
                    "aten.sqrt.default=up@1.25/2.5): compute OP in float64, or move its results (for inputs x only) "
                    "one ulp, and print the update values this gives (no trace compared or stored)")
    ap.add_argument("--preset", choices=("ci", "tiny"), default="ci", help="the control to run: ci (the default; "
                    "the only one whose trace is stored) or tiny (the main job's control, from its SFT checkpoint)")
    ap.add_argument("--seed", type=int, default=CONTROL_SEED, help="the control's RL seed (default %(default)s)")
    ap.add_argument("--record", type=Path, help="a run record of this control (e.g. another CPU's): name the columns "
                    "in which each update drawn here differs from it")
    args = ap.parse_args()
    change = dict(item.split("=", 1) if "=" in item else (item, "") for item in filter(None, args.change.split(",")))
    # one-input ops: a float64 result rounds back into a new tensor, a moved one replaces it
    if bad := sorted(f"{op}={how}" for op, how in change.items() if op not in VECTOR_MATH or not _is_change(how)):
        ap.error(f"--change takes OP=HOW, OP one of {sorted(VECTOR_MATH)}, HOW exact, up, down, up@x or down@x; "
                 f"not {bad}")
    if args.write and (change or (args.preset, args.seed) != ("ci", CONTROL_SEED)):
        ap.error(f"--write stores the trace of the ci control, seed {CONTROL_SEED}, unchanged")
    with tempfile.TemporaryDirectory() as tmp:
        os.environ.update(HF_HUB_OFFLINE="1", TQDM_DISABLE="1")
        if args.preset == "ci":  # a fresh ci SFT model; tiny reads the main job's from the store
            os.environ["KLEAR_ARTIFACTS"] = str(Path(tmp) / "artifacts")
        trace, updates = trace_control(Path(tmp), change, args.preset, args.seed)
        here = record(trace)
    mine = unpack(here)
    key = numerics.record_key(here)
    if args.record:
        theirs = {r["step"]: r for r in csv.DictReader(args.record.open())}
        for u in updates:
            other = theirs.get(u["step"], {})
            cols = [k for k in other if k not in PROVENANCE and other[k] != u.get(k)] if other else ["(no such update)"]
            print(f"  update {u['step']} vs {args.record}: " + (", ".join(cols) if cols else "every column equal"))
    if change or (args.preset, args.seed) != ("ci", CONTROL_SEED):  # only that run's trace is stored to compare
        for u in updates:
            print(f"  update {u['step']} with {change or 'no change'}: policy_loss {u['policy_loss']}, grad_norm "
                  f"{u['grad_norm']}, logp_grad_norm {u['logp_grad_norm']}, sft_loss {u['sft_loss']}")
        return 0
    stored = json.loads(TRACES.read_text()) if TRACES.exists() else {}
    print(f"{key}: {len(mine)} operations traced ({len(here['names'])} distinct)")
    for u in updates:  # the values a run record of another CPU model can be held against
        print(f"  update {u['step']}: policy_loss {u['policy_loss']}, grad_norm {u['grad_norm']}, "
              f"logp_grad_norm {u['logp_grad_norm']}")
    differ = 0
    for other, rec in stored.items():
        if rec["numerics"] != here["numerics"]:  # this machine's own stored trace included: a rerun must match it
            continue
        if (rec["torch"], rec["mkl"]) != (here["torch"], here["mkl"]):
            print(f"  {other}: other versions than here, so a difference may be theirs")
        theirs = unpack(rec)
        i = first_difference(mine, theirs)
        if i is None:
            print(f"  same as {other}: all {len(mine)} operations")
            continue
        differ = 1
        print(f"  differs from {other} first at operation {i} of {len(mine)} ({len(theirs)} there):")
        for j in range(max(0, i - 5), min(i + 6, len(mine), len(theirs))):
            mark = "->" if j == i else "  "
            print(f"   {mark} {j:6d} here {mine[j][0]} {mine[j][1]}   there {theirs[j][0]} {theirs[j][1]}   "
                  f"inputs {trace.shapes[j]}")
        op = mine[i][0] if i < len(mine) else theirs[i][0]
        print(f"  {op}: " + ("MKL's vector math (MKL_CBWR picks its branch)" if op in VECTOR_MATH else
                             "MKL's sgemm (MKL_CBWR)" if op in GEMM else "an ATen kernel (ATEN_CPU_CAPABILITY)"))
        later = sum(x != y for x, y in zip(mine[i:], theirs[i:]))
        print(f"  {later} of the {min(len(mine), len(theirs)) - i} operations from there on differ")
    if args.write:
        if key in stored and stored[key]["steps"] != here["steps"]:
            print(f"  note: replaces a stored {key} trace that differs (not bit-reproducible on one machine?)")
        TRACES.write_text(json.dumps({**stored, key: here}, indent=1, sort_keys=True) + "\n")
        print(f"stored as {key!r} in {TRACES}")
    return differ


if __name__ == "__main__":
    sys.exit(main())
