"""Policy models: the tiny Qwen3 built from a config and a seed, or a hub model at a pinned revision."""
from klear_lib.models.factory import base_model_dir, build_model, load, load_or_build, save, weights_dtype
from klear_lib.models.tokenizer import CHAT_TEMPLATE, THINK_TAGS, build_tokenizer

__all__ = ["build_tokenizer", "build_model", "save", "load", "load_or_build", "base_model_dir", "weights_dtype",
           "CHAT_TEMPLATE", "THINK_TAGS"]
