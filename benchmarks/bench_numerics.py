"""The numerics mode's cost (issue 39): a tiny SFT step and a tiny RL step with the mode pinned and native.

A third variant, ``pinned_mkl_auto``, is the mode with MKL's reproducible branch left to MKL (``MKL_CBWR=AUTO,STRICT``
instead of ``COMPATIBLE,STRICT``): it prices the one pin that makes Intel and AMD agree (docs/stack.md §11), which
no other variable can replace. It does not give the same bytes on both CPU makers; it is measured, never used.

The mode is chosen once per process before torch loads (klear_lib.numerics), so each variant runs in a child
process of its own; rounds rotate which runs first, and ratios are medians of per-round ratios (a variant over
native: above 1, it costs time). A child times ``--steps`` steps of each after one untimed step: SFT on the
tiny SFT preset's batch shape (drill rows, length groups as the stage trains them), and a GPPO step on the tiny
math RL preset (generation with transformers, toy rewards, learning rate 0 so every step sees the same model).

    python benchmarks/bench_numerics.py [--rounds 2 --steps 3] [--no-record]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import klear_lib  # noqa: F401  (first: the numerics mode before torch loads)
from klear_lib.configs import recipe
from klear_lib import numerics

import perf  # benchmarks/perf.py, beside this script

BENCH = "numerics_mode"
# variant -> (KLEAR_NUMERICS, variables that replace the pinned ones); the first two are the modes themselves
VARIANTS = {"pinned": ("pinned", {}), "native": ("native", {}),
            "pinned_mkl_auto": ("native", {"MKL_CBWR": "AUTO,STRICT"})}


class StepTimes:
    """Seconds of each optimizer step (``on_step_begin`` to ``on_step_end``), as a transformers callback."""

    def __init__(self):
        from transformers import TrainerCallback

        self.seconds: list[float] = []
        outer = self

        class Clock(TrainerCallback):
            def on_step_begin(self, args, state, control, **kwargs):
                outer.start = time.perf_counter()

            def on_step_end(self, args, state, control, **kwargs):
                outer.seconds.append(time.perf_counter() - outer.start)

        self.callback = Clock()


def sft_steps(steps: int, tmp: Path) -> list[float]:
    """Seconds per tiny SFT step (after one untimed step)."""
    from klear_lib.configs import get_config
    from klear_lib.models import load, load_or_build
    from klear_lib.training.overhead import lean
    from klear_lib.training.sft import LengthGroupedSFTTrainer, sft_dataset, trl_args

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from sft_drills import drill_rows

    cfg = get_config("sft", "tiny", num_epochs=1.0, save_steps=10 ** 6, max_rows=None)
    rows = drill_rows(cfg.per_device_batch_size * (steps + 1), "bench-numerics")
    model, tok = load(load_or_build(recipe("tiny")))
    clock = StepTimes()
    trainer = LengthGroupedSFTTrainer(model=model, args=trl_args(cfg, tmp / "sft"), train_dataset=sft_dataset(rows),
                                      processing_class=tok, callbacks=[clock.callback], overhead=cfg.group_overhead)
    lean(trainer).train()
    return clock.seconds[1:]


def rl_steps(steps: int, tmp: Path) -> list[float]:
    """Seconds per tiny GPPO step (generation + its updates; after one untimed step)."""
    from bench_gppo_step import BENCH_OVERRIDES, prompt_rows

    from klear_lib.configs import get_config
    from klear_lib.models import load_or_build
    from klear_lib.training import build_rl_trainer

    cfg = get_config("rl_math", "tiny", max_steps=steps + 1)
    trainer = build_rl_trainer(cfg, load_or_build(recipe("tiny")), prompt_rows(cfg.prompts_per_step * (steps + 1)), "math",
                               tmp / "rl", **BENCH_OVERRIDES)
    clock = StepTimes()
    trainer.add_callback(clock.callback)
    trainer.train()
    per = cfg.updates_per_step
    return [sum(clock.seconds[i:i + per]) for i in range(per, len(clock.seconds), per)]


def child(steps: int) -> None:
    """Time both steps in this process (its mode set by the parent) and print one JSON line."""
    with tempfile.TemporaryDirectory() as tmp:
        os.environ.setdefault("KLEAR_ARTIFACTS", str(Path(tmp) / "artifacts"))
        out = {"mode": numerics.mode(), "sft": sft_steps(steps, Path(tmp)), "rl": rl_steps(steps, Path(tmp))}
    print("RESULT " + json.dumps(out), flush=True)


def run_child(variant: str, steps: int) -> dict:
    """One child under ``variant``; its medians per step."""
    mode, changed = VARIANTS[variant]
    env = {k: v for k, v in os.environ.items() if k not in numerics.PINNED}  # native: each library's own choice
    env.update({numerics.MODE_ENV: mode, "TQDM_DISABLE": "1"})
    if changed:  # the pinned variables set by hand, with KLEAR_NUMERICS=native so that none is overridden
        env.update({**numerics.PINNED, **changed})
    proc = subprocess.run([sys.executable, __file__, "--child", "--steps", str(steps)], env=env, capture_output=True,
                          text=True, check=True)
    out = json.loads(next(line for line in proc.stdout.splitlines() if line.startswith("RESULT "))[7:])
    assert out["mode"] == mode, f"the {variant} child ran {out['mode']}"
    return {kind: perf.summary(out[kind])["median"] for kind in ("sft", "rl")}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    perf.add_output_args(parser)
    args = parser.parse_args(argv)
    if args.child:
        return child(args.steps)
    names = list(VARIANTS)
    before, times = perf.loadavg(), {v: {"sft": [], "rl": []} for v in names}
    for r in range(args.rounds):
        for variant in names[r % len(names):] + names[:r % len(names)]:
            for kind, seconds in run_child(variant, args.steps).items():
                times[variant][kind].append(seconds)
    note = (f"{args.rounds} rounds of {args.steps} steps, each variant in its own process; "
            f"{perf.load_note(before, perf.loadavg())}")
    rows = []
    for kind, what in (("sft", "tiny SFT step"), ("rl", "tiny GPPO step")):
        for variant in names:
            stats = perf.summary(times[variant][kind])
            rows.append(perf.row(BENCH, f"{kind}_step_s.{variant}", stats["median"], "s",
                                 notes=f"{what}, numerics {variant}; {perf.iqr_note(stats)}; {note}"))
        for variant in ("pinned", "pinned_mkl_auto"):  # each over native
            ratio = perf.summary(perf.paired_ratios({v: times[v][kind] for v in names}, variant, "native"))
            rows.append(perf.row(BENCH, f"{kind}_step_s.ratio.{variant}", ratio["median"], "x", "native",
                                 f"{what}: {variant} over native (above 1: it costs time); {perf.iqr_note(ratio)}"))
    perf.emit(rows, args)


if __name__ == "__main__":
    main()
