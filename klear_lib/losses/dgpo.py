"""DGPO (arXiv 2603.14389, "From log π to π"), registered as ``dgpo``: the loss of the study that reports GPPO below
GRPO, so that the dispute can be run on one footing (docs/paper.md §8).

Where GPPO keeps a constant F on clipped tokens, DGPO lets it decay with the token's probability: on a clipped-low
token (A<0, δ < 1-ε_l) F = δ^(n+1)/(1-ε_l)^n, a gradient weight on ∇π that falls as π^n; on a clipped-high token
(A>0, δ > 1+ε_h) F = (1+ε_h)^(1/m)·δ^((m-1)/m), a weight on ∇π that falls as π^(-1/m). Both meet δ at the clip
bound, so F is continuous; every other token keeps δ as in PPO. This is the authors' verl code (``ratio_mode=dgpo``
in ``compute_policy_loss``, github.com/VenomRose-Juri/DGPO-RL), whose scripts set n = 1, m = 2 and no dual clip.
"""
from __future__ import annotations

import torch

from klear_lib.configs.rl import RLConfig as RL
from klear_lib.losses.policy import adv2d, clip_cases, importance_ratio, unit_with_grad
from klear_lib.losses.registry import register


def _clipped_f(ratio, cases, clip_low, clip_high, dgpo_n, dgpo_m) -> torch.Tensor:
    """F on the two clipped cases (δ elsewhere), from a detached ``ratio``."""
    low = ratio.pow(dgpo_n + 1) / (1 - clip_low) ** dgpo_n
    high = (1 + clip_high) ** (1 / dgpo_m) * ratio.pow((dgpo_m - 1) / dgpo_m)
    f = torch.where(cases["adv_neg_ratio_low"], low, ratio)
    return torch.where(cases["adv_pos_ratio_high"], high, f)


def dgpo_coefficients(ratio, adv, *, clip_low=RL.clip_low, clip_high=RL.clip_high, dgpo_n=RL.dgpo_n,
                      dgpo_m=RL.dgpo_m) -> torch.Tensor:
    """F ``(B, T)``, detached: δ^(n+1)/(1-ε_l)^n clipped-low, (1+ε_h)^(1/m)·δ^((m-1)/m) clipped-high, else δ."""
    ratio, adv = ratio.detach(), adv2d(adv).detach()
    cases = clip_cases(ratio, adv, clip_low, clip_high)
    return _clipped_f(ratio * torch.ones_like(adv), cases, clip_low, clip_high, dgpo_n, dgpo_m)


@register("dgpo", coefficients=dgpo_coefficients, hyper=("clip_low", "clip_high", "dgpo_n", "dgpo_m"))
def dgpo_per_token(logp, old_logp, advantages, *, clip_low=RL.clip_low, clip_high=RL.clip_high, dgpo_n=RL.dgpo_n,
                   dgpo_m=RL.dgpo_m) -> torch.Tensor:
    """DGPO per-token loss ``(B, T)`` = -sg(F/δ)·δ·A on clipped tokens, -δ·A elsewhere.

    The value is the authors' (δ·sg(δ)^n/(1-ε_l)^n·A low, δ·sg(δ)^(-1/m)·(1+ε_h)^(1/m)·A high); the clipped
    gradient goes through ``unit_with_grad`` as GPPO's does, so it keeps F past the ±20 log-ratio clamp.
    """
    if dgpo_n < 0 or dgpo_m <= 0:
        raise ValueError(f"DGPO needs dgpo_n >= 0 and dgpo_m > 0 (got n={dgpo_n}, m={dgpo_m})")
    adv = adv2d(advantages)
    ratio = importance_ratio(logp, old_logp)
    cases = clip_cases(ratio, adv, clip_low, clip_high)
    clipped = cases["adv_neg_ratio_low"] | cases["adv_pos_ratio_high"]
    f = _clipped_f(ratio.detach() * torch.ones_like(adv), cases, clip_low, clip_high, dgpo_n, dgpo_m)
    return -torch.where(clipped, f * unit_with_grad(logp, old_logp), ratio) * adv
