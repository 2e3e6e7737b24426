"""The kit's policy losses in verl's policy-loss registry: each loss of ``klear_lib.losses`` whose name verl does not
use already (``gppo``, ``gppo_only_high``, ``clip_higher``, ``dgpo``; verl keeps its own ``cispo``), and
``gppo_general`` (docs/verl.md).

With klear-lib installed, verl imports this module through the ``verl.plugins`` entry point in every process that
imports verl (the driver and each Ray worker), which registers the losses; ``import
klear_lib.integrations.verl_plugin`` does the same by hand. Each has the signature of verl's
``compute_policy_loss_vanilla``, computes its per-token loss with the registry's function (the one the TRL trainer
uses) and aggregates it with verl's own ``agg_loss``, so every ``loss_agg_mode`` means what verl defines
(``token-mean`` is the paper's, docs/paper.md §1.3). A loss's ``RLConfig`` hyperparameters come from verl's actor
config as ``vanilla`` reads them (``VERL_KEYS``): ``clip_ratio_low``/``clip_ratio_high`` (falling back to
``clip_ratio``) and the dual clip ``clip_ratio_c``, which verl always applies (the official scripts set 10,
docs/paper.md §1.4); one verl has no key for keeps ``RLConfig``'s default.

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

from klear_lib.losses import clip_diagnostics, get_loss, loss_names
from klear_lib.losses.clip_higher import ppo_clip_per_token
from klear_lib.losses.policy import LOG_RATIO_CLAMP, clip_cases
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
from verl.trainer.ppo.core_algos import POLICY_LOSS_REGISTRY, agg_loss, register_policy_loss  # noqa: E402
from verl.workers.config import PolicyLossConfig  # noqa: E402

GENERAL_BETA_LOW, GENERAL_BETA_HIGH = 0.25, 1.0  # official gppo_general defaults (docs/paper.md §1.5)


@dataclass
class GPPOPolicyLossConfig(PolicyLossConfig):
    """verl's ``PolicyLossConfig`` plus the β of Eq. 17, which only ``gppo_general`` reads."""

    gppo_beta_low: float = GENERAL_BETA_LOW
    gppo_beta_high: float = GENERAL_BETA_HIGH


def _clip_ratio(config, side: str) -> float:
    """``clip_ratio_<side>``, or ``clip_ratio`` when it is None (as ``vanilla``)."""
    value = getattr(config, f"clip_ratio_{side}")
    return value if value is not None else config.clip_ratio


# RLConfig name -> its value in verl's actor config (``ActorConfig`` or DictConfig), read as ``vanilla`` reads it
VERL_KEYS = {"clip_low": lambda config: _clip_ratio(config, "low"),
             "clip_high": lambda config: _clip_ratio(config, "high"),
             "dual_clip": lambda config: config.get("clip_ratio_c", 3.0)}
# verl modes beyond the registry's names: mode -> (registered loss, readers of its hyperparameters beyond VERL_KEYS)
ALIASES = {"gppo_general": ("gppo", {
    "beta_low": lambda config: config.policy_loss.get("gppo_beta_low", GENERAL_BETA_LOW),
    "beta_high": lambda config: config.policy_loss.get("gppo_beta_high", GENERAL_BETA_HIGH)})}
LOSS_MODES = tuple(name for name in loss_names() if name not in POLICY_LOSS_REGISTRY) + tuple(ALIASES)


def loss_hyper(config, mode: str) -> dict:
    """The per-token loss's keyword arguments for ``mode`` from verl's actor config (``ActorConfig`` or DictConfig)."""
    name, extra = ALIASES.get(mode, (mode, {}))
    readers = {**VERL_KEYS, **extra}
    return {key: readers[key](config) for key in get_loss(name).hyper if key in readers}


@torch.no_grad()
def _metrics(name, log_prob, old_log_prob, advantages, mask, config, hyper) -> dict[str, float]:
    """verl's three PPO metrics, computed as ``vanilla`` computes them, plus the loss's share of gradient on clipped
    tokens (``klear_lib.losses.policy.clip_diagnostics``)."""
    clip_low, clip_high, clip_c = (VERL_KEYS[key](config) for key in ("clip_low", "clip_high", "dual_clip"))
    log_ratio = torch.clamp(log_prob - old_log_prob, -LOG_RATIO_CLAMP, LOG_RATIO_CLAMP)
    cases = clip_cases(log_ratio.exp(), advantages, clip_low, clip_high)
    clipped = cases["adv_pos_ratio_high"] | cases["adv_neg_ratio_low"]
    ppo = ppo_clip_per_token(log_prob, old_log_prob, advantages, clip_low=clip_low,
                             clip_high=clip_high)  # before the dual clip, as vanilla's clip_pg_losses1
    dual = (ppo > -advantages * clip_c) & (advantages < 0)
    share = clip_diagnostics(name, log_prob, old_log_prob, advantages, mask, **hyper)["clipped_grad_share"]
    return {"actor/pg_clipfrac": verl_F.masked_mean(clipped.float(), mask).item(),
            "actor/ppo_kl": verl_F.masked_mean(-log_ratio, mask).item(),
            "actor/pg_clipfrac_lower": verl_F.masked_mean(dual.float(), mask).item(),
            "actor/gppo_clipped_grad_share": share}


def policy_loss(mode, old_log_prob, log_prob, advantages, response_mask, loss_agg_mode, config,
                rollout_is_weights=None) -> tuple[torch.Tensor, dict[str, float]]:
    """``(loss, metrics)`` of loss ``mode`` for one micro-batch; tensors ``(B, T)`` as verl passes them."""
    if config is None:
        raise ValueError(f"verl loss {mode!r} needs the actor config (clip_ratio_low/high, clip_ratio_c)")
    name, hyper = ALIASES.get(mode, (mode,))[0], loss_hyper(config, mode)
    per_token = get_loss(name).per_token(log_prob, old_log_prob, advantages, **hyper)
    if rollout_is_weights is not None:
        per_token = per_token * rollout_is_weights
    if response_mask.any():
        batch_info = config.get("global_batch_info", None) or {}
        loss = agg_loss(loss_mat=per_token, loss_mask=response_mask, loss_agg_mode=loss_agg_mode, **batch_info)
    else:
        # no token to learn from: 0 with the graph kept, where verl's local normaliser would divide 0 by 0
        loss = verl_F.masked_sum(per_token, response_mask)
    return loss, _metrics(name, log_prob, old_log_prob, advantages, response_mask, config, hyper)


def _register(mode: str):
    """Register loss ``mode`` with verl under its name, with the signature of verl's ``vanilla``."""
    @register_policy_loss(mode)
    def compute_policy_loss(old_log_prob, log_prob, advantages, response_mask, loss_agg_mode="token-mean",
                            config=None, rollout_is_weights=None):
        return policy_loss(mode, old_log_prob, log_prob, advantages, response_mask, loss_agg_mode, config,
                           rollout_is_weights)
    compute_policy_loss.__name__ = compute_policy_loss.__qualname__ = f"compute_policy_loss_{mode}"
    return compute_policy_loss


for _mode in LOSS_MODES:
    _register(_mode)
