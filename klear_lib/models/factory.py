"""Build, save and load policy models with the same ``save_pretrained``/``from_pretrained`` calls at every scale."""
from __future__ import annotations

import logging
from pathlib import Path

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer, PreTrainedModel, Qwen3Config, Qwen3ForCausalLM

from klear_lib import artifacts
from klear_lib.configs import Recipe, config_hash, get_config
from klear_lib.configs.model import ModelConfig
from klear_lib.models.tokenizer import build_tokenizer
from klear_lib.seeding import stable_seed

log = logging.getLogger(__name__)
QWEN3_8B_VOCAB = 151936  # Qwen3-8B(-Base) config.json "vocab_size"


def qwen3_config(cfg: ModelConfig, tokenizer) -> Qwen3Config:
    """A ``Qwen3Config`` of the configured shape whose special ids match ``tokenizer``."""
    shape = {name: getattr(cfg, name) for name in ("hidden_size", "intermediate_size", "num_hidden_layers",
                                                  "num_attention_heads", "num_key_value_heads", "head_dim",
                                                  "max_position_embeddings")}
    return Qwen3Config(vocab_size=len(tokenizer), tie_word_embeddings=True, eos_token_id=tokenizer.eos_token_id,
                       pad_token_id=tokenizer.pad_token_id, bos_token_id=None, **shape)


def qwen3_8b_config(tokenizer, layers: int | None = None) -> Qwen3Config:
    """A ``Qwen3Config`` of Qwen3-8B's shape (the ``full`` model preset; ``layers`` overrides the depth) with its
    vocabulary and untied embeddings (Qwen3-8B-Base's config.json: vocab_size 151936, tie_word_embeddings false,
    rope_theta 1e6); ``tokenizer`` should hold 151,936 tokens (``build_tokenizer(QWEN3_8B_VOCAB)``)."""
    depth = {"num_hidden_layers": layers} if layers else {}
    config = qwen3_config(get_config("model", "full", **depth), tokenizer)
    config.vocab_size, config.tie_word_embeddings = QWEN3_8B_VOCAB, False
    config.rope_parameters = {"rope_type": "default", "rope_theta": 1e6}
    config.architectures = ["Qwen3ForCausalLM"]  # vLLM picks the model class from this
    return config


def build_model(cfg: ModelConfig, tokenizer) -> Qwen3ForCausalLM:
    """A randomly initialised ``Qwen3ForCausalLM``; the same ``cfg.init_seed`` gives identical weights."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(stable_seed(cfg.init_seed, "model-init"))
        model = Qwen3ForCausalLM(qwen3_config(cfg, tokenizer))  # its generation config takes the config's special ids
    return model.to(getattr(torch, cfg.dtype))


def save(model: PreTrainedModel, tokenizer, path: Path) -> Path:
    """``save_pretrained`` for both, as a full-scale checkpoint is saved."""
    path = Path(path)
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


def weights_dtype(bf16: bool) -> str:
    """The dtype a trainer loads the policy in: bfloat16 for a bf16 run (DeepSpeed keeps float32 master weights in
    its optimizer), else float32."""
    return "bfloat16" if bf16 else "float32"


def load(path: str | Path, dtype: str = "float32", revision: str | None = None):
    """``(model, tokenizer)`` from a directory or a hub id (``revision`` pins it); nothing else is fetched."""
    tokenizer = AutoTokenizer.from_pretrained(str(path), revision=revision)
    model = AutoModelForCausalLM.from_pretrained(str(path), revision=revision, dtype=getattr(torch, dtype))
    return model, tokenizer


def load_or_build(recipe: Recipe) -> str:
    """The path (or hub id) of the recipe's base model; the tiny model is built and saved once, in
    ``<artifacts>/<preset>/base/<config hash>``."""
    cfg = recipe.model
    if cfg.hub_id is not None:
        return cfg.hub_id
    path = recipe.artifacts / "base" / config_hash(cfg)
    if not artifacts.is_complete(path):
        tokenizer = build_tokenizer()
        save(build_model(cfg, tokenizer), tokenizer, path)
        artifacts.mark_complete(path, config_hash(cfg))
        log.info("built the %s base model at %s", recipe.preset, path)
    return str(path)


def pinned_start(recipe: Recipe) -> str:
    """The recipe's start model as a local folder: a hub model at its pinned ``hub_revision`` (downloaded once into
    the hub cache, so every stage and vLLM read that revision, never ``main``), else the built one."""
    cfg = recipe.model
    if cfg.hub_id is None:
        return load_or_build(recipe)
    from huggingface_hub import snapshot_download  # lazy: the hub path only

    return snapshot_download(cfg.hub_id, revision=cfg.hub_revision)
