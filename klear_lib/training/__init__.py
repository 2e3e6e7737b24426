"""Training loops on TRL: ``GPPOTrainer`` (RL with GPPO and the paper's baselines) and its run record."""
from klear_lib.versions import require

# Every trainer here subclasses TRL's and overrides private methods: check TRL's version before importing them, so
# an untested TRL fails with one line naming it rather than deep inside TRL's own imports.
require("trl")

from klear_lib.training.gppo_trainer import (  # noqa: E402
    GPPOConfig,
    GPPOTrainer,
    build_rl_trainer,
    gppo_args,
    select_groups,
)
from klear_lib.training.run_record import RECORD_COLUMNS, SFT_KEYS, RunRecord  # noqa: E402


def __getattr__(name: str):
    """``make_reward_func`` on first use: the kit's rewards import math-verify and the sandbox, which GPPOTrainer in
    someone else's script does not need (pyproject's ``trl`` extra)."""
    if name == "make_reward_func":
        from klear_lib.training.rewards import make_reward_func  # lazy: math-verify, only for the kit's rewards

        return make_reward_func
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["GPPOConfig", "GPPOTrainer", "build_rl_trainer", "gppo_args", "select_groups", "make_reward_func",
           "RunRecord", "RECORD_COLUMNS", "SFT_KEYS"]
