"""Evaluation: benchmark specs, the avg@k harness and its metrics (generation itself: ``klear_lib.generation``)."""
from klear_lib.evaluation.benchmarks import SPECS, BenchmarkSpec, get_spec, load_rows
from klear_lib.evaluation.checkpoints import (available_stages, checkpoint_label, register_stage_checkpoint,
                                               stage_checkpoint)
from klear_lib.evaluation.harness import evaluate, extraction_table, seed_gains, stage_gains, summarize
from klear_lib.evaluation.metrics import bootstrap_ci, paired_gain, pass_at_k, standard_error

__all__ = ["SPECS", "BenchmarkSpec", "get_spec", "load_rows", "evaluate", "extraction_table", "summarize",
           "stage_gains", "seed_gains", "pass_at_k", "paired_gain", "bootstrap_ci", "standard_error", "stage_checkpoint",
           "register_stage_checkpoint", "available_stages", "checkpoint_label"]
