"""The report's pass^k curve: exactly what ``reliability`` reports at each k."""
from __future__ import annotations

import random

import pytest

from ek_agents import reporting
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


@pytest.mark.parametrize("c", [0, 4])
def test_all_pass_or_all_fail_is_reliability_without_a_draw(c, monkeypatch):
    """Every task passing every trial (or none): each k's interval is (v, v), as reliability
    says, and no bootstrap is drawn for it."""
    counts = {f"t{i}": (4, c) for i in range(30)}
    outcomes = {t: [True] * c + [False] * (4 - c) for t in counts}
    def refuse(*a, **kw):
        raise AssertionError("a bootstrap was drawn for an all-0 / all-1 curve")

    monkeypatch.setattr(reporting, "bootstrap_mean_cis", refuse)
    curve = pass_hat_curve(counts, 4)
    for k, hat, lo, hi in curve:
        r = reliability(outcomes, k=k, warn_deterministic=False)
        assert (hat, lo, hi) == (r.pass_hat_k, *r.pass_hat_k_ci) == (hat, hat, hat)


def test_mixed_curve_draws_only_where_needed():
    # k=1: mixed (drawn); k=2..3: one success in three trials gives pass^k 0: all zero
    counts = {"a": (3, 0), "b": (3, 1), "c": (3, 0)}
    outcomes = {t: [True] * c + [False] * (n - c) for t, (n, c) in counts.items()}
    for k, hat, lo, hi in pass_hat_curve(counts, 3, seed=5):
        r = reliability(outcomes, k=k, seed=5, warn_deterministic=False)
        assert (hat, lo, hi) == (r.pass_hat_k, *r.pass_hat_k_ci)
