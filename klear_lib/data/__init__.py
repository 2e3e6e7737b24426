"""Data curation and the miniature reasoning world (docs/paper.md §2.2-2.3; docs/design.md "The miniature world").

>>> from klear_lib.data import load_split, sft_subset
>>> rows = load_split("math_rl", recipe("ci"))
"""
from klear_lib.data.curation import World
from klear_lib.data.store import load_split, load_world
from klear_lib.data.subsets import sft_subset
from klear_lib.data.world import EVAL_SPLITS, TRAIN_SPLITS, build_world

__all__ = ["build_world", "load_split", "load_world", "sft_subset", "World", "EVAL_SPLITS", "TRAIN_SPLITS"]
