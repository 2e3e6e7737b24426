"""Training loops on TRL: ``GPPOTrainer`` (RL with GPPO and the paper's baselines) and its run record."""
from klear_lib.versions import require

# Every trainer here subclasses TRL's and overrides private methods: check TRL's version before importing them, so
# an untested TRL fails with one line naming it rather than deep inside TRL's own imports.
require("trl")

from klear_lib.training.gppo_trainer import (GPPOConfig, GPPOTrainer, build_rl_trainer, gppo_args,  # noqa: E402
                                             select_groups)
from klear_lib.training.run_record import RECORD_COLUMNS, SFT_KEYS, RunRecord  # noqa: E402

__all__ = ["GPPOConfig", "GPPOTrainer", "build_rl_trainer", "gppo_args", "select_groups", "RunRecord", "RECORD_COLUMNS",
           "SFT_KEYS"]
