"""CISPO as the paper's appendix defines it (App. A.1, Eq. 15-16), registered as ``cispo``."""
from __future__ import annotations

import torch

from klear_lib.configs.rl import RLConfig as RL
from klear_lib.losses.policy import adv2d, importance_ratio, unit_with_grad
from klear_lib.losses.registry import register


def cispo_coefficients(ratio, adv, *, clip_low=RL.clip_low, clip_high=RL.clip_high) -> torch.Tensor:
    """F ``(B, T)`` = clip(δ, 1-ε_l, 1+ε_h) on every token, detached."""
    ratio, adv = ratio.detach(), adv2d(adv).detach()
    return torch.clamp(ratio, 1 - clip_low, 1 + clip_high) * torch.ones_like(adv)


@register("cispo", coefficients=cispo_coefficients, hyper=("clip_low", "clip_high"))
def cispo_per_token(logp, old_logp, advantages, *, clip_low=RL.clip_low, clip_high=RL.clip_high) -> torch.Tensor:
    """CISPO per-token loss ``(B, T)`` with gradient -sg(clip(δ, 1-ε_l, 1+ε_h))·A·∇log π (App. A.1, Eq. 15-16).

    The paper writes the surrogate as sg(clip(δ))·A·log π; we use sg(clip(δ))·A·δ/sg(δ), which has the same
    gradient and a readable value (clip(δ)·A, equal to the other losses on-policy). Both sides clip relative to
    1, unlike TRL's ``loss_type="cispo"`` which caps δ at an absolute ``epsilon_high`` (docs/stack.md §1.6).
    """
    adv = adv2d(advantages)
    ratio = importance_ratio(logp, old_logp)
    weight = torch.clamp(ratio, 1 - clip_low, 1 + clip_high).detach()
    return -weight * unit_with_grad(logp, old_logp) * adv
