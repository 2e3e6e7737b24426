"""GPPO's step overhead against TRL's native ``loss_type="dapo"``, same model and same batch, measured interleaved.

    python benchmarks/bench_gppo_step.py [--reps 20] [--step-reps 10] [--threads 1] [--no-record]

Two measurements on the tiny preset model (CPU, fp32), each variant a separate trainer on its own copy of
the same weights:

* loss+backward: each trainer's ``compute_loss`` on one identical prepared micro-batch (off-policy old
  log-probs, so tokens are clipped), then ``backward``. Variants: stock ``trl.GRPOTrainer`` (dapo),
  ``GPPOTrainer`` with the recipe's loss (GPPO + α·L_LM on correct rollouts + clip diagnostics), and
  ``GPPOTrainer`` with α = 0 (the loss alone).
* whole RL step: ``trainer.train()`` for one RL step (generation + judge + group filter + 8 updates), learning
  rate 0 so both models stay identical and, reseeded alike, sample identical rollouts. GPPO runs with
  ``oversample=1``: oversampling doubles generation by design (an algorithmic cost, not overhead). Completions
  are capped at ``--step-completion-length`` (64, not the preset's 256, to keep the run short; a shorter
  generation makes any loss overhead a larger share of the step, so the ratio is if anything pessimistic).

One torch thread by default: on a shared 2-core machine two OpenMP threads contend with other processes and
single calls vary 10x (measured: 0.4 s vs 0.6-6.8 s for the same forward+backward).

Rounds are interleaved with rotating order (A B C, B C A, ...); ratios are medians of per-round ratios.
Target (issue 9): GPPO / dapo <= 1.03.
"""
from __future__ import annotations

import argparse
import logging
import os
import tempfile
import time
from pathlib import Path

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import klear_lib  # noqa: E402, F401  (first: the numerics mode before torch loads)
import torch  # noqa: E402
from datasets import Dataset  # noqa: E402
from transformers import PrinterCallback, TrainerCallback  # noqa: E402
from trl import GRPOConfig, GRPOTrainer  # noqa: E402

from klear_lib.configs import get_config, recipe  # noqa: E402
from klear_lib.models import load_or_build  # noqa: E402
from klear_lib.seeding import stable_seed, torch_generator  # noqa: E402
from klear_lib.training import build_rl_trainer  # noqa: E402

import perf  # noqa: E402  (benchmarks/perf.py, beside this script)

log = logging.getLogger("bench_gppo_step")
BENCH = "gppo_step"
TARGET = 1.03
# GRPOConfig fields the stock trainer copies from the GPPOConfig that gppo_args builds (all that affect a step).
SHARED = ("seed", "data_seed", "report_to", "logging_steps", "epsilon", "epsilon_high", "num_generations",
          "scale_rewards", "beta", "temperature", "top_p", "max_completion_length", "per_device_train_batch_size",
          "gradient_accumulation_steps", "steps_per_generation", "num_iterations", "max_steps", "learning_rate",
          "lr_scheduler_type", "warmup_steps", "weight_decay", "max_grad_norm", "bf16", "use_cpu",
          "gradient_checkpointing", "save_strategy", "shuffle_dataset", "disable_tqdm", "model_init_kwargs")
BENCH_OVERRIDES = dict(learning_rate=0.0, oversample=1, save_strategy="no", shuffle_dataset=False,
                       disable_tqdm=True, logging_steps=1)


def prompt_rows(n: int) -> list[dict]:
    """``n`` verl-schema math rows whose prompts all have the same length (identical batches in both)."""
    return [{"data_source": "bench", "ability": "math", "prompt": [{"role": "user", "content": f"{10 + i}*{37 + i}="}],
             "reward_model": {"ground_truth": str((10 + i) * (37 + i)), "style": "rule"},
             "extra_info": {"id": f"bench-{i}", "split": "bench", "tier": 1}} for i in range(n)]


def build_trainers(rl_cfg, model_path: str, tmp: Path) -> dict:
    """Stock dapo, GPPO (recipe loss) and GPPO with α = 0; same rows, reward function and step shape."""
    rows = prompt_rows(4 * rl_cfg.prompts_per_step)
    gppo = build_rl_trainer(rl_cfg, model_path, rows, "math", tmp / "gppo", **BENCH_OVERRIDES)
    nosft = build_rl_trainer(rl_cfg, model_path, rows, "math", tmp / "gppo_nosft", sft_alpha=0.0, **BENCH_OVERRIDES)
    shared = {k: getattr(gppo.args, k) for k in SHARED}
    for trainer in (gppo, nosft):
        trainer.remove_callback(PrinterCallback)
    stock_args = GRPOConfig(output_dir=str(tmp / "dapo"), loss_type="dapo", **shared)
    stock = GRPOTrainer(model_path, reward_funcs=gppo.reward_funcs, args=stock_args,
                        train_dataset=Dataset.from_list(rows), processing_class=gppo.processing_class)
    stock.remove_callback(PrinterCallback)
    return {"trl_dapo": stock, "gppo": gppo, "gppo_nosft": nosft}


# ---- loss + backward on one prepared micro-batch ------------------------------------------------------------
def micro_batch(trainer, t: int, prompt_len: int = 24) -> dict:
    """A prepared GRPO micro-batch ``(B, P)`` + ``(B, T)``: ragged lengths, off-policy old log-probs."""
    gen = torch_generator(0, "bench-gppo-batch")
    b, vocab = trainer.args.per_device_train_batch_size, trainer.model.config.vocab_size
    lengths = torch.randint(t // 4, t + 1, (b,), generator=gen)
    completion_mask = (torch.arange(t).unsqueeze(0) < lengths.unsqueeze(1)).long()
    batch = {"prompt_ids": torch.randint(4, vocab, (b, prompt_len), generator=gen),
             "prompt_mask": torch.ones(b, prompt_len, dtype=torch.long),
             "completion_ids": torch.randint(4, vocab, (b, t), generator=gen), "completion_mask": completion_mask,
             "advantages": torch.randn(b, generator=gen),
             "is_correct": (torch.rand(b, generator=gen) < 0.5).float(),
             "num_items_in_batch": completion_mask.sum() * trainer.args.steps_per_generation}
    with torch.no_grad():
        logps = current_logps(trainer, batch)
    batch["old_per_token_logps"] = logps + 0.3 * torch.randn(logps.shape, generator=gen)
    return batch


def current_logps(trainer, batch) -> torch.Tensor:
    """Per-token log-probs ``(B, T)`` of the completion under the trainer's model (TRL's helper)."""
    ids = torch.cat([batch["prompt_ids"], batch["completion_ids"]], dim=1)
    mask = torch.cat([batch["prompt_mask"], batch["completion_mask"]], dim=1)
    logps, _, _ = trainer._get_per_token_logps_and_entropies(trainer.model, ids, mask, batch["completion_ids"].size(1))
    return logps


def loss_backward(trainer, batch) -> None:
    """One ``compute_loss`` + ``backward`` (the part of a micro-step where the losses differ)."""
    trainer.model.zero_grad(set_to_none=True)
    trainer.compute_loss(trainer.model, batch).backward()


def prepare_for_loss(trainers: dict) -> None:
    """Training mode and one accumulation step, as inside ``Trainer.training_step``."""
    for trainer in trainers.values():
        trainer.model.train()
        trainer.current_gradient_accumulation_steps = 1


# ---- one whole RL step --------------------------------------------------------------------------------------
class StepClock(TrainerCallback):
    """Seconds from the first ``on_step_begin`` to ``on_train_end`` of one ``train()`` call, and its rollout tokens."""

    def __init__(self):
        self.start, self.seconds, self.tokens = None, [], []

    def on_log(self, args, state, control, logs=None, **kwargs):
        if logs and "num_tokens" in logs:
            self.tokens.append(logs["num_tokens"])

    def on_step_begin(self, args, state, control, **kwargs):
        if self.start is None:
            self.start = time.perf_counter()

    def on_train_end(self, args, state, control, **kwargs):
        self.seconds.append(time.perf_counter() - self.start)
        self.start = None


def rl_step_fn(trainer, rl_cfg, clock: StepClock, counter: list):
    """A callable training one RL step, with the global RNG reseeded per round (same rollouts in every variant)."""
    trainer.args.max_steps = rl_cfg.updates_per_step
    trainer.add_callback(clock)

    def step():
        torch.manual_seed(stable_seed(0, "bench-rl-step", counter[0] // counter[1]))
        counter[0] += 1
        trainer.train()
    return step


# ---- report -------------------------------------------------------------------------------------------------
def rows_for(part: str, unit: str, scale: float, times: dict, shape: str) -> list[dict]:
    """Median/IQR rows per variant and GPPO / dapo ratio rows for one measurement ``part``."""
    rows = []
    for name, xs in times.items():
        stats = summary_scaled(xs, scale)
        rows.append(perf.row(BENCH, f"{part}.{name}", stats["median"], unit, notes=f"{perf.iqr_note(stats)}; {shape}"))
    for name in [n for n in times if n != "trl_dapo"]:
        stats = perf.summary(perf.paired_ratios(times, name, "trl_dapo"))
        verdict = "met" if stats["median"] <= TARGET else "NOT met"
        rows.append(perf.row(BENCH, f"{part}.ratio.{name}", stats["median"], "x", "trl_dapo",
                             f"{perf.iqr_note(stats)}; target <= {TARGET}: {verdict}"))
    return rows


def summary_scaled(xs, scale: float) -> dict:
    return perf.summary([x * scale for x in xs])


def print_table(rows: list[dict], header: str) -> None:
    print(header)
    for r in rows:
        ratio = f" (vs {r['ratio_to']})" if r["ratio_to"] else ""
        print(f"  {r['metric']:<34} {r['value']:>10.4g} {r['unit']:<3}{ratio}  {r['notes']}")


def run(args) -> list[dict]:
    rl_cfg = get_config("rl_math", "tiny", max_completion_length=args.step_completion_length)
    model_path = load_or_build(recipe("tiny"))
    torch.set_num_threads(args.threads)
    load_before = perf.loadavg()
    with tempfile.TemporaryDirectory(prefix="bench-gppo-") as tmp:
        trainers = build_trainers(rl_cfg, model_path, Path(tmp))
        prepare_for_loss(trainers)
        batch = micro_batch(trainers["trl_dapo"], args.completion_length)
        shape = (f"micro-batch {len(batch['prompt_ids'])} x ({batch['prompt_ids'].size(1)}+"
                 f"{args.completion_length}) tokens, {int(batch['completion_mask'].sum())} completion tokens")
        loss_times = perf.interleave({n: (lambda t=t: loss_backward(t, batch)) for n, t in trainers.items()},
                                     args.reps, args.warmup)
        clipped = trainers["gppo"]._metrics["train"]["gppo/clip_frac"][-1]
        rows = rows_for("loss_backward", "ms", 1e3, loss_times, f"{shape}, {clipped:.0%} of them clipped")
        if args.step_reps:
            step_times = whole_steps(trainers, rl_cfg, args)
            step_shape = (f"1 RL step = {rl_cfg.prompts_per_step} prompts x {rl_cfg.num_generations} rollouts, "
                          f"<= {rl_cfg.max_completion_length} tokens, {rl_cfg.updates_per_step} updates")
            rows += rows_for("rl_step", "s", 1.0, step_times, step_shape)
    note = f"CPU fp32, {torch.get_num_threads()} torch thread(s), {perf.load_note(load_before, perf.loadavg())}"
    rows = [{**r, "notes": f"{r['notes']}; {note}"} for r in rows]
    print_table(rows, f"GPPOTrainer vs TRL GRPOTrainer(loss_type='dapo'), tiny model ({note})")
    return rows


def whole_steps(trainers: dict, rl_cfg, args) -> dict:
    """Seconds per RL step, interleaved; each fn's time is read from its StepClock (train() setup excluded)."""
    clocks = {name: StepClock() for name in trainers}
    counter = [0, len(trainers)]
    fns = {name: rl_step_fn(t, rl_cfg, clocks[name], counter) for name, t in trainers.items()}
    perf.interleave(fns, args.step_reps, args.warmup)
    tokens = {name: clock.tokens for name, clock in clocks.items()}
    same = all(t == tokens["trl_dapo"] for t in tokens.values())
    log.info("rollout tokens per round %s: %s", "identical in every variant" if same else "DIFFER", tokens)
    return {name: clock.seconds[args.warmup:] for name, clock in clocks.items()}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=20, help="timed rounds of loss+backward")
    parser.add_argument("--step-reps", type=int, default=10, help="timed rounds of whole RL steps (0: skip)")
    parser.add_argument("--step-completion-length", type=int, default=64, help="completion cap in whole steps")
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--completion-length", type=int, default=get_config("rl_math", "tiny").max_completion_length)
    parser.add_argument("--threads", type=int, default=1, help="torch threads (see module doc)")
    parser.add_argument("--out", default=str(perf.PERF_CSV))
    parser.add_argument("--no-record", action="store_true", help="print only; leave results/perf.csv alone")
    args = parser.parse_args(argv)
    rows = run(args)
    if not args.no_record:
        log.info("recorded in %s", perf.record(rows, perf.machine(), args.out))


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    main()
