"""The loss registry: every registered loss's analytic F is its own autograd's, it reads only RLConfig fields (under
their names and defaults, which the TRL path carries), and an unknown name is an error naming the known ones."""
from __future__ import annotations

import dataclasses
import inspect

import pytest
import torch

from klear_lib.configs import get_config
from klear_lib.configs.rl import RLConfig
from klear_lib.configs.trl import LOSS_FIELDS, RL_FIELDS, trl_kwargs
from klear_lib.losses import get_loss, loss_names

# one token per case of docs/paper.md §1.4 and inside the trust region, plus one past the dual clip (A, δ)
TOKENS = [(1.0, 1.8), (1.0, 0.4), (-1.0, 0.4), (-1.0, 1.8), (0.7, 1.1), (-0.7, 0.9), (-1.0, 12.0), (1.0, 1e-12)]
SETTINGS = [{}, {"clip_low": 0.1, "clip_high": 0.4}, {"dual_clip": 10.0}, {"beta_low": 0.25, "beta_high": 2.0}]


def _autograd_f(loss, hyper):
    """(F from autograd, the ratio, the advantages) per token: F = -(dL/dlog π) / A."""
    adv = torch.tensor([a for a, _ in TOKENS], dtype=torch.float64)
    ratio = torch.tensor([r for _, r in TOKENS], dtype=torch.float64).unsqueeze(1)
    logp = torch.full((len(TOKENS), 1), -1.3, dtype=torch.float64, requires_grad=True)
    old = logp.detach() - ratio.log()
    loss.per_token(logp, old, adv, **hyper).sum().backward()
    return -logp.grad / adv.unsqueeze(1), torch.exp(logp.detach() - old), adv


@pytest.mark.parametrize("settings", SETTINGS)
@pytest.mark.parametrize("name", loss_names())
def test_coefficients_are_the_gradient_of_the_per_token_loss(name, settings):
    loss = get_loss(name)
    hyper = {k: v for k, v in settings.items() if k in loss.hyper}
    grad_f, ratio, adv = _autograd_f(loss, hyper)
    assert torch.allclose(loss.coefficients(ratio, adv, **hyper), grad_f, rtol=0, atol=1e-9)


@pytest.mark.parametrize("name", loss_names())
def test_each_loss_reads_rlconfig_fields_by_name_with_their_defaults(name):
    loss = get_loss(name)
    rl = {f.name: f.default for f in dataclasses.fields(RLConfig)}
    assert set(loss.hyper) <= set(LOSS_FIELDS) <= set(rl)  # the TRL field table passes each under its name
    for fn in (loss.per_token, loss.coefficients):
        params = inspect.signature(fn).parameters
        assert {h: params[h].default for h in loss.hyper} == {h: rl[h] for h in loss.hyper}, (name, fn)
    cfg = get_config("rl_math", "tiny", loss_type=name)
    assert loss.settings(cfg) == {h: getattr(cfg, h) for h in loss.hyper}
    assert trl_kwargs(RL_FIELDS, cfg)["loss_type"] == name


def test_an_unknown_loss_is_an_error_naming_the_known_ones():
    with pytest.raises(KeyError, match="known") as err:
        get_loss("ppo")
    assert all(name in str(err.value) for name in ("gppo", "clip_higher", "cispo"))
    assert isinstance(err.value, ValueError)  # also a bad config value


def test_a_setting_the_loss_does_not_read_is_named():
    assert get_loss("cispo").unread(get_config("rl_math", "tiny", loss_type="cispo", dual_clip=10.0)) == ["dual_clip"]
    assert get_loss("gppo").unread(get_config("rl_math", "tiny", dual_clip=10.0, beta_low=0.5)) == []
