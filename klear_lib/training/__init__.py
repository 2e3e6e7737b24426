"""Training loops on TRL: ``GPPOTrainer`` (RL with GPPO and the paper's baselines) and its run record."""
from klear_lib.training.gppo_trainer import (
    GPPOConfig,
    GPPOTrainer,
    build_rl_trainer,
    gppo_args,
    select_groups,
)
from klear_lib.training.rewards import make_reward_func
from klear_lib.training.run_record import RECORD_COLUMNS, SFT_KEYS, RunRecord

__all__ = ["GPPOConfig", "GPPOTrainer", "build_rl_trainer", "gppo_args", "select_groups", "make_reward_func",
           "RunRecord", "RECORD_COLUMNS", "SFT_KEYS"]
