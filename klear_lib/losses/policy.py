"""Policy-gradient losses of the paper: GPPO (Eq. 11, general-β Eq. 17), clip-higher PPO/DAPO (Eq. 7), CISPO.

Every function takes per-token log-probabilities ``logp`` (with gradient) and ``old_logp`` (of the sampling
policy), both ``(B, T)``, advantages ``(B,)``, ``(B, 1)`` or ``(B, T)``, and a ``(B, T)`` 0/1 ``mask``.
The per-token losses are the *negated* per-token objectives, so a trainer may apply its own normaliser;
``*_loss`` returns the token-mean over ``mask`` (docs/paper.md §1.3, token-level normalisation) and diagnostics.

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

# Upstream verl clamps the log-ratio to ±20 before exp; the Klear fork does not (docs/paper.md §8). A guard against
# overflow, kept deliberately: past it only the unclipped F = δ differs from the paper (module docstring).
LOG_RATIO_CLAMP = 20.0


def _adv2d(advantages: torch.Tensor) -> torch.Tensor:
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


def _dual_clip(per_token: torch.Tensor, adv: torch.Tensor, dual_clip: float | None) -> torch.Tensor:
    """verl's dual clip: for A<0 the loss is at most -A·c, so tokens with δ > c get no gradient."""
    if dual_clip is None:
        return per_token
    if dual_clip <= 1.0:
        raise ValueError(f"dual_clip must be > 1 (got {dual_clip})")
    return torch.where(adv < 0, torch.minimum(-adv * dual_clip, per_token), per_token)


def gppo_per_token(logp, old_logp, advantages, *, clip_low=0.2, clip_high=0.28, dual_clip=None,
                   beta_low=1.0, beta_high=1.0, only_high=False) -> torch.Tensor:
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
    adv = _adv2d(advantages)
    ratio = importance_ratio(logp, old_logp)
    grad_keeper = unit_with_grad(logp, old_logp)  # value 1, gradient ∇log π, even past the clamp
    cases = clip_cases(ratio, adv, clip_low, clip_high)
    low = (1 - clip_low) * adv if only_high else beta_low * (1 - clip_low) * grad_keeper * adv
    objective = torch.where(cases["adv_neg_ratio_low"], low, ratio * adv)
    objective = torch.where(cases["adv_pos_ratio_high"], beta_high * (1 + clip_high) * grad_keeper * adv, objective)
    return _dual_clip(-objective, adv, dual_clip)


def ppo_clip_per_token(logp, old_logp, advantages, *, clip_low=0.2, clip_high=0.28, dual_clip=None):
    """Clip-higher PPO/GRPO/DAPO per-token loss ``(B, T)`` = -min(δA, clip(δ, 1-ε_l, 1+ε_h)·A) (Eq. 5-7)."""
    adv = _adv2d(advantages)
    ratio = importance_ratio(logp, old_logp)
    per_token = -torch.minimum(ratio * adv, torch.clamp(ratio, 1 - clip_low, 1 + clip_high) * adv)
    return _dual_clip(per_token, adv, dual_clip)


def cispo_per_token(logp, old_logp, advantages, *, clip_low=0.2, clip_high=0.28) -> torch.Tensor:
    """CISPO per-token loss ``(B, T)`` with gradient -sg(clip(δ, 1-ε_l, 1+ε_h))·A·∇log π (App. A.1, Eq. 15-16).

    The paper writes the surrogate as sg(clip(δ))·A·log π; we use sg(clip(δ))·A·δ/sg(δ), which has the same
    gradient and a readable value (clip(δ)·A, equal to the other losses on-policy). Both sides clip relative to
    1, unlike TRL's ``loss_type="cispo"`` which caps δ at an absolute ``epsilon_high`` (docs/stack.md §1.6).
    """
    adv = _adv2d(advantages)
    ratio = importance_ratio(logp, old_logp)
    weight = torch.clamp(ratio, 1 - clip_low, 1 + clip_high).detach()
    return -weight * unit_with_grad(logp, old_logp) * adv


def gradient_coefficients(loss_type: str, ratio, adv, *, clip_low=0.2, clip_high=0.28, dual_clip=None,
                          beta_low=1.0, beta_high=1.0, only_high=False) -> torch.Tensor:
    """Analytic F ``(B, T)`` of docs/paper.md §1.4 (dL/dlogπ = -F·A), detached; used for diagnostics."""
    ratio, adv = ratio.detach(), _adv2d(adv).detach()
    cases = clip_cases(ratio, adv, clip_low, clip_high)
    if loss_type == "cispo":
        return torch.clamp(ratio, 1 - clip_low, 1 + clip_high) * torch.ones_like(adv)
    low_f, high_f = (beta_low * (1 - clip_low), beta_high * (1 + clip_high)) if loss_type == "gppo" else (0.0, 0.0)
    low_f = 0.0 if only_high else low_f
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

    "Clipped" means the loss's clip is active (F differs from δ): for GPPO/clip-higher the cases
    ``adv_pos_ratio_high`` and ``adv_neg_ratio_low`` (and dual-clipped tokens), for CISPO all four.
    ``clipped_grad_share`` = Σ_clipped |F·A| / Σ_all |F·A| (0 for clip-higher by construction).
    """
    adv = _adv2d(advantages).detach()
    ratio = importance_ratio(logp.detach(), old_logp)
    mask = mask.to(ratio.dtype)
    clip_low, clip_high = hyper.get("clip_low", 0.2), hyper.get("clip_high", 0.28)
    cases = clip_cases(ratio, adv, clip_low, clip_high)
    out = {f"frac_{name}": masked_mean(m.to(ratio.dtype), mask).item() for name, m in cases.items()}
    coef = gradient_coefficients(loss_type, ratio, adv, **hyper)
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


def _with_diagnostics(loss_type, per_token, logp, old_logp, advantages, mask, hyper):
    return masked_mean(per_token, mask), clip_diagnostics(loss_type, logp, old_logp, advantages, mask, **hyper)


def gppo_loss(logp, old_logp, advantages, mask, *, clip_low=0.2, clip_high=0.28, dual_clip=None,
              beta_low=1.0, beta_high=1.0, only_high=False):
    """GPPO (Eq. 11 / Eq. 17): ``(token-mean loss, diagnostics)``; see ``gppo_per_token``."""
    hyper = dict(clip_low=clip_low, clip_high=clip_high, dual_clip=dual_clip, beta_low=beta_low, beta_high=beta_high,
                 only_high=only_high)
    per_token = gppo_per_token(logp, old_logp, advantages, **hyper)
    return _with_diagnostics("gppo", per_token, logp, old_logp, advantages, mask, hyper)


def ppo_clip_loss(logp, old_logp, advantages, mask, *, clip_low=0.2, clip_high=0.28, dual_clip=None):
    """Token-level GRPO with DAPO clip-higher (Eq. 7): ``(token-mean loss, diagnostics)``."""
    hyper = dict(clip_low=clip_low, clip_high=clip_high, dual_clip=dual_clip)
    per_token = ppo_clip_per_token(logp, old_logp, advantages, **hyper)
    return _with_diagnostics("clip_higher", per_token, logp, old_logp, advantages, mask, hyper)


def cispo_loss(logp, old_logp, advantages, mask, *, clip_low=0.2, clip_high=0.28):
    """CISPO as the paper's appendix defines it (Eq. 15): ``(token-mean loss, diagnostics)``."""
    hyper = dict(clip_low=clip_low, clip_high=clip_high)
    per_token = cispo_per_token(logp, old_logp, advantages, **hyper)
    return _with_diagnostics("cispo", per_token, logp, old_logp, advantages, mask, hyper)


def sft_nll_loss(logp: torch.Tensor, mask: torch.Tensor, is_correct: torch.Tensor) -> torch.Tensor:
    """Token-mean NLL over correct rollouts (docs/paper.md §2.4, L_LM of Eq. 13-14); 0 when none is correct.

    ``logp``/``mask`` ``(B, T)``, ``is_correct`` ``(B,)`` bool or 0/1. NOTE(paper): the official code takes the
    token-mean within each micro-batch (not a global Σ_{j∈Φ} T_j), as here.
    """
    weights = mask.to(logp.dtype) * is_correct.to(logp.dtype).reshape(-1, 1)
    return -(logp * weights).sum() / weights.sum().clamp(min=1.0)


PER_TOKEN = {"gppo": gppo_per_token, "clip_higher": ppo_clip_per_token, "cispo": cispo_per_token}
LOSSES = {"gppo": gppo_loss, "clip_higher": ppo_clip_loss, "cispo": cispo_loss}
