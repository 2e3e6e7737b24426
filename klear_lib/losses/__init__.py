"""Pure loss functions: GPPO and the paper's baselines (clip-higher PPO, CISPO), and the SFT loss in RL."""
from klear_lib.losses.policy import (
    LOSSES,
    PER_TOKEN,
    clip_diagnostics,
    cispo_loss,
    cispo_per_token,
    gppo_loss,
    gppo_per_token,
    gradient_coefficients,
    ppo_clip_loss,
    ppo_clip_per_token,
    sft_nll_loss,
)

__all__ = ["gppo_loss", "ppo_clip_loss", "cispo_loss", "gppo_per_token", "ppo_clip_per_token", "cispo_per_token",
           "sft_nll_loss", "clip_diagnostics", "gradient_coefficients", "LOSSES", "PER_TOKEN"]
