"""GPPO RL config (docs/paper.md §1, §2.4): the loss, the off-policy mini-batches, filtering, SFT loss, rewards.

Step counts are **RL steps** (one generation batch of ``prompts_per_step`` prompts each, then
``updates_per_step`` optimizer updates on mini-batches of ``mini_batch_prompts`` prompts), as in the paper;
``klear_lib.training.gppo_args`` converts them into TRL's optimizer steps.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from klear_lib.configs.base import added, algo, layout

LONG_PROMPTS = ("drop", "truncate_left")


@dataclass(frozen=True)
class RLConfig:
    """One RL stage (math or code). ``updates_per_step`` is derived: prompts_per_step // mini_batch_prompts."""

    loss_type: str = algo("gppo")         # gppo | clip_higher | cispo (docs/paper.md §1.3, Fig. 2 baselines)
    clip_low: float = algo(0.2)           # epsilon_l (docs/paper.md §1.3)
    clip_high: float = algo(0.28)         # epsilon_h (docs/paper.md §1.3)
    dual_clip: float | None = algo(None)  # None: paper Eq. 11 has no dual clip; 10 = the official scripts' c, which
                                          # zeroes the gradient of tokens with A<0 and ratio > 10 (docs/paper.md §1.4)
    beta_low: float = algo(1.0)           # general form, beta1 (docs/paper.md §1.5); 1 for Klear-Reasoner-8B
    beta_high: float = algo(1.0)          # beta2 (docs/paper.md §1.5)
    dgpo_n: float = added(1.0, kind="algorithm")  # DGPO (arXiv 2603.14389), the dispute's own loss: F on clipped-low
    dgpo_m: float = added(2.0, kind="algorithm")  # tokens decays as π^n, on clipped-high ones as π^(-1/m); n = 1,
                                          # m = 2 are its authors' scripts (klear_lib/losses/dgpo.py)
    sft_alpha: float = algo(0.1)          # SFT loss on correct rollouts (docs/paper.md §2.4, Table 6)
    correct_reward: float = algo(1.0)     # a rollout is "correct" iff its reward == 1.0 (docs/paper.md §2.4)
    num_generations: int = algo(8)        # rollouts per prompt (docs/paper.md §2.4)
    oversample: int = algo(2)             # generation batch = 2 x prompts, then filter (docs/paper.md §2.4)
    filter_zero_adv: bool = algo(True)    # drop zero-std groups (docs/paper.md §2.4, Fig. 5)
    filter_metric: str = algo("reward")   # "reward": the paper drops groups of zero advantage, i.e. equal rewards;
                                          # "acc": the official code's reward == 1 test, which also drops code groups
                                          # of unequal soft rewards none of which passes all tests (docs/paper.md §2.4)
    scale_rewards: str = algo("group")    # GRPO advantage (R - mean) / std per group (docs/paper.md §1.1)
    kl_coef: float = algo(0.0)            # no KL (docs/paper.md §2.4)
    entropy_coef: float = algo(0.0)       # docs/paper.md §2.4
    temperature: float = algo(1.0)        # rollout sampling (docs/paper.md §2.4)
    top_p: float = algo(1.0)              # docs/paper.md §2.4
    code_reward_mode: str = algo("soft")  # soft pass-rate reward (docs/paper.md §2.5)
    tag_shaping: str = algo("binary")     # missing think tag: -1 as the paper's text ("binary reward", docs/paper.md
                                          # §2.5); "official" = the code's -0.5 / -2, which a policy below 25%
                                          # accuracy exploits by never closing </think> (results/LOG.md)
    max_tests: int = algo(16)             # docs/paper.md §2.5
    random_reward: bool = added(False, kind="algorithm")  # a control beyond the paper: each rollout's reward drawn
                                          # at random (+1 or -1, seeded, blind to the completion), all else equal
    random_format: bool = added(False, kind="algorithm")  # with random_reward: a response the task's reward scores
                                          # for its form alone (missing think tag; in code also no program) keeps
                                          # that score, only well-formed ones draw: no correctness signal, the
                                          # format signal kept (training.rewards.format_score)
    code_timeout_s: float = added(10.0)   # per test of the RL code reward: the paper gives none; tiny programs run in
                                          # ms (ours); full: the official default, 35 s (docs/paper.md §2.5)
    lr_scheduler: str = algo("constant_with_warmup")  # constant LR after warmup (docs/paper.md §2.4)
    weight_decay: float = algo(0.1)       # docs/paper.md §2.4
    max_grad_norm: float = algo(1.0)      # docs/paper.md §2.4
    warmup_steps: int = 10                # RL steps of LR warmup (docs/paper.md §2.4; scale: shortened for short runs)
    learning_rate: float = 1e-4           # scale: a 0.8 M model needs a far larger LR than 1e-6
    prompts_per_step: int = 8
    mini_batch_prompts: int = 1           # 8 / 1 = 8 updates per step, as the paper's 128 / 16
    gradient_accumulation_steps: int = 1  # micro-batches per update on one process (memory only; the update is
                                          # the same); get_config(..., world_size=N) hands them to N ranks
    world_size: int = layout(1)           # ranks; set by get_config(..., world_size=N), never by hand
    deepspeed: str | None = layout(None)  # configs/deepspeed/<name>.json (full: ZeRO-3); None: whole copies per rank
    max_steps: int = 100                  # RL steps (generation batches)
    max_prompt_length: int = 128          # longer prompts: see long_prompts
    long_prompts: str = added("drop", kind="algorithm")  # "drop" (counted in the log): the paper only gives the 4K
                                          # limit (docs/paper.md §2.4), and a problem cut at its start is another
                                          # problem; "truncate_left": the official data.truncation='left' (§2.4)
    max_completion_length: int = 256
    bf16: bool = False
    use_cpu: bool = True
    gradient_checkpointing: bool = False
    use_vllm: bool = False
    vllm_mode: str = "colocate"           # colocate | server (docs/stack.md §1.1)
    vllm_tensor_parallel_size: int = 1
    vllm_gpu_memory_utilization: float = 0.3
    save_steps: int = 25                  # RL steps between checkpoints
    keep_checkpoints: int | None = added(None)  # the newest N checkpoints are kept (each holds the optimizer state a
                                          # resume needs); None: all, which the RL ablations' held-out curves read
    seed: int = 0

    def __post_init__(self):
        if self.prompts_per_step % self.mini_batch_prompts:
            raise ValueError(f"prompts_per_step={self.prompts_per_step} is not a multiple of "
                             f"mini_batch_prompts={self.mini_batch_prompts}")
        if self.random_format and not self.random_reward:
            raise ValueError("random_format=True keeps the format scores of random rewards: set random_reward=True")
        if self.long_prompts not in LONG_PROMPTS:
            raise ValueError(f"long_prompts={self.long_prompts!r}; choose one of {LONG_PROMPTS}")
        rollouts, slots = self.mini_batch_rollouts, self.world_size * self.gradient_accumulation_steps
        # a padded layout holds when each rank generates whole groups of the oversampled batch, one slot a step
        pads_cleanly = (self.padded and self.gradient_accumulation_steps == 1
                        and self.updates_per_step % self.num_generations == 0
                        and self.world_size == rollouts * self.oversample)
        if rollouts % slots and not pads_cleanly:
            ok = f"the world size must divide {rollouts}"
            if self.oversample > 1 and self.updates_per_step % self.num_generations == 0:
                ok += f" or be {rollouts * self.oversample} (padded updates, RLConfig.padded)"
            raise ValueError(f"a mini-batch of {rollouts} rollouts ({self.mini_batch_prompts} prompts x "
                             f"{self.num_generations} of a {self.prompts_per_step}-prompt RL step) does not split over "
                             f"{self.world_size} ranks x {self.gradient_accumulation_steps} accumulation steps (a rank "
                             f"takes at least one rollout an update); {ok}")
        # the zero-advantage filter keeps groups on each rank (GPPOTrainer._check_whole_groups on the TRL arguments;
        # the padded layout's are whole)
        local = self.per_device_rollouts * self.updates_per_step * self.gradient_accumulation_steps
        if not self.padded and (self.filter_zero_adv or self.oversample > 1) and local % self.num_generations:
            raise ValueError(f"{self.world_size} ranks give {local} rollouts a rank a step, not whole groups of "
                             f"{self.num_generations} rollouts, which the group filter needs; the world size must "
                             f"divide {self.prompts_per_step} (prompts a step)")

    @property
    def updates_per_step(self) -> int:
        """Optimizer updates per generation batch (8 in the paper's math stage, 4 in code)."""
        return self.prompts_per_step // self.mini_batch_prompts

    @property
    def mini_batch_rollouts(self) -> int:
        """Rollouts of one optimizer update (128 in the paper's math stage, 256 in code)."""
        return self.mini_batch_prompts * self.num_generations

    @property
    def padded(self) -> bool:
        """More ranks than rollouts in an update (math at 256 ranks): every rank then holds one rollout slot per
        update and ``updates_per_step`` slots a step, which the oversampled generation batch fills one group a rank;
        the first ``prompts_per_step`` informative groups of the whole batch train and the other slots carry
        weight 0. The update keeps the paper's rollouts; the extra ranks speed up generation only. UNVERIFIED: our
        layout; the official 256-GPU run had 64 data-parallel ranks through Ulysses SP = 4 (docs/paper.md §2.4),
        which TRL's GRPOTrainer does not offer (its GRPOConfig refuses sp_size / cp_size > 1)."""
        return self.world_size * self.gradient_accumulation_steps > self.mini_batch_rollouts

    @property
    def per_device_rollouts(self) -> int:
        """Rollouts per rank per micro-batch: the mini-batch over ranks x accumulation steps (1 when padded)."""
        return 1 if self.padded else self.mini_batch_rollouts // (self.world_size * self.gradient_accumulation_steps)


PRESETS = {
    "ci": RLConfig(prompts_per_step=4, mini_batch_prompts=2, max_steps=2, max_completion_length=48,
                   warmup_steps=0, save_steps=1),
    "tiny": RLConfig(learning_rate=5e-5,  # docs/stack.md §8: GPPO collapsed at 2e-4, improved at 5e-5; 1e-4
                                          # collapsed here too (results/LOG.md)
                     max_steps=120,       # 60 steps: tiny_aime +0.022 [-0.005, 0.049]; 120: +0.062 [0.029, 0.096]
                     warmup_steps=5),     # (paired gains over SFT, results/LOG.md, session 3)
    "gpu": RLConfig(  # one 80 GB GPU, a few GPU-hours (docs/full_scale.md §8: the cost table); math only
        learning_rate=1e-6,               # docs/paper.md §2.4 math
        warmup_steps=2,                   # UNVERIFIED: scaled with the 40-step run (paper: 10 of its run)
        prompts_per_step=32,              # UNVERIFIED: a quarter of docs/paper.md §2.4's 128
        mini_batch_prompts=4,             # UNVERIFIED: 8 updates a step, as docs/paper.md §2.4 (128 / 16)
        gradient_accumulation_steps=32,   # UNVERIFIED: memory only; 1 rollout a micro-batch
        max_steps=40,                     # UNVERIFIED: sized for about 5 GPU-hours (docs/full_scale.md §8)
        max_prompt_length=1024,           # UNVERIFIED: MATH-level prompts fit (paper: 4096)
        max_completion_length=8192,       # UNVERIFIED: a quarter of docs/paper.md §2.4's 32K
        bf16=True, use_cpu=False, gradient_checkpointing=True,  # bf16 autocast over fp32 weights (no DeepSpeed)
        use_vllm=True, vllm_mode="colocate",  # vLLM rollouts (docs/paper.md §2.4)
        vllm_tensor_parallel_size=1,      # UNVERIFIED: one GPU holds the 1.7 B engine (paper: TP 2 for 8B)
        vllm_gpu_memory_utilization=0.35,  # UNVERIFIED: leaves 0.65 for fp32 weights, AdamW and activations
        save_steps=5,                     # docs/paper.md §2.4 save every 5 steps
        keep_checkpoints=2,               # UNVERIFIED: our choice, as full
    ),
    "full": RLConfig(
        learning_rate=1e-6,               # docs/paper.md §2.4 math (code stage: CODE_OVERRIDES)
        warmup_steps=10,                  # docs/paper.md §2.4
        prompts_per_step=128,             # docs/paper.md §2.4
        mini_batch_prompts=16,            # docs/paper.md §2.4 math: 8 updates per step
        gradient_accumulation_steps=128,  # UNVERIFIED: memory only; 16 x 8 = 128 rollouts, 1 per micro-batch
        max_steps=500,                    # UNVERIFIED: the paper gives no step count; our choice
        max_prompt_length=4096,           # docs/paper.md §2.4
        max_completion_length=32768,      # docs/paper.md §2.4
        bf16=True, use_cpu=False, gradient_checkpointing=True,  # docs/paper.md §2.4 (grad checkpointing)
        use_vllm=True, vllm_mode="colocate",  # vLLM rollouts (docs/paper.md §2.4); "server" also works
        vllm_tensor_parallel_size=2,      # docs/paper.md §2.4 (vLLM TP=2)
        vllm_gpu_memory_utilization=0.5,  # UNVERIFIED: verl used 0.8 with offloading; colocated TRL needs room
        save_steps=5,                     # docs/paper.md §2.4 save every 5 steps
        keep_checkpoints=2,               # UNVERIFIED: our choice, as SFT; 100 ZeRO-3 checkpoints of 8B fill any disk
        code_timeout_s=35.0,              # docs/paper.md §2.5 official default per test
        deepspeed="zero3",                # UNVERIFIED: the official run sharded with verl FSDP (docs/paper.md §2.4);
                                          # ZeRO-3 is TRL's counterpart, our choice
    ),
}

# The code-RL stage differs from math in two values (docs/paper.md §2.4); at full its 32 x 8 = 256 rollouts keep one
# per micro-batch. At tiny it is shorter: every rollout runs up to 16 tests in the sandbox, the slowest part of a CPU
# step; 4 prompts a step with 1-prompt mini-batches keeps the paper's 4 updates per code step (128 / 32).
CODE_OVERRIDES = {
    "gpu": {"learning_rate": 5e-7,               # docs/paper.md §2.4 code stage (UNVERIFIED at gpu: math only)
            "mini_batch_prompts": 8,             # 4 updates a step, as docs/paper.md §2.4's code stage (128 / 32)
            "gradient_accumulation_steps": 64},  # UNVERIFIED: memory only, 1 rollout a micro-batch
    "tiny": {"max_steps": 20, "prompts_per_step": 4, "mini_batch_prompts": 1},
    "full": {"learning_rate": 5e-7,              # docs/paper.md §2.4 code stage
             "mini_batch_prompts": 32,           # docs/paper.md §2.4 code stage: 4 updates per step
             "gradient_accumulation_steps": 256},  # UNVERIFIED: memory only, as the math stage
}
CODE_PRESETS = {preset: dataclasses.replace(cfg, **CODE_OVERRIDES.get(preset, {})) for preset, cfg in PRESETS.items()}
