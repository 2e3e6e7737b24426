"""The verl plugin against verl's own code: its registry, its ``vanilla`` loss, its aggregation and its Hydra config.

Where GPPO and PPO coincide (no token clipped) the plugin's loss and gradient must be verl's ``vanilla``'s, in every
aggregation mode; where they differ, the gradient must follow the paper's table (written here from docs/paper.md
§1.4, never from ``klear_lib``). Needs verl: ``make test-verl`` (``.venv-verl``, docs/verl.md); skipped without it.
"""
from __future__ import annotations

import inspect
import math
import re
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest
import torch

verl = pytest.importorskip("verl", reason="the verl plugin's tests need verl: make setup-verl (docs/verl.md)")

from hydra import compose, initialize_config_dir  # noqa: E402
from verl.trainer.ppo import core_algos  # noqa: E402
from verl.utils.config import omega_conf_to_dataclass  # noqa: E402
from verl.workers.config import ActorConfig, PolicyLossConfig  # noqa: E402

from klear_lib.integrations import verl_plugin  # noqa: E402
from klear_lib.versions import UnsupportedVersion, require  # noqa: E402

F64 = torch.float64
EL, EH, C = 0.2, 0.28, 10.0
MODES = ("gppo", "gppo_general", "gppo_only_high")
AGG_MODES = ("token-mean", "token-sum", "seq-mean-token-sum", "seq-mean-token-mean", "seq-mean-token-sum-norm")
DOC = Path(__file__).resolve().parents[1] / "docs" / "verl.md"

# (advantage, ratio δ), one token per case of docs/paper.md §1.4, and F per loss from its table (c = 10 dual clip)
CASES = {"pos_high": (1.0, 1.8), "pos_low": (1.0, 0.4), "neg_low": (-1.0, 0.4), "neg_high": (-1.0, 1.8),
         "pos_inside": (0.7, 1.1), "neg_inside": (-0.7, 0.9), "neg_far": (-1.0, 12.0)}
VANILLA_F = {"pos_high": 0.0, "pos_low": 0.4, "neg_low": 0.0, "neg_high": 1.8, "pos_inside": 1.1,
             "neg_inside": 0.9, "neg_far": 0.0}
GPPO_F = dict(VANILLA_F, pos_high=1 + EH, neg_low=1 - EL)


def actor_config(agg="token-mean", clip_c=C, policy_loss=None, **kw) -> ActorConfig:
    """verl's own actor config object, as its workers build it."""
    return ActorConfig(strategy="fsdp", rollout_n=1, ppo_micro_batch_size_per_gpu=1, clip_ratio_low=EL,
                       clip_ratio_high=EH, clip_ratio_c=clip_c, loss_agg_mode=agg,
                       policy_loss=policy_loss or PolicyLossConfig(), **kw)


def call(loss_mode, log_prob, old, adv, mask, config, weights=None):
    """The loss as verl's actor calls it (``verl/workers/utils/losses.py``): ``(loss, dL/dlog_prob, metrics)``."""
    log_prob = log_prob.detach().clone().requires_grad_(True)
    loss, metrics = core_algos.get_policy_loss_fn(loss_mode)(
        old_log_prob=old, log_prob=log_prob, advantages=adv, response_mask=mask,
        loss_agg_mode=config.loss_agg_mode, config=config, rollout_is_weights=weights)
    (grad,) = torch.autograd.grad(loss, log_prob)
    return loss.detach(), grad, metrics


def case_tokens(names=tuple(CASES), dtype=F64):
    """One token per row: ``log_prob``, ``old`` with δ = the case's ratio, token-level advantages, a full mask."""
    adv = torch.tensor([[CASES[n][0]] for n in names], dtype=dtype)
    ratio = torch.tensor([[CASES[n][1]] for n in names], dtype=dtype)
    log_prob = torch.full_like(ratio, -1.3)
    return log_prob, log_prob - ratio.log(), adv, torch.ones_like(ratio, dtype=torch.bool)


def f_per_token(loss_mode, config, names=tuple(CASES), dtype=F64):
    """F per case from autograd under ``token-sum`` (dL/dlog π = -F·A per token)."""
    log_prob, old, adv, mask = case_tokens(names, dtype)
    _, grad, _ = call(loss_mode, log_prob, old, adv, mask, config)
    return dict(zip(names, (-grad / adv).flatten().tolist()))


def unclipped_batch(seed: int = 0):
    """A ragged batch (one row fully masked) where no token is clipped: δ inside [1-ε_l, 1+ε_h], or on the side PPO's
    min keeps (A>0 & δ<1-ε_l, A<0 & δ>1+ε_h, dual-clipped A<0 & δ>c included)."""
    gen = torch.Generator().manual_seed(seed)
    rows, width = 5, 8
    old = -torch.rand(rows, width, generator=gen, dtype=F64) * 4 - 0.05
    adv = torch.randn(rows, 1, generator=gen, dtype=F64).expand(rows, width).clone()
    u = torch.rand(rows, width, generator=gen, dtype=F64)
    inside = 1 - EL + 0.01 + u * (EL + EH - 0.02)
    kept = torch.where(adv > 0, 0.2 + u * 0.5, 1.4 + u * 14)  # δ up to 15.4: past c = 10 for some A<0 tokens
    ratio = torch.where(torch.rand(rows, width, generator=gen, dtype=F64) < 0.5, inside, kept)
    lengths = torch.tensor([8, 5, 0, 3, 7])
    mask = torch.arange(width).unsqueeze(0) < lengths.unsqueeze(1)
    return old + ratio.log(), old, adv, mask


# ---- registration and signature ------------------------------------------------------------------------------
def test_installed_verl_is_in_the_tested_range():
    assert require("verl") == verl.__version__
    with pytest.raises(UnsupportedVersion, match=r"verl 0\.10\.0 is installed"):
        require("verl", "0.10.0")


def test_the_three_losses_are_in_verls_registry_with_vanillas_signature():
    vanilla = inspect.signature(core_algos.compute_policy_loss_vanilla).parameters
    for mode in MODES:
        fn = core_algos.get_policy_loss_fn(mode)
        assert fn.__module__ == verl_plugin.__name__, mode
        ours = inspect.signature(fn).parameters
        assert [(p.name, p.kind, p.default) for p in ours.values()] == \
               [(p.name, p.kind, p.default) for p in vanilla.values()], mode


def test_importing_verl_registers_the_plugin_through_its_entry_point():
    """A fresh process (a Ray worker's situation) that imports verl and nothing of ours finds the losses."""
    if not any(ep.value == verl_plugin.__name__ for ep in metadata.entry_points(group="verl.plugins")):
        pytest.skip("klear-lib is not installed in this environment (pip install --no-deps -e .): no entry point")
    code = ("import sys, verl\nfrom verl.trainer.ppo.core_algos import POLICY_LOSS_REGISTRY as r\n"
            f"print(all(m in r for m in {MODES!r}), 'klear_lib.losses.policy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd="/")
    assert out.stdout.split() == ["True", "True"], out.stderr[-2000:]


# ---- where GPPO and PPO coincide: verl's vanilla, value and gradient -----------------------------------------
@pytest.mark.parametrize("agg", AGG_MODES)
@pytest.mark.parametrize("mode", MODES)
def test_without_clipped_tokens_the_loss_is_verls_vanilla(mode, agg):
    log_prob, old, adv, mask = unclipped_batch()
    config = actor_config(agg)
    ours = call(mode, log_prob, old, adv, mask, config)
    ref = call("vanilla", log_prob, old, adv, mask, config)
    assert ours[1].abs().sum() > 0 and ours[2]["actor/pg_clipfrac"] == 0.0
    assert ours[2]["actor/pg_clipfrac_lower"] > 0  # some A<0 tokens sit past c: dual-clipped in both
    assert torch.allclose(ours[0], ref[0], rtol=0, atol=1e-12), (ours[0], ref[0])
    assert torch.allclose(ours[1], ref[1], rtol=0, atol=1e-12)
    assert {k: ours[2][k] for k in ref[2]} == pytest.approx(ref[2], abs=1e-12)


@pytest.mark.parametrize("agg", AGG_MODES)
def test_global_batch_info_and_rollout_weights_as_vanilla(agg):
    """verl's data-parallel normalisers (``global_batch_info``) and rollout correction weights reach the loss."""
    log_prob, old, adv, mask = unclipped_batch(seed=1)
    config = actor_config(agg, loss_scale_factor=64)
    config.global_batch_info.update(dp_size=2, batch_num_tokens=int(mask.sum()) * 3, global_batch_size=12,
                                    loss_scale_factor=64)
    weights = torch.rand(mask.shape, generator=torch.Generator().manual_seed(2), dtype=F64) + 0.5
    ours = call("gppo", log_prob, old, adv, mask, config, weights)
    ref = call("vanilla", log_prob, old, adv, mask, config, weights)
    assert torch.allclose(ours[0], ref[0], rtol=0, atol=1e-12) and torch.allclose(ours[1], ref[1], rtol=0, atol=1e-12)


# ---- where they differ: the paper's table ----------------------------------------------------------------------
def test_clipped_tokens_follow_the_paper_table_and_the_dual_clip_comes_from_the_config():
    config = actor_config("token-sum")
    assert f_per_token("vanilla", config) == pytest.approx(VANILLA_F, abs=1e-12)  # the table's PPO column
    assert f_per_token("gppo", config) == pytest.approx(GPPO_F, abs=1e-12)
    assert f_per_token("gppo_only_high", config) == pytest.approx(dict(GPPO_F, neg_low=0.0), abs=1e-12)
    assert f_per_token("gppo_general", config) == pytest.approx(  # official defaults β_low 0.25, β_high 1
        dict(GPPO_F, neg_low=0.25 * (1 - EL)), abs=1e-12)
    betas = actor_config("token-sum", policy_loss=verl_plugin.GPPOPolicyLossConfig(gppo_beta_low=0.5,
                                                                                   gppo_beta_high=2.0))
    assert f_per_token("gppo_general", betas) == pytest.approx(
        dict(GPPO_F, neg_low=0.5 * (1 - EL), pos_high=2.0 * (1 + EH)), abs=1e-12)
    wide = actor_config("token-sum", clip_c=20.0)  # δ = 12 < c: the far A<0 token keeps F = δ in both
    assert f_per_token("gppo", wide)["neg_far"] == pytest.approx(12.0) == f_per_token("vanilla", wide)["neg_far"]


def test_forward_values_of_gppo_and_only_high_are_vanillas():
    """δ/sg(δ) = 1: the value is PPO's on every token, clipped or not; only the gradient changes."""
    log_prob, old, adv, mask = case_tokens()
    config = actor_config("token-mean")
    ref, _, ref_metrics = call("vanilla", log_prob, old, adv, mask, config)
    for mode in ("gppo", "gppo_only_high"):
        loss, _, metrics = call(mode, log_prob, old, adv, mask, config)
        assert loss.item() == ref.item(), mode
        assert {k: metrics[k] for k in ref_metrics} == pytest.approx(ref_metrics, abs=1e-12)
    assert ref_metrics["actor/pg_clipfrac"] == pytest.approx(2 / 7)  # pos_high, neg_low
    assert metrics["actor/gppo_clipped_grad_share"] > 0


# ---- the config lines of docs/verl.md through verl's own Hydra config -----------------------------------------
def doc_overrides() -> list[list[str]]:
    """The override lines of each ``verl.trainer.main_ppo`` block in docs/verl.md."""
    blocks = re.findall(r"```bash\n(python3 -m verl\.trainer\.main_ppo.*?)```", DOC.read_text(), flags=re.S)
    return [[ln.strip().rstrip("\\").strip() for ln in b.splitlines()[1:] if ln.strip()] for b in blocks]


def compose_actor(overrides: list[str]):
    """verl's ``ppo_trainer`` config with ``overrides``, as ``main_ppo`` composes it: (DictConfig, dataclass)."""
    config_dir = str(Path(verl.__file__).parent / "trainer" / "config")
    with initialize_config_dir(config_dir=config_dir, version_base=None):
        cfg = compose(config_name="ppo_trainer",
                      overrides=[*overrides, "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=1"])
    return cfg.actor_rollout_ref.actor, omega_conf_to_dataclass(cfg.actor_rollout_ref.actor)


def test_the_docs_config_lines_round_trip_through_verls_config():
    plain, general = doc_overrides()
    node, actor = compose_actor(plain)
    assert actor.policy_loss.loss_mode == "gppo" and actor.loss_agg_mode == "token-mean"
    assert verl_plugin.loss_hyper(actor, "gppo") == {"clip_low": 0.2, "clip_high": 0.28, "dual_clip": 10.0}
    node, actor = compose_actor(general)
    assert type(actor.policy_loss) is verl_plugin.GPPOPolicyLossConfig
    assert actor.policy_loss.loss_mode == "gppo_general"
    hyper = verl_plugin.loss_hyper(actor, "gppo_general")
    assert hyper == {"clip_low": 0.2, "clip_high": 0.28, "dual_clip": 10.0, "beta_low": 0.5, "beta_high": 1.0}
    assert verl_plugin.loss_hyper(node, "gppo_general") == hyper  # verl also accepts the DictConfig itself
    got = f_per_token(actor.policy_loss.loss_mode, actor)  # token-mean over 7 tokens: F/7
    assert {k: 7 * v for k, v in got.items()} == pytest.approx(dict(GPPO_F, neg_low=0.5 * (1 - EL)), abs=1e-12)


def test_the_beta_keys_need_the_plugins_policy_loss_config():
    """Without ``_target_`` the β keys are unknown to verl's ``PolicyLossConfig``: Hydra's ``+`` adds them, the
    conversion refuses them, before any training starts."""
    with pytest.raises(Exception, match="gppo_beta_low"):
        compose_actor(["actor_rollout_ref.actor.policy_loss.loss_mode=gppo_general",
                       "+actor_rollout_ref.actor.policy_loss.gppo_beta_low=0.5"])


# ---- the edges (issue 27) ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [torch.float32, F64])
@pytest.mark.parametrize("log_ratio", [25.0, 60.0, -25.0, -60.0])
def test_past_the_log_ratio_clamp_clipped_tokens_keep_the_paper_gradient(log_ratio, dtype):
    adv = torch.tensor([[1.0 if log_ratio > 0 else -1.0]], dtype=dtype)  # clipped high, or clipped low
    log_prob = torch.tensor([[-1.0 if log_ratio > 0 else -1.0 + log_ratio]], dtype=dtype)
    old = log_prob - log_ratio
    config = actor_config("token-sum", clip_c=3.0)  # verl's default c; the case A<0 here has δ < 1
    _, grad, _ = call("gppo", log_prob, old, adv, torch.ones_like(adv, dtype=torch.bool), config)
    assert (-grad / adv).item() == pytest.approx(1 + EH if log_ratio > 0 else 1 - EL, abs=1e-6)
    _, grad, _ = call("vanilla", log_prob, old, adv, torch.ones_like(adv, dtype=torch.bool), config)
    assert grad.item() == 0.0


@pytest.mark.parametrize("dtype", [torch.float32, F64])
def test_near_zero_probabilities_through_the_softmax(dtype):
    """A token the policy gives ~e^-100 with A<0: finite, and its logits get F·|A|·(e_t - π) with F = 1-ε_l."""
    logits = torch.tensor([[[-100.0] + [0.0] * 7]], dtype=dtype, requires_grad=True)
    log_prob = torch.log_softmax(logits, dim=-1)[..., 0]
    old = torch.full_like(log_prob, math.log(0.3))
    adv, mask = -torch.ones_like(old), torch.ones_like(old, dtype=torch.bool)
    loss, _ = core_algos.get_policy_loss_fn("gppo")(old, log_prob, adv, mask, "token-mean", actor_config())
    (grad,) = torch.autograd.grad(loss, logits)
    assert torch.isfinite(loss) and torch.isfinite(grad).all()
    assert grad.norm().item() == pytest.approx((1 - EL) * math.sqrt(1 + 1 / 7), rel=1e-5)


@pytest.mark.parametrize("agg", AGG_MODES)
@pytest.mark.parametrize("mode", MODES)
def test_empty_mask_gives_zero_loss_and_gradient(mode, agg):
    """verl's vanilla gives NaN here in every mode but token-sum (its local normaliser is 0/0); the plugin gives 0."""
    log_prob, old, adv, mask = case_tokens()
    loss, grad, metrics = call(mode, log_prob, old, adv, torch.zeros_like(mask), actor_config(agg))
    assert loss.item() == 0.0 and torch.equal(grad, torch.zeros_like(grad))
    assert all(math.isfinite(v) for v in metrics.values())


@pytest.mark.parametrize("agg", AGG_MODES)
@pytest.mark.parametrize("mode", MODES)
def test_zero_advantages_give_zero_loss_and_gradient(mode, agg):
    log_prob, old, _, mask = unclipped_batch()
    old = old + torch.tensor([0.0, 30.0, -30.0, 0.5, -0.5], dtype=F64).unsqueeze(1)  # rows past the clamp too
    loss, grad, metrics = call(mode, log_prob, old, torch.zeros_like(old), mask, actor_config(agg))
    assert loss.item() == 0.0 and torch.equal(grad, torch.zeros_like(grad))
    assert metrics["actor/pg_clipfrac"] == 0.0 and metrics["actor/gppo_clipped_grad_share"] == 0.0


def test_masked_out_infinite_logprobs_do_not_poison_the_loss():
    log_prob, old, adv, mask = case_tokens()
    pad = torch.full_like(log_prob, -math.inf)
    padded = call("gppo", torch.cat([log_prob, pad], 1), torch.cat([old, pad], 1), adv.expand(-1, 2),
                  torch.cat([mask, ~mask], 1), actor_config())
    plain = call("gppo", log_prob, old, adv, mask, actor_config())
    assert padded[0].item() == pytest.approx(plain[0].item())
    assert torch.isfinite(padded[1]).all() and torch.allclose(padded[1][:, :1], plain[1])


def test_no_config_is_a_clear_error():
    log_prob, old, adv, mask = case_tokens()
    with pytest.raises(ValueError, match="needs the actor config"):
        core_algos.get_policy_loss_fn("gppo")(old, log_prob, adv, mask, "token-mean", None)
