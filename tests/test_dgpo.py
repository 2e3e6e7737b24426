"""DGPO (arXiv 2603.14389) against its authors' own equations: the per-token loss of their verl code
(``ratio_mode=dgpo``), the decay of the weight on ∇π that the paper is named for, and continuity at the clip bounds.
The registry's tests add that F is the autograd gradient and that the TRL path carries ``dgpo_n``/``dgpo_m``."""
from __future__ import annotations

import math

import pytest
import torch

from klear_lib.losses import get_loss

DGPO = get_loss("dgpo")
EPS_LOW, EPS_HIGH = 0.2, 0.28


def authors_loss(logp, old, adv, n, m, eps_low=EPS_LOW, eps_high=EPS_HIGH):
    """Their ``compute_policy_loss`` in dgpo mode, transcribed (dual clip off, as their scripts run it)."""
    ratio = torch.exp(logp - old)
    low_case = (ratio < 1 - eps_low) & (adv < 0)
    high_case = (ratio > 1 + eps_high) & (adv > 0)
    ratio = torch.where(low_case, torch.exp(logp + n * logp.detach() - (n + 1) * old) / (1 - eps_low) ** n, ratio)
    ratio = torch.where(high_case, torch.exp(logp + math.log(1 + eps_high) / m - old * (m - 1) / m
                                             - logp.detach() / m), ratio)
    return -adv * ratio


@pytest.mark.parametrize("n, m", [(1, 2), (2, 3), (0, 1)])
def test_value_and_gradient_are_the_authors(n, m):
    gen = torch.Generator().manual_seed(0)
    old = torch.randn(64, 8, generator=gen, dtype=torch.float64) - 2
    logp = (old + 0.8 * torch.randn(64, 8, generator=gen, dtype=torch.float64)).requires_grad_(True)
    adv = torch.randn(64, 1, generator=gen, dtype=torch.float64)
    ours = DGPO.per_token(logp, old, adv, dgpo_n=n, dgpo_m=m)
    (grad_ours,) = torch.autograd.grad(ours.sum(), logp)
    theirs = authors_loss(logp, old, adv, n, m)
    (grad_theirs,) = torch.autograd.grad(theirs.sum(), logp)
    ratio = torch.exp(logp.detach() - old)
    clipped = ((ratio < 1 - EPS_LOW) & (adv < 0)) | ((ratio > 1 + EPS_HIGH) & (adv > 0))
    assert clipped.float().mean() > 0.2 and (~clipped).float().mean() > 0.2  # both kinds of token are tested
    assert torch.allclose(ours, theirs, rtol=1e-12, atol=1e-12)
    assert torch.allclose(grad_ours, grad_theirs, rtol=1e-12, atol=1e-12)


def _weight_on_grad_pi(prob, old_prob, adv, **hyper):
    """dL/dπ = dL/dlog π / π = -F·A/π for one token of probability ``prob``."""
    ratio = torch.tensor([[prob / old_prob]], dtype=torch.float64)
    return (DGPO.coefficients(ratio, torch.tensor([adv], dtype=torch.float64), **hyper) / prob).item()


@pytest.mark.parametrize("n", [1, 2])
def test_low_side_weight_on_grad_pi_decays_as_pi_to_the_n(n):
    old = 0.5  # clipped-low below π = 0.4
    w = [_weight_on_grad_pi(p, old, -1.0, dgpo_n=n) for p in (0.1, 0.01, 0.001)]
    assert w[1] / w[0] == pytest.approx(0.1 ** n) and w[2] / w[1] == pytest.approx(0.1 ** n)


@pytest.mark.parametrize("m", [2, 4])
def test_high_side_weight_on_grad_pi_decays_as_pi_to_the_minus_one_over_m(m):
    old = 0.01  # clipped-high above π = 0.0128
    w = [_weight_on_grad_pi(p, old, 1.0, dgpo_m=m) for p in (0.1, 0.2, 0.4)]
    assert w[1] / w[0] == pytest.approx(2 ** (-1 / m)) and w[2] / w[1] == pytest.approx(2 ** (-1 / m))


def test_the_weight_is_continuous_at_both_clip_bounds():
    tiny = 1e-9
    for adv, bound in ((-1.0, 1 - EPS_LOW), (1.0, 1 + EPS_HIGH)):
        ratio = torch.tensor([[bound - tiny, bound + tiny]], dtype=torch.float64)
        f = DGPO.coefficients(ratio, torch.tensor([adv], dtype=torch.float64))
        assert f[0, 0].item() == pytest.approx(bound, abs=1e-7) and f[0, 1].item() == pytest.approx(bound, abs=1e-7)


def test_gppo_keeps_a_constant_weight_where_dgpo_decays():
    ratio = torch.tensor([[0.3, 0.03]], dtype=torch.float64)
    adv = torch.tensor([-1.0], dtype=torch.float64)
    assert get_loss("gppo").coefficients(ratio, adv)[0].tolist() == [0.8, 0.8]
    assert DGPO.coefficients(ratio, adv)[0].tolist() == pytest.approx([0.3 ** 2 / 0.8, 0.03 ** 2 / 0.8])


@pytest.mark.parametrize("bad", [{"dgpo_n": -1}, {"dgpo_m": 0}])
def test_bad_exponents_are_refused(bad):
    with pytest.raises(ValueError, match="dgpo_n >= 0 and dgpo_m > 0"):
        DGPO.per_token(torch.zeros(1, 1), torch.zeros(1, 1), torch.ones(1), **bad)
