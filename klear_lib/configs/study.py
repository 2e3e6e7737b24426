"""The study's own settings at one preset, beside the stage configs: how many RL seeds the main job trains, where
real data may come from, and the sizes of the ablation families (``SFTScale``, ``RLScale``, the stability ``Grid``);
the conditions' own overrides are the same at every preset (``klear_lib.ablations``)."""
from __future__ import annotations

from dataclasses import dataclass, field, replace


@dataclass(frozen=True)
class SFTScale:
    """Sizes of the SFT ablations at one preset; the subsets' rules are the same at every preset."""

    budget: dict = field(default_factory=dict)     # experiment -> rows per condition (K-Center Greedy)
    prompts: dict = field(default_factory=dict)    # ability -> fixed prompts (Table 3)
    seeds: int = 3                                 # default number of seeds
    reduced: bool = False                          # only the conditions of each experiment's first comparison
    sft: dict = field(default_factory=dict)        # SFT config overrides for every ablation run
    eval: dict = field(default_factory=dict)       # eval config overrides for every ablation run
    benchmarks: dict = field(default_factory=dict)  # miniature benchmark -> the benchmarks evaluated instead
    torch_threads: int | None = None               # pinned per run (bit-reproducible serially or in parallel)
    fixed_seeds: dict = field(default_factory=dict)  # experiment -> seeds per arm, fixed before any row is drawn
    primary_only: tuple[str, ...] = ()             # experiments whose runs read their primary benchmarks only
    per_experiment: dict = field(default_factory=dict)  # experiment -> {"eval": ..., "benchmarks": ...} merged over
                                                   # the scale's for that experiment's runs only (``at``)
    arms: dict = field(default_factory=dict, repr=False)  # experiment -> the condition labels run; empty: all
                                                   # (out of the repr, as RLScale's: the conditions table lists them)

    def __post_init__(self):
        for experiment, over in self.per_experiment.items():
            if unknown := set(over) - {"eval", "benchmarks"}:
                raise ValueError(f"SFTScale.per_experiment[{experiment!r}]: {sorted(unknown)} are not overridable "
                                 "per experiment (eval, benchmarks)")

    def at(self, experiment: str) -> SFTScale:
        """The scale as ``experiment``'s runs see it: its ``per_experiment`` eval and benchmark overrides merged
        over the scale's. An experiment with none sees the scale itself, so its runs keep their identity."""
        over = self.per_experiment.get(experiment)
        if not over:
            return self
        return replace(self, eval={**self.eval, **over.get("eval", {})},
                       benchmarks={**self.benchmarks, **over.get("benchmarks", {})}, per_experiment={})


@dataclass(frozen=True)
class RLScale:
    """Sizes of the RL ablations at one preset; the conditions' overrides are the same at every preset."""

    seeds: int = 3                                       # default number of seeds
    reduced: bool = False                                # only the conditions of each first comparison
    rl: dict = field(default_factory=dict)               # RL config overrides for every run
    per_experiment: dict = field(default_factory=dict)   # experiment -> RL overrides (steps, lengths)
    curve_every: int | None = None                       # RL steps between held-out points (sets save_steps)
    curve_primary_only: bool = False                     # points before the last: only the primary benchmarks
    primary_only: tuple[str, ...] = ()                   # experiments whose runs read their primary benchmarks only
    eval: dict = field(default_factory=dict)             # eval config overrides
    eval_per_benchmark: dict = field(default_factory=dict)  # benchmark -> further eval overrides (its own call)
    benchmarks: dict = field(default_factory=dict)       # miniature benchmark -> the benchmarks evaluated instead
    torch_threads: int | None = None                     # pinned per run (None: the process's count)
    fixed_seeds: dict = field(default_factory=dict)      # experiment -> seeds per arm, fixed before any row is drawn
    arms: dict = field(default_factory=dict, repr=False)  # experiment -> the condition labels run, its controls
                                                         # included; empty: every experiment's own conditions
                                                         # (out of the repr: the ci/tiny notebooks print it; the
                                                         # conditions table, rl.describe, lists the arms run)


@dataclass(frozen=True)
class Grid:
    """The stability map at one preset: learning rates × updates per generation batch × seeds, every loss of
    ``klear_lib.ablations.stability.LOSSES``."""

    learning_rates: tuple[float, ...]
    updates: tuple[int, ...]                       # mini_batch_prompts = prompts_per_step // updates
    seeds: int = 3
    rl: dict = field(default_factory=dict)         # RL config overrides of every run (steps, prompts per step)
    eval: dict = field(default_factory=dict)       # eval config overrides
    benchmark: str = "tiny_aime"
    torch_threads: int | None = None               # pinned per run (bit-reproducible serially or in parallel)


@dataclass(frozen=True)
class Study:
    """Settings of the study that are no stage's config."""

    # RL seeds of the main job (notebook 03): each trains math RL then code RL from the one SFT checkpoint, so the
    # headline gain is a mean over seeds. UNVERIFIED at full: the paper reports one run, and one 8B run is its cost.
    main_rl_seeds: int = 1
    # The random-reward control of the main job (issue 40): per RL seed, math then code RL again with every reward
    # drawn at random (RLConfig.random_reward), everything else equal; each stage's gain over its control is the
    # part the task's reward makes. A control beyond the paper. None (off) or a key of pipeline.CONTROLS: "blind"
    # (coin flips) or "format" (the task reward's format scores kept). At tiny "format", as the pre-registration
    # fixes it (results/tiny/preregistration.md, section 4); off at full and gpu (it doubles the RL cost).
    main_control: str | None = None
    # EvalConfig overrides of the main job's readings (notebooks 03 and 04, ``Recipe.main_job``), beside the preset's
    # eval config, which the ablations derive theirs from: a change here moves no ablation run's key.
    main_eval: dict = field(default_factory=dict)
    # Where real files come from: "mirror" at ci/tiny (the offline scales never download: real files come from a
    # mirror or are skipped), "auto" at full (a mirror when set, else the network).
    real_data: str = "auto"
    # Code problems notebook 04's reference check runs through the sandbox (None: every problem).
    reference_code_problems: int | None = None
    # A smoke scale checks that the code runs, not what the study shows: its figures go to results/figures/<preset>/
    # and its data cards to the artifact folder, out of the study's committed ones.
    smoke: bool = False
    # The ablation families' sizes (None: the preset runs no ablation; ``gpu`` has no SFT world to start them from).
    sft_ablations: SFTScale | None = None
    rl_ablations: RLScale | None = None
    stability: Grid | None = None


SFT_ABLATIONS = {
    # ci: a smoke test of the whole path; one seed, two conditions per experiment, the ci world's tiny pool.
    "ci": SFTScale(budget={"table2": 32, "table4": 96, "table5": 96}, prompts={"math": 12, "code": 6}, seeds=1,
                   reduced=True),
    # tiny: 1,600-2,000 rows per run (hard/only_correct has 1,643), 20 epochs at batch 64 = 500-640 SFT steps. Fewer
    # left the models at the floor: 2 epochs ~1% on tiny_aime (results/LOG.md, session 6); 10 epochs nearly every model
    # below the 25-75% band on every candidate benchmark (pilot 6, sessions 49-50). At 20 epochs Tables 2 and 4 sit at
    # 21-62% on the held-out tier-2 split, which reads them (results/tiny/preregistration.md, section 6): every problem
    # at avg@16, as the re-run reads math; tiny_aime (tier 5) is read no more. Tables 2 and 4 train on math rows only
    # and read math only (primary_only), as pilot 6 read them. Table 3 (section 7) trains math and code and is read
    # on both where its arms sit nearest the band (below it for rank1): held-out tier 1 and tiny_lcb, every problem at
    # avg@16, its three ranked arms only (rank1/no_checks is in no verdict); its own reading is per_experiment, so
    # Tables 2 and 4 keep their identity. Table 5 (section 8) trains on code only and is read on tiny_lcb, every
    # problem at avg@16 (its arms sat at 60-77% there, and at 32-60% on code tier 4 with 2-3 times the spread).
    # Transformers backend (no vLLM start-up; results/perf.csv); 1 torch thread per run, so `WORKERS` runs share the
    # cores with the same rows. Seeds per arm: sections 6-8's N, under their cost caps.
    "tiny": SFTScale(budget={"table2": 1600, "table4": 2000, "table5": 2000}, prompts={"math": 600, "code": 150},
                     seeds=3, sft={"num_epochs": 20.0}, torch_threads=1,
                     eval={"k_math": 16, "k_code": 2, "max_problems": None, "backend": "transformers"},
                     benchmarks={"tiny_aime": ("math_eval_t2",)},
                     fixed_seeds={"table2": 16, "table3": 16, "table4": 12, "table5": 8},
                     primary_only=("table2", "table3", "table4", "table5"),
                     per_experiment={"table3": {"benchmarks": {"tiny_aime": ("math_eval_t1",)}, "eval": {"k_code": 16}},
                                     "table5": {"eval": {"k_code": 16}}},
                     arms={"table2": ("easy/only_correct", "easy/mixed", "hard/only_correct", "hard/mixed"),
                           "table3": ("rank1", "rank2", "rank3"), "table4": ("top1", "top2", "top4", "top6"),
                           "table5": ("top1", "top2", "top4")}),
    "full": SFTScale(
        budget={"table2": 31600,          # UNVERIFIED: no size given for Table 2; Tables 4-5's 31,600 reused
                "table4": 31600,          # docs/paper.md §3 Table 4 (31,600 examples each)
                "table5": 31600},         # docs/paper.md §3 Table 5
        prompts={"math": 15800, "code": 15800},  # UNVERIFIED: Table 3's prompt count is not given
        seeds=1,                          # UNVERIFIED: the paper reports one run per setting
        eval={"k_math": 32, "k_code": 4},  # docs/paper.md §4: ablations use avg@32 (AIME) and avg@4 (LCB)
        benchmarks={"tiny_aime": ("aime24", "aime25"), "tiny_lcb": ("lcb_v5", "lcb_v6")},  # docs/paper.md §3
    ),
}

RL_ABLATIONS = {
    # ci: a smoke test of the whole path (the ci RL preset: 2 steps, a checkpoint per step); one seed, first pairs.
    "ci": RLScale(seeds=1, reduced=True),
    # tiny: a quarter of the main run's 120 math steps and half its 20 code steps; transformers backend (no vLLM
    # start-up per checkpoint; perf.csv); one torch thread per run, so a run's numbers do not depend on how many run
    # at once (WORKERS). Every condition of a seed is read on the same problems with the same sampling seed (common
    # random numbers). Math is read where the pilots of the study re-run put every model inside the paper's 25-75%
    # band (docs/design.md, "Where the re-run reads its claims"): held-out tiers 2 and 3 pooled (400 problems) at
    # avg@16, where evaluation noise is 0.17 of the seed-to-seed spread of GRPO - GPPO (not so for GPPO -
    # clip-higher, whose training spread is smaller; docs/design.md); tiny_aime (tier 5, below the band for every
    # model piloted) is read no more. Fig. 2 is read at its end only (save_steps = its 30 steps, as pilot 2 that
    # sized it): its claims are read there, and a step-15 point at avg@16 (1.6 min) would add a quarter to each run.
    # Code (Figs. 3-4) is read on the held-out tier-4 code split at avg@4 (pilot 3: the SFT model at 56%, every arm
    # at 76-78% after its 10 steps; tiny_lcb sat at the ceiling), at the end only, as pilot 3 read it: a point at
    # step 5 would cost as much as the run's training. The tiny_lcb entry of eval_per_benchmark reads nothing any
    # more but stays: every condition's key hashes these entries, the stored rows of Fig. 2's re-run included.
    # Fig. 5 and Table 6 are read at their end too, so their default arm (filtered, α = 0.1) trains as Fig. 2's
    # gppo run and is trained and read once for all three. Seeds of every experiment are pre-registered
    # (results/tiny/preregistration.md; docs/design.md, "Verdicts", says why seeds are fixed in advance).
    "tiny": RLScale(seeds=3, per_experiment={"fig2": {"max_steps": 30, "save_steps": 30},
                                             "fig3": {"max_steps": 10, "save_steps": 10},
                                             "fig4": {"max_steps": 10, "save_steps": 10},
                                             "fig5": {"max_steps": 30, "save_steps": 30},
                                             "table6": {"max_steps": 30, "save_steps": 30}}, curve_every=15,
                    curve_primary_only=True, primary_only=("fig2",),
                    eval={"k_math": 4, "k_code": 4, "backend": "transformers"},
                    eval_per_benchmark={"tiny_lcb": {"max_problems": 100}, "math_eval_t23": {"k_math": 16}},
                    benchmarks={"tiny_aime": ("math_eval_t23",), "tiny_lcb": ("code_eval_t4",)},
                    torch_threads=1,
                    fixed_seeds=dict.fromkeys(("fig2", "fig3", "fig4", "fig5", "table6"), 40)),
    "full": RLScale(
        seeds=1,                                  # UNVERIFIED: the paper shows one run per setting
        per_experiment={
            "fig2": {"max_steps": 250},           # docs/paper.md §3 Fig. 2 (~250 steps, 32K)
            "fig3": {"max_steps": 100, "max_completion_length": 16384},  # docs/paper.md §3 Fig. 3 (100 steps, 16K)
            "fig4": {"max_steps": 100, "max_completion_length": 16384},  # docs/paper.md §3 Fig. 4 (100 steps, 16K)
            "fig5": {"max_steps": 100},           # docs/paper.md §3 Fig. 5 (to step ~100; UNVERIFIED: the paper starts
                                                  # from an intermediate RL checkpoint, we start from SFT)
            "table6": {"max_steps": 100},         # docs/paper.md §3 Table 6 (100 steps math RL, 32K)
        },
        curve_every=25,                           # UNVERIFIED: the scripts test every 5 steps (docs/paper.md §2.4);
                                                  # 25 bounds the checkpoint storage of an 8B model
        eval={"k_math": 32, "k_code": 4},         # docs/paper.md §4: ablations use avg@32 (AIME), avg@4 (LCB)
        benchmarks={"tiny_aime": ("aime24", "aime25"), "tiny_lcb": ("lcb_v5",)},  # docs/paper.md §3 (Figs 2-5, Tab. 6)
    ),
    # gpu: Fig. 2's arena alone, from the pinned start model (no SFT at gpu), read by notebook 04's harness (the gpu
    # eval: avg@4 on MATH-500, AIME 2024 and 2025). Cost: docs/full_scale.md §8 (about 13-15 GPU-hours in all).
    "gpu": RLScale(
        seeds=1,                                  # UNVERIFIED: one seed per arm (cost); decides no claim
        arms={"fig2": ("gppo", "clip_higher", "grpo", "random_reward")},  # UNVERIFIED: our choice of arms (cost)
        per_experiment={"fig2": {"max_steps": 20}},  # UNVERIFIED: half the gpu main run's 40 steps (cost)
        rl={"keep_checkpoints": None},            # every saved checkpoint kept: the held-out curve reads each
        curve_every=10,                           # UNVERIFIED: held-out points at steps 0, 10 and 20
        primary_only=("fig2",),                   # math only: the gpu runs train no code
        benchmarks={"tiny_aime": ("math500", "aime24", "aime25")},  # UNVERIFIED: the gpu eval's benchmarks
    ),
}

STABILITY = {
    # ci: 6 losses × 2 LRs × 2 update settings × 1 seed of the ci RL preset (4 prompts a step, 2 steps).
    "ci": Grid(learning_rates=(1e-4, 1e-3), updates=(1, 2), seeds=1),
    # tiny: LRs from the recipe's 5e-5 past the probe's collapse at 2e-4 (docs/stack.md §8). Cut to fit issue 8's 3 hours
    # on 2 cores (results/LOG.md, session 5): 4 prompts a step (generation of 8 × 8 rollouts is 2.3x faster than
    # 16 × 8), so 2 or 4 updates are 2- or 1-prompt mini-batches; 12 RL steps with 2 of warmup (a probe: GPPO at
    # 4e-4 fell from 36% to 2% training accuracy by step 9); eval 50 problems; 1 torch thread per run, so two
    # worker processes share the 2 cores (1.4x the throughput of one run on 2 threads).
    "tiny": Grid(learning_rates=(5e-5, 1e-4, 2e-4, 4e-4), updates=(2, 4), seeds=3, torch_threads=1,
                 rl={"max_steps": 12, "prompts_per_step": 4, "warmup_steps": 2},
                 eval={"k_math": 4, "max_problems": 50, "backend": "transformers"}),
    "full": Grid(
        learning_rates=(5e-7, 1e-6, 2e-6, 4e-6),   # UNVERIFIED: a grid around the paper's 1e-6 (docs/paper.md §2.4)
        updates=(4, 8),                            # docs/paper.md §2.4: 4 (code stage) and 8 (math stage) updates
        seeds=1,                                   # UNVERIFIED: our choice (cost)
        rl={"max_steps": 100},                     # UNVERIFIED: the ablations run 100-250 steps (docs/paper.md §2.4)
        eval={"k_math": 32},                       # docs/paper.md §4: ablations use avg@32 on AIME
        benchmark="aime24",                        # docs/paper.md §3 Fig. 2
    ),
}


def _ablations(preset: str) -> dict:
    return {"sft_ablations": SFT_ABLATIONS[preset], "rl_ablations": RL_ABLATIONS[preset],
            "stability": STABILITY[preset]}


PRESETS = {
    "ci": Study(main_rl_seeds=2, main_control="blind", real_data="mirror", reference_code_problems=24, smoke=True,
                **_ablations("ci")),
    # the main job's re-run as results/tiny/preregistration.md registers it (section 4): 5 RL seeds with the
    # format-keeping control, read on the in-band tiers (math 2-3 at avg@16, code 4-5 at avg@4, every problem)
    "tiny": Study(main_rl_seeds=5, main_control="format",
                  main_eval={"benchmarks": ("math_eval_t23", "code_eval_t45"), "k_math": 16, "k_code": 4,
                             "max_problems": None},
                  real_data="mirror", reference_code_problems=300, **_ablations("tiny")),
    "full": Study(main_rl_seeds=1, real_data="auto", **_ablations("full")),
    # Fig. 2's arena only: no data world to draw SFT subsets from; the stability map is tiny's question
    "gpu": Study(main_rl_seeds=1, real_data="auto", rl_ablations=RL_ABLATIONS["gpu"]),
}
