"""Model config: the tiny Qwen3 built from a config and a seed, or the paper's base model."""
from __future__ import annotations

from dataclasses import dataclass

from klear_lib.configs.base import algo


@dataclass(frozen=True)
class ModelConfig:
    """Which policy model a run starts from. ``hub_id`` set means load it; unset means build the tiny one."""

    hub_id: str | None = None        # e.g. "Qwen/Qwen3-8B-Base"; None builds the tiny model offline
    hub_revision: str | None = None  # pinned revision for hub loads
    hidden_size: int = 128
    intermediate_size: int = 384
    num_hidden_layers: int = 4
    num_attention_heads: int = 4
    num_key_value_heads: int = 2
    head_dim: int = 32
    max_position_embeddings: int = 512
    init_seed: int = 0
    dtype: str = "float32"
    chat_template: str = algo("qwen3_think")  # the model itself emits <think> (docs/paper.md §2.6)


PRESETS = {
    "ci": ModelConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=2, head_dim=8),
    "tiny": ModelConfig(),  # 0.8 M parameters; docs/stack.md §7: learns the miniature world in minutes
    "gpu": ModelConfig(  # one GPU (docs/full_scale.md §8): a reasoning model of the paper's family, 1.7 B
        hub_id="Qwen/Qwen3-1.7B",  # UNVERIFIED: our choice (docs/full_scale.md §8 says why not R1-Distill-1.5B)
        hub_revision="70d244cc86ccca08cf5af4e1e306ecf908b1ad5e",  # UNVERIFIED: the pin public code uses; not fetched
        hidden_size=2048, intermediate_size=6144,  # Qwen3-1.7B shape (its config.json), UNVERIFIED here
        num_hidden_layers=28, num_attention_heads=16,  # Qwen3-1.7B shape, UNVERIFIED here
        num_key_value_heads=8, head_dim=128, max_position_embeddings=40960,  # Qwen3-1.7B shape, UNVERIFIED here
        dtype="float32",  # UNVERIFIED: fp32 master weights under bf16 autocast (no DeepSpeed master copy at gpu)
    ),
    "full": ModelConfig(
        hub_id="Qwen/Qwen3-8B-Base",  # docs/paper.md §2.1 base model
        hub_revision="main",  # UNVERIFIED: the paper names no revision; pin a commit sha for a real run
        hidden_size=4096, intermediate_size=12288,  # Qwen3-8B shape (its config.json); docs/paper.md §2.1
        num_hidden_layers=36, num_attention_heads=32,  # Qwen3-8B shape; docs/paper.md §2.1
        num_key_value_heads=8, head_dim=128, max_position_embeddings=40960,  # Qwen3-8B shape; docs/paper.md §2.1
        dtype="bfloat16",  # UNVERIFIED: the paper names no dtype; bf16, the verl FSDP default
    ),
}
