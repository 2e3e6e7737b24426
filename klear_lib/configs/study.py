"""The study's own settings at one preset, beside the stage configs: how many RL seeds the main job trains and
where real data may come from. (The ablation families' sizes join here: ``klear_lib.configs.recipe``.)"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Study:
    """Settings of the study that are no stage's config."""

    # RL seeds of the main job (notebook 03): each trains math RL then code RL from the one SFT checkpoint, so the
    # headline gain is a mean over seeds. UNVERIFIED at full: the paper reports one run, and one 8B run is its cost.
    main_rl_seeds: int = 1
    # Where real files come from: "mirror" at ci/tiny (the offline scales never download: real files come from a
    # mirror or are skipped), "auto" at full (a mirror when set, else the network).
    real_data: str = "auto"
    # Code problems notebook 04's reference check runs through the sandbox (None: every problem).
    reference_code_problems: int | None = None
    # A smoke scale checks that the code runs, not what the study shows: its figures go to results/figures/<preset>/
    # and its data cards to the artifact folder, out of the study's committed ones.
    smoke: bool = False


PRESETS = {
    "ci": Study(main_rl_seeds=2, real_data="mirror", reference_code_problems=24, smoke=True),
    "tiny": Study(main_rl_seeds=3, real_data="mirror", reference_code_problems=300),
    "full": Study(main_rl_seeds=1, real_data="auto"),
    "gpu": Study(main_rl_seeds=1, real_data="auto"),
}
