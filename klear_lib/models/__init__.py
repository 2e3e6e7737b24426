"""Policy models: the tiny Qwen3 built from a config and a seed, or a hub model at a pinned revision."""
from klear_lib.models.factory import (QWEN3_8B_VOCAB, build_model, load, load_or_build, qwen3_8b_config, save,
                                      weights_dtype)
from klear_lib.models.tokenizer import CHAT_TEMPLATE, THINK_TAGS, build_tokenizer

__all__ = ["build_tokenizer", "build_model", "save", "load", "load_or_build", "weights_dtype", "qwen3_8b_config",
           "QWEN3_8B_VOCAB", "CHAT_TEMPLATE", "THINK_TAGS"]
