"""Preset machinery shared by every stage config: named presets, strict overrides, stable hashes.

Each stage module defines one frozen dataclass and a ``PRESETS`` dict ``{"ci": ..., "tiny": ..., "full": ...}``.
Fields carry ``metadata={"kind": "algorithm"}`` when they are part of the method (clip bounds, alpha, reward
shaping, sampling parameters): those must be equal across presets, and a test checks it. Every other field is a
scale field (sizes, steps, devices, data sources) and may differ.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
from typing import Any, TypeVar

T = TypeVar("T")

ALGORITHM = {"kind": "algorithm"}


def algo(default: Any, **kwargs: Any) -> Any:
    """A dataclass field that is part of the algorithm (identical in every preset)."""
    return dataclasses.field(default=default, metadata=ALGORITHM, **kwargs)


def algorithm_fields(cls: type) -> list[str]:
    """Names of the fields of ``cls`` marked as algorithm."""
    return [f.name for f in dataclasses.fields(cls) if f.metadata.get("kind") == "algorithm"]


def with_overrides(cfg: T, **overrides: Any) -> T:
    """A copy of ``cfg`` with ``overrides`` applied; an unknown key raises ``KeyError`` naming it."""
    names = {f.name for f in dataclasses.fields(cfg)}
    unknown = sorted(set(overrides) - names)
    if unknown:
        raise KeyError(f"{type(cfg).__name__} has no field(s) {unknown}; known: {sorted(names)}")
    return dataclasses.replace(cfg, **overrides)


def to_dict(cfg: Any) -> dict[str, Any]:
    """A plain, JSON-serialisable dict of the config (tuples become lists)."""
    return json.loads(json.dumps(dataclasses.asdict(cfg), sort_keys=True, default=list))


def config_hash(cfg: Any, length: int = 12) -> str:
    """A stable short hash of the config's values and class name (independent of process and field order)."""
    payload = json.dumps({"class": type(cfg).__name__, "values": to_dict(cfg)}, sort_keys=True)
    return hashlib.sha256(payload.encode()).hexdigest()[:length]


def resolve(presets: dict[str, T], preset: str, **overrides: Any) -> T:
    """``presets[preset]`` with overrides; an unknown preset raises ``KeyError`` listing the known ones."""
    if preset not in presets:
        raise KeyError(f"unknown preset {preset!r}; choose one of {sorted(presets)}")
    return with_overrides(presets[preset], **overrides)
