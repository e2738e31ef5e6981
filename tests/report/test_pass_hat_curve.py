"""The report's pass^k curve: exactly what ``reliability`` reports at each k."""
from __future__ import annotations

import random

import pytest

from ek_agents.reporting import pass_hat_curve, reliability


@pytest.mark.parametrize("seed", [0, 7])
def test_the_curve_is_reliability_at_every_k(seed):
    rng = random.Random(seed)
    counts = {}
    for i in range(40):
        n = rng.choice([1, 3, 5, 6])
        counts[f"t{i}"] = (n, rng.randint(0, n))
    outcomes = {t: [True] * c + [False] * (n - c) for t, (n, c) in counts.items()}
    curve = pass_hat_curve(counts, 6, seed=seed)
    assert [row[0] for row in curve] == [1, 2, 3, 4, 5, 6]
    for k, hat, lo, hi in curve:
        r = reliability(outcomes, k=k, seed=seed, warn_deterministic=False)
        assert (hat, lo, hi) == (r.pass_hat_k, *r.pass_hat_k_ci)


def test_one_task_and_none_scored():
    assert pass_hat_curve({"t1": (2, 1)}, 3) == [(1, 0.5, 0.0, 1.0), (2, 0.0, 0.0, 1.0),
                                                 (3, None, 0.0, 1.0)]
