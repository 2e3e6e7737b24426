"""GPPO in verl's policy-loss registry: ``gppo``, ``gppo_general`` and ``gppo_only_high`` (docs/verl.md).

With klear-lib installed, verl imports this module through the ``verl.plugins`` entry point in every process that
imports verl (the driver and each Ray worker), which registers the three losses; ``import
klear_lib.integrations.verl_plugin`` does the same by hand. Each loss has the signature of verl's
``compute_policy_loss_vanilla``, computes its per-token loss with ``klear_lib.losses.policy.gppo_per_token`` (the
function the TRL trainer uses) and aggregates it with verl's own ``agg_loss``, so every ``loss_agg_mode`` means what
verl defines (``token-mean`` is the paper's, docs/paper.md §1.3). Read from verl's actor config as ``vanilla`` reads
them: ``clip_ratio_low``/``clip_ratio_high`` (falling back to ``clip_ratio``) and the dual clip ``clip_ratio_c``,
which verl always applies (the official scripts set 10, docs/paper.md §1.4).

* ``gppo``: Eq. 11 (β = 1), what Klear-Reasoner-8B was trained with.
* ``gppo_general``: Eq. 17 with ``policy_loss.gppo_beta_low`` / ``gppo_beta_high`` (defaults 0.25 and 1.0, the
  official ``gppo_general`` defaults, docs/paper.md §1.5); the keys exist once ``policy_loss._target_`` names
  ``GPPOPolicyLossConfig``.
* ``gppo_only_high``: the official ``only_high`` variant (which fails at the official HEAD, docs/paper.md §1.7):
  GPPO's gradient on clipped-high tokens only, PPO's constant bound on the low side.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass

import torch

from klear_lib.losses.policy import LOG_RATIO_CLAMP, clip_cases, clip_diagnostics, gppo_per_token, ppo_clip_per_token
from klear_lib.versions import UnsupportedVersion, require

log = logging.getLogger(__name__)

try:
    require("verl")
except UnsupportedVersion as err:
    # verl loads entry-point plugins inside its own __init__ and logs their errors at debug level only: say it here,
    # or the user only sees verl's "Unsupported loss mode: gppo" later
    log.warning("GPPO losses not registered with verl: %s", err)
    raise

import verl.utils.torch_functional as verl_F  # noqa: E402
from verl.trainer.ppo.core_algos import agg_loss, register_policy_loss  # noqa: E402
from verl.workers.config import PolicyLossConfig  # noqa: E402

LOSS_MODES = ("gppo", "gppo_general", "gppo_only_high")
GENERAL_BETA_LOW, GENERAL_BETA_HIGH = 0.25, 1.0  # official gppo_general defaults (docs/paper.md §1.5)


@dataclass
class GPPOPolicyLossConfig(PolicyLossConfig):
    """verl's ``PolicyLossConfig`` plus the β of Eq. 17, which only ``gppo_general`` reads."""

    gppo_beta_low: float = GENERAL_BETA_LOW
    gppo_beta_high: float = GENERAL_BETA_HIGH


def loss_hyper(config, mode: str) -> dict:
    """``gppo_per_token``'s keyword arguments for ``mode`` from verl's actor config (``ActorConfig`` or DictConfig)."""
    if mode not in LOSS_MODES:
        raise ValueError(f"loss mode {mode!r} is not one of the plugin's {LOSS_MODES}")
    clip_low = config.clip_ratio_low if config.clip_ratio_low is not None else config.clip_ratio
    clip_high = config.clip_ratio_high if config.clip_ratio_high is not None else config.clip_ratio
    hyper = {"clip_low": clip_low, "clip_high": clip_high, "dual_clip": config.get("clip_ratio_c", 3.0)}
    if mode == "gppo_general":
        hyper["beta_low"] = config.policy_loss.get("gppo_beta_low", GENERAL_BETA_LOW)
        hyper["beta_high"] = config.policy_loss.get("gppo_beta_high", GENERAL_BETA_HIGH)
    elif mode == "gppo_only_high":
        hyper["only_high"] = True
    return hyper


@torch.no_grad()
def _metrics(log_prob, old_log_prob, advantages, mask, hyper) -> dict[str, float]:
    """verl's three PPO metrics, computed as ``vanilla`` computes them, plus GPPO's share of gradient on clipped
    tokens (``klear_lib.losses.policy.clip_diagnostics``)."""
    log_ratio = torch.clamp(log_prob - old_log_prob, -LOG_RATIO_CLAMP, LOG_RATIO_CLAMP)
    cases = clip_cases(log_ratio.exp(), advantages, hyper["clip_low"], hyper["clip_high"])
    clipped = cases["adv_pos_ratio_high"] | cases["adv_neg_ratio_low"]
    ppo = ppo_clip_per_token(log_prob, old_log_prob, advantages, clip_low=hyper["clip_low"],
                             clip_high=hyper["clip_high"])  # before the dual clip, as vanilla's clip_pg_losses1
    dual = (ppo > -advantages * hyper["dual_clip"]) & (advantages < 0)
    share = clip_diagnostics("gppo", log_prob, old_log_prob, advantages, mask, **hyper)["clipped_grad_share"]
    return {"actor/pg_clipfrac": verl_F.masked_mean(clipped.float(), mask).item(),
            "actor/ppo_kl": verl_F.masked_mean(-log_ratio, mask).item(),
            "actor/pg_clipfrac_lower": verl_F.masked_mean(dual.float(), mask).item(),
            "actor/gppo_clipped_grad_share": share}


def gppo_policy_loss(mode, old_log_prob, log_prob, advantages, response_mask, loss_agg_mode, config,
                     rollout_is_weights=None) -> tuple[torch.Tensor, dict[str, float]]:
    """``(loss, metrics)`` of loss ``mode`` for one micro-batch; tensors ``(B, T)`` as verl passes them."""
    if config is None:
        raise ValueError(f"verl loss {mode!r} needs the actor config (clip_ratio_low/high, clip_ratio_c)")
    hyper = loss_hyper(config, mode)
    per_token = gppo_per_token(log_prob, old_log_prob, advantages, **hyper)
    if rollout_is_weights is not None:
        per_token = per_token * rollout_is_weights
    if response_mask.any():
        batch_info = config.get("global_batch_info", None) or {}
        loss = agg_loss(loss_mat=per_token, loss_mask=response_mask, loss_agg_mode=loss_agg_mode, **batch_info)
    else:
        # no token to learn from: 0 with the graph kept, where verl's local normaliser would divide 0 by 0
        loss = verl_F.masked_sum(per_token, response_mask)
    return loss, _metrics(log_prob, old_log_prob, advantages, response_mask, hyper)


@register_policy_loss("gppo")
def compute_policy_loss_gppo(old_log_prob, log_prob, advantages, response_mask, loss_agg_mode="token-mean",
                             config=None, rollout_is_weights=None):
    """GPPO, Eq. 11: clipped tokens keep F = 1+ε_h (A>0) and 1-ε_l (A<0)."""
    return gppo_policy_loss("gppo", old_log_prob, log_prob, advantages, response_mask, loss_agg_mode, config,
                            rollout_is_weights)


@register_policy_loss("gppo_general")
def compute_policy_loss_gppo_general(old_log_prob, log_prob, advantages, response_mask, loss_agg_mode="token-mean",
                                     config=None, rollout_is_weights=None):
    """GPPO's general form, Eq. 17: F = β_low·(1-ε_l) and β_high·(1+ε_h) on clipped tokens."""
    return gppo_policy_loss("gppo_general", old_log_prob, log_prob, advantages, response_mask, loss_agg_mode,
                            config, rollout_is_weights)


@register_policy_loss("gppo_only_high")
def compute_policy_loss_gppo_only_high(old_log_prob, log_prob, advantages, response_mask,
                                       loss_agg_mode="token-mean", config=None, rollout_is_weights=None):
    """GPPO on the high side only: F = 1+ε_h on clipped-high tokens, 0 on clipped-low ones (as PPO)."""
    return gppo_policy_loss("gppo_only_high", old_log_prob, log_prob, advantages, response_mask, loss_agg_mode,
                            config, rollout_is_weights)
