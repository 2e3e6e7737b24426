"""Our stage configs as TRL arguments: one field table per trainer, the only place a name is translated.

Every user-set value lives in ``SFTConfig`` / ``RLConfig`` under one name with one meaning; TRL's name for it is
written here once. RL step counts are RL steps (generation batches), TRL's are optimizer updates, so they are
scaled by ``updates_per_step`` here and nowhere else. ``GPPOConfig`` takes the policy loss and its hyperparameters
under ``RLConfig``'s names (``loss_type`` is the loss, not TRL's normaliser, which ``GPPOTrainer`` fixes to
``"dapo"``, token-level as verl).
The table holds no TRL import, so the layout of a launch can be checked without torch. A padded RL layout
(``RLConfig.padded``, more ranks than rollouts in an update) becomes ``oversample=1`` with ``keep_groups`` set: the
ranks generate the oversampled batch one group each, and the trainer picks the groups to train over all ranks.
A ``deepspeed`` config name becomes TRL's ``deepspeed`` argument, the file's path: building the TRL arguments then
installs the ZeRO-3 hook that ``from_pretrained`` reads, so the trainers create the model after them.
"""
from __future__ import annotations

from operator import attrgetter
from typing import Any, Callable

from klear_lib.paths import DEEPSPEED_CONFIGS

Value = Callable[[Any], Any]
same = attrgetter  # same(name): the config's field ``name`` as is


def per_update(name: str) -> Value:
    """An RL-step count in optimizer updates (TRL counts updates)."""
    return lambda cfg: getattr(cfg, name) * cfg.updates_per_step


def const(value: Any) -> Value:
    """A value the recipe fixes (not a config field)."""
    return lambda cfg: value


def deepspeed_file(name: str | None) -> str | None:
    """The path of ``configs/deepspeed/<name>.json`` (None for None); a name with no such file raises naming those
    that exist."""
    if name is None:
        return None
    path = DEEPSPEED_CONFIGS / f"{name}.json"
    if not path.is_file():
        known = sorted(p.stem for p in DEEPSPEED_CONFIGS.glob("*.json"))
        raise FileNotFoundError(f"no DeepSpeed config {name!r} in {DEEPSPEED_CONFIGS}; known: {known}")
    return str(path)


# The policy loss and every hyperparameter a registered loss may read (klear_lib.losses; its test checks the list).
LOSS_FIELDS = ("loss_type", "clip_low", "clip_high", "dual_clip", "beta_low", "beta_high")

# TRL argument -> how it comes from RLConfig (docs/paper.md §2.4 for the values).
RL_FIELDS: dict[str, Value] = {
    "seed": same("seed"), "data_seed": same("seed"),
    **{name: same(name) for name in LOSS_FIELDS},
    "sft_alpha": same("sft_alpha"), "correct_reward": same("correct_reward"),
    "filter_zero_adv": same("filter_zero_adv"), "filter_metric": same("filter_metric"),
    "oversample": lambda cfg: 1 if cfg.padded else cfg.oversample,  # padded: the ranks hold the oversampled batch
    "keep_groups": lambda cfg: cfg.prompts_per_step if cfg.padded else None,  # ...and its first informative groups
    "truncate_prompt_left": lambda cfg: cfg.max_prompt_length if cfg.long_prompts == "truncate_left" else None,
    "num_generations": same("num_generations"),
    "scale_rewards": same("scale_rewards"), "beta": same("kl_coef"), "entropy_coef": same("entropy_coef"),
    "temperature": same("temperature"), "top_p": same("top_p"),
    "max_completion_length": same("max_completion_length"),
    "per_device_train_batch_size": same("per_device_rollouts"),
    "gradient_accumulation_steps": same("gradient_accumulation_steps"),
    "steps_per_generation": lambda cfg: cfg.updates_per_step * cfg.gradient_accumulation_steps,
    "num_iterations": const(1),
    "max_steps": per_update("max_steps"), "save_steps": per_update("save_steps"),
    "warmup_steps": per_update("warmup_steps"), "save_strategy": const("steps"),
    "learning_rate": same("learning_rate"), "lr_scheduler_type": same("lr_scheduler"),
    "weight_decay": same("weight_decay"), "max_grad_norm": same("max_grad_norm"),
    "bf16": same("bf16"), "use_cpu": same("use_cpu"), "gradient_checkpointing": same("gradient_checkpointing"),
    "use_vllm": same("use_vllm"), "vllm_mode": same("vllm_mode"),
    "vllm_tensor_parallel_size": same("vllm_tensor_parallel_size"),
    "vllm_gpu_memory_utilization": same("vllm_gpu_memory_utilization"),
    "vllm_max_model_length": lambda cfg: cfg.max_prompt_length + cfg.max_completion_length,
    "save_only_model": const(False), "save_total_limit": same("keep_checkpoints"),  # a resume needs the optimizer
    "report_to": const("none"), "logging_steps": const(1),
    "deepspeed": lambda cfg: deepspeed_file(cfg.deepspeed),
}

# TRL argument -> how it comes from SFTConfig (docs/paper.md §2.2): cosine decay to min_lr_ratio x the peak LR.
SFT_FIELDS: dict[str, Value] = {
    "seed": same("seed"), "data_seed": same("seed"),
    "learning_rate": same("learning_rate"), "num_train_epochs": same("num_epochs"),
    "lr_scheduler_type": const("cosine_with_min_lr"),
    "lr_scheduler_kwargs": lambda cfg: {"min_lr_rate": cfg.min_lr_ratio},
    "warmup_steps": same("warmup_ratio"),  # TRL reads a value below 1 as a ratio of the run
    "weight_decay": same("weight_decay"),
    "per_device_train_batch_size": same("per_device_batch_size"),
    "gradient_accumulation_steps": same("gradient_accumulation_steps"),
    "max_length": same("max_length"), "assistant_only_loss": same("assistant_only_loss"),
    "bf16": same("bf16"), "use_cpu": same("use_cpu"),
    "gradient_checkpointing": lambda cfg: not cfg.use_cpu,
    "full_determinism": same("use_cpu"),  # bit-reproducible CPU runs (tiny)
    "save_strategy": const("steps"), "save_steps": same("save_steps"), "save_total_limit": const(2),
    "logging_steps": const(1), "report_to": const("none"), "disable_tqdm": const(False),
    "dataloader_num_workers": const(0), "deepspeed": lambda cfg: deepspeed_file(cfg.deepspeed),
}


def trl_kwargs(table: dict[str, Value], cfg: Any) -> dict[str, Any]:
    """TRL keyword arguments for ``cfg`` from ``table``."""
    return {name: value(cfg) for name, value in table.items()}


def check_trl_only(extra: dict[str, Any], table: dict[str, Value], cfg_name: str) -> dict[str, Any]:
    """``extra`` if it sets only TRL options the table leaves alone (a vLLM server's host, say); a value the table
    derives from our config raises, so a launch sets each value under one name (the CLIs' ``--trl``)."""
    owned = sorted(set(extra) & set(table))
    if owned:
        raise KeyError(f"{owned} come from {cfg_name} fields (klear_lib/configs/trl.py): set those with --set")
    return extra
