"""reliability() and ReliabilityReport: per-task trial counts, skips, slices, warnings, JSON."""
import json
import math
import warnings
from fractions import Fraction
from math import comb

import pytest

from ek_agents import errors
from ek_agents.base import Episode
from ek_agents.reporting import ReliabilityReport, reliability
from ek_agents.stats import clustered_rate, wilson_interval


def test_spec_example():
    r = reliability({"t1": [True, True, False], "t2": [True, True, True]}, k=2)
    assert (r.n_tasks, r.k) == (2, 2)
    assert round(r.pass_hat_k, 3) == 0.667
    assert r.pass_hat_k == pytest.approx(float((Fraction(1, 3) + 1) / 2), abs=1e-15)
    assert r.stochastic and r.detail["skipped"] == [] and r.detail["warnings"] == []


def test_each_task_uses_its_own_trial_count():
    data = {"a": [True, False, True], "b": [True] * 4 + [False], "c": [False, False]}
    r = reliability(data, k=2)
    exp_hat = (Fraction(comb(2, 2), comb(3, 2)) + Fraction(comb(4, 2), comb(5, 2)) + 0) / 3
    exp_at = ((1 - Fraction(comb(1, 2), comb(3, 2))) + (1 - Fraction(comb(1, 2), comb(5, 2)))
              + (1 - Fraction(comb(2, 2), comb(2, 2)))) / 3
    assert r.pass_hat_k == pytest.approx(float(exp_hat), abs=1e-15)
    assert r.pass_at_k == pytest.approx(float(exp_at), abs=1e-15)
    assert r.per_task["b"] == {"n": 5, "c": 4, "slice": None,
                               "pass_at_k": 1.0, "pass_hat_k": pytest.approx(0.6)}
    # success rate is micro over trials; its interval is task-clustered (3 tasks: wide)
    assert (r.n_trials, r.n_success) == (10, 6) and r.success_rate == 0.6
    assert r.success_ci == clustered_rate([2, 4, 0], [3, 5, 2]).ci
    assert r.success_ci_method.startswith("task-clustered")
    w = reliability(data, k=2, ci="wilson")
    assert w.success_ci == wilson_interval(6, 10) and w.success_ci_method.startswith("wilson")
    assert w.success_ci[0] > r.success_ci[0] and w.success_ci[1] < r.success_ci[1]


def test_tasks_with_fewer_than_k_trials_are_skipped_and_listed():
    data = {"a": [True, True, True], "short": [True], "b": [False, True, False]}
    r = reliability(data, k=3)
    assert r.detail["skipped"] == ["short"]
    assert r.per_task["short"]["pass_hat_k"] is None
    assert r.pass_hat_k == pytest.approx(0.5)  # (1 + 0) / 2, "short" not extrapolated
    assert r.n_trials == 7 and r.n_success == 5  # its trials still count in the success rate
    assert any("fewer than k=3" in w for w in r.detail["warnings"])
    none = reliability({"x": [True]}, k=2, warn_deterministic=False)
    assert none.pass_hat_k is None and none.pass_at_k is None and none.detail["skipped"] == ["x"]


def test_episodes_group_by_task_and_ungraded_ones_raise():
    eps = [Episode("t1", success=True), Episode("t1", success=False, meta={"error": "X: y"}),
           Episode("t2", success=True), Episode("t2", success=True)]
    r = reliability(eps, k=2)
    assert r.per_task["t1"]["c"] == 1 and r.per_task["t2"]["n"] == 2
    assert r.pass_hat_k == pytest.approx(0.5)
    with pytest.raises(errors.InvalidInput, match="'t3' is ungraded.*grade the episodes"):
        reliability(eps + [Episode("t3")], k=1)
    with pytest.raises(errors.InvalidInput, match="k must be"):
        reliability(eps, k=0)
    with pytest.raises(errors.InvalidInput, match="True/False"):
        reliability({"a": ["yes"]})


def test_deterministic_runs_warn_both_ways():
    with pytest.warns(UserWarning, match="no task showed mixed outcomes"):
        r = reliability({"a": [True, True], "b": [False, False]}, k=2)
    assert not r.stochastic and any("mixed" in w for w in r.detail["warnings"])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        q = reliability({"a": [True, True], "b": [False, False]}, k=2, warn_deterministic=False)
        single = reliability({"a": [True], "b": [False]}, k=1)  # one trial each: nothing to say
    assert q.detail["warnings"] == [] and single.detail["warnings"] == []


def test_slices_from_mapping_and_from_episode_meta():
    eps = [Episode("a", success=s, meta={"slice": "easy"}) for s in (True, True)] + \
          [Episode("b", success=s, meta={"slice": "hard"}) for s in (True, False)] + \
          [Episode("c", success=s) for s in (False, True)]
    r = reliability(eps, k=2)
    assert set(r.per_slice) == {"easy", "hard"}
    hard = r.per_slice["hard"]
    assert hard["n_tasks"] == 1 and hard["n_trials"] == 2 and hard["n_success"] == 1
    assert hard["success_rate"] == 0.5 and hard["pass_hat_k"] == 0.0 and hard["pass_at_k"] == 1.0
    assert tuple(hard["success_ci"]) == (0.0, 1.0)  # one task cannot show the task spread
    assert tuple(reliability(eps, k=2, ci="wilson").per_slice["hard"]["success_ci"]) == wilson_interval(1, 2)
    r2 = reliability(eps, k=2, slices={"a": "x", "b": "x", "c": "y"})  # the mapping wins
    assert r2.per_slice["x"]["n_tasks"] == 2 and r2.per_slice["y"]["n_success"] == 1
    assert r2.per_task["c"]["slice"] == "y"


def test_pass_hat_k_ci_is_a_seeded_bootstrap_over_tasks():
    import random
    rnd = random.Random(1)
    data = {f"t{i}": [rnd.random() < i / 40 for _ in range(3 + i % 4)] for i in range(40)}
    a = reliability(data, k=2, seed=4)
    assert a.pass_hat_k_ci == reliability(data, k=2, seed=4).pass_hat_k_ci
    assert a.pass_hat_k_ci != reliability(data, k=2, seed=5).pass_hat_k_ci
    lo, hi = a.pass_hat_k_ci
    assert 0.0 <= lo < a.pass_hat_k < hi <= 1.0
    assert a.detail["seed"] == 4


@pytest.mark.parametrize("outcome, k", [(True, 1), (False, 1), (True, 3), (False, 2)])
def test_pass_hat_k_ci_of_all_pass_or_all_fail_is_the_bootstrap_s_without_drawing(outcome, k):
    # every task passed (or failed) every trial: the interval is (v, v), what the bootstrap of
    # a constant column gives (reporting skips the draws there), for a few tasks and for many
    from ek_agents.stats import bootstrap_ci

    for n_tasks in (2, 7, 2000):
        r = reliability({f"t{i}": [outcome] * k for i in range(n_tasks)}, k=k, seed=3,
                        warn_deterministic=False)
        ref = bootstrap_ci([float(outcome)] * n_tasks, "mean", resamples=2000, seed=3)
        assert r.pass_hat_k_ci == ref == (float(outcome), float(outcome))
    mixed = reliability({"a": [True] * k, "b": [False] * k, "c": [True] * k}, k=k, seed=3,
                        warn_deterministic=False)
    assert mixed.pass_hat_k_ci == bootstrap_ci([1.0, 0.0, 1.0], "mean", seed=3)  # drawn as before


def test_report_round_trips_through_strict_json_with_an_infinite_cost():
    cost = {"n": 2, "cost_per_success": math.inf, "total_dollars": 3.0}
    r = reliability({"a": [False, False], "b": [True, False]}, k=2, cost=cost)
    d = r.to_dict()
    text = json.dumps(d, allow_nan=False)
    assert d["schema_version"] == 1 and d["cost"]["cost_per_success"] == "Infinity"
    back = ReliabilityReport.from_dict(json.loads(text))
    assert back == r and back.cost["cost_per_success"] == math.inf
    assert isinstance(back.success_ci, tuple)


def test_empty_source():
    r = reliability({}, k=1)
    assert r.n_tasks == 0 and r.success_rate == 0.0 and r.success_ci == (0.0, 1.0)
    assert r.pass_hat_k is None
