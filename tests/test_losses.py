"""The three policy losses, token by token, against the gradient table of docs/paper.md §1.4 (and Eq. 17, dual clip).

For a token with log-prob ℓ, dL/dℓ = -F·A. F is written here straight from the paper's table, never from
``klear_lib``; autograd on ``logp`` must reproduce it for every case, every loss.
"""
from __future__ import annotations

import math

import pytest
import torch

from klear_lib.losses import (
    cispo_per_token,
    clip_diagnostics,
    get_loss,
    gppo_per_token,
    masked_mean,
    ppo_clip_per_token,
    sft_nll_loss,
)

EL, EH = 0.2, 0.28

# (advantage, ratio δ): one token per case of docs/paper.md §1.4, plus tokens inside the trust region.
CASES = {
    "pos_high": (+1.0, 1.8),     # A>0, δ > 1+ε_h
    "pos_low": (+1.0, 0.4),      # A>0, δ < 1-ε_l
    "neg_low": (-1.0, 0.4),      # A<0, δ < 1-ε_l
    "neg_high": (-1.0, 1.8),     # A<0, δ > 1+ε_h
    "pos_inside": (+0.7, 1.1),
    "neg_inside": (-0.7, 0.9),
    "neg_far": (-1.0, 12.0),     # A<0, δ beyond the dual clip c = 10
}

# F per case, copied from docs/paper.md §1.4 (columns: clip-higher PPO Eq. 10, GPPO Eq. 12, CISPO Eq. 16).
PAPER_F = {
    "clip_higher": {"pos_high": 0.0, "pos_low": 0.4, "neg_low": 0.0, "neg_high": 1.8,
                    "pos_inside": 1.1, "neg_inside": 0.9, "neg_far": 12.0},
    "gppo": {"pos_high": 1 + EH, "pos_low": 0.4, "neg_low": 1 - EL, "neg_high": 1.8,
             "pos_inside": 1.1, "neg_inside": 0.9, "neg_far": 12.0},
    "cispo": {"pos_high": 1 + EH, "pos_low": 1 - EL, "neg_low": 1 - EL, "neg_high": 1 + EH,
              "pos_inside": 1.1, "neg_inside": 0.9, "neg_far": 1 + EH},
}
PER_TOKEN = {"clip_higher": ppo_clip_per_token, "gppo": gppo_per_token, "cispo": cispo_per_token}


def token_mean_loss(name, logp, old_logp, advantages, mask, **hyper):
    """``(token-mean loss, diagnostics)`` of the registered loss ``name``, as a trainer computes them."""
    per_token = get_loss(name).per_token(logp, old_logp, advantages, **hyper)
    return masked_mean(per_token, mask), clip_diagnostics(name, logp, old_logp, advantages, mask, **hyper)


def gppo_loss(*args, **hyper):
    return token_mean_loss("gppo", *args, **hyper)


def ppo_clip_loss(*args, **hyper):
    return token_mean_loss("clip_higher", *args, **hyper)


def cispo_loss(*args, **hyper):
    return token_mean_loss("cispo", *args, **hyper)


LOSSES = {"gppo": gppo_loss, "clip_higher": ppo_clip_loss, "cispo": cispo_loss}


def _tokens(names, new_logp=-1.3):
    """``logp`` (B, 1) with grad, ``old_logp`` so that δ = the case's ratio, advantages (B,)."""
    adv = torch.tensor([CASES[n][0] for n in names], dtype=torch.float64)
    ratio = torch.tensor([CASES[n][1] for n in names], dtype=torch.float64)
    logp = torch.full((len(names), 1), new_logp, dtype=torch.float64, requires_grad=True)
    old_logp = (logp.detach() - torch.log(ratio).unsqueeze(1))
    return logp, old_logp, adv


def _autograd_f(per_token_fn, names, **kw):
    """F per token recovered from autograd: F = -(dL/dℓ) / A."""
    logp, old_logp, adv = _tokens(names)
    per_token_fn(logp, old_logp, adv, **kw).sum().backward()
    return (-logp.grad.squeeze(1) / adv).tolist()


@pytest.mark.parametrize("loss", sorted(PAPER_F))
@pytest.mark.parametrize("case", sorted(CASES))
def test_gradient_matches_the_paper_table(loss, case):
    kw = {"clip_low": EL, "clip_high": EH}
    got = _autograd_f(PER_TOKEN[loss], [case], **kw)[0]
    assert got == pytest.approx(PAPER_F[loss][case], abs=1e-9), (loss, case)


@pytest.mark.parametrize("loss", sorted(PAPER_F))
def test_analytic_coefficients_equal_autograd(loss):
    names = sorted(CASES)
    logp, old_logp, adv = _tokens(names)
    ratio = torch.exp(logp.detach() - old_logp)
    coef = get_loss(loss).coefficients(ratio, adv, clip_low=EL, clip_high=EH).squeeze(1).tolist()
    assert coef == pytest.approx(_autograd_f(PER_TOKEN[loss], names, clip_low=EL, clip_high=EH), abs=1e-9)


@pytest.mark.parametrize("beta_low,beta_high", [(0.25, 1.0), (0.5, 2.0), (0.0, 0.0)])
def test_general_beta_form(beta_low, beta_high):
    """Eq. 17-18: the clipped-low (A<0) token gets β_low(1-ε_l), the clipped-high (A>0) one β_high(1+ε_h)."""
    names = sorted(CASES)
    got = dict(zip(names, _autograd_f(gppo_per_token, names, clip_low=EL, clip_high=EH,
                                      beta_low=beta_low, beta_high=beta_high)))
    expected = dict(PAPER_F["gppo"], neg_low=beta_low * (1 - EL), pos_high=beta_high * (1 + EH))
    assert got == pytest.approx(expected, abs=1e-9)


@pytest.mark.parametrize("loss", ["gppo", "clip_higher"])
def test_dual_clip_zeroes_far_negative_tokens(loss):
    """verl dual clip (c=10, official scripts): A<0 & δ>c gets F=0; every other case is unchanged."""
    names = sorted(CASES)
    got = dict(zip(names, _autograd_f(PER_TOKEN[loss], names, clip_low=EL, clip_high=EH, dual_clip=10.0)))
    assert got == pytest.approx(dict(PAPER_F[loss], neg_far=0.0), abs=1e-9)
    logp, old_logp, adv = _tokens(["neg_far"])
    assert PER_TOKEN[loss](logp, old_logp, adv, dual_clip=10.0).item() == pytest.approx(10.0)  # -A·c


def test_gppo_forward_equals_clip_higher():
    """δ/sg(δ) ≡ 1: GPPO changes only the backward pass (docs/paper.md §1.3)."""
    logp, old_logp, adv = _tokens(sorted(CASES))
    assert torch.equal(gppo_per_token(logp, old_logp, adv), ppo_clip_per_token(logp, old_logp, adv))
    assert torch.equal(gppo_per_token(logp, old_logp, adv, dual_clip=10.0),
                       ppo_clip_per_token(logp, old_logp, adv, dual_clip=10.0))


def test_on_policy_all_three_losses_agree():
    """Ratio ≡ 1: same loss value and same gradient -A/N per token (the token-mean of Eq. 7)."""
    gen = torch.Generator().manual_seed(0)
    logp0 = -torch.rand(3, 5, generator=gen, dtype=torch.float64) * 3
    mask = torch.tensor([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1], [1, 0, 0, 0, 0]], dtype=torch.float64)
    adv = torch.tensor([1.5, -0.5, -1.0], dtype=torch.float64)
    results = []
    for fn in (gppo_loss, ppo_clip_loss, cispo_loss):
        logp = logp0.clone().requires_grad_(True)
        loss, diag = fn(logp, logp0, adv, mask)
        loss.backward()
        results.append((loss.item(), logp.grad))
        assert diag["clip_frac"] == 0.0 and diag["ratio_mean"] == pytest.approx(1.0)
    expected_grad = -adv.unsqueeze(1) * mask / mask.sum()
    for value, grad in results:
        assert value == pytest.approx(-(adv.unsqueeze(1) * mask).sum().item() / mask.sum().item())
        assert torch.allclose(grad, expected_grad)


def test_mask_excludes_tokens_and_advantage_shapes():
    logp, old_logp, adv = _tokens(["pos_high", "neg_low", "pos_inside"])
    mask = torch.tensor([[1.0], [0.0], [1.0]], dtype=torch.float64)
    a, _ = gppo_loss(logp, old_logp, adv, mask)
    b, _ = gppo_loss(logp, old_logp, adv.unsqueeze(1), mask)
    c, _ = gppo_loss(logp, old_logp, adv.unsqueeze(1).expand(-1, 1), mask)
    assert a.item() == b.item() == c.item()
    per_token = gppo_per_token(logp, old_logp, adv)
    assert a.item() == pytest.approx((per_token[0] + per_token[2]).item() / 2)


def test_diagnostics_count_the_four_cases():
    names = ["pos_high", "pos_low", "neg_low", "neg_high", "pos_inside", "neg_inside", "neg_far", "pos_inside"]
    logp, old_logp, adv = _tokens(names)
    mask = torch.ones(len(names), 1, dtype=torch.float64)
    _, gppo = gppo_loss(logp, old_logp, adv, mask)
    assert gppo["frac_adv_pos_ratio_high"] == pytest.approx(1 / 8)
    assert gppo["frac_adv_pos_ratio_low"] == pytest.approx(1 / 8)
    assert gppo["frac_adv_neg_ratio_low"] == pytest.approx(1 / 8)
    assert gppo["frac_adv_neg_ratio_high"] == pytest.approx(2 / 8)  # neg_high and neg_far
    assert gppo["clip_frac"] == pytest.approx(2 / 8)
    # |F·A| per token: 1.28, .4, .8, 1.8, .77, .63, 12, .77 -> clipped share (1.28 + .8) / total
    total = 1.28 + 0.4 + 0.8 + 1.8 + 0.77 + 0.63 + 12.0 + 0.77
    assert gppo["clipped_grad_share"] == pytest.approx((1.28 + 0.8) / total)
    _, ppo = ppo_clip_loss(logp, old_logp, adv, mask)
    assert ppo["clip_frac"] == pytest.approx(2 / 8) and ppo["clipped_grad_share"] == 0.0
    _, cispo = cispo_loss(logp, old_logp, adv, mask)
    assert cispo["clip_frac"] == pytest.approx(5 / 8)  # all four cases, neg_far included


def test_sft_nll_is_token_mean_over_correct_rollouts():
    logp = torch.tensor([[-1.0, -2.0, -3.0], [-4.0, -5.0, -6.0], [-0.5, -0.5, -0.5]], requires_grad=True)
    mask = torch.tensor([[1, 1, 0], [1, 1, 1], [1, 1, 1]])
    loss = sft_nll_loss(logp, mask, torch.tensor([True, False, True]))
    assert loss.item() == pytest.approx((1 + 2 + 0.5 * 3) / 5)
    loss.backward()
    assert logp.grad[1].abs().sum() == 0 and logp.grad[0, 2] == 0
    assert logp.grad[0, 0].item() == pytest.approx(-1 / 5)
    assert sft_nll_loss(logp, mask, torch.zeros(3)).item() == 0.0


def test_bad_dual_clip_raises():
    logp, old_logp, adv = _tokens(["neg_far"])
    with pytest.raises(ValueError, match="dual_clip"):
        gppo_per_token(logp, old_logp, adv, dual_clip=0.5)


def test_extreme_ratios_stay_finite():
    logp = torch.tensor([[0.0, 0.0]], requires_grad=True)
    old_logp = torch.tensor([[-200.0, 200.0]])
    for fn in PER_TOKEN.values():
        per_token = fn(logp, old_logp, torch.tensor([-1.0]))
        per_token.sum().backward()
        assert torch.isfinite(per_token).all() and torch.isfinite(logp.grad).all()
        logp.grad = None
    assert math.isfinite(gppo_loss(logp, old_logp, torch.tensor([1.0]), torch.ones(1, 2))[0].item())


# --- DGPO's argument (docs/paper.md §8): do the gradients GPPO keeps on clipped tokens blow up as π -> 0? -------

def _logit_grad(loss_fn, p_token: float, p_old: float = 0.3, adv: float = -1.0, vocab: int = 8, **hyper):
    """The gradient w.r.t. the logits and w.r.t. the token's probability of one token's loss at probability
    ``p_token`` (sampled at ``p_old``), the other tokens sharing the rest evenly."""
    rest = (1.0 - p_token) / (vocab - 1)
    probs = torch.tensor([p_token] + [rest] * (vocab - 1), dtype=torch.float64)
    logits = probs.log().clone().requires_grad_(True)
    logp = torch.log_softmax(logits, dim=0)[0].reshape(1, 1)
    loss = loss_fn(logp, torch.tensor([[math.log(p_old)]], dtype=torch.float64),
                   torch.tensor([adv], dtype=torch.float64), **hyper)
    (g_logits,) = torch.autograd.grad(loss.sum(), logits)
    p = torch.tensor([[p_token]], dtype=torch.float64, requires_grad=True)  # the same loss as a function of π
    (g_prob,) = torch.autograd.grad(loss_fn(p.log(), torch.tensor([[math.log(p_old)]], dtype=torch.float64),
                                            torch.tensor([adv], dtype=torch.float64), **hyper).sum(), p)
    return g_logits.norm().item(), g_prob.abs().item()


@pytest.mark.parametrize("beta_low", [1.0, 0.25])
def test_gppo_gradient_on_a_vanishing_clipped_token_is_bounded_in_the_logits(beta_low):
    # A < 0 and δ = π / π_old -> 0: the clipped-low case, where GPPO keeps F = β_low·(1 - ε_l)
    bound = beta_low * (1 - EL) * math.sqrt(2)  # |F·A|·||e_t - π||, and ||e_t - π|| <= √2
    logit_norms, prob_grads = [], []
    for p in (1e-2, 1e-4, 1e-6, 1e-8):  # |log δ| stays under the ±20 clamp (δ >= 3e-8)
        g_logits, g_prob = _logit_grad(gppo_per_token, p, beta_low=beta_low)
        logit_norms.append(g_logits)
        prob_grads.append(g_prob)
    assert all(math.isfinite(g) and g <= bound + 1e-12 for g in logit_norms)
    e_minus_pi = math.sqrt(1 + 1 / 7)  # ||e_t - π|| as π_t -> 0 and the 7 others share 1
    assert logit_norms[-1] == pytest.approx(beta_low * (1 - EL) * e_minus_pi, rel=1e-6)
    # what does diverge is the derivative w.r.t. the probability itself, β_low(1-ε_l)|A| / π: DGPO's quantity,
    # which a softmax policy never follows (its parameters reach π through the logits)
    assert prob_grads == pytest.approx([beta_low * (1 - EL) / p for p in (1e-2, 1e-4, 1e-6, 1e-8)], rel=1e-6)
    # clip-higher keeps nothing on this token, CISPO keeps the same bounded (1 - ε_l)
    assert _logit_grad(ppo_clip_per_token, 1e-8)[0] == 0.0
    assert _logit_grad(cispo_per_token, 1e-8)[0] == pytest.approx((1 - EL) * e_minus_pi, rel=1e-6)


def test_past_the_log_ratio_clamp_a_clipped_token_keeps_the_paper_gradient():
    # |log δ| > 20 (δ < 2e-9): the ±20 clamp on the ratio must not silence the kept gradient (it did before issue 27)
    e_minus_pi = math.sqrt(1 + 1 / 7)
    for p in (1e-12, 1e-30, 1e-200):
        assert _logit_grad(gppo_per_token, p)[0] == pytest.approx((1 - EL) * e_minus_pi, rel=1e-6)
        assert _logit_grad(gppo_per_token, p, beta_low=0.25)[0] == pytest.approx(0.25 * (1 - EL) * e_minus_pi, rel=1e-6)
        assert _logit_grad(cispo_per_token, p)[0] == pytest.approx((1 - EL) * e_minus_pi, rel=1e-6)
        assert _logit_grad(ppo_clip_per_token, p)[0] == 0.0


# --- the edges (issue 27): log-ratios past the ±20 clamp, near-zero probabilities, empty masks, zero advantages ---

def _f_at(per_token_fn, log_ratio: float, adv: float, dtype=torch.float64, **kw) -> tuple[float, float]:
    """(F from autograd, loss value) for one token with log δ = ``log_ratio``, both log-probs real (<= 0): the
    current one tiny for a negative log-ratio, the old one tiny for a positive one."""
    new, old = (-1.0, -1.0 - log_ratio) if log_ratio > 0 else (-1.0 + log_ratio, -1.0)
    logp = torch.tensor([[new]], dtype=dtype, requires_grad=True)
    loss = per_token_fn(logp, torch.tensor([[old]], dtype=dtype), torch.tensor([adv], dtype=dtype), **kw)
    loss.sum().backward()
    return -logp.grad.item() / adv, loss.item()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("log_ratio", [25.0, 60.0, 500.0, -25.0, -60.0, -500.0])
def test_clipped_tokens_past_the_clamp_keep_the_paper_coefficient(log_ratio, dtype):
    """The table's F on clipped tokens at any log-ratio (the official code overflows to NaN past ~88 in float32)."""
    adv = 1.0 if log_ratio > 0 else -1.0  # A>0 with δ huge: clipped high; A<0 with δ tiny: clipped low
    bound = 1 + EH if log_ratio > 0 else 1 - EL
    for fn, expected in ((gppo_per_token, bound), (cispo_per_token, bound), (ppo_clip_per_token, 0.0)):
        f, value = _f_at(fn, log_ratio, adv, dtype)
        assert f == pytest.approx(expected, abs=1e-6) and math.isfinite(value), fn.__name__
    assert _f_at(gppo_per_token, log_ratio, adv, dtype, beta_low=0.5, beta_high=2.0)[0] == pytest.approx(
        2.0 * (1 + EH) if log_ratio > 0 else 0.5 * (1 - EL), abs=1e-6)
    # CISPO clips both signs: the other sign of A gets the same bound
    assert _f_at(cispo_per_token, log_ratio, -adv, dtype)[0] == pytest.approx(bound, abs=1e-6)


@pytest.mark.parametrize("loss", ["gppo", "clip_higher"])
def test_past_the_clamp_the_unclipped_gradient_is_cut_on_purpose(loss):
    """The one deliberate departure from the paper: where F = δ and |log δ| > 20 the clamp gives 0, not δ."""
    fn = PER_TOKEN[loss]
    f, value = _f_at(fn, 25.0, -1.0)  # A<0, δ = e^25: the paper's F = δ ≈ 7e10, an exploding step
    assert f == 0.0 and value == pytest.approx(math.exp(20.0))  # the value at the clamp, finite
    assert _f_at(fn, 25.0, -1.0, dual_clip=10.0) == (0.0, pytest.approx(10.0))  # verl's dual clip agrees: F = 0
    f, _ = _f_at(fn, -25.0, 1.0)  # A>0, δ = e^-25: the paper's F = δ ≈ 1.4e-11
    assert f == 0.0
    assert _f_at(fn, 19.0, -1.0)[0] == pytest.approx(math.exp(19.0), rel=1e-9)  # inside the clamp: F = δ as the table


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_near_zero_probabilities_through_the_softmax_stay_finite(dtype):
    """A token the current policy gives ~e^-100 (far past the clamp): the kept gradient w.r.t. the logits is the
    table's F times (e_t - π), in float32 as in float64."""
    logits = torch.tensor([-100.0] + [0.0] * 7, dtype=dtype, requires_grad=True)
    logp = torch.log_softmax(logits, dim=0)[0].reshape(1, 1)
    old = torch.tensor([[math.log(0.3)]], dtype=dtype)
    for fn, f in ((gppo_per_token, 1 - EL), (cispo_per_token, 1 - EL), (ppo_clip_per_token, 0.0)):
        (grad,) = torch.autograd.grad(fn(logp, old, torch.tensor([-1.0], dtype=dtype)).sum(), logits,
                                      retain_graph=True)
        assert torch.isfinite(grad).all(), fn.__name__
        assert grad.norm().item() == pytest.approx(f * math.sqrt(1 + 1 / 7), rel=1e-5), fn.__name__


@pytest.mark.parametrize("loss", sorted(LOSSES))
def test_masked_out_infinite_logprobs_do_not_poison_the_loss(loss):
    """Padding may carry log π = -inf (and old log π = -inf): the masked token-mean ignores it, value and gradient."""
    logp, old_logp, adv = _tokens(["pos_high", "neg_low", "pos_inside"])
    logp_pad = torch.cat([logp, torch.full((3, 1), -math.inf, dtype=torch.float64)], dim=1)
    old_pad = torch.cat([old_logp, torch.tensor([[-math.inf], [0.0], [-math.inf]], dtype=torch.float64)], dim=1)
    mask = torch.tensor([[1.0, 0.0]] * 3, dtype=torch.float64)
    padded, _ = LOSSES[loss](logp_pad, old_pad, adv, mask)
    plain, _ = LOSSES[loss](logp, old_logp, adv, torch.ones(3, 1, dtype=torch.float64))
    assert padded.item() == pytest.approx(plain.item())
    (grad_padded,) = torch.autograd.grad(padded, logp)
    (grad_plain,) = torch.autograd.grad(plain, logp)
    assert torch.isfinite(grad_padded).all() and torch.allclose(grad_padded, grad_plain)


@pytest.mark.parametrize("loss", sorted(LOSSES))
def test_empty_mask_gives_zero_loss_and_zero_gradient(loss):
    logp, old_logp, adv = _tokens(sorted(CASES))
    value, diagnostics = LOSSES[loss](logp, old_logp, adv, torch.zeros_like(logp))
    value.backward()
    assert value.item() == 0.0 and torch.equal(logp.grad, torch.zeros_like(logp))
    assert all(math.isfinite(v) for v in diagnostics.values())


@pytest.mark.parametrize("loss", sorted(LOSSES))
def test_zero_advantages_give_zero_loss_and_zero_gradient(loss):
    """All-zero advantages (a group whose rewards are all equal) carry no signal, whatever δ, even past the clamp."""
    logp = torch.tensor([[-1.0, -1.0, -80.0, -0.5]], dtype=torch.float64, requires_grad=True)
    old_logp = torch.tensor([[-1.0, -60.0, -1.0, -0.2]], dtype=torch.float64)
    hyper = {} if loss == "cispo" else {"dual_clip": 10.0}
    value, diagnostics = LOSSES[loss](logp, old_logp, torch.zeros(1, dtype=torch.float64), torch.ones_like(logp),
                                      **hyper)
    value.backward()
    assert value.item() == 0.0 and torch.equal(logp.grad, torch.zeros_like(logp))
    assert diagnostics["clip_frac"] == 0.0 and diagnostics["logp_grad_norm"] == 0.0


def test_only_high_keeps_the_gradient_on_the_high_side_only():
    """The official ``only_high`` variant: F = 1+ε_h on clipped-high tokens, 0 on clipped-low ones (PPO's constant
    bound), δ elsewhere; its value is clip-higher PPO's."""
    names = sorted(CASES)
    got = dict(zip(names, _autograd_f(gppo_per_token, names, clip_low=EL, clip_high=EH, only_high=True)))
    assert got == pytest.approx(dict(PAPER_F["gppo"], neg_low=0.0), abs=1e-9)
    logp, old_logp, adv = _tokens(names)
    assert torch.equal(gppo_per_token(logp, old_logp, adv, only_high=True, dual_clip=10.0),
                       ppo_clip_per_token(logp, old_logp, adv, dual_clip=10.0))
    coef = get_loss("gppo_only_high").coefficients(torch.exp(logp.detach() - old_logp), adv)
    assert coef.squeeze(1).tolist() == pytest.approx([got[n] for n in names], abs=1e-9)
    with pytest.raises(ValueError, match="beta_low"):
        gppo_per_token(logp, old_logp, adv, only_high=True, beta_low=0.25)


def test_diagnostics_report_the_largest_clipped_gradient_beside_the_rest():
    names = ["pos_high", "neg_low", "pos_inside", "neg_far"]
    logp, old_logp, adv = _tokens(names)
    mask = torch.ones(len(names), 1, dtype=torch.float64)
    _, d = gppo_loss(logp, old_logp, adv, mask)
    # |F·A|: pos_high 1.28 and neg_low 0.8 are clipped; pos_inside 0.77 and neg_far 12 are not
    assert d["max_fa_clipped"] == pytest.approx(1.28) and d["max_fa_rest"] == pytest.approx(12.0)
    assert d["clipped_logp_grad_norm"] == pytest.approx(math.hypot(1.28, 0.8) / 4)
    assert d["logp_grad_norm"] == pytest.approx(math.sqrt(1.28 ** 2 + 0.8 ** 2 + 0.77 ** 2 + 144) / 4)
    _, ppo = ppo_clip_loss(logp, old_logp, adv, mask)
    assert ppo["max_fa_clipped"] == 0.0 and ppo["clipped_logp_grad_norm"] == 0.0
