"""Judge-corrected success rates (issue 26): ppi_py as the reference for method="clt", seeded
small simulations of the default interval's coverage (full grid: bench/bench_judge.py), the
cost per corrected success and the corrected-rate comparison."""
from __future__ import annotations

import importlib
import math

import numpy as np
import pytest

from ek_agents.errors import EkAgentsError, InvalidInput
from ek_agents.stats.correctedrates import corrected_difference, cost_per_corrected_success
from ek_agents.stats.judgecorrect import judge_corrected_rate

bench = importlib.import_module("bench.bench_judge")


def _data(seed, n, N, p=0.6, sens=0.9, spec=0.8):
    rng = np.random.default_rng(seed)
    y = rng.random(n + N) < p
    h = bench.judge_verdicts(rng, y, sens, spec)
    return y[:n], h[:n], h[n:]


@pytest.mark.parametrize("seed,n,N,p,sens,spec", [
    (0, 20, 500, 0.6, 0.9, 0.8), (1, 50, 2000, 0.3, 0.95, 0.9), (2, 100, 1000, 0.9, 0.85, 0.7),
    (3, 300, 3000, 0.6, 0.99, 0.99), (4, 37, 80, 0.5, 0.7, 0.6), (5, 12, 40, 0.1, 0.9, 0.9)])
@pytest.mark.parametrize("alpha", [0.05, 0.1])
def test_clt_is_ppi_py_ppi_mean_ci_to_1e9(seed, n, N, p, sens, spec, alpha):
    ppi = pytest.importorskip("ppi_py")
    y, h, u = _data(seed, n, N, p, sens, spec)
    lo, hi = ppi.ppi_mean_ci(y.astype(float), h.astype(float), u.astype(float), alpha=alpha)
    est = ppi.ppi_mean_pointestimate(y.astype(float), h.astype(float), u.astype(float))
    r = judge_corrected_rate(y, h, u, method="clt", alpha=alpha)
    assert r.estimate == pytest.approx(float(np.ravel(est)[0]), abs=1e-9)
    assert r.ci[0] == pytest.approx(float(np.ravel(lo)[0]), abs=1e-9)
    assert r.ci[1] == pytest.approx(float(np.ravel(hi)[0]), abs=1e-9)
    assert 0.0 <= r.lam <= 1.0 and r.level == 1 - alpha


def test_default_keeps_the_clt_estimate_and_reports_the_judges_error():
    y, h, u = _data(7, 100, 1900, p=0.6, sens=0.95, spec=0.7)
    s, c = judge_corrected_rate(y, h, u), judge_corrected_rate(y, h, u, method="clt")
    assert s.estimate == c.estimate and s.lam == c.lam and s.method == "score"
    tp = int((y & h).sum())
    assert s.sensitivity == tp / y.sum() and s.sensitivity_n == y.sum()
    assert s.specificity == int((~y & ~h).sum()) / (~y).sum() and s.specificity_n == (~y).sum()
    assert s.judge_rate == pytest.approx((h.sum() + u.sum()) / 2000)
    assert s.judge_rate > s.ci[1]  # a lenient judge: its raw rate sits above the corrected interval
    assert 0.0 <= s.ci[0] < s.estimate < s.ci[1] <= 1.0
    assert "judge says" in s.sentence() and "specificity" in s.sentence()


@pytest.mark.parametrize("p,sens,spec,n", [(0.9, 0.95, 0.90, 50), (0.9, 0.99, 0.99, 50),
                                           (0.3, 0.99, 0.99, 50)])
def test_default_covers_where_clt_does_not_seeded_small(p, sens, spec, n):
    c = bench.iid_cell(p, sens, spec, n, sims=600, seed=11)
    assert 0.915 <= c["cov_score"] <= 0.985, c  # full grid (2000 runs a cell): 0.93-0.97
    if p == 0.9:
        assert c["cov_clt"] < c["cov_score"] - 0.03  # ppi_py under-covers here (0.86-0.87)
    else:
        assert c["width_score"] <= 1.15 * c["width_clt"]  # and costs little width where it covers
    if (sens, spec) == (0.95, 0.90):
        assert c["cov_raw"] < 0.05  # the judge's own interval misses the truth


def test_default_is_cluster_robust_when_labels_are_sampled_by_task_seeded_small():
    c = bench.clustered_cell(0.6, 0.95, 0.90, 10, sims=150, seed=3)
    assert c["cov_score"] >= 0.9, c  # full grid (1000 runs a cell): 0.93-0.97
    assert c["cov_clt"] < 0.8  # iid PPI: 0.51-0.64


def test_groups_shared_by_labeled_and_unlabeled_trials_use_one_sandwich():
    rng = np.random.default_rng(5)
    y, h = bench.clustered_suite(rng, 0.6, 0.9, 0.8, tasks=30, k=6)
    lab = np.zeros_like(y)
    lab[:, :2] = True  # two labeled trials in every task
    ids = np.repeat(np.arange(30), 6).reshape(30, 6)
    r = judge_corrected_rate(y[lab], h[lab], h[~lab], labeled_groups=ids[lab],
                             unlabeled_groups=ids[~lab])
    assert r.n_groups == 30 and r.n_labeled_groups == 30 and r.df == 29
    assert r.influence and len(r.influence) == 30
    # each task's influence on the PPI estimate (weight 1), computed here from the verdicts:
    # psi_t = (sum_t (gold - judge) - n_t rbar) / n + (sum_t judge_unlabeled - m_t ubar) / m
    yl, hl, hu = y[lab].astype(float), h[lab].astype(float), h[~lab].astype(float)
    rbar, ubar = (yl - hl).mean(), hu.mean()
    yf, hf = y.astype(float), h.astype(float)
    psi = [((yf[t][:2] - hf[t][:2]).sum() - 2 * rbar) / yl.size + (hf[t][2:].sum() - 4 * ubar) / hu.size
           for t in range(30)]
    cr1 = 30 / 29 * sum(v * v for v in psi)
    # two-sided: influences too small or too large both fail (the iid floor does not bind here)
    assert sum(v * v for v in r.influence.values()) == pytest.approx(cr1, rel=1e-9)
    assert r.se ** 2 == pytest.approx(cr1, rel=1e-9)
    assert sorted(abs(v) for v in r.influence.values()) == pytest.approx(
        sorted(abs(v) * math.sqrt(30 / 29) for v in psi), rel=1e-9)
    y1, h1 = bench.clustered_suite(rng, 0.6, 0.9, 0.8, tasks=3, k=10)
    one = judge_corrected_rate(y1[0], h1[0], h1[1:].ravel(), labeled_groups=[0] * 10,
                               unlabeled_groups=np.repeat([1, 2], 10))
    assert one.ci == (0.0, 1.0) and "single task" in one.description


@pytest.mark.parametrize("kwargs,needle", [
    (dict(gold=[1, 0, 2], judge_on_labeled=[1, 0, 1], judge_on_unlabeled=[1]), "gold[2] = 2"),
    (dict(gold=[1, 0, "yes"], judge_on_labeled=[1, 0, 1], judge_on_unlabeled=[1]), "True/False"),
    (dict(gold=[1, 0, 1], judge_on_labeled=[1, 0], judge_on_unlabeled=[1]), "3 gold verdicts for 2"),
    (dict(gold=[1], judge_on_labeled=[1], judge_on_unlabeled=[1]), "at least 10"),
    (dict(gold=[1, 0, 1, 1, 0], judge_on_labeled=[1, 0, 1, 1, 1], judge_on_unlabeled=[1] * 50),
     "5 labeled trial(s); at least 10"),
    (dict(gold=[1, 0], judge_on_labeled=[1, 0], judge_on_unlabeled=[1], method="wilson"), "one of"),
    (dict(gold=[1, 0], judge_on_labeled=[1, 0], judge_on_unlabeled=[1], method="scor"), "did you mean"),
    (dict(gold=[1, 0] * 5, judge_on_labeled=[1, 0] * 5, judge_on_unlabeled=[1],
          labeled_groups=list("abcdeabcde")), "both labeled_groups and unlabeled_groups"),
    (dict(gold=[1, 0] * 5, judge_on_labeled=[1, 0] * 5, judge_on_unlabeled=[1], labeled_groups=["a"],
          unlabeled_groups=["b"]), "one task id per trial"),
])
def test_bad_inputs_are_typed_errors_naming_the_fix(kwargs, needle):
    with pytest.raises(InvalidInput) as e:
        judge_corrected_rate(**kwargs)
    assert isinstance(e.value, (EkAgentsError, ValueError)) and needle in str(e.value)


def test_all_labeled_and_boundary_rates_stay_inside_0_1():
    r = judge_corrected_rate([1] * 30, [1] * 30, [1] * 500)
    assert r.estimate == 1.0 and r.ci[1] == 1.0 and r.ci[0] < 1.0
    r = judge_corrected_rate([0] * 30, [0] * 30, [0] * 500)
    assert r.estimate == 0.0 and r.ci[0] == 0.0 and 0.0 < r.ci[1] < 0.2
    r = judge_corrected_rate([1, 0] * 10, [1, 0] * 10, [])
    assert r.n_unlabeled == 0 and r.lam == 0.0 and r.ci[0] < 0.5 < r.ci[1]


def test_cost_per_corrected_success_fieller_covers_seeded():
    rng = np.random.default_rng(2)
    p, sims, hit, truth = 0.6, 300, 0, None
    mu = 0.02
    truth = mu / p
    for _ in range(sims):
        y = rng.random(1000) < p
        h = bench.judge_verdicts(rng, y, 0.95, 0.8)
        cost = rng.gamma(2.0, mu / 2.0, 1000)
        r = judge_corrected_rate(y[:100], h[:100], h[100:])
        c = cost_per_corrected_success(r, cost)
        assert c.ci[0] <= c.estimate <= c.ci[1]
        assert c.estimate == pytest.approx(cost.sum() / (r.estimate * 1000))
        hit += c.ci[0] <= truth <= c.ci[1]
    assert 0.92 <= hit / sims <= 0.99


def test_cost_per_corrected_success_without_a_bound_and_bad_costs():
    r = judge_corrected_rate([0] * 9 + [1], [0] * 9 + [1], [0] * 50 + [1])
    c = cost_per_corrected_success(r, [0.01] * 61)
    assert c.ci[1] == math.inf or c.ci[1] > 10 * c.estimate
    with pytest.raises(InvalidInput, match="one cost per judged trial"):
        cost_per_corrected_success(r, [0.01] * 60)
    with pytest.raises(InvalidInput, match="unknown cost is not 0"):
        cost_per_corrected_success(r, [0.01] * 60 + [float("nan")])


def test_corrected_difference_false_alarms_and_power_seeded_small():
    g = bench.gate_simulation(200, seed=4)
    assert g["false_alarm"] <= 0.04  # bench: 2000 pairs
    assert g["power_10pt"] >= 0.5


def test_corrected_difference_unpaired_without_groups():
    a = judge_corrected_rate([1, 0] * 10, [1, 0] * 10, [1] * 150 + [0] * 50)
    d = corrected_difference(a, a)
    assert d.difference == 0 and not d.paired and d.upper > 0
    with pytest.raises(InvalidInput, match="alpha"):
        corrected_difference(a, a, alpha=0.7)


def test_every_trial_labeled_with_groups_is_the_labels_alone():
    y = [1, 0, 1, 1, 0, 1, 1, 1, 0, 1, 1, 1]
    r = judge_corrected_rate(y, [1] * 12, [], labeled_groups=list("aabbccddeeff"), unlabeled_groups=[])
    assert r.estimate == pytest.approx(sum(y) / 12) and r.lam == 0.0 and r.ci[0] < r.estimate < r.ci[1]


@pytest.mark.parametrize("method", ["score", "clt"])
def test_task_groups_of_the_wrong_length_are_refused_by_either_method(method):
    """A group list shorter than its verdicts is refused (naming the list and the fix) by the
    clt method too, which does not use the groups for its interval: it used to zip them
    silently against the verdicts for the judge's interval."""
    gold, judged, unlab = [1, 0, 1, 1, 0, 1] * 2, [1, 0, 1, 0, 0, 1] * 2, [1, 1, 0, 1]
    with pytest.raises(InvalidInput, match="labeled_groups has 11 entries for 12 trials"):
        judge_corrected_rate(gold, judged, unlab, labeled_groups=list("aabbccddeef"),
                             unlabeled_groups=list("abcc"), method=method)
    with pytest.raises(InvalidInput, match="unlabeled_groups has 3 entries for 4 trials"):
        judge_corrected_rate(gold, judged, unlab, labeled_groups=list("aabbccddeeff"),
                             unlabeled_groups=list("abc"), method=method)
    ok = judge_corrected_rate(gold, judged, unlab, labeled_groups=list("aabbccddeeff"),
                              unlabeled_groups=list("abcc"), method=method)
    assert ok.ci[0] <= ok.estimate <= ok.ci[1]  # (the clt interval is not clipped to [0, 1])
