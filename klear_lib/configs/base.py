"""Preset machinery shared by every stage config: named presets, strict overrides, stable hashes.

Each stage module defines one frozen dataclass and a ``PRESETS`` dict ``{"ci": ..., "tiny": ..., "full": ...}``.
Fields carry ``metadata={"kind": "algorithm"}`` when they are part of the method (clip bounds, alpha, reward
shaping, sampling parameters): those must be equal across presets, and a test checks it. Every other field is a
scale field (sizes, steps, devices, data sources) and may differ. Two kinds are left out of the hash: a ``layout``
field says how one global batch, or the model's weights and optimizer state (DeepSpeed ZeRO), is spread over ranks
or micro-batches (what it spreads is hashed; only the order of floating-point sums depends on it), a ``shown``
field what a notebook adds to its report (each result row names its benchmark).

A field added after results were stored under the hash is declared with ``added``: it enters the hash only when its
value differs from its default. Its default must be what the code did before the field existed (a test checks each
such field against the hash without it), so every stored config keeps its key, and a config that sets the field to
anything else gets a new one. A plain new field would move every stored hash at once, for no change in behaviour.
"""
from __future__ import annotations

import dataclasses
import difflib
import hashlib
import json
import math
import pprint
import types
import typing
from typing import Any, TypeVar

T = TypeVar("T")

IF_CHANGED = "if_changed"  # metadata "hashed": the field enters the hash only off its default (``added``)


class LayoutError(ValueError):
    """A global batch that cannot be laid out over the ranks asked for (``spread``)."""


def algo(default: Any) -> Any:
    """A dataclass field that is part of the algorithm (identical in every preset)."""
    return dataclasses.field(default=default, metadata={"kind": "algorithm"})


def layout(default: Any, kind: str = "layout") -> Any:
    """A dataclass field that lays the run out over ranks; neither hashed nor in the repr (the global batch is):
    the identity of a run, which stored keys and printed configs show, does not depend on it. ``kind="shown"``: a
    field choosing what a notebook reports beside the stage's own numbers, left out alike."""
    return dataclasses.field(default=default, metadata={"kind": kind}, repr=False)


def added(default: Any, kind: str = "scale") -> Any:
    """A field added after stored results were keyed by the hash: hashed only when it differs from ``default``,
    which must reproduce the behaviour from before the field existed. ``kind``: "algorithm" or "scale"."""
    return dataclasses.field(default=default, metadata={"kind": kind, "hashed": IF_CHANGED})


def algorithm_fields(cls: type) -> list[str]:
    """Names of the fields of ``cls`` marked as algorithm."""
    return [f.name for f in dataclasses.fields(cls) if f.metadata.get("kind") == "algorithm"]


def with_overrides(cfg: T, **overrides: Any) -> T:
    """A copy of ``cfg`` with ``overrides`` applied; an unknown key raises ``KeyError`` naming it."""
    names = {f.name for f in dataclasses.fields(cfg)}
    if unknown := sorted(set(overrides) - names):
        raise KeyError(f"{type(cfg).__name__} has no field(s) {unknown}; known: {sorted(names)}")
    return dataclasses.replace(cfg, **overrides)


def to_dict(cfg: Any) -> dict[str, Any]:
    """A plain, JSON-serialisable dict of the config (tuples become lists)."""
    return _json(dataclasses.asdict(cfg))


def describe(cfg: Any, width: int = 110) -> str:
    """``cfg`` (any dataclass) one field per line, the fields its repr shows, names aligned; a long value wraps
    under itself. For notebooks, where a one-line repr of 30 fields runs off the page."""
    shown = [f.name for f in dataclasses.fields(cfg) if f.repr]
    pad = max(map(len, shown), default=0)
    lines = [type(cfg).__name__]
    for name in shown:
        value = pprint.pformat(getattr(cfg, name), width=max(40, width - pad - 4), sort_dicts=False)
        lines.append(f"  {name:<{pad}}  " + value.replace("\n", "\n" + " " * (pad + 4)))
    return "\n".join(lines)


def config_hash(cfg: Any, length: int = 12) -> str:
    """A stable short hash of the config's values and class name (independent of process and field order); an
    ``added`` field at its default (compared in JSON form) is left out."""
    values = to_dict(cfg)
    values = {f.name: values[f.name] for f in dataclasses.fields(cfg)
              if f.metadata.get("kind") not in ("layout", "shown")
              and not (f.metadata.get("hashed") == IF_CHANGED and values[f.name] == _json(f.default))}
    payload = json.dumps({"class": type(cfg).__name__, "values": values}, sort_keys=True)
    return hashlib.sha256(payload.encode()).hexdigest()[:length]


def _json(value: Any) -> Any:
    """``value`` as it reads back from JSON (tuples become lists)."""
    return json.loads(json.dumps(value, sort_keys=True, default=list))


def resolve(presets: dict[str, T], preset: str, **overrides: Any) -> T:
    """``presets[preset]`` with overrides; an unknown preset raises ``KeyError`` listing the known ones."""
    if preset not in presets:
        raise KeyError(f"unknown preset {preset!r}; choose one of {sorted(presets)}")
    return with_overrides(presets[preset], **overrides)


def spread(cfg: T, world_size: int, name: str | None = None) -> T:
    """``cfg``, written for one process, laid out over ``world_size`` ranks with the same global batch: the ranks
    take over gradient-accumulation steps first, then the per-rank batch (an SFT field; RL derives its per-rank
    rollouts from ``world_size``). A batch that cannot keep its size raises ``LayoutError`` naming ``name``
    (default: the config's class), the batch and the ranks: SFT needs a world size dividing its batch, RL checks
    its own layout (``RLConfig``)."""
    name = name or type(cfg).__name__
    if world_size < 1:
        raise LayoutError(f"{name}: world_size must be >= 1 (got {world_size})")
    if cfg.world_size != 1:
        raise LayoutError(f"{name} is already laid out over {cfg.world_size} ranks")
    accumulation = cfg.gradient_accumulation_steps
    taken = math.gcd(accumulation, world_size)
    changes = {"gradient_accumulation_steps": accumulation // taken, "world_size": world_size}
    rest = world_size // taken
    if hasattr(cfg, "per_device_batch_size") and rest > 1:  # SFT: the per-rank batch is a field
        if cfg.per_device_batch_size % rest:
            batch = cfg.per_device_batch_size * accumulation
            raise LayoutError(f"{name}: a global batch of {batch} rows does not split over {world_size} ranks "
                              f"(every rank takes at least one row an optimizer step); use a world size that "
                              f"divides {batch}")
        changes["per_device_batch_size"] = cfg.per_device_batch_size // rest
    try:
        return dataclasses.replace(cfg, **changes)
    except ValueError as err:  # the config's own check of its layout (RLConfig.__post_init__)
        raise LayoutError(f"{name}: {err}") from None


def parse_overrides(pairs: list[str]) -> dict[str, Any]:
    """Command-line ``key=value`` words as overrides, each value JSON when it parses (``10``, ``null``, ``true``)."""
    return {key: _loads(text) for key, _, text in (pair.partition("=") for pair in pairs)}


def _loads(text: str) -> Any:
    """``text`` read as JSON, or as itself when it does not parse."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


# The range a command-line value (``--set``) must fall in, by field name; every other number must be >= 0 (and
# finite). Counts of which zero means nothing start at 1; shares and probabilities lie in [0, 1].
AT_LEAST_ONE = frozenset({
    "max_steps", "num_generations", "oversample", "prompts_per_step", "mini_batch_prompts",
    "gradient_accumulation_steps", "per_device_batch_size", "world_size", "save_steps", "tensor_parallel_size",
    "vllm_tensor_parallel_size", "max_prompt_length", "max_completion_length", "max_new_tokens", "max_model_len",
    "max_length", "k_math", "k_code", "chunk_problems", "chunk_prompts", "responses_per_prompt", "judge_workers",
    "num_hidden_layers", "num_attention_heads", "num_key_value_heads", "hidden_size", "intermediate_size",
    "head_dim", "max_position_embeddings", "max_tests", "min_code_tests", "code_tests"})
UNIT_INTERVAL = frozenset({
    "clip_low", "top_p", "min_lr_ratio", "warmup_ratio", "vllm_gpu_memory_utilization", "code_pass_rate_min",
    "math_majority", "difficulty_threshold", "candidate_margin", "math_wrong_answer_share",
    "code_faulty_tests_share", "code_few_tests_share"})
POSITIVE = frozenset({"learning_rate", "code_timeout_s", "num_epochs", "dgpo_m"})
ALLOWED_MIN = {"top_k": -1}  # -1: no top-k cut (vLLM's convention)


class OverrideError(ValueError):
    """A command-line override (``--set NAME=VALUE``) that names no field, or whose value has the wrong type or
    lies outside the field's range; the message says which and what would do."""


def typed_overrides(cls: type, pairs: list[str]) -> dict[str, Any]:
    """Command-line ``NAME=VALUE`` words as overrides of the dataclass ``cls``, each checked against the field: an
    unknown name suggests the closest ones (``difflib``), a value is read as the field's type (``int``, ``float``,
    ``bool``: true/false, ``str``, ``null`` for an optional field, a JSON list for a tuple) and must lie in the
    field's range (``AT_LEAST_ONE``, ``UNIT_INTERVAL``, ``POSITIVE``; other numbers >= 0). Raises ``OverrideError``.

    >>> from klear_lib.configs.rl import RLConfig
    >>> typed_overrides(RLConfig, ["learning_rate=2e-5", "dual_clip=null", "loss_type=cispo"])
    {'learning_rate': 2e-05, 'dual_clip': None, 'loss_type': 'cispo'}
    """
    hints = typing.get_type_hints(cls)
    out = {}
    for pair in pairs:
        name, eq, text = pair.partition("=")
        if not eq or not name:
            raise OverrideError(f"--set {pair!r}: write NAME=VALUE (e.g. --set learning_rate=5e-5)")
        if name not in hints:
            raise OverrideError(unknown_field_message(cls, name))
        out[name] = _typed_value(cls.__name__, name, hints[name], text)
    return out


def unknown_field_message(cls: type, name: str) -> str:
    """``cls has no field 'name'`` with the closest field names (for ``--show`` and the like)."""
    names = [f.name for f in dataclasses.fields(cls)]
    close = difflib.get_close_matches(name, names, n=3, cutoff=0.6)
    hint = f"; did you mean {' or '.join(close)}?" if close else f"; known: {', '.join(sorted(names))}"
    return f"{cls.__name__} has no field {name!r}{hint}"


def _typed_value(owner: str, name: str, hint: Any, text: str) -> Any:
    """``text`` read as a value of type ``hint`` for field ``name``, range-checked; ``OverrideError`` otherwise."""
    args = typing.get_args(hint)
    optional = typing.get_origin(hint) in (typing.Union, types.UnionType) and type(None) in args
    base = next((a for a in args if a is not type(None)), hint) if optional else hint
    where = f"{owner}.{name}"
    if optional and text.strip().lower() in ("null", "none"):
        return None
    if base is str:
        if not text:
            raise OverrideError(f"{where} needs a value: --set {name}=TEXT")
        return text
    if base is bool:
        if text.strip().lower() not in ("true", "false", "1", "0"):
            raise OverrideError(f"{where} is true or false, not {text!r}")
        return text.strip().lower() in ("true", "1")
    value = _loads(text)
    if typing.get_origin(base) is tuple or base is tuple:
        if not isinstance(value, list):
            raise OverrideError(f"{where} is a list: --set '{name}=[...]' (JSON), not {text!r}")
        return tuple(value)
    kind, example = ("a whole number", "8") if base is int else ("a number", "0.28 or 5e-05")
    if isinstance(value, bool) or not isinstance(value, (int, float)) or base is int and not isinstance(value, int):
        raise OverrideError(f"{where} is {kind} (e.g. {example}), not {text!r}")
    if not math.isfinite(value):
        raise OverrideError(f"{where} must be finite, not {text!r}")
    low = ALLOWED_MIN.get(name, 1 if name in AT_LEAST_ONE else 0)
    if name in POSITIVE and value <= 0:
        raise OverrideError(f"{where} must be > 0, not {text}")
    if value < low:
        raise OverrideError(f"{where} must be >= {low}, not {text}")
    if name in UNIT_INTERVAL and value > 1:
        raise OverrideError(f"{where} lies in [0, 1], not {text}")
    return float(value) if base is float else value
