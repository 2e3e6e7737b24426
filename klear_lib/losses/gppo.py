"""GPPO (Eq. 11; general β, Eq. 17) and the official code's ``only_high`` variant, registered as ``gppo`` and
``gppo_only_high``."""
from __future__ import annotations

from functools import partial

import torch

from klear_lib.configs.rl import RLConfig as RL
from klear_lib.losses.policy import (adv2d, clip_cases, clip_coefficients, dual_clip_loss, importance_ratio,
                                     unit_with_grad)
from klear_lib.losses.registry import register


def gppo_coefficients(ratio, adv, *, clip_low=RL.clip_low, clip_high=RL.clip_high, dual_clip=RL.dual_clip,
                      beta_low=RL.beta_low, beta_high=RL.beta_high, only_high=False) -> torch.Tensor:
    """F ``(B, T)``: β_low·(1-ε_l) on clipped-low tokens (0 with ``only_high``), β_high·(1+ε_h) on clipped-high."""
    low_f = 0.0 if only_high else beta_low * (1 - clip_low)
    return clip_coefficients(ratio, adv, clip_low=clip_low, clip_high=clip_high, dual_clip=dual_clip, low_f=low_f,
                             high_f=beta_high * (1 + clip_high))


@register("gppo", coefficients=gppo_coefficients,
          hyper=("clip_low", "clip_high", "dual_clip", "beta_low", "beta_high"))
def gppo_per_token(logp, old_logp, advantages, *, clip_low=RL.clip_low, clip_high=RL.clip_high, dual_clip=RL.dual_clip,
                   beta_low=RL.beta_low, beta_high=RL.beta_high, only_high=False) -> torch.Tensor:
    """GPPO per-token loss ``(B, T)`` = -min(δA, clip(δ, (1-ε_l)δ/sg(δ), (1+ε_h)δ/sg(δ))·A) (Eq. 11).

    General form (Appendix A.2, Eq. 17): clipped-low (A<0) tokens use β_low·(1-ε_l)·δ/sg(δ)·A, clipped-high
    (A>0) tokens β_high·(1+ε_h)·δ/sg(δ)·A, others δ·A; β = 1 is exactly Eq. 11. The forward value equals
    clip-higher PPO for β = 1; only the backward pass differs. ``only_high``: the official code's variant that
    keeps the constant PPO bound (1-ε_l)·A on the low side (value as PPO, F = 0 there) and GPPO's on the high side.
    NOTE(paper): the official scripts add verl's dual clip with c = 10 (``dual_clip=10``); the paper has none,
    hence the default ``None``.
    """
    if only_high and beta_low != 1.0:
        raise ValueError(f"only_high keeps no gradient on the low side, so beta_low={beta_low} would be ignored")
    adv = adv2d(advantages)
    ratio = importance_ratio(logp, old_logp)
    grad_keeper = unit_with_grad(logp, old_logp)  # value 1, gradient ∇log π, even past the clamp
    cases = clip_cases(ratio, adv, clip_low, clip_high)
    low = (1 - clip_low) * adv if only_high else beta_low * (1 - clip_low) * grad_keeper * adv
    objective = torch.where(cases["adv_neg_ratio_low"], low, ratio * adv)
    objective = torch.where(cases["adv_pos_ratio_high"], beta_high * (1 + clip_high) * grad_keeper * adv, objective)
    return dual_clip_loss(-objective, adv, dual_clip)


# the official only_high: GPPO's F on clipped-high tokens, PPO's 0 on clipped-low ones (docs/paper.md §1.7)
register("gppo_only_high", coefficients=partial(gppo_coefficients, only_high=True),
         hyper=("clip_low", "clip_high", "dual_clip", "beta_high"))(partial(gppo_per_token, only_high=True))
