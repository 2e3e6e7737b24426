"""Generation below data and evaluation: the backends (vLLM in a child process, transformers), chat prompts, and
the chunked sample files that the evaluation harness and the teacher traces both write."""
from klear_lib.generation.backends import chat_prompts, generate, prefill_of, vllm_env
from klear_lib.generation.samples import append_samples, fixed_chunks, rewrite_samples

__all__ = ["chat_prompts", "generate", "prefill_of", "vllm_env", "append_samples", "fixed_chunks", "rewrite_samples"]
