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
LOSS_FIELDS = ("loss_type", "clip_low", "clip_high", "dual_clip", "beta_low", "beta_high", "dgpo_n", "dgpo_m")


def unchanged(*names: str) -> dict[str, Value]:
    """TRL arguments that are our config fields of the same name, passed as they are."""
    return {name: same(name) for name in names}


# TRL argument -> how it comes from RLConfig (docs/paper.md §2.4 for the values).
RL_FIELDS: dict[str, Value] = {
    **unchanged("seed", *LOSS_FIELDS, "sft_alpha", "correct_reward", "filter_zero_adv", "filter_metric",
                "num_generations", "scale_rewards", "entropy_coef", "temperature", "top_p", "max_completion_length",
                "gradient_accumulation_steps", "learning_rate", "weight_decay", "max_grad_norm", "bf16", "use_cpu",
                "gradient_checkpointing", "use_vllm", "vllm_mode", "vllm_tensor_parallel_size",
                "vllm_gpu_memory_utilization"),
    "data_seed": same("seed"), "beta": same("kl_coef"), "lr_scheduler_type": same("lr_scheduler"),
    "per_device_train_batch_size": same("per_device_rollouts"),
    "oversample": lambda cfg: 1 if cfg.padded else cfg.oversample,  # padded: the ranks hold the oversampled batch
    "keep_groups": lambda cfg: cfg.prompts_per_step if cfg.padded else None,  # ...and its first informative groups
    "truncate_prompt_left": lambda cfg: cfg.max_prompt_length if cfg.long_prompts == "truncate_left" else None,
    "steps_per_generation": lambda cfg: cfg.updates_per_step * cfg.gradient_accumulation_steps,
    "max_steps": per_update("max_steps"), "save_steps": per_update("save_steps"),
    "warmup_steps": per_update("warmup_steps"),
    "vllm_max_model_length": lambda cfg: cfg.max_prompt_length + cfg.max_completion_length,
    "save_only_model": const(False), "save_total_limit": same("keep_checkpoints"),  # a resume needs the optimizer
    "num_iterations": const(1), "save_strategy": const("steps"), "report_to": const("none"), "logging_steps": const(1),
    "deepspeed": lambda cfg: deepspeed_file(cfg.deepspeed),
}

# TRL argument -> how it comes from SFTConfig (docs/paper.md §2.2): cosine decay to min_lr_ratio x the peak LR.
SFT_FIELDS: dict[str, Value] = {
    **unchanged("seed", "learning_rate", "weight_decay", "gradient_accumulation_steps", "max_length",
                "assistant_only_loss", "bf16", "use_cpu", "save_steps"),
    "data_seed": same("seed"), "num_train_epochs": same("num_epochs"),
    "per_device_train_batch_size": same("per_device_batch_size"),
    "lr_scheduler_type": const("cosine_with_min_lr"),
    "lr_scheduler_kwargs": lambda cfg: {"min_lr_rate": cfg.min_lr_ratio},
    "warmup_steps": same("warmup_ratio"),  # TRL reads a value below 1 as a ratio of the run
    "gradient_checkpointing": lambda cfg: not cfg.use_cpu,
    "full_determinism": same("use_cpu"),  # bit-reproducible CPU runs (tiny)
    "save_strategy": const("steps"), "save_total_limit": const(2), "logging_steps": const(1),
    "report_to": const("none"), "disable_tqdm": const(False), "dataloader_num_workers": const(0),
    "deepspeed": lambda cfg: deepspeed_file(cfg.deepspeed),
}


def trl_kwargs(table: dict[str, Value], cfg: Any) -> dict[str, Any]:
    """TRL keyword arguments for ``cfg`` from ``table``."""
    return {name: value(cfg) for name, value in table.items()}


def check_trl_only(extra: dict[str, Any], table: dict[str, Value], cfg_name: str) -> dict[str, Any]:
    """``extra`` if it sets only TRL options the table leaves alone (a vLLM server's host, say); a value the table
    derives from our config raises, so a launch sets each value under one name (the CLIs' ``--trl``)."""
    if owned := sorted(set(extra) & set(table)):
        raise KeyError(f"{owned} come from {cfg_name} fields (klear_lib/configs/trl.py): set those with --set")
    return extra
