"""What the policy losses share: the ratio, the clipping cases, the dual clip, the diagnostics, the SFT loss in RL.

The losses themselves are the modules beside this one (``gppo``: Eq. 11 and general-β Eq. 17; ``clip_higher``:
PPO/DAPO, Eq. 7; ``cispo``), each in the registry (``klear_lib.losses.registry``). Every function takes per-token
log-probabilities ``logp`` (with gradient) and ``old_logp`` (of the sampling policy), both ``(B, T)``, advantages
``(B,)``, ``(B, 1)`` or ``(B, T)``, and a ``(B, T)`` 0/1 ``mask``. The per-token losses are the *negated* per-token
objectives, so a trainer applies its own normaliser (``masked_mean``: the token-mean, docs/paper.md §1.3).

Gradient of every loss w.r.t. ``logp`` is ``-F * A`` per token, with F from docs/paper.md §1.4:

============================  ==========  ===================  ======================
case (δ = π/π_old)            clip-higher  GPPO                 CISPO
============================  ==========  ===================  ======================
A>0, δ > 1+ε_h                0           β_high·(1+ε_h)       1+ε_h
A>0, δ < 1-ε_l                δ           δ                    1-ε_l
A<0, δ < 1-ε_l                0           β_low·(1-ε_l)        1-ε_l
A<0, δ > 1+ε_h                δ           δ                    1+ε_h
otherwise                     δ           δ                    δ
============================  ==========  ===================  ======================

With the optional dual clip c (official scripts, not the paper), clip-higher and GPPO give F = 0 for A<0, δ > c.

Beyond the ±20 clamp on log δ (upstream verl's; the Klear fork has none) the clipped cases keep the table's F: their
gradient comes from ``unit_with_grad``, which does not go through the clamp. Only the unclipped F = δ is cut to 0
there, on purpose: for A>0, δ < e^-20 the paper's F is below 2.1e-9; for A<0, δ > e^20 it is above 4.8e8, a gradient
that verl's always-on dual clip zeroes too and that no trust region should pass on.
"""
from __future__ import annotations

import torch

from klear_lib.configs.rl import RLConfig
from klear_lib.losses.registry import get_loss

# Upstream verl clamps the log-ratio to ±20 before exp; the Klear fork does not (docs/paper.md §8). A guard against
# overflow, kept deliberately: past it only the unclipped F = δ differs from the paper (module docstring).
LOG_RATIO_CLAMP = 20.0


def adv2d(advantages: torch.Tensor) -> torch.Tensor:
    """Advantages ``(B,)`` -> ``(B, 1)``; ``(B, 1)`` and ``(B, T)`` pass through."""
    return advantages.unsqueeze(1) if advantages.dim() == 1 else advantages


def importance_ratio(logp: torch.Tensor, old_logp: torch.Tensor) -> torch.Tensor:
    """δ = exp(logp - old_logp), ``(B, T)``, with verl's ±20 clamp on the log-ratio."""
    return torch.exp(torch.clamp(logp - old_logp, -LOG_RATIO_CLAMP, LOG_RATIO_CLAMP))


def unit_with_grad(logp: torch.Tensor, old_logp: torch.Tensor) -> torch.Tensor:
    """1 in value with gradient ∇log π, ``(B, T)``: the δ/sg(δ) of Eq. 11, also past the clamp.

    Inside the ±20 clamp it is δ/sg(δ), as the official code writes it (so runs there are bit for bit what they
    were); past it the clamped δ is a constant and would give no gradient, so exp(ℓ - sg(ℓ)) takes over, exactly 1
    for any finite ℓ and free of overflow. A log-prob of -inf (a token the policy cannot emit, e.g. padding under a
    mask) gives 1 with no gradient instead of NaN, so it cannot poison a masked sum.
    """
    logp = logp.masked_fill(~torch.isfinite(logp.detach()), 0.0)  # unchanged wherever δ is inside the clamp
    inside = (logp - old_logp).detach().abs() < LOG_RATIO_CLAMP  # False for NaN too
    ratio = importance_ratio(logp, torch.where(inside, old_logp, logp.detach()))  # 1 (and unused) past the clamp
    return torch.where(inside, ratio / ratio.detach(), torch.exp(logp - logp.detach()))


def clip_cases(ratio: torch.Tensor, adv: torch.Tensor, clip_low: float, clip_high: float) -> dict:
    """Boolean ``(B, T)`` masks of the four clipping cases of docs/paper.md §1.4 (``adv`` broadcastable)."""
    high, low = ratio > 1 + clip_high, ratio < 1 - clip_low
    pos, neg = adv > 0, adv < 0
    return {
        "adv_pos_ratio_high": pos & high,  # clipped by PPO; GPPO keeps β_high·(1+ε_h)
        "adv_pos_ratio_low": pos & low,    # PPO's min keeps δ; CISPO clips to 1-ε_l
        "adv_neg_ratio_low": neg & low,    # clipped by PPO; GPPO keeps β_low·(1-ε_l)
        "adv_neg_ratio_high": neg & high,  # PPO's min keeps δ; CISPO clips to 1+ε_h
    }


def dual_clip_loss(per_token: torch.Tensor, adv: torch.Tensor, dual_clip: float | None) -> torch.Tensor:
    """verl's dual clip: for A<0 the loss is at most -A·c, so tokens with δ > c get no gradient."""
    if dual_clip is None:
        return per_token
    if dual_clip <= 1.0:
        raise ValueError(f"dual_clip must be > 1 (got {dual_clip})")
    return torch.where(adv < 0, torch.minimum(-adv * dual_clip, per_token), per_token)


def clip_coefficients(ratio, adv, *, clip_low, clip_high, dual_clip, low_f, high_f) -> torch.Tensor:
    """F ``(B, T)`` of a PPO-style clip, detached: ``low_f`` on clipped-low (A<0) tokens, ``high_f`` on clipped-high
    (A>0) ones, δ elsewhere, 0 for A<0 past the dual clip."""
    ratio, adv = ratio.detach(), adv2d(adv).detach()
    cases = clip_cases(ratio, adv, clip_low, clip_high)
    coef = torch.where(cases["adv_neg_ratio_low"], torch.full_like(ratio, low_f), ratio * torch.ones_like(adv))
    coef = torch.where(cases["adv_pos_ratio_high"], torch.full_like(ratio, high_f), coef)
    if dual_clip is not None:
        coef = torch.where((adv < 0) & (ratio > dual_clip), torch.zeros_like(coef), coef)
    return coef


def masked_mean(values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Σ values·mask / max(Σ mask, 1): the token-mean of Eq. 7/11 over one batch; 0 for an empty mask.

    Masked-out positions are dropped before the product, so a NaN or inf there (padding) cannot leak in as 0·NaN.
    """
    mask = mask.to(values.dtype)
    return torch.where(mask > 0, values, 0.0).mul(mask).sum() / mask.sum().clamp(min=1.0)


@torch.no_grad()
def clip_diagnostics(loss_type: str, logp, old_logp, advantages, mask, **hyper) -> dict[str, float]:
    """Token fractions of the four cases, the clipped fraction, the share of |F·A| on clipped tokens, the largest
    |F·A| on clipped tokens and on the rest, and the norms of dL/dlog π on clipped tokens and on all.

    ``loss_type``: a registered loss, whose ``coefficients`` give F. "Clipped" means the loss's clip is active (F
    differs from δ): for GPPO/clip-higher the cases ``adv_pos_ratio_high`` and ``adv_neg_ratio_low`` (and
    dual-clipped tokens), for CISPO all four.
    ``clipped_grad_share`` = Σ_clipped |F·A| / Σ_all |F·A| (0 for clip-higher by construction).
    """
    adv = adv2d(advantages).detach()
    ratio = importance_ratio(logp.detach(), old_logp)
    mask = mask.to(ratio.dtype)
    clip_low, clip_high = hyper.get("clip_low", RLConfig.clip_low), hyper.get("clip_high", RLConfig.clip_high)
    cases = clip_cases(ratio, adv, clip_low, clip_high)
    out = {f"frac_{name}": masked_mean(m.to(ratio.dtype), mask).item() for name, m in cases.items()}
    coef = get_loss(loss_type).coefficients(ratio, adv, **hyper)
    clipped = (coef != ratio) & (mask > 0) & (adv != 0)
    weight = (coef * adv).abs() * mask
    out["clip_frac"] = masked_mean(clipped.to(ratio.dtype), mask).item()
    out["clipped_grad_share"] = ((weight * clipped).sum() / weight.sum().clamp(min=1e-12)).item()
    # DGPO's argument (docs/paper.md §8) is about the gradient that clipped tokens keep: its largest per-token size
    # beside the rest's, and its norm, all w.r.t. log π (dL/dlog π = -F·A / Σ mask; a parameter-space norm would
    # need a backward pass of its own)
    rest = (mask > 0) & ~clipped
    out["max_fa_clipped"] = (weight * clipped).max().item() if clipped.any() else 0.0
    out["max_fa_rest"] = (weight * rest).max().item() if rest.any() else 0.0
    norm = mask.sum().clamp(min=1.0)
    out["clipped_logp_grad_norm"] = ((weight * clipped).pow(2).sum().sqrt() / norm).item()
    out["logp_grad_norm"] = (weight.pow(2).sum().sqrt() / norm).item()
    out["ratio_mean"] = masked_mean(ratio, mask).item()
    return out


def sft_nll_loss(logp: torch.Tensor, mask: torch.Tensor, is_correct: torch.Tensor) -> torch.Tensor:
    """Token-mean NLL over correct rollouts (docs/paper.md §2.4, L_LM of Eq. 13-14); 0 when none is correct.

    ``logp``/``mask`` ``(B, T)``, ``is_correct`` ``(B,)`` bool or 0/1. NOTE(paper): the official code takes the
    token-mean within each micro-batch (not a global Σ_{j∈Φ} T_j), as here.
    """
    weights = mask.to(logp.dtype) * is_correct.to(logp.dtype).reshape(-1, 1)
    return -(logp * weights).sum() / weights.sum().clamp(min=1.0)
