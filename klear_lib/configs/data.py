"""Data curation config (docs/paper.md §2.2-2.3): the miniature world's sizes and noise, or the real sources."""
from __future__ import annotations

from dataclasses import dataclass

from klear_lib.configs.base import algo


@dataclass(frozen=True)
class DataConfig:
    """Miniature world (``source="miniature"``: ci/tiny) or real sources (``"hub"``: full; ``"mirror"``: its
    offline stand-in from ``$KLEAR_BENCHMARKS``).

    Algorithm fields are the paper's curation rules; the rest are sizes, shares and which teacher stands in
    for which model. Teachers are the miniature's data sources (``klear_lib.data.teachers``).
    """

    source: str = "miniature"                    # miniature | mirror ($KLEAR_BENCHMARKS) | hub (pinned revisions)
    seed: int = 0
    responses_per_prompt: int = algo(16)         # samples for labelling/filtering; SFT teachers give <=16 (§2.2-2.3)
    ngram_decontam: int = algo(9)                # 9-gram decontamination vs every eval set (docs/paper.md §2.2)
    ngram_boilerplate_df: int | None = algo(None)  # >= this many eval texts share an n-gram -> template, ignored;
                                                   # None = the literal 9-gram rule (docs/paper.md §2.2)
    min_code_tests: int = algo(16)               # drop code problems with < 16 tests (docs/paper.md §2.3)
    code_pass_rate_min: float = algo(0.5)        # keep code if teacher pass rate over 16 samples > 0.5 (§2.3)
    math_majority: float = algo(0.5)             # keep math if > half of 16 teacher answers verify (§2.3)
    difficulty_threshold: float = algo(0.5)      # reference pass rate < 0.5 -> hard (UNVERIFIED: paper gives none)
    sft_correctness: str = algo("all")           # no correctness filtering: most data is hard (docs/paper.md §2.2)
    sft_top_k: int = 2                           # Top-1/Top-2 sources do best (docs/paper.md §3 Tables 4-5)
    sft_budget: int = 12000                      # rows in the default SFT set (K-Center Greedy, docs/paper.md §3)
    n_math_sft_prompts: int = 3000
    n_code_sft_prompts: int = 1500
    math_samples_per_teacher: int = 2            # 6 math teachers x 2 = 12 responses per prompt (<= 16)
    code_samples_per_teacher: int = 4            # 4 code teachers x 4 = 16 responses per prompt
    n_math_rl: int = 1000
    n_code_rl: int = 500
    n_eval: int = 200                            # per evaluation split
    math_max_operand: int = 29                   # start/summand bound: facts a 0.8 M model can learn (docs/stack.md §7)
    code_tests: int = 16                         # tests per miniature code problem
    sft_tier_weights: tuple = (0.25, 0.25, 0.2, 0.2, 0.1)   # tier 5 sparse in SFT (docs/design.md)
    rl_tier_weights: tuple = (0.3, 0.35, 0.35, 0.0, 0.0)   # tiers where the SFT model has signal: on tiers 4-5
                                                          # it is right ~4% of the time at T=1, most groups are
                                                          # all-wrong, and RL gained nothing (results/LOG.md)
    code_tier_weights: tuple = (0.1, 0.3, 0.3, 0.3)
    math_wrong_answer_share: float = 0.05        # injected noise in RL math pools
    code_faulty_tests_share: float = 0.10        # injected noise in RL code pools
    code_few_tests_share: float = 0.03           # RL code problems with < 16 tests
    reference_teacher_math: str = "verbose"      # a weaker model than the top teachers, as Qwen3-8B (§2.2)
    reference_teacher_code: str = "code_oneliner"
    filter_teacher_math: str = "careful"         # stands in for DeepSeek-R1-0120 (docs/paper.md §2.3)
    filter_teacher_code: str = "code_stepwise"
    hard_tier_min: int = 4                       # tier fallback when no reference pass rate exists
    candidate_margin: float = 0.15               # extra eval candidates drawn to cover dedup
    sft_candidate_factor: tuple = (1.15, 1.6)    # (math, code) candidates per SFT prompt kept: dedup/decontam
    rl_candidate_factor: tuple = (1.4, 2.0)      # (math, code) candidates per RL prompt kept: + noise, filters
    decontam_real: bool = True                   # also decontaminate against the real benchmarks


PRESETS = {
    "ci": DataConfig(n_math_sft_prompts=60, n_code_sft_prompts=30, n_math_rl=40, n_code_rl=20, n_eval=16,
                     sft_budget=300),
    "tiny": DataConfig(),
    "full": DataConfig(source="hub", sft_budget=0, n_math_sft_prompts=0, n_code_sft_prompts=0,
                       n_math_rl=88000, n_code_rl=18000,  # docs/paper.md §2.3 (released subsets: 30K / 15K)
                       n_eval=0),
}
