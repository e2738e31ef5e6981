"""Task-clustered intervals, the paired difference, group-sequential boundaries and the
sequential gate: against statsmodels / scipy / brute-force loops / published boundaries,
and seeded simulations at sizes that run in seconds (full sizes: bench/bench_stats.py)."""
from __future__ import annotations

import importlib

import numpy as np
import pytest
from scipy import stats as sps

from ek_agents import run_suite, stats
from ek_agents.base import TaskSpec
from ek_agents.errors import InvalidInput
from ek_agents import agent_regression_gate
from ek_agents.reporting import reliability
from ek_agents.sequential import SequentialVerdict, sequential_gate, sequential_look

bench = importlib.import_module("bench.bench_stats")


@pytest.mark.parametrize("df", [1, 2, 3, 7, 23, 59, 399, 5000])
@pytest.mark.parametrize("q", [0.9, 0.975, 0.99375])
def test_t_quantile_matches_scipy(df, q):
    assert stats.t_quantile(q, df) == pytest.approx(sps.t.ppf(q, df), abs=1e-9)


def test_clustered_se_is_statsmodels_cluster_robust_ols_on_an_intercept():
    import statsmodels.api as sm

    rng = np.random.default_rng(4)
    n = rng.integers(1, 7, size=30)
    c = rng.binomial(n, rng.beta(0.6, 0.4, 30))
    y = np.concatenate([[1.0] * ci + [0.0] * (ni - ci) for ci, ni in zip(c, n)])
    groups = np.repeat(np.arange(30), n)
    fit = sm.OLS(y, np.ones_like(y)).fit(cov_type="cluster", cov_kwds={"groups": groups})
    r = stats.clustered_rate(c, n)
    assert r.rate == pytest.approx(fit.params[0], abs=1e-12)
    assert r.se == pytest.approx(fit.bse[0], rel=1e-10)
    assert r.df == 29 and r.design_effect > 1 and r.n_effective < n.sum()


def test_clustered_interval_reduces_to_wilson_and_widens_with_shared_difficulty():
    assert stats.clustered_rate([1, 0, 1, 1], [1, 1, 1, 1]).ci == stats.wilson_interval(3, 4)
    same = stats.clustered_rate([2] * 20, [4] * 20)  # no between-task spread: deff floored at 1
    assert same.design_effect == 1.0
    spread = stats.clustered_rate([4] * 10 + [0] * 10, [4] * 20)  # all-or-nothing tasks
    assert spread.design_effect == pytest.approx(4.0)
    w = stats.wilson_interval(40, 80)
    assert spread.ci[0] < w[0] and spread.ci[1] > w[1]
    assert stats.clustered_rate([3], [4]).ci == (0.0, 1.0)  # one task: no spread to measure
    with pytest.raises(InvalidInput, match="did you mean"):
        stats.success_interval([1], [2], method="wilsn")
    with pytest.raises(InvalidInput, match="ci="):
        reliability({"a": [True]}, ci="wald")


def test_success_ci_coverage_small_simulation():
    """Seeded, 300 simulated suites each (bench: 1000): clustered covers, Wilson does not."""
    for n, k in ((24, 4), (100, 8)):
        cov = bench.success_coverage(n, k, sims=300, seed=5)
        print(n, k, cov)
        assert cov["clustered"] >= 0.92 and cov["wilson"] <= 0.85


def test_cost_per_success_coverage_small_simulation():
    cov = bench.cost_coverage(30, 4, sims=150, seed=2, resamples=1000)
    print(cov)
    assert cov["task_bootstrap_t"] >= 0.91 and cov["episode_percentile"] <= 0.85


def test_paired_difference_is_the_paired_t_test_for_equal_weights():
    rng = np.random.default_rng(1)
    a, b = rng.random(25), rng.random(25)
    d = stats.paired_difference(a, [1] * 25, b, [1] * 25)
    t = sps.ttest_rel(a, b)
    assert d.diff == pytest.approx(a.mean() - b.mean(), abs=1e-12)
    assert d.diff / d.se == pytest.approx(t.statistic, rel=1e-10)
    assert d.upper(0.025) == pytest.approx(d.diff + sps.t.ppf(0.975, 24) * d.se, rel=1e-10)


def test_paired_bootstrap_matches_a_plain_loop():
    rng = np.random.default_rng(2)
    da, sa = rng.random(20) * 3, rng.integers(1, 4, 20).astype(float)
    db, sb = rng.random(20) * 3, rng.integers(1, 4, 20).astype(float)
    lo, hi = stats.paired_bootstrap_ratio_difference(da, sa, db, sb, resamples=500, seed=9)
    gen = np.random.default_rng(9)
    diffs = []
    for _ in range(500):
        i = gen.integers(0, 20, size=20, dtype=np.int32)
        diffs.append(da[i].sum() / sa[i].sum() - db[i].sum() / sb[i].sum())
    assert (lo, hi) == pytest.approx(tuple(np.percentile(diffs, [2.5, 97.5])), rel=1e-10)


def test_group_sequential_bounds_match_published_obrien_fleming_values():
    # Lan-DeMets O'Brien-Fleming spending, one-sided 2.5%, 4 equal looks (gsDesign / Jennison &
    # Turnbull): 4.333, 2.963, 2.359, 2.014
    c = stats.group_sequential_bounds([0.25, 0.5, 0.75, 1.0], 0.025)
    assert c == pytest.approx((4.333, 2.963, 2.359, 2.014), abs=3e-3)
    assert stats.group_sequential_bounds([1.0], 0.025)[0] == pytest.approx(1.95996, abs=1e-4)
    # Monte Carlo: a Brownian motion under the null crosses somewhere with probability 2.5%
    rng = np.random.default_rng(0)
    b = np.cumsum(rng.standard_normal((400_000, 4)) * 0.5, axis=1)  # B(t) at t = .25 .. 1
    z = b / np.sqrt([0.25, 0.5, 0.75, 1.0])
    crossed = (z > np.array(c)).any(axis=1).mean()
    assert crossed == pytest.approx(0.025, abs=0.0015)
    with pytest.raises(InvalidInput):
        stats.group_sequential_bounds([0.5, 0.4, 1.0])


def test_gate_simulation_small_paired_beats_unpaired():
    g = bench.gate_simulation(pairs=150, seed=3)
    print(g)
    assert g["false_alarm_paired"] <= 0.05
    assert g["power_paired"] > g["power_unpaired"]


def test_sequential_simulation_small():
    s = bench.sequential_simulation(pairs=80, seed=4)
    print(s)
    assert s["false_alarm"] <= 0.05 and s["power_30pt"] >= 0.95
    assert s["mean_trial_fraction_30pt"] <= 0.5 and s["agreement"] >= 0.95


def test_sequential_look_decides_and_refuses_different_tasks():
    base = {f"t{i}": (3, 4) for i in range(30)}
    assert sequential_look(dict(base), base, look=4, n_looks=4)["decision"] == "pass"
    mid = sequential_look({t: (1 + i % 2, 2) for i, t in enumerate(base)}, base, look=2, n_looks=4)
    assert mid["decision"] == "continue" and mid["boundary"] > 2.96
    with pytest.raises(InvalidInput, match="same tasks"):
        sequential_look({"x": (1, 1)}, base, look=1, n_looks=4)


TASKS = [TaskSpec(f"t{i:02d}", input=str(i), gold="ok") for i in range(40)]


def _agent(p):
    def agent(task, *, seed):
        rng = np.random.default_rng([int(task.task_id[1:]), seed])
        return "ok" if rng.random() < p else "no"
    return agent


def test_run_suite_sequential_stops_calling_the_agent_once_decided():
    base = run_suite(_agent(0.8), TASKS, k=4, seed=0, check="output")
    calls = []

    def worse(task, *, seed):
        calls.append(task.task_id)
        return _agent(0.2)(task, seed=seed)

    r = run_suite(worse, TASKS, k=4, seed=50, check="output", baseline=base, sequential=True)
    v = SequentialVerdict.from_dict(r.detail["sequential"])
    assert not v.passed and v.decision == "regression" and v.stopped_early
    assert v.trials_run == len(calls) == r.n_trials < v.trials_planned == 160
    assert v.reason.startswith("regression at look") and "O'Brien-Fleming" in v.method
    same = run_suite(_agent(0.8), TASKS, k=4, seed=90, check="output", baseline=base.to_dict(),
                     sequential=True)
    assert same.detail["sequential"]["passed"]
    with pytest.raises(InvalidInput, match="go together"):
        run_suite(worse, TASKS, k=4, check="output", sequential=True)


def test_sequential_gate_needs_per_task_counts_of_the_same_tasks():
    with pytest.raises(InvalidInput, match="per-task counts"):
        sequential_gate(lambda pairs: [], ["a"], k=2, baseline={"per_task": {}}, success=bool)
    base = reliability({"a": [True, False], "b": [True, True]}, k=2)
    with pytest.raises(InvalidInput, match="different tasks"):
        sequential_gate(lambda pairs: [], ["a", "c"], k=2, baseline=base, success=bool)


def test_paired_cost_check_uses_task_totals():
    from ek_agents.base import Cost, Episode
    from ek_agents.cost import cost_report, per_million

    price = per_million(1.0, 0.0)
    rng = np.random.default_rng(3)

    def run(scale):
        eps = [Episode(f"t{i}", success=bool(rng.random() < 0.8),
                       cost=Cost(input_tokens=int(1e6 * scale * (1 + i % 5))))
               for i in range(40) for _ in range(2)]
        return reliability(eps, k=2, cost=cost_report(eps, price=price), warn_deterministic=False)

    base, dear = run(1.0), run(1.5)
    g = agent_regression_gate(dear, base)
    cost = [c for c in g.details["checks"] if c["metric"] == "cost per success"][0]
    assert cost["method"].startswith("paired bootstrap over tasks") and cost["regressed"]
    assert not agent_regression_gate(dear, base, paired=False).details["checks"][-1]["method"].startswith("paired")


@pytest.mark.parametrize("name", ["ek_agents.stats.intervals", "ek_agents.stats.bootstrap", "ek_agents.stats.clustered", "ek_agents.stats.power", "ek_agents.sequential"])
def test_module_doctests(name):
    import doctest

    result = doctest.testmod(importlib.import_module(name))
    assert result.attempted > 0 and result.failed == 0


def test_bench_speed_figures_are_ratios():
    figs = bench.bootstrap_speed(n=500, resamples=200, repeat=1)
    assert set(figs) == {"cluster_bootstrap_t_10k_s", "episode_bootstrap_10k_s", "draw_indices_10k_s",
                         "cluster_bootstrap_t_vs_episode_bootstrap", "cluster_bootstrap_t_vs_draw_indices",
                         "episode_bootstrap_vs_draw_indices"}
    assert figs["cluster_bootstrap_t_vs_episode_bootstrap"] == pytest.approx(
        figs["cluster_bootstrap_t_10k_s"] / figs["episode_bootstrap_10k_s"])
    assert figs["cluster_bootstrap_t_vs_draw_indices"] == pytest.approx(
        figs["cluster_bootstrap_t_10k_s"] / figs["draw_indices_10k_s"])
