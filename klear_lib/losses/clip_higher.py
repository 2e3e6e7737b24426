"""Clip-higher PPO (GRPO with DAPO's asymmetric clip, Eq. 5-7), registered as ``clip_higher``: the baseline."""
from __future__ import annotations

from functools import partial

import torch

from klear_lib.configs.rl import RLConfig as RL
from klear_lib.losses.policy import adv2d, clip_coefficients, dual_clip_loss, importance_ratio
from klear_lib.losses.registry import register


# F: 0 on both clipped cases, δ elsewhere
@register("clip_higher", hyper=("clip_low", "clip_high", "dual_clip"), off_policy_only=False,
          coefficients=partial(clip_coefficients, clip_low=RL.clip_low, clip_high=RL.clip_high, dual_clip=RL.dual_clip,
                               low_f=0.0, high_f=0.0))
def ppo_clip_per_token(logp, old_logp, advantages, *, clip_low=RL.clip_low, clip_high=RL.clip_high,
                       dual_clip=RL.dual_clip) -> torch.Tensor:
    """Clip-higher PPO/GRPO/DAPO per-token loss ``(B, T)`` = -min(δA, clip(δ, 1-ε_l, 1+ε_h)·A) (Eq. 5-7)."""
    adv = adv2d(advantages)
    ratio = importance_ratio(logp, old_logp)
    per_token = -torch.minimum(ratio * adv, torch.clamp(ratio, 1 - clip_low, 1 + clip_high) * adv)
    return dual_clip_loss(per_token, adv, dual_clip)
