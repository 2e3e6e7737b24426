"""K-Center Greedy matches a brute-force reference on small inputs; features are stable."""
from __future__ import annotations

import numpy as np
import pytest

from klear_lib.data.kcenter import hash_features, kcenter_greedy, kcenter_select


def brute_force_kcenter(points: list[list[float]], k: int, first: int) -> list[int]:
    """Textbook Gonzalez greedy with plain loops: farthest point from the chosen set, lowest index on ties."""
    chosen = [first]
    while len(chosen) < min(k, len(points)):
        best, best_d = None, -1.0
        for i, p in enumerate(points):
            if i in chosen:
                continue
            d = min(sum((a - b) ** 2 for a, b in zip(p, points[c])) for c in chosen)
            if d > best_d:
                best, best_d = i, d
        chosen.append(best)
    return chosen


@pytest.mark.parametrize("seed", range(8))
def test_matches_brute_force(seed):
    rng = np.random.default_rng(seed)
    n, d = int(rng.integers(5, 40)), int(rng.integers(1, 6))
    x = rng.integers(-4, 5, size=(n, d)).astype(float)  # small integers: ties happen, arithmetic is exact
    for k in (1, 3, n // 2, n, n + 3):
        first = int(rng.integers(n))
        assert kcenter_greedy(x, k, first) == brute_force_kcenter(x.tolist(), k, first)


def test_duplicates_are_picked_last():
    x = np.array([[0.0], [0.0], [5.0], [5.0], [9.0]])
    assert kcenter_greedy(x, 5, 0)[:3] == [0, 4, 2]


def test_features_are_stable_and_normalised():
    texts = ["Compute 19*2.", "Compute 19*2.", "Read x. Square it. Print it.", ""]
    f = hash_features(texts)
    assert f.shape == (4, 64) and np.allclose(f[0], f[1]) and np.allclose(np.linalg.norm(f[:3], axis=1), 1)
    assert not f[3].any()
    assert hash_features(texts).tobytes() == f.tobytes()


def test_select_keeps_input_order_and_spreads():
    rows = [{"t": "aaaa"}] * 5 + [{"t": "zzzz"}] * 5 + [{"t": "mmmm qqqq"}]
    picked = kcenter_select(rows, 3, text=lambda r: r["t"], seed=0)
    assert {r["t"] for r in picked} == {"aaaa", "zzzz", "mmmm qqqq"}
    assert kcenter_select(rows, 99, text=lambda r: r["t"]) == rows
