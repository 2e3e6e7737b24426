"""Two per-step costs of the trainers' defaults that change no result, and what replaces them.

* **The progress display.** In a notebook, transformers picks ``NotebookProgressCallback``, which at every logged
  step (every step here) redraws an HTML table of all steps logged so far: O(n²) rows over a run. In a script,
  ``ProgressCallback`` prints each step's logs. The run record (``RunRecord``) keeps those logs, so both give way to
  a plain tqdm bar (``StepBar``).
* **NaN-filling new memory.** ``full_determinism`` (the tiny SFT) turns on torch's deterministic algorithms, which
  by default also fill every ``torch.empty`` tensor with NaN. TRL's fused log-prob kernel allocates a tile of
  4096 x 32768 floats per forward call whatever the vocabulary, so filling it cost more than half of a tiny SFT step
  (30 steps: 53.9 s with the fill, 24.1 s without, identical weights). The fill guards against reading memory never
  written, which no code here does (a read would have put NaN into the loss); ``NoNaNFill`` turns it off for the
  training loop and the deterministic algorithms stay on.
"""
from __future__ import annotations

import torch
from transformers import ProgressCallback, TrainerCallback

try:  # transformers' notebook bar imports IPython, which an install without the notebooks extra lacks
    from transformers.utils.notebook import NotebookProgressCallback
except ImportError:
    NotebookProgressCallback = None


class StepBar(ProgressCallback):
    """transformers' tqdm step bar without the per-step print of the logs."""

    def on_log(self, args, state, control, logs=None, **kwargs):
        """Nothing: the logs go to the run record, not to the output."""


class NoNaNFill(TrainerCallback):
    """No NaN-filling of new tensors while training (``train`` turns deterministic algorithms on just before
    ``on_train_begin``); the previous setting comes back at the end."""

    def on_train_begin(self, args, state, control, **kwargs):
        self.before = torch.utils.deterministic.fill_uninitialized_memory
        torch.utils.deterministic.fill_uninitialized_memory = False

    def on_train_end(self, args, state, control, **kwargs):
        torch.utils.deterministic.fill_uninitialized_memory = getattr(self, "before", True)


def lean(trainer):
    """``trainer`` with ``StepBar`` for its default progress callback and, under ``full_determinism``,
    ``NoNaNFill``."""
    for default in (NotebookProgressCallback, ProgressCallback):
        if default is not None and trainer.pop_callback(default) is not None:
            trainer.add_callback(StepBar)
            break
    if trainer.args.full_determinism:
        trainer.add_callback(NoNaNFill)
    return trainer
