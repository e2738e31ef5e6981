"""pass@k / pass^k against exact fractions; Wilson / Newcombe against statsmodels and
Newcombe (1998)'s published tables; the bootstrap against a plain loop; the power formula
against simulation."""
import math
from fractions import Fraction

import numpy as np
import pytest
from scipy.stats import norm
from statsmodels.stats.proportion import confint_proportions_2indep, proportion_confint

from ek_agents import errors
from ek_agents.stats import (bootstrap_ci, difference_upper_bound, newcombe_difference,
                             pass_at_k, pass_hat_k, trials_for_power, wilson_interval)

MAX_DIFF: dict[str, float] = {}


def _record(name, d):
    MAX_DIFF[name] = max(MAX_DIFF.get(name, 0.0), d)


# -- pass@k / pass^k ----------------------------------------------------------------------

def _exact_at(n, c, k):
    return 1 - Fraction(math.comb(n - c, k), math.comb(n, k))


def _exact_hat(n, c, k):
    return Fraction(math.comb(c, k), math.comb(n, k))


def test_pass_at_k_and_pass_hat_k_equal_exact_fractions():
    worst_at = worst_hat = 0.0
    cases = 0
    for n in list(range(1, 31)) + [50, 100, 200]:
        cs = range(n + 1) if n <= 30 else sorted({0, 1, 2, n // 3, n // 2, n - 1, n})
        ks = range(1, n + 1) if n <= 30 else sorted({1, 2, 5, 10, n // 2, n})
        for c in cs:
            for k in ks:
                cases += 1
                worst_at = max(worst_at, abs(pass_at_k(n=n, c=c, k=k) - float(_exact_at(n, c, k))))
                worst_hat = max(worst_hat, abs(pass_hat_k(n=n, c=c, k=k) - float(_exact_hat(n, c, k))))
    _record("pass_at_k vs Fraction", worst_at)
    _record("pass_hat_k vs Fraction", worst_hat)
    assert cases > 5000
    assert worst_at < 1e-12 and worst_hat < 1e-12


def test_spec_values_and_boundaries():
    assert round(pass_at_k(n=10, c=1, k=1), 3) == 0.1
    assert pass_at_k(n=10, c=10, k=5) == 1.0
    assert pass_hat_k(n=8, c=8, k=8) == 1.0
    assert pass_hat_k(n=8, c=4, k=2) == 0.21428571428571427
    assert pass_at_k(n=5, c=0, k=3) == 0.0 and pass_hat_k(n=5, c=2, k=3) == 0.0
    assert pass_at_k(n=5, c=3, k=3) == 1.0  # n - c < k: every k-subset holds a success


def test_pass_at_k_matches_humaneval_estimator_where_it_is_defined():
    def humaneval(n, c, k):  # the published numpy form
        if n - c < k:
            return 1.0
        return 1.0 - np.prod(1.0 - k / np.arange(n - c + 1, n + 1))

    for n, c, k in [(10, 3, 1), (10, 3, 5), (200, 17, 100), (20, 0, 20), (7, 7, 1)]:
        assert pass_at_k(n=n, c=c, k=k) == pytest.approx(humaneval(n, c, k), abs=1e-14)
    # ... but where k > n, HumanEval's bare estimator says 1.0; ours refuses and names the fix.
    assert humaneval(3, 0, 5) == 1.0
    with pytest.raises(errors.InsufficientTrials, match=r"k=5 .*n=3.*run at least 5"):
        pass_at_k(n=3, c=0, k=5)


@pytest.mark.parametrize("fn", [pass_at_k, pass_hat_k])
def test_bad_arguments_raise_our_errors(fn):
    with pytest.raises(errors.InsufficientTrials) as ei:
        fn(n=2, c=1, k=3)
    assert isinstance(ei.value, ValueError) and "lower k" in str(ei.value)
    with pytest.raises(errors.InvalidInput, match="k must be >= 1"):
        fn(n=5, c=1, k=0)
    with pytest.raises(errors.InvalidInput, match="cannot exceed"):
        fn(n=5, c=6, k=1)
    with pytest.raises(errors.InvalidInput, match="whole number"):
        fn(n=5.5, c=1, k=1)
    with pytest.raises(errors.InvalidInput, match=">= 0"):
        fn(n=5, c=-1, k=1)
    assert fn(n=np.int64(4), c=np.int64(2), k=2) == fn(n=4, c=2, k=2)


def test_pass_hat_k_equals_tau_bench_formula_on_a_tau_bench_shaped_run():
    # tau-bench results: one record per (task, trial) with a reward; success = reward ~ 1;
    # pass^k = mean over tasks of C(c, k) / C(num_trials, k) with a GLOBAL trial count.
    rng = np.random.default_rng(7)
    num_trials, n_tasks = 8, 40
    p_task = rng.uniform(0, 1, n_tasks)
    results = [{"task_id": t, "trial": i, "reward": float(rng.random() < p_task[t])}
               for i in range(num_trials) for t in range(n_tasks)]
    c_per_task: dict[int, int] = {}
    for r in results:
        c_per_task.setdefault(r["task_id"], 0)
        if (1 - 1e-6) <= r["reward"] <= (1 + 1e-6):
            c_per_task[r["task_id"]] += 1
    from ek_agents.reporting import reliability

    grouped: dict[str, list] = {}
    for r in results:
        grouped.setdefault(str(r["task_id"]), []).append(r["reward"] == 1.0)
    worst = 0.0
    for k in range(1, num_trials + 1):
        tau = sum(math.comb(c, k) / math.comb(num_trials, k) for c in c_per_task.values()) / len(c_per_task)
        ours = reliability(grouped, k=k, warn_deterministic=False).pass_hat_k
        worst = max(worst, abs(ours - tau))
    _record("pass^k vs tau-bench formula", worst)
    assert worst < 1e-12


# -- Wilson / Newcombe -------------------------------------------------------------------

CASES = [(c, n) for n in (1, 2, 3, 5, 10, 17, 30, 60, 100, 263, 1000) for c in
         sorted({0, 1, n // 4, n // 2, n - 1, n}) if 0 <= c <= n]


@pytest.mark.parametrize("alpha", [0.05, 0.01, 0.1, 0.32])
def test_wilson_agrees_with_statsmodels(alpha):
    z = norm.isf(alpha / 2)
    worst = 0.0
    for c, n in CASES:
        ours = wilson_interval(c, n, z=z)
        ref = proportion_confint(c, n, alpha=alpha, method="wilson")
        worst = max(worst, abs(ours[0] - ref[0]), abs(ours[1] - ref[1]))
    _record("wilson vs statsmodels", worst)
    assert worst < 1e-9


@pytest.mark.parametrize("alpha", [0.05, 0.01, 0.1])
def test_newcombe_agrees_with_statsmodels(alpha):
    z = norm.isf(alpha / 2)
    worst, count = 0.0, 0
    for ca, na in CASES[::2]:
        for cb, nb in CASES[1::3]:
            ours = newcombe_difference(ca, na, cb, nb, z=z)
            ref = confint_proportions_2indep(ca, na, cb, nb, method="newcomb", compare="diff",
                                             alpha=alpha)
            worst = max(worst, abs(ours[0] - ref[0]), abs(ours[1] - ref[1]))
            count += 1
    _record("newcombe vs statsmodels", worst)
    assert count > 300 and worst < 1e-9


def test_reproduces_newcombe_1998_published_values():
    lo, hi = wilson_interval(81, 263)
    assert (round(lo, 4), round(hi, 4)) == (0.2553, 0.3662)
    lo, hi = newcombe_difference(56, 70, 48, 80)
    assert (round(lo, 4), round(hi, 4)) == (0.0524, 0.3339)
    lo, hi = newcombe_difference(9, 10, 3, 10)
    assert (round(lo, 4), round(hi, 4)) == (0.1705, 0.8090)


def test_wilson_edges_and_spec_examples():
    lo, hi = wilson_interval(0, 10)
    assert lo == 0.0 and round(hi, 3) == 0.278
    assert wilson_interval(10, 10)[1] == 1.0
    assert wilson_interval(0, 0) == (0.0, 1.0)
    with pytest.raises(errors.InvalidInput, match="exceed"):
        wilson_interval(11, 10)
    assert newcombe_difference(50, 100, 90, 100)[1] < 0
    assert newcombe_difference(89, 100, 90, 100)[1] > 0
    with pytest.raises(errors.InsufficientTrials):
        newcombe_difference(0, 0, 1, 2)


def test_difference_upper_bound():
    # symmetric CIs at the same z: the classic combined-SE bound
    a, ca, b, cb = 0.6, (0.5, 0.7), 0.65, (0.6, 0.7)
    se_a, se_b = 0.1 / 1.96, 0.05 / 1.96
    assert difference_upper_bound(a, ca, b, cb) == pytest.approx((a - b) + 1.96 * math.hypot(se_a, se_b))
    # for proportions it recovers Newcombe's upper bound from the two Wilson intervals
    ua = newcombe_difference(30, 60, 45, 60)[1]
    assert difference_upper_bound(0.5, wilson_interval(30, 60), 0.75, wilson_interval(45, 60)) == pytest.approx(ua, abs=1e-12)
    assert difference_upper_bound(None, (0, 1), 0.5, (0, 1)) is None
    assert difference_upper_bound(0.5, None, 0.5, (0, 1)) is None
    assert difference_upper_bound(0.5, (0.4, math.inf), 0.5, (0, 1)) is None


# -- bootstrap ----------------------------------------------------------------------------

def test_bootstrap_matches_a_plain_loop_with_the_same_indices():
    values = np.random.default_rng(3).exponential(size=300)
    lo, hi = bootstrap_ci(values, "mean", resamples=500, seed=11)
    rng = np.random.default_rng(11)
    idx = rng.integers(0, len(values), size=(500, len(values)))
    loop = [float(np.mean(values[row])) for row in idx]
    ref = np.percentile(loop, [2.5, 97.5])
    assert lo == pytest.approx(ref[0], abs=1e-12) and hi == pytest.approx(ref[1], abs=1e-12)
    # the three ways to give a statistic agree exactly
    assert bootstrap_ci(values, np.mean, resamples=500, seed=11, vectorized=True) == (lo, hi)
    assert bootstrap_ci(values, lambda v: sum(v) / len(v), resamples=500, seed=11) == pytest.approx((lo, hi))


@pytest.mark.parametrize("n, resamples, seed", [(1, 9, 0), (7, 301, 2), (2000, 2000, 0), (2000, 77, 5),
                                                 (70_001, 5, 3)])
def test_mean_bootstrap_is_exactly_numpys_one_matrix_draw(n, resamples, seed):
    # "mean" over 1-D values (the pass^k CI) draws its indices in cache-sized sub-blocks
    # (stats._TaskIndices); every resampled mean, and so the interval, is bit for bit the one
    # numpy gives from the whole (resamples, n) integers matrix -- also where a sub-block holds
    # less than one row (n = 70,001) and where it ends mid-way through a 64-bit output (n = 7)
    gen = np.random.default_rng(n)
    for values in (gen.random(n), gen.integers(0, 2, n).astype(float), np.full(n, 0.1)):
        idx = np.random.default_rng(seed).integers(0, n, size=(resamples, n))
        means = np.mean(values[idx], axis=1)
        ref = tuple(float(x) for x in np.quantile(means, (0.025, 0.975)))
        assert bootstrap_ci(values, "mean", resamples=resamples, seed=seed) == ref
        assert bootstrap_ci(values.tolist(), "mean", resamples=resamples, seed=seed) == ref


def test_bootstrap_is_seeded_and_covers_the_mean():
    values = np.random.default_rng(0).normal(10.0, 2.0, size=2000)
    a = bootstrap_ci(values, "mean", seed=1)
    assert a == bootstrap_ci(values, "mean", seed=1)
    assert a != bootstrap_ci(values, "mean", seed=2)
    se = 2.0 / math.sqrt(2000)
    assert a[0] < values.mean() < a[1]
    assert (a[1] - a[0]) == pytest.approx(2 * 1.96 * se, rel=0.15)
    lo, hi = bootstrap_ci([1.0] * 20, lambda v: sum(v) / len(v), resamples=50)
    assert lo == hi == 1.0


def test_bootstrap_ratio_rows_and_infinite_statistics():
    rows = [(1.0, 1), (1.0, 0), (1.0, 1), (1.0, 0)]
    lo, hi = bootstrap_ci(rows, "ratio", resamples=2000, seed=0)
    assert 1.0 <= lo <= 2.0 and (hi == math.inf or hi >= 2.0)
    all_fail = [(1.0, 0)] * 5
    assert bootstrap_ci(all_fail, "ratio") == (math.inf, math.inf)


def test_ratio_bootstraps_use_the_plain_integers_draws():
    # bootstrap_ci(..., "ratio") and the task bootstrap resample row r as row r of
    # default_rng(seed).integers(0, g, (resamples, g)): checked against a plain gather-and-sum
    # loop over those draws, at an odd number of tasks beyond one sub-block per resample (so
    # the draws straddle 64-bit outputs and blocks) and at a small one
    from ek_agents.stats import cluster_bootstrap_ratio

    for g, resamples, seed in ((70_001, 21, 5), (7, 301, 2)):
        gen = np.random.default_rng(g)
        num, den = gen.random(g) * 3, gen.integers(0, 3, g).astype(float)
        idx = np.random.default_rng(seed).integers(0, g, (resamples, g))
        s_num, s_den = num[idx].sum(1), den[idx].sum(1)
        with np.errstate(divide="ignore", invalid="ignore"):
            ratios = np.where(s_den > 0, s_num / s_den, np.inf)
        lo, hi = bootstrap_ci(np.c_[num, den], "ratio", resamples=resamples, seed=seed)
        ref_lo = np.quantile(ratios, 0.025, method="lower" if np.isinf(ratios).any() else "linear")
        ref_hi = np.quantile(ratios, 0.975, method="higher" if np.isinf(ratios).any() else "linear")
        assert (lo, hi) == pytest.approx((ref_lo, ref_hi), rel=1e-12)
        r = num.sum() / den.sum()
        res = num[idx] - ratios[:, None] * den[idx]
        with np.errstate(divide="ignore", invalid="ignore"):
            se_star = np.sqrt(g / (g - 1) * (res ** 2).sum(1)) / s_den
            t_star = np.where(s_den > 0, (ratios - r) / se_star, np.inf)
        se = np.sqrt(g / (g - 1) * ((num - r * den) ** 2).sum()) / den.sum()
        t_lo, t_hi = (np.quantile(t_star, q, method=m) for q, m in ((0.025, "lower"), (0.975, "higher"))) \
            if np.isinf(t_star).any() else np.quantile(t_star, [0.025, 0.975])
        assert cluster_bootstrap_ratio(num, den, resamples=resamples, seed=seed) == pytest.approx(
            (max(0.0, r - t_hi * se), r - t_lo * se), rel=1e-9)


@pytest.mark.parametrize("g", [1, 2, 10_000, 2 ** 30 + 1, 3 * 2 ** 29 + 1, 2 ** 31 - 1])
def test_task_index_stream_is_numpys_integers_stream(g):
    # the bootstraps' bulk draws (raw 64-bit outputs, Lemire's method with numpy arrays) give
    # numpy's own indices; at g = 3 * 2**29 + 1 a quarter of the words are rejected
    from ek_agents.stats import bootstrap

    draws = bootstrap._TaskIndices(4, g)
    parts = [np.empty(k, dtype=np.uint64) for k in (1, 3, 65_536, 100_001, 2)]
    for part in parts:
        draws.fill(part)
    ref = np.random.default_rng(4).integers(0, g, sum(p.size for p in parts), dtype=np.int32)
    assert np.array_equal(np.concatenate(parts), ref)


def test_bootstrap_rejects_bad_input():
    with pytest.raises(errors.InvalidInput, match="no values"):
        bootstrap_ci([], "mean")
    with pytest.raises(errors.InvalidInput, match="did you mean 'mean'"):
        bootstrap_ci([1, 2], "maen")
    with pytest.raises(errors.InvalidInput, match="NaN"):
        bootstrap_ci([1.0, 2.0], lambda v: float("nan"))
    with pytest.raises(errors.InvalidInput, match="axis=1"):
        bootstrap_ci([1.0, 2.0], lambda s, axis: s.sum(), vectorized=True, resamples=10)


# -- power --------------------------------------------------------------------------------

def _analytic_power(n, pa, pb, alpha):
    za = norm.isf(alpha)
    pbar = (pa + pb) / 2
    return norm.cdf((abs(pb - pa) * math.sqrt(n) - za * math.sqrt(2 * pbar * (1 - pbar)))
                    / math.sqrt(pa * (1 - pa) + pb * (1 - pb)))


@pytest.mark.parametrize("pa,pb", [(0.9, 0.8), (0.5, 0.4), (0.7, 0.9), (0.95, 0.85)])
def test_trials_for_power_is_the_smallest_n_reaching_power(pa, pb):
    n = trials_for_power(pa, pb)
    assert _analytic_power(n, pa, pb, 0.05) >= 0.8 - 1e-9
    assert _analytic_power(n - 1, pa, pb, 0.05) < 0.8


def test_trials_for_power_holds_up_in_simulation():
    pa, pb = 0.9, 0.8
    n = trials_for_power(pa, pb)
    rng = np.random.default_rng(5)
    sims = 4000
    xa, xb = rng.binomial(n, pa, sims), rng.binomial(n, pb, sims)
    p1, p2 = xa / n, xb / n
    pool = (xa + xb) / (2 * n)
    zstat = (p1 - p2) / np.sqrt(pool * (1 - pool) * 2 / n)
    power = float(np.mean(zstat > norm.isf(0.05)))
    assert 0.76 < power < 0.86
    with pytest.raises(errors.InvalidInput, match="zero"):
        trials_for_power(0.5, 0.5)


def test_zz_report_max_differences():
    print("\nMAX ABS DIFFERENCES:", {k: f"{v:.3g}" for k, v in MAX_DIFF.items()})


def test_bootstrap_mean_cis_is_bootstrap_ci_of_each_column():
    import random

    from ek_agents.stats import bootstrap_mean_cis
    rng = random.Random(5)
    cols = [[rng.random() for _ in range(n)] for n in (1, 2, 7, 7, 40, 2500, 7)]
    cols.append([rng.choice([0.0, 1.0]) for _ in range(40)])
    for seed in (0, 11):
        got = bootstrap_mean_cis(cols, resamples=2000, seed=seed)  # 2500: two blocks of draws
        assert got == [bootstrap_ci(c, "mean", resamples=2000, seed=seed) for c in cols]
    assert bootstrap_mean_cis([[1.0, 2.0, 3.0]], resamples=77, alpha=0.2, seed=3) == [
        bootstrap_ci([1.0, 2.0, 3.0], "mean", resamples=77, alpha=0.2, seed=3)]
    with pytest.raises(errors.InvalidInput, match="column 1"):
        bootstrap_mean_cis([[1.0], []])
