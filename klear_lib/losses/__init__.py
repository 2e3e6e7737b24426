"""Pure loss functions: the policy losses by name (``get_loss``; each module here registers its own, found at import)
and what they share (``policy``: diagnostics, the SFT loss in RL)."""
import importlib
import pkgutil

from klear_lib.losses.registry import Loss, UnknownLoss, get_loss, loss_names, register

for _module in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_module.name}")

from klear_lib.losses.cispo import cispo_per_token  # noqa: E402
from klear_lib.losses.clip_higher import ppo_clip_per_token  # noqa: E402
from klear_lib.losses.gppo import gppo_per_token  # noqa: E402
from klear_lib.losses.policy import clip_diagnostics, masked_mean, sft_nll_loss  # noqa: E402

__all__ = ["Loss", "UnknownLoss", "get_loss", "loss_names", "register", "gppo_per_token", "ppo_clip_per_token",
           "cispo_per_token", "clip_diagnostics", "masked_mean", "sft_nll_loss"]
