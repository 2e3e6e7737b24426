"""The policy losses by name: each module of ``klear_lib.losses`` registers its own, so a new loss is one file.

An entry holds the per-token loss, its analytic gradient coefficient F (dL/dlog π = -F·A, docs/paper.md §1.4) and
the hyperparameters both read, named as the ``RLConfig`` fields that hold them; the TRL trainer, the verl plugin,
the diagnostics and the studies find a loss here by its ``RLConfig.loss_type``.
"""
from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Callable

from klear_lib.configs.rl import RLConfig

RL_FIELDS = frozenset(f.name for f in fields(RLConfig))


class UnknownLoss(KeyError, ValueError):
    """A loss name nothing registered; a ``KeyError`` (a lookup) and a ``ValueError`` (a bad config value)."""

    def __str__(self) -> str:
        return str(self.args[0])


@dataclass(frozen=True)
class Loss:
    """One policy loss: ``per_token(logp, old_logp, advantages, **hyper)`` ``(B, T)`` and ``coefficients(ratio,
    advantages, **hyper)`` (F ``(B, T)``, detached), both reading the ``RLConfig`` fields named in ``hyper``.
    ``off_policy_only``: it computes clip-higher PPO's gradient whenever every update is on-policy (ratio 1)."""

    name: str
    per_token: Callable[..., Any]
    coefficients: Callable[..., Any]
    hyper: tuple[str, ...]
    off_policy_only: bool = True

    def settings(self, cfg) -> dict[str, Any]:
        """The loss's hyperparameters from ``cfg`` (``RLConfig``, ``GPPOConfig``: anything with their names)."""
        return {name: getattr(cfg, name) for name in self.hyper}

    def unread(self, cfg) -> list[str]:
        """Other losses' hyperparameters that ``cfg`` moves off ``RLConfig``'s defaults, which this one ignores."""
        others = {h for loss in _LOSSES.values() for h in loss.hyper} - set(self.hyper)
        return sorted(h for h in others if getattr(cfg, h) != getattr(RLConfig, h))


_LOSSES: dict[str, Loss] = {}


def register(name: str, *, coefficients: Callable[..., Any], hyper: tuple[str, ...], off_policy_only: bool = True):
    """Decorator: register the per-token loss it wraps as ``name`` (returned unchanged)."""
    if unknown := sorted(set(hyper) - RL_FIELDS):
        raise ValueError(f"loss {name!r} reads {unknown}, which are no RLConfig fields")

    def add(per_token):
        _LOSSES[name] = Loss(name, per_token, coefficients, tuple(hyper), off_policy_only)
        return per_token
    return add


def get_loss(name: str) -> Loss:
    """The loss registered as ``name``; an unknown name raises ``UnknownLoss`` naming the known ones."""
    if name not in _LOSSES:
        raise UnknownLoss(f"loss_type={name!r} is no registered loss; known: {loss_names()}")
    return _LOSSES[name]


def loss_names() -> tuple[str, ...]:
    """Every registered loss name, sorted."""
    return tuple(sorted(_LOSSES))
