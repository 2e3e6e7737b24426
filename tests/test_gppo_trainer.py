"""GPPOTrainer on the ci micro Qwen3: equality with TRL's dapo, off-policy clipping, filtering, SFT loss,
run record, bit-reproducibility and resumption. Rewards come from a toy judge (not the benchmark judge)."""
from __future__ import annotations

import json
import math
import os
import re
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
import trl.trainer.grpo_trainer as grpo_module
from datasets import Dataset
from transformers import TrainerCallback
from trl import GRPOConfig, GRPOTrainer

from klear_lib import numerics
from klear_lib.configs import config_hash, get_config, recipe
from klear_lib.losses import loss_names
from klear_lib.losses.policy import sft_nll_loss
from klear_lib.tables import PROVENANCE
from klear_lib.training import RECORD_COLUMNS, GPPOConfig, GPPOTrainer, build_rl_trainer, gppo_args, select_groups
from klear_lib.training import gppo_trainer
from klear_lib.training import rewards as reward_adapters
from klear_lib.training.gppo_trainer import first_groups
from klear_lib.training.rl_rows import drop_long_prompts, training_view, validate_rl_rows
from klear_lib.training.run_record import VLLM_KEYS, RunRecord, read_rows, rl_keys


def toy_judge(response: str, truth: str) -> float:
    """+1 if the response contains the letter 'a', else -1; prompts whose truth is 'never' always score -1."""
    return -1.0 if truth == "never" else (1.0 if "a" in response else -1.0)


def toy_rows(n: int = 24) -> list[dict]:
    return [{"prompt": [{"role": "user", "content": f"What is {i}+{i}?"}], "data_source": "toy", "ability": "math",
             "reward_model": {"ground_truth": "never" if i % 3 == 0 else str(2 * i), "style": "rule"},
             "extra_info": {"id": f"toy-{i}", "split": "train", "tier": 1}} for i in range(n)]


@pytest.fixture
def toy_judge_installed(monkeypatch):
    monkeypatch.setattr(reward_adapters, "_default_judge", lambda kind, *_: toy_judge)


def run(tmp_path, model_path, name="run", callbacks=(), resume=False, n_rows=24, **cfg_overrides):
    """Build and train a ci-preset trainer; returns (trainer, record path)."""
    cfg = get_config("rl_math", "ci", **{"learning_rate": 0.05, **cfg_overrides})
    record = tmp_path / f"{name}.csv"
    trainer = build_rl_trainer(cfg, model_path, toy_rows(n_rows), "math", tmp_path / name, record)
    for callback in callbacks:
        trainer.add_callback(callback)
    trainer.train(resume_from_checkpoint=True if resume else None)
    return trainer, record


def params(trainer) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in trainer.model.named_parameters()}


# ---- equality with TRL's own dapo loss -------------------------------------------------------------------
def _trainer(cls, config_cls, model_path, tmp_path, **kw):
    from klear_lib.models import load

    model, tok = load(model_path)
    args = config_cls(output_dir=str(tmp_path / cls.__name__), use_cpu=True, bf16=False, report_to="none",
                      per_device_train_batch_size=4, num_generations=2, max_completion_length=6,
                      epsilon=0.2, epsilon_high=0.28, gradient_checkpointing=False,
                      **{"steps_per_generation": 2, **kw})
    data = Dataset.from_list([{"prompt": [{"role": "user", "content": "hi"}]}] * 4)
    trainer = cls(model, reward_funcs=[lambda completions, **k: [0.0] * len(completions)], args=args,
                  train_dataset=data, processing_class=tok)
    trainer.model.train()
    trainer.current_gradient_accumulation_steps = 1
    return trainer


def _batch(vocab: int, off_policy: bool):
    gen = torch.Generator().manual_seed(3)
    completion_mask = torch.tensor([[1, 1, 1, 1, 1, 1], [1, 1, 1, 0, 0, 0], [1, 1, 1, 1, 1, 0], [1, 1, 0, 0, 0, 0]])
    batch = {"prompt_ids": torch.randint(4, vocab, (4, 5), generator=gen), "prompt_mask": torch.ones(4, 5).long(),
             "completion_ids": torch.randint(4, vocab, (4, 6), generator=gen), "completion_mask": completion_mask,
             "advantages": torch.tensor([1.2, -0.7, 0.5, -1.5]),
             "num_items_in_batch": 3 * completion_mask.sum()}  # the generation batch holds more tokens
    if off_policy:  # old log-probs far enough from the current ones to hit all four clipping cases
        batch["old_per_token_logps"] = torch.randn(4, 6, generator=gen) * 0.6 - 4.6
    return batch


def _loss_and_grads(trainer, batch):
    trainer.model.zero_grad()
    loss = trainer._compute_loss(trainer.model, batch)
    loss.backward()
    return loss.detach(), {k: p.grad.clone() for k, p in trainer.model.named_parameters()}


@pytest.fixture
def trl_dapo(ci_model_path, tmp_path):
    return _trainer(GRPOTrainer, GRPOConfig, ci_model_path, tmp_path, loss_type="dapo")


@pytest.mark.parametrize("policy_loss", loss_names())
def test_on_policy_equals_trl_dapo(trl_dapo, ci_model_path, tmp_path, policy_loss):
    """Ratio ≡ 1: every loss gives TRL's dapo loss and gradients (docs/stack.md §1.5 regression test)."""
    ours = _trainer(GPPOTrainer, GPPOConfig, ci_model_path, tmp_path, loss_type=policy_loss, sft_alpha=0.0,
                    filter_zero_adv=False)
    batch = _batch(trl_dapo.model.config.vocab_size, off_policy=False)
    ref_loss, ref_grads = _loss_and_grads(trl_dapo, batch)
    loss, grads = _loss_and_grads(ours, batch)
    assert torch.allclose(loss, ref_loss, atol=1e-6)
    for name, grad in ref_grads.items():
        assert torch.allclose(grads[name], grad, atol=1e-6, rtol=1e-5), name


def test_off_policy_clip_higher_is_dapo_and_gppo_differs(trl_dapo, ci_model_path, tmp_path):
    batch = _batch(trl_dapo.model.config.vocab_size, off_policy=True)
    ref_loss, ref_grads = _loss_and_grads(trl_dapo, batch)
    results = {}
    for loss_name in ("clip_higher", "gppo"):
        trainer = _trainer(GPPOTrainer, GPPOConfig, ci_model_path, tmp_path, loss_type=loss_name, sft_alpha=0.0,
                           filter_zero_adv=False)
        results[loss_name] = _loss_and_grads(trainer, batch)
        diagnostics = {k: v[-1] for k, v in trainer._metrics["train"].items() if k.startswith("gppo/")}
        assert diagnostics["gppo/clip_frac"] > 0
    assert torch.allclose(results["clip_higher"][0], ref_loss, atol=1e-6)
    assert all(torch.allclose(results["clip_higher"][1][k], g, atol=1e-6) for k, g in ref_grads.items())
    assert torch.allclose(results["gppo"][0], ref_loss, atol=1e-6)  # same forward value (docs/paper.md §1.3)
    assert not all(torch.allclose(results["gppo"][1][k], g, atol=1e-6) for k, g in ref_grads.items())


def test_sft_term_adds_alpha_nll_on_correct_rollouts(ci_model_path, tmp_path):
    trainer = _trainer(GPPOTrainer, GPPOConfig, ci_model_path, tmp_path, sft_alpha=0.1, filter_zero_adv=False)
    batch = _batch(trainer.model.config.vocab_size, off_policy=False)
    batch["is_correct"] = torch.tensor([1.0, 0.0, 1.0, 0.0])
    with_sft = trainer._compute_loss(trainer.model, batch)
    trainer.args.sft_alpha = 0.0
    without = trainer._compute_loss(trainer.model, batch)
    logps, _ = trainer._policy_logps(trainer.model, batch)
    expected = 0.1 * sft_nll_loss(logps, batch["completion_mask"], batch["is_correct"])
    assert (with_sft - without).item() == pytest.approx(expected.item(), rel=1e-5)
    trainer.args.sft_alpha = 0.1
    with pytest.raises(KeyError, match="is_correct"):
        trainer._compute_loss(trainer.model, {k: v for k, v in batch.items() if k != "is_correct"})


# ---- the edges (issue 27): empty masks, zero advantages, log-ratios past ±20, near-zero probabilities --------
def _gppo_trainer(ci_model_path, tmp_path, policy_loss="gppo"):
    return _trainer(GPPOTrainer, GPPOConfig, ci_model_path, tmp_path, loss_type=policy_loss, sft_alpha=0.0,
                    filter_zero_adv=False)


@pytest.mark.parametrize("edge", ["empty_mask", "zero_advantages"])
def test_no_signal_gives_zero_loss_and_zero_gradients(ci_model_path, tmp_path, edge):
    trainer = _gppo_trainer(ci_model_path, tmp_path)
    batch = _batch(trainer.model.config.vocab_size, off_policy=True)
    if edge == "empty_mask":
        batch["completion_mask"] = torch.zeros_like(batch["completion_mask"])
        batch["num_items_in_batch"] = torch.tensor(0)
    else:
        batch["advantages"] = torch.zeros(4)
    loss, grads = _loss_and_grads(trainer, batch)
    assert loss.item() == 0.0 and all(torch.equal(g, torch.zeros_like(g)) for g in grads.values())
    assert all(math.isfinite(v[-1]) for v in trainer._metrics["train"].values())


def test_log_ratios_past_the_clamp_keep_the_paper_gradient_through_the_model(ci_model_path, tmp_path):
    """Old log-probs 30 nats away: A>0 tokens are clipped high (δ = e^30), A<0 ones clipped low (δ = e^-30). GPPO's
    parameter gradient must be that of -Σ F·A·log π / N with the table's F (1+ε_h, 1-ε_l); clip-higher's is 0."""
    trainer = _gppo_trainer(ci_model_path, tmp_path)
    batch = _batch(trainer.model.config.vocab_size, off_policy=False)
    logps, _ = trainer._policy_logps(trainer.model, batch)
    positive = (batch["advantages"] > 0).unsqueeze(1)
    batch["old_per_token_logps"] = torch.where(positive, logps - 30.0, logps + 30.0).detach()
    loss, grads = _loss_and_grads(trainer, batch)
    assert math.isfinite(loss.item())
    trainer.model.zero_grad()
    f = torch.where(positive, 1.28, 0.8)
    logps, _ = trainer._policy_logps(trainer.model, batch)
    reference = -(f * batch["advantages"].unsqueeze(1) * logps * batch["completion_mask"]).sum()
    accumulation = trainer.current_gradient_accumulation_steps / trainer.args.steps_per_generation
    normalizer = batch["num_items_in_batch"] * accumulation
    (reference / normalizer).backward()  # TRL's dapo normaliser, one process
    for name, p in trainer.model.named_parameters():
        assert torch.allclose(grads[name], p.grad, atol=1e-6, rtol=1e-4), name
    clip_higher = _gppo_trainer(ci_model_path, tmp_path, policy_loss="clip_higher")
    _, grads = _loss_and_grads(clip_higher, batch)
    assert all(torch.equal(g, torch.zeros_like(g)) for g in grads.values())


def test_near_zero_token_probabilities_stay_finite(ci_model_path, tmp_path):
    """Logits scaled 300x: most sampled tokens get log π in the hundreds below 0 (π far below float32's tiny), and
    the old policy is the unscaled one, so the log-ratios are far past the clamp too."""
    trainer = _gppo_trainer(ci_model_path, tmp_path)
    batch = _batch(trainer.model.config.vocab_size, off_policy=False)
    batch["old_per_token_logps"] = trainer._policy_logps(trainer.model, batch)[0].detach()
    with torch.no_grad():
        trainer.model.get_output_embeddings().weight.mul_(300.0)
    logps, _ = trainer._policy_logps(trainer.model, batch)
    assert logps[batch["completion_mask"].bool()].min() < -100
    loss, grads = _loss_and_grads(trainer, batch)
    assert math.isfinite(loss.item()) and all(torch.isfinite(g).all() for g in grads.values())
    assert any(g.abs().sum() > 0 for g in grads.values())


# ---- zero-advantage filtering and oversampling -----------------------------------------------------------
def test_select_groups_keeps_informative_first_and_pads_at_zero_weight():
    metric = torch.tensor([1., 1., 0., 1., -1., -1., 2., 0.])  # groups of 2: [1,1] [0,1] [-1,-1] [2,0]
    index, weight, informative = select_groups(metric, 2, 3)
    assert informative.tolist() == [False, True, False, True]
    assert index.tolist() == [2, 3, 6, 7, 0, 1] and weight.tolist() == [1, 1, 1, 1, 0, 0]
    index, weight, _ = select_groups(metric, 2, 2, drop_zero_std=False)
    assert index.tolist() == [0, 1, 2, 3] and weight.tolist() == [1, 1, 1, 1]
    with pytest.raises(ValueError, match="groups generated"):
        select_groups(metric, 2, 5)


def test_the_filter_over_ranks_keeps_the_first_informative_groups_of_the_whole_batch():
    """docs/paper.md §2.4 filters the whole batch; filtered per rank, a rank short of informative groups trained
    fillers while others dropped informative ones: 256 groups a step, half informative, 128 kept."""
    generator = torch.Generator().manual_seed(0)
    steps = [torch.rand(256, generator=generator) < 0.5 for _ in range(200)]
    for world in (1, 8, 128):
        n_keep = 128 // world
        per_rank = sum(sum(min(int(f.sum()), n_keep) for f in s.reshape(world, -1)) for s in steps) / len(steps)
        overall = sum(gppo_trainer.global_plan(s, world, n_keep)[1].sum().item() for s in steps) / len(steps)
        assert overall == sum(min(int(s.sum()), 128) for s in steps) / len(steps) > 125  # what one rank keeps
        assert per_rank < 100 if world == 128 else per_rank <= overall
    plan, weight = gppo_trainer.global_plan(torch.tensor([True, True, True, False, False, True]), 2, 2)
    assert plan.tolist() == [[0, 1], [2, 5]] and weight.all()  # rank 0's third informative group goes to rank 1


def test_ranks_exchange_the_rows_of_the_groups_they_train():
    """Two ranks' batches (groups of 2, different padded widths) -> the rows rank 1 trains under the plan."""
    def rank_batch(first_id, prompt_width, completion_width):
        n = 6  # 3 groups of 2 rollouts
        ids = torch.arange(first_id, first_id + n)
        return {"prompt_ids": ids[:, None].expand(n, prompt_width), "prompt_mask": torch.ones(n, prompt_width),
                "completion_ids": ids[:, None].expand(n, completion_width),
                "completion_mask": torch.ones(n, completion_width), "advantages": ids.float(),
                "num_items_in_batch": torch.tensor(0.0)}
    batches = [rank_batch(0, 3, 4), rank_batch(100, 2, 5)]
    plan, _ = gppo_trainer.global_plan(torch.tensor([True, False, True, True, False, False]), 2, 3)
    flat, owned = plan.flatten(), 3
    pieces = [gppo_trainer.take_rows(b, gppo_trainer.group_rows(flat[flat // owned == r] % owned, 2))
              for r, b in enumerate(batches)]
    batch = gppo_trainer.concat_padded(pieces, pad_id=-1)
    rank1 = gppo_trainer.take_rows(batch, gppo_trainer.group_rows(gppo_trainer.arrival(flat, owned)[3:], 2))
    assert plan.tolist() == [[0, 2, 3], [1, 4, 5]]  # rank 1 trains rank 0's group 1 and its own groups 1, 2
    assert rank1["advantages"].tolist() == [2, 3, 102, 103, 104, 105]
    assert rank1["prompt_ids"][0].tolist() == [2, 2, 2] and rank1["prompt_ids"][2].tolist() == [-1, 102, 102]
    assert rank1["completion_mask"][0].tolist() == [1, 1, 1, 1, 0] and rank1["completion_ids"][0, -1] == -1
    assert rank1["prompt_mask"][2].tolist() == [0, 1, 1]


def test_filter_counts_only_kept_tokens(ci_model_path, tmp_path):
    """TRL's normaliser num_items_in_batch must count only the tokens of kept groups."""
    trainer = _trainer(GPPOTrainer, GPPOConfig, ci_model_path, tmp_path, filter_zero_adv=True,
                       steps_per_generation=1)
    rewards = torch.tensor([1., 1., 1., -1., -1., -1., 1., -1.])  # groups of 2: zero, info, zero, info
    lengths = torch.tensor([6, 5, 4, 3, 2, 1, 6, 2])
    mask = (torch.arange(6).unsqueeze(0) < lengths.unsqueeze(1)).long()
    out = {"prompt_ids": torch.zeros(8, 2).long(), "prompt_mask": torch.ones(8, 2).long(),
           "completion_ids": torch.zeros(8, 6).long(), "completion_mask": mask, "advantages": torch.zeros(8),
           "num_items_in_batch": mask.sum()}
    trainer._last_rewards = rewards
    kept = trainer._filter_groups(out, rewards)  # 4 rollouts per device and step -> 2 groups kept
    assert kept["completion_mask"].sum(1).tolist() == [4, 3, 6, 2]
    assert kept["num_items_in_batch"].item() == 4 + 3 + 6 + 2
    assert trainer._gen_stats["kept_group_frac"] == 0.5 and trainer._gen_stats["trained_group_frac"] == 1.0
    rewards[2:4] = 1.0  # now only one informative group: the second slot is a filler at weight 0
    kept = trainer._filter_groups(out, rewards)
    assert kept["loss_weight"].tolist() == [1, 1, 0, 0] and kept["num_items_in_batch"].item() == 6 + 2


def test_first_groups_takes_the_first_informative_in_order():
    informative = torch.tensor([False, True, True, False, True])
    assert first_groups(informative, 2).tolist() == [False, True, True, False, False]
    assert first_groups(informative, 9).tolist() == informative.tolist()  # fewer survive: all of them


def _filter_input(rewards: torch.Tensor, width: int = 6) -> dict:
    lengths = torch.arange(len(rewards)) % width + 1
    mask = (torch.arange(width).unsqueeze(0) < lengths.unsqueeze(1)).long()
    return {"prompt_ids": torch.zeros(len(rewards), 2).long(), "prompt_mask": torch.ones(len(rewards), 2).long(),
            "completion_ids": torch.zeros(len(rewards), width).long(), "completion_mask": mask,
            "advantages": torch.zeros(len(rewards)), "num_items_in_batch": mask.sum()}


@pytest.mark.parametrize("keep,rank1_weight,trained", [(1, [0, 0, 0, 0], 1.0), (2, [0, 0, 1, 1], 1.0),
                                                        (3, [0, 0, 1, 1], 2 / 3)])
def test_padded_layout_picks_the_first_informative_groups_over_all_ranks(ci_model_path, tmp_path, monkeypatch,
                                                                         keep, rank1_weight, trained):
    """keep_groups (RLConfig.padded): rows stay on their rank; the groups chosen are the first informative ones
    of the gathered batch. Two ranks holding the same groups are simulated; this one is rank 1."""
    trainer = _trainer(GPPOTrainer, GPPOConfig, ci_model_path, tmp_path, steps_per_generation=1, keep_groups=keep)
    monkeypatch.setattr(trainer.accelerator, "gather", lambda t: torch.cat([t.reshape(-1), t.reshape(-1)]))
    monkeypatch.setattr(type(trainer.accelerator), "process_index", property(lambda self: 1))
    rewards = torch.tensor([1., 1., 1., -1.])  # groups of 2: zero std, informative -> over ranks [F, T, F, T]
    trainer._last_rewards = rewards
    out = trainer._filter_groups(_filter_input(rewards), rewards)
    assert out["completion_mask"].size(0) == 4 and out["loss_weight"].tolist() == rank1_weight  # nothing dropped
    assert out["num_items_in_batch"].item() == 2 * int((out["completion_mask"].sum(1) * out["loss_weight"]).sum())
    assert trainer._gen_stats["trained_group_frac"] == pytest.approx(trained)
    assert trainer._gen_stats["kept_group_frac"] == 0.5


def test_padded_layout_weighs_the_sft_term_as_one_slot_a_rollout(ci_model_path, tmp_path):
    """4 slots a step, 1 group of 2 trained: the micro-batch mean of the SFT term is diluted 2x by fillers."""
    plain = _trainer(GPPOTrainer, GPPOConfig, ci_model_path, tmp_path, steps_per_generation=1)
    padded = _trainer(GPPOTrainer, GPPOConfig, ci_model_path, tmp_path, steps_per_generation=1, keep_groups=1)
    assert (plain._slot_share("train"), padded._slot_share("train"), padded._slot_share("eval")) == (1.0, 2.0, 1.0)
    logps, mask = torch.full((2, 3), -1.0), torch.ones(2, 3)
    inputs = {"is_correct": torch.tensor([1.0, 0.0])}
    assert padded._sft_loss(logps, mask, inputs, "train") == 2 * plain._sft_loss(logps, mask, inputs, "train")
    with pytest.raises(ValueError, match="oversample=1"):
        GPPOConfig(output_dir=str(tmp_path), use_cpu=True, bf16=False, keep_groups=4, oversample=2)


def test_oversampling_generates_twice_and_filters(ci_model_path, tmp_path, toy_judge_installed, monkeypatch):
    seen = []
    judge = lambda r, t: seen.append(t) or toy_judge(r, t)  # noqa: E731
    monkeypatch.setattr(reward_adapters, "_default_judge", lambda kind, *_: judge)
    trainer, record = run(tmp_path, ci_model_path, max_steps=1)
    cfg = get_config("rl_math", "ci")
    assert len(seen) == cfg.oversample * cfg.prompts_per_step * cfg.num_generations
    rows = read_rows(record)
    assert len(rows) == cfg.updates_per_step and 0 < float(rows[0]["kept_group_frac"]) < 1


# ---- end-to-end runs: parameters move, ratio leaves 1, record, determinism, resume -----------------------
def test_run_trains_off_policy_and_writes_the_record(ci_model_path, tmp_path, toy_judge_installed):
    from klear_lib.models import load

    start = dict(load(ci_model_path)[0].named_parameters())
    trainer, record = run(tmp_path, ci_model_path)
    assert all(not torch.equal(start[k], v) for k, v in trainer.model.named_parameters())
    rows = read_rows(record)
    assert list(rows[0]) == RECORD_COLUMNS
    cfg = get_config("rl_math", "ci")
    assert {r["config_hash"] for r in rows} == {config_hash(get_config("rl_math", "ci", learning_rate=0.05))}
    assert [int(r["step"]) for r in rows] == list(range(1, cfg.max_steps * cfg.updates_per_step + 1))
    assert [int(r["rl_step"]) for r in rows] == [1, 1, 2, 2]
    second_updates = [r for r in rows if int(r["step"]) % cfg.updates_per_step == 0]
    assert any(float(r["clip_frac"]) > 0 for r in second_updates), "off-policy updates must clip some tokens"
    assert all(float(r["clip_frac"]) == 0 for r in rows if int(r["step"]) % cfg.updates_per_step == 1)
    assert all(math.isfinite(float(r["grad_norm"])) and r["reward_mean"] != "" for r in rows)
    # correct rollouts (reward == 1.0) feed the SFT term; none correct -> no SFT loss
    assert any(float(r["sft_loss"]) > 0 for r in rows)
    assert all(float(r["sft_loss"]) == 0 for r in rows if float(r["accuracy"]) == 0)


def test_two_runs_are_bit_identical(ci_model_path, tmp_path, toy_judge_installed):
    first, record_a = run(tmp_path, ci_model_path, name="a")
    second, record_b = run(tmp_path, ci_model_path, name="b")
    assert record_a.read_text() == record_b.read_text()
    assert all(torch.equal(v, params(second)[k]) for k, v in params(first).items())


class Crash(TrainerCallback):
    """Simulates a killed job: raises after the record row of ``at_step`` is written (not yet checkpointed)."""

    def __init__(self, at_step: int):
        self.at_step = at_step

    def on_log(self, args, state, control, logs=None, **kwargs):
        if state.global_step == self.at_step:
            raise KeyboardInterrupt("simulated crash")


RESUME_KW = dict(max_steps=3, n_rows=16, learning_rate=0.005)  # small LR: the policy stays stochastic


@pytest.fixture(scope="module")
def uninterrupted(ci_model_path, tmp_path_factory):
    """The reference run of the resume tests, trained once: (trainer, record path)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(reward_adapters, "_default_judge", lambda kind, *_: toy_judge)
        return run(tmp_path_factory.mktemp("uninterrupted"), ci_model_path, name="full", **RESUME_KW)


@pytest.mark.parametrize("crash_at", [3, 5])
def test_killed_run_resumes_to_the_same_end(uninterrupted, ci_model_path, tmp_path, toy_judge_installed, crash_at):
    """16 prompts = 2 RL steps per epoch: a crash at update 3 resumes mid-epoch from checkpoint-2, one at
    update 5 resumes from checkpoint-4 into the second epoch (prompt order re-seeded per epoch)."""
    full, record_full = uninterrupted
    with pytest.raises(KeyboardInterrupt):
        run(tmp_path, ci_model_path, name="killed", callbacks=[Crash(crash_at)], **RESUME_KW)
    assert len(read_rows(tmp_path / "killed.csv")) == crash_at
    resumed, record_resumed = run(tmp_path, ci_model_path, name="killed", resume=True, **RESUME_KW)
    assert record_resumed.read_text() == record_full.read_text()
    assert all(torch.equal(v, params(resumed)[k]) for k, v in params(full).items())


# ---- TRL's vLLM importance-sampling metrics in the run record ---------------------------------------------
def test_the_vllm_keys_are_the_sampling_metrics_trl_logs():
    logged = set(re.findall(r'_metrics\[mode\]\["(sampling/[a-z_/]+)"\]', Path(grpo_module.__file__).read_text()))
    assert set(VLLM_KEYS.values()) == logged


def test_vllm_correction_adds_trls_sampling_metrics_to_the_record(tmp_path):
    """TRL logs sampling/* with the first update of an RL step; the step's second update leaves them empty."""
    record = RunRecord(tmp_path / "r.csv", 2, "h", rl_keys(vllm_correction=True))
    state = SimpleNamespace(global_step=0, is_world_process_zero=True)
    record.on_train_begin(None, state, None)
    sampling = {key: 0.5 + k / 10 for k, key in enumerate(VLLM_KEYS.values())}
    for step, logs in ((1, {"loss": 0.3, **sampling}), (2, {"loss": 0.2})):
        record.on_log(None, SimpleNamespace(global_step=step, is_world_process_zero=True), None, logs=logs)
    rows = read_rows(tmp_path / "r.csv")
    assert list(rows[0]) == [*RECORD_COLUMNS[:-1 - len(PROVENANCE)], *VLLM_KEYS, "config_hash", *PROVENANCE]
    assert [rows[0][col] for col in VLLM_KEYS] == ["0.5", "0.6", "0.7", "0.8", "0.9"]
    assert [rows[1][col] for col in VLLM_KEYS] == [""] * 5 and rows[1]["loss"] == "0.2"


class Built(Exception):
    """Raised where build_rl_trainer creates the trainer: the test has its callbacks."""


@pytest.mark.parametrize("use_vllm", [False, True])
def test_the_record_has_vllm_columns_only_when_rollouts_come_from_vllm(ci_model_path, tmp_path, monkeypatch,
                                                                         use_vllm):
    def spy(*args, callbacks, **kwargs):
        raise Built([c for c in callbacks if isinstance(c, RunRecord)])
    monkeypatch.setattr(gppo_trainer, "GPPOTrainer", spy)
    cfg = get_config("rl_math", "ci", use_vllm=use_vllm)
    with pytest.raises(Built) as built:
        build_rl_trainer(cfg, ci_model_path, toy_rows(4), "math", tmp_path / "out", tmp_path / "r.csv")
    (record,) = built.value.args[0]
    today = ["step", "rl_step", "reward_mean", "accuracy", "kept_group_frac", "trained_group_frac",
             "response_length", "entropy", "grad_norm", "learning_rate", "loss", "policy_loss", "sft_loss",
             "frac_adv_pos_ratio_high", "frac_adv_pos_ratio_low", "frac_adv_neg_ratio_low", "frac_adv_neg_ratio_high",
             "clip_frac", "clipped_grad_share", "max_fa_clipped", "max_fa_rest", "clipped_logp_grad_norm",
             "logp_grad_norm", "ratio_mean", "config_hash"]  # the columns of the stored records (vLLM off)
    assert record.fields == ([*today[:-1], *VLLM_KEYS, "config_hash"] if use_vllm else today) + list(PROVENANCE)


# ---- config mapping and reward adapters ------------------------------------------------------------------
def test_full_preset_at_256_ranks_maps_to_padded_updates(tmp_path, monkeypatch):
    """Math at 256 ranks (the official cluster): 1 rollout a rank an update, the 2x-oversampled batch one group
    a rank, 128 groups trained; GRPOConfig reads the world size from accelerate."""
    monkeypatch.setattr(GRPOConfig, "world_size", property(lambda self: 256), raising=False)
    args = gppo_args(get_config("rl_math", "full", world_size=256), tmp_path, bf16=False, use_cpu=True,
                     use_vllm=False, deepspeed=None)
    assert (args.per_device_train_batch_size, args.gradient_accumulation_steps, args.steps_per_generation) == (1, 1, 8)
    assert (args.oversample, args.keep_groups, args.generation_batch_size) == (1, 128, 256 * 8)


def test_full_preset_maps_to_the_paper_recipe(tmp_path):
    cfg = get_config("rl_math", "full", world_size=32)
    args = gppo_args(cfg, tmp_path, bf16=False, use_cpu=True, use_vllm=False, deepspeed=None)
    assert args.per_device_train_batch_size * 32 * args.gradient_accumulation_steps == 16 * 8  # mini-batch
    assert args.steps_per_generation // args.gradient_accumulation_steps == 8  # updates per step (docs/paper.md §2.4)
    assert (args.loss_type, args.clip_low, args.clip_high, args.beta, args.sft_alpha) == ("gppo", 0.2, 0.28,
                                                                                            0.0, 0.1)
    assert args.oversample == 2 and args.filter_zero_adv and args.learning_rate == 1e-6
    assert args.lr_scheduler_type == "constant_with_warmup" and args.warmup_steps == 80
    with pytest.raises(ValueError, match="does not split"):
        get_config("rl_math", "full", world_size=48)


def test_rl_checkpoints_are_rotated_as_sfts(tmp_path):
    """A checkpoint every 5 RL steps over 500, each with ZeRO-3 optimizer state, fills any disk unless rotated;
    the two newest are kept (as SFT), with the optimizer state a resume needs. At tiny the RL ablations evaluate
    every checkpoint (held-out curves), so all stay."""
    for stage in ("rl_math", "rl_code"):
        args = gppo_args(get_config(stage, "full"), tmp_path, bf16=False, use_cpu=True, use_vllm=False, deepspeed=None)
        assert args.save_total_limit == 2 and not args.save_only_model
    assert gppo_args(get_config("rl_math", "tiny"), tmp_path).save_total_limit is None


@pytest.mark.parametrize("stage,world", [("rl_math", 1), ("rl_math", 128), ("rl_code", 64), ("rl_code", 128)])
def test_every_layout_get_config_accepts_holds_whole_groups_in_the_trainer(tmp_path, stage, world):
    """The trainer's own whole-group check on the TRL arguments of every layout the config accepts; code RL at 256
    ranks (4 rollouts a rank a step, half a group) is refused by get_config, not at the trainer's start."""
    GPPOTrainer._check_whole_groups(gppo_args(get_config(stage, "full", world_size=world), tmp_path, bf16=False,
                                              use_cpu=True, use_vllm=False, deepspeed=None))
    with pytest.raises(ValueError, match=r"rl_code \(full\).* 4 rollouts a rank a step.*whole groups of 8"):
        get_config("rl_code", "full", world_size=256)


def test_colocated_engine_holds_the_oversampled_batch_at_once(tmp_path, monkeypatch):
    """TRL sizes vLLM's max_num_seqs from the per-device batch; GPPOTrainer generates oversample x that, which
    would run in two waves: the engine is built for every rollout of a rank's step."""
    built = {}
    monkeypatch.setattr(gppo_trainer.vllm_generation, "LLM",
                        lambda **kw: built.update(kw, bind=os.environ.get("VLLM_CPU_OMP_THREADS_BIND")))
    monkeypatch.delenv("VLLM_CPU_OMP_THREADS_BIND", raising=False)
    for name in numerics.VLLM_PROBES:  # the cap answers them False; restored for the rest of the session
        if hasattr(torch.cpu, name):
            monkeypatch.setattr(torch.cpu, name, getattr(torch.cpu, name))
    args = gppo_args(get_config("rl_math", "ci"), tmp_path, use_vllm=True, vllm_tensor_parallel_size=2)
    with gppo_trainer.colocated_llm_args(args):
        gppo_trainer.vllm_generation.LLM(model="m", max_num_seqs=args.per_device_train_batch_size * 2
                                         * args.steps_per_generation)  # what TRL 1.16.0 passes
    # ci: 4 prompts x 8 rollouts, 2x oversampled, from each of the 2 ranks of the tensor-parallel group
    assert built["max_num_seqs"] == 4 * 8 * 2 * 2 == gppo_trainer.rollouts_per_engine(args)
    # under the pinned numerics mode the engine binds as many threads as the run has, and only while it starts
    pinned = numerics.mode() == "pinned"
    assert built["bind"] == (numerics.vllm_threads_bind(torch.get_num_threads()) if pinned else None)
    assert "VLLM_CPU_OMP_THREADS_BIND" not in os.environ
    assert not pinned or not any(getattr(torch.cpu, name)() for name in numerics.VLLM_PROBES
                                 if hasattr(torch.cpu, name))  # vLLM then loads its AVX2 kernels


def test_a_colocated_engine_on_another_kernel_library_is_refused_under_the_pinned_mode(monkeypatch):
    """An engine whose vLLM kernels were imported before the cap (another engine earlier in the process) would
    round as the CPU chose, not as the mode promises: the trainer stops, naming the library."""
    monkeypatch.setattr(numerics, "mode", lambda: "pinned")
    monkeypatch.setattr(numerics, "vllm_kernel_libraries", lambda: ["_C"])
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    trainer = SimpleNamespace(accelerator=SimpleNamespace(process_index=0), vllm_generation=SimpleNamespace(),
                              args=SimpleNamespace(vllm_tensor_parallel_size=1, seed=0))
    with pytest.raises(RuntimeError, match=r"runs on \['_C'\] under the pinned numerics mode, not _C_AVX2"):
        GPPOTrainer._fit_colocated_vllm(trainer)


def test_the_full_preset_stops_at_once_in_a_notebook_and_tp2_on_one_gpu(tmp_path, monkeypatch):
    """PRESET=full in a notebook built the full world (GBs) and then raised KeyError (no 'sft' split); ZeRO-3 and
    vLLM TP = 2 cannot start in one kernel either. Both stop before anything is built or loaded, saying why."""
    from klear_lib import pipeline
    from klear_lib.data import store

    monkeypatch.setattr(store, "ensure_world", lambda *a: pytest.fail("the full world was built"))
    for call in (lambda: store.load_split("sft", recipe("full")), lambda: pipeline.sft_stage(recipe("full")),
                 lambda: pipeline.rl_stage(recipe("full"), "ckpt", "math")):
        with pytest.raises(RuntimeError, match="preset 'full' runs through scripts/launch_.*in a notebook use 'gpu'"):
            call()
    args = gppo_args(get_config("rl_math", "full"), tmp_path, bf16=False, use_cpu=True, deepspeed=None)
    with pytest.raises(ValueError, match="vllm_tensor_parallel_size=2 .* this launch has 1"):
        gppo_trainer.check_colocated_tp(args, 1)
    gppo_trainer.check_colocated_tp(args, 2)


def test_a_gpu_config_without_cuda_stops_before_loading_and_names_the_driver(tmp_path):
    """On a CUDA 12 node the CUDA 13 torch sees no GPU; the RL stage says so instead of failing later."""
    if torch.cuda.is_available():
        pytest.skip("CUDA present: the refusal does not apply")
    with pytest.raises(RuntimeError, match=r"CUDA build .* sees none: CUDA 13 builds need an R580\+ NVIDIA driver"):
        build_rl_trainer(get_config("rl_math", "gpu"), "no-model-loaded", toy_rows(), output_dir=tmp_path)


def test_config_rejects_bad_choices(tmp_path):
    with pytest.raises(ValueError, match="loss_type"):
        GPPOConfig(output_dir=str(tmp_path), use_cpu=True, bf16=False, loss_type="ppo")
    with pytest.raises(ValueError, match="dual_clip"):
        GPPOConfig(output_dir=str(tmp_path), use_cpu=True, bf16=False, loss_type="cispo", dual_clip=10.0)
    with pytest.raises(ValueError, match="GPPOTrainer does not support"):
        GPPOTrainer("unused", [], args=GPPOConfig(output_dir=str(tmp_path), use_cpu=True, bf16=False, beta=0.1))


def test_reward_adapters_read_the_verl_schema():
    math_fn = reward_adapters.make_reward_func("math", judge=toy_judge)
    completions = [[{"role": "assistant", "content": "a"}], "bbb"]
    truth = [{"ground_truth": "2", "style": "rule"}] * 2
    assert math_fn(completions=completions, reward_model=truth) == [1.0, -1.0]
    with pytest.raises(ValueError, match="row x7: field reward_model.ground_truth"):
        math_fn(completions=["a"], reward_model=[{"style": "rule"}], extra_info=[{"id": "x7"}])
    calls = []
    code_fn = reward_adapters.make_reward_func(
        "code", max_tests=3, judge=lambda r, tests, mode, max_tests, seed: calls.append((tests, seed)) or 0.5)
    gt = {"ground_truth": '{"inputs": ["1\\n"], "outputs": ["2\\n"]}', "style": "rule"}
    assert code_fn(completions=["x", "y"], reward_model=[gt, gt], extra_info=[{"id": 1}, {"id": 1}]) == [0.5, 0.5]
    assert calls[0][0] == [{"input": "1\n", "output": "2\n"}] and calls[0][1] != calls[1][1]
    with pytest.raises(ValueError, match="not JSON"):
        reward_adapters.code_tests("nope", "c1")


def test_code_reward_judges_in_parallel_and_keeps_the_order():
    import time

    def slow_judge(response, tests, mode, max_tests, seed):
        time.sleep(0.02 * (5 - len(response)))  # later completions finish first
        return len(response)
    gt = {"ground_truth": '{"inputs": ["1\\n"], "outputs": ["2\\n"]}', "style": "rule"}
    code_fn = reward_adapters.code_reward_func(judge=slow_judge, workers=3)
    assert code_fn(completions=["a", "bb", "ccc", "dddd"], reward_model=[gt] * 4) == [1.0, 2.0, 3.0, 4.0]


def test_reward_adapters_apply_the_tag_shaping():
    truth = [{"ground_truth": "12", "style": "rule"}]
    unclosed = ["<think>\n3*4=12 \\boxed{12}"]
    assert reward_adapters.make_reward_func("math")(completions=unclosed, reward_model=truth) == [-0.5]
    binary = reward_adapters.make_reward_func("math", tag_shaping="binary")
    assert binary(completions=unclosed, reward_model=truth) == [-1.0]
    assert binary(completions=["<think>\nok\n</think>\n\\boxed{12}"], reward_model=truth) == [1.0]
    gt = [{"ground_truth": '{"inputs": ["1\\n"], "outputs": ["2\\n"]}', "style": "rule"}]
    code = reward_adapters.make_reward_func("code", tag_shaping="binary")
    assert code(completions=["```python\nprint(2)\n```"], reward_model=gt) == [-1.0]  # no tags: no sandbox run
    with pytest.raises(ValueError, match="tag_shaping"):
        reward_adapters.make_reward_func("code", tag_shaping="lenient")


def test_the_random_reward_ignores_the_completion_and_is_reproducible_from_its_seed():
    from types import SimpleNamespace

    from klear_lib.configs import config_hash, get_config

    truth = [{"ground_truth": "12", "style": "rule"}] * 64
    info = [{"id": f"m{k // 8}"} for k in range(64)]  # 8 prompts x 8 rollouts
    right, wrong = ["<think>ok</think> \\boxed{12}"] * 64, ["no answer"] * 64
    draw = reward_adapters.make_reward_func("math", tag_shaping="binary", seed=3, random=True)
    state = SimpleNamespace(global_step=5)
    first = draw(completions=right, reward_model=truth, extra_info=info, trainer_state=state)
    assert first == draw(completions=wrong, reward_model=truth, extra_info=info, trainer_state=state)  # blind
    assert first == reward_adapters.make_reward_func("math", seed=3, random=True)(
        completions=right, reward_model=truth, extra_info=info, trainer_state=state)  # reproducible
    assert set(first) == {-1.0, 1.0} and 16 < first.count(1.0) < 48  # the binary reward's support, fair odds
    other = reward_adapters.make_reward_func("math", seed=4, random=True)
    assert other(completions=right, reward_model=truth, extra_info=info, trainer_state=state) != first
    later = draw(completions=right, reward_model=truth, extra_info=info, trainer_state=SimpleNamespace(global_step=6))
    assert later != first
    code = reward_adapters.make_reward_func("code", seed=3, random=True)
    assert code(completions=wrong, reward_model=truth, extra_info=info, trainer_state=state) == first
    cfg = get_config("rl_math", "tiny")  # the default (off) keeps every stored hash
    assert not cfg.random_reward and config_hash(cfg) != config_hash(get_config("rl_math", "tiny", random_reward=True))
    assert not cfg.random_format  # added: at False left out of the hash
    blind = get_config("rl_math", "tiny", random_reward=True)
    assert config_hash(blind) != config_hash(get_config("rl_math", "tiny", random_reward=True, random_format=True))
    with pytest.raises(ValueError, match="random_reward=True"):
        get_config("rl_math", "tiny", random_format=True)
    with pytest.raises(ValueError, match="needs random=True"):
        reward_adapters.make_reward_func("math", random_format=True)


def test_the_format_keeping_random_reward_keeps_only_the_task_rewards_format_scores():
    """The "format" control: a response the task's reward penalises for its form keeps that score; every other one
    draws the blind control's coin (same seed, same draw), so only the correctness signal is gone."""
    from types import SimpleNamespace

    state, info = SimpleNamespace(global_step=2), [{"id": f"m{k // 4}"} for k in range(16)]
    truth = [{"ground_truth": "7", "style": "rule"}] * 16
    texts = ["<think>a</think> \\boxed{7}", "<think>a</think> \\boxed{8}", "no tags", "<think>a"] * 4
    blind = reward_adapters.make_reward_func("math", tag_shaping="binary", seed=5, random=True)(
        completions=texts, reward_model=truth, extra_info=info, trainer_state=state)
    kept = reward_adapters.make_reward_func("math", tag_shaping="official", seed=5, random=True, random_format=True)(
        completions=texts, reward_model=truth, extra_info=info, trainer_state=state)
    assert kept[0::4] == blind[0::4] and kept[1::4] == blind[1::4]  # well formed, right or wrong: the same coin
    assert kept[2::4] == [-0.5] * 4 and kept[3::4] == [-0.5] * 4  # the official shaping's missing </think>
    assert set(blind[0::4] + blind[1::4]) == {-1.0, 1.0}
    gt = {"ground_truth": json.dumps({"inputs": ["1\n"], "outputs": ["1\n"]}), "style": "rule"}
    code = ["<think>a</think>\n```python\nprint(input())\n```", "<think>a</think> no program", "```python\nx\n```"]
    coin = reward_adapters.make_reward_func("code", tag_shaping="binary", seed=5, random=True)(
        completions=code, reward_model=[gt] * 3, trainer_state=state)
    form = reward_adapters.make_reward_func("code", tag_shaping="binary", seed=5, random=True, random_format=True)(
        completions=code, reward_model=[gt] * 3, trainer_state=state)
    assert form == [coin[0], -1.0, -1.0]  # a program to run draws; no program, or no tags, keeps its format score


def test_a_template_that_opens_think_is_scored_with_the_tag_put_back():
    """DeepSeek-R1-distilled templates end the generation prompt with <think>: the completion holds only </think>,
    which scored -1 (missing <think>) on every rollout, so every group was filtered and nothing trained."""
    from klear_lib.models import build_tokenizer

    tokenizer = build_tokenizer()
    assert not reward_adapters.template_opens_think(tokenizer)  # the kit's models write <think> themselves
    tokenizer.chat_template = ("{% for m in messages %}<|user|>{{ m['content'] }}{% endfor %}"
                               "{% if add_generation_prompt %}<|assistant|><think>\n{% endif %}")
    assert reward_adapters.template_opens_think(tokenizer)
    truth = [{"ground_truth": "12", "style": "rule"}] * 2
    completions = ["3*4=12\n</think>\n\\boxed{12}", "<think>3*4=12</think> \\boxed{12}"]
    opened = reward_adapters.make_reward_func("math", tag_shaping="binary", think_opened=True)
    assert opened(completions=completions, reward_model=truth) == [1.0, 1.0]
    as_is = reward_adapters.make_reward_func("math", tag_shaping="binary")
    assert as_is(completions=completions, reward_model=truth) == [-1.0, 1.0]  # unchanged without the template


def test_a_batch_in_which_no_completion_closes_think_warns():
    truth = [{"ground_truth": "12", "style": "rule"}] * 2
    reward = reward_adapters.make_reward_func("math", tag_shaping="binary")
    with pytest.warns(reward_adapters.NoThinkWarning, match="none of 2 completions closes </think>.*nothing trains"):
        assert reward(completions=["12", "\\boxed{12}"], reward_model=truth) == [-1.0, -1.0]


def test_rows_are_validated_and_long_prompts_dropped():
    from klear_lib.models import build_tokenizer

    rows = toy_rows(3)
    rows[1]["prompt"][0]["content"] = "x" * 200  # 200 characters = 200 tokens of the char tokenizer
    kept = drop_long_prompts(validate_rl_rows(rows), build_tokenizer(), max_prompt_length=128)
    assert [r["extra_info"]["id"] for r in kept] == ["toy-0", "toy-2"]
    with pytest.raises(ValueError, match="row 0 \\(id 'toy-0'\\): field reward_model.ground_truth"):
        validate_rl_rows([{**rows[0], "reward_model": {"style": "rule"}}])
    with pytest.raises(ValueError, match="row 0 \\(id 'toy-0'\\): field prompt"):
        validate_rl_rows([{**rows[0], "prompt": "What is 1+1?"}])
    with pytest.raises(ValueError, match="field reward_model.ground_truth: '\\\\\\\\frac\\{' is no answer"):
        validate_rl_rows([{**rows[0], "reward_model": {"ground_truth": "\\frac{"}}])  # the judge could never match it


def _code_row():
    return {**toy_rows(1)[0], "ability": "code",
            "reward_model": {"ground_truth": '{"inputs": ["1\\n"], "outputs": ["2\\n"]}', "style": "rule"}}


BAD_ROWS = [  # (how the second row is broken, the field the error must name)
    (lambda r: None, "<row>"),
    (lambda r: [r], "<row>"),
    (lambda r: {**r, "extra_info": [r["extra_info"]]}, "extra_info"),
    (lambda r: {**r, "extra_info": "toy-1"}, "extra_info"),
    (lambda r: {**r, "extra_info": {**r["extra_info"], "id": ["toy-1"]}}, "extra_info.id"),
    (lambda r: {**r, "extra_info": {**r["extra_info"], "tier": "hard"}}, "extra_info.tier"),
    (lambda r: {**r, "extra_info": {**r["extra_info"], "tier": -1}}, "extra_info.tier"),
    (lambda r: {**r, "extra_info": {**r["extra_info"], "tier": 2.5}}, "extra_info.tier"),
    (lambda r: {**r, "extra_info": {**r["extra_info"], "tier": True}}, "extra_info.tier"),
    (lambda r: {k: v for k, v in r.items() if k != "prompt"}, "prompt"),
    (lambda r: {**r, "prompt": "What is 1+1?"}, "prompt"),
    (lambda r: {**r, "prompt": []}, "prompt"),
    (lambda r: {**r, "prompt": [None]}, "prompt"),
    (lambda r: {**r, "prompt": [{"role": "user"}]}, "prompt"),
    (lambda r: {**r, "prompt": [{"role": "user", "content": 7}]}, "prompt"),
    (lambda r: {**r, "ability": "physics"}, "ability"),
    (lambda r: {k: v for k, v in r.items() if k != "reward_model"}, "reward_model"),
    (lambda r: {**r, "reward_model": "2"}, "reward_model"),
    (lambda r: {**r, "reward_model": ["2"]}, "reward_model"),
    (lambda r: {**r, "reward_model": {"style": "rule"}}, "reward_model.ground_truth"),
    (lambda r: {**r, "reward_model": {"ground_truth": 2}}, "reward_model.ground_truth"),
    (lambda r: {**r, "reward_model": {"ground_truth": "  "}}, "reward_model.ground_truth"),
    (lambda r: {**r, "ability": "code", "reward_model": {"ground_truth": '{"inputs": "abc", "outputs": "abc"}'}},
     "reward_model.ground_truth"),  # a string of inputs would become one test per character
    (lambda r: {**r, "ability": "code", "reward_model": {"ground_truth": "print(2)"}}, "reward_model.ground_truth"),
    (lambda r: {**r, "ability": "code", "reward_model": {"ground_truth": '{"functional": "assert f(1) == 2"}'}},
     "reward_model.ground_truth"),  # check code that never calls Solution() fails every program
]


@pytest.mark.parametrize("k", range(len(BAD_ROWS)))
def test_row_check_names_the_row_and_field_of_every_malformed_shape(k):
    breaks, field = BAD_ROWS[k]
    rows = toy_rows(3)
    rows[1] = breaks(rows[1])
    reward = "code" if isinstance(rows[1], dict) and rows[1].get("ability") == "code" else "math"
    if reward == "code":  # the healthy rows around it are code rows too
        rows[0], rows[2] = ({**r, "reward_model": _code_row()["reward_model"]} for r in (rows[0], rows[2]))
    with pytest.raises(ValueError, match=rf"^row 1( \(id 'toy-\d'\))?: field {re.escape(field)}: ") as err:
        validate_rl_rows(rows, reward)
    assert type(err.value) is ValueError  # not an AttributeError/KeyError from deep inside the check
    has_id = isinstance(rows[1], dict) and isinstance(rows[1].get("extra_info"), dict) and field != "extra_info.id"
    assert ("(id 'toy-1')" in str(err.value)) == has_id


def test_row_check_accepts_every_shape_the_trainer_reads():
    check = "def check(candidate):\\n    assert candidate(1) == 2\\n\\ncheck(Solution().f)"
    asserts = {**_code_row(), "reward_model": {"ground_truth": json.dumps({"functional": check})}}
    rows = toy_rows(2) + [_code_row(), asserts]
    rows[0]["extra_info"]["tier"] = None  # real rows carry no tier
    rows[1] = {k: v for k, v in rows[1].items() if k != "extra_info"}  # verl rows may have no extra_info at all
    assert validate_rl_rows(rows) == rows
    assert validate_rl_rows(rows[2:], "code") == rows[2:]
    rows[0] = {k: v for k, v in rows[0].items() if k != "ability"}  # the stage, not the row, picks the reward
    assert validate_rl_rows(rows) == rows
    assert [training_view(r)["extra_info"] for r in rows[:2]] == [{"id": "toy-0", "tier": 0}, {"id": "", "tier": 0}]
