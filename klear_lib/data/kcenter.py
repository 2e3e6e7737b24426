"""K-Center Greedy selection over character n-gram hashing features (docs/paper.md §3, Tables 2, 4, 5)."""
from __future__ import annotations

from typing import Sequence

import numpy as np

from klear_lib.seeding import np_rng


def hash_features(texts: Sequence[str], dim: int = 64, n: int = 3) -> np.ndarray:
    """L2-normalised counts of hashed character ``n``-grams, shape ``(len(texts), dim)``, float64.

    The hash is a fixed polynomial over bytes (never Python's salted ``hash()``), so features are stable.
    """
    enc = [t.encode() for t in texts]
    lens = np.array([len(e) for e in enc], dtype=np.int64)
    buf = np.frombuffer(b"".join(enc) + b"\0" * n, dtype=np.uint8).astype(np.int64)
    ends = np.repeat(np.cumsum(lens), lens)
    pos = np.arange(int(lens.sum()))
    h = np.zeros(len(pos), dtype=np.int64)
    for j in range(n):
        h = (h * 257 + buf[pos + j]) % 1_000_003
    valid = pos + n <= ends
    rows = np.repeat(np.arange(len(texts)), lens)[valid]
    bins = (h[valid] * 2_654_435_761) % 4_294_967_291 % dim
    x = np.bincount(rows * dim + bins, minlength=len(texts) * dim).astype(np.float64).reshape(len(texts), dim)
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return x / np.where(norms == 0, 1.0, norms)


def kcenter_greedy(x: np.ndarray, k: int, first: int = 0) -> list[int]:
    """Greedy k-center (Gonzalez): start at ``first``, then repeatedly add the point farthest (squared
    Euclidean) from the chosen set; ties go to the lowest index. ``x`` is ``(n, d)``; returns ``min(k, n)`` indices
    in selection order."""
    n = len(x)
    if n == 0 or k <= 0:
        return []
    sq = np.einsum("ij,ij->i", x, x)
    chosen = [first]
    dist = np.maximum(sq + sq[first] - 2.0 * (x @ x[first]), 0.0)
    dist[first] = -1.0
    for _ in range(min(k, n) - 1):
        i = int(np.argmax(dist))
        chosen.append(i)
        dist = np.minimum(dist, np.maximum(sq + sq[i] - 2.0 * (x @ x[i]), 0.0))
        dist[chosen] = -1.0
    return chosen


def kcenter_select(rows: Sequence[dict], k: int, *, text, seed: int = 0, dim: int = 64) -> list[dict]:
    """``k`` rows chosen by K-Center Greedy over ``hash_features(text(row))``, returned in input order.

    The first centre is drawn from ``np_rng(seed, "kcenter", len(rows))``.
    """
    if k >= len(rows):
        return list(rows)
    x = hash_features([text(r) for r in rows], dim=dim)
    first = int(np_rng(seed, "kcenter", len(rows)).integers(len(rows)))
    return [rows[i] for i in sorted(kcenter_greedy(x, k, first))]
