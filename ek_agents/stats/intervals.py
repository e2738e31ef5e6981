"""Estimators for k-trial agent runs: pass@k, pass^k, Wilson, Newcombe, bootstrap, power.

Every function is exact where an exact answer exists (pass@k / pass^k are ratios of
binomial coefficients, computed in a numerically stable product form) and seeded where it
samples (``bootstrap_ci``).

>>> round(pass_at_k(n=10, c=1, k=1), 3), pass_hat_k(n=8, c=4, k=2)
(0.1, 0.21428571428571427)
>>> lo, hi = wilson_interval(0, 10)
>>> lo == 0.0, round(hi, 3)
(True, 0.278)
>>> lo, hi = newcombe_difference(50, 100, 90, 100)
>>> hi < 0
True
"""
from __future__ import annotations

import functools
import math
import operator
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from statistics import NormalDist
from typing import Any, Optional, Union

from ..core import shape
from ..errors import InsufficientTrials, InvalidInput, did_you_mean

__all__ = [
    "pass_at_k", "pass_hat_k", "wilson_interval", "newcombe_difference", "bootstrap_ci",
    "bootstrap_mean_cis",
    "difference_upper_bound", "trials_for_power", "normal_quantile", "Z95",
    "VECTORIZED_STATISTICS", "t_quantile", "ClusteredRate", "clustered_rate", "CI_METHODS",
    "success_interval", "cluster_bootstrap_ratio", "PairedDifference", "paired_difference",
    "paired_bootstrap_ratio_difference", "tasks_for_power", "obrien_fleming_spending",
    "group_sequential_bounds",
]

#: The two-sided 95% normal quantile the spec uses as the default ``z``.
Z95: float = 1.96


def normal_quantile(q: float) -> float:
    """The standard-normal quantile ``Phi^-1(q)`` (stdlib, no scipy).

    >>> round(normal_quantile(0.975), 6)
    1.959964
    """
    if not 0.0 < q < 1.0:
        raise InvalidInput(f"normal_quantile: q must be in (0, 1), got {q!r}")
    return NormalDist().inv_cdf(q)


def _count(name: str, value: Any) -> int:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    try:
        if isinstance(value, bool):
            raise TypeError
        value = operator.index(value)
    except TypeError:
        raise InvalidInput(f"{name} must be a whole number, got {value!r}") from None
    if value < 0:
        raise InvalidInput(f"{name} must be >= 0, got {value}")
    return value


def _check_nck(fn: str, n: Any, c: Any, k: Any) -> tuple[int, int, int]:
    n, c, k = _count("n", n), _count("c", c), _count("k", k)
    if k < 1:
        raise InvalidInput(f"{fn}: k must be >= 1, got k={k}")
    if c > n:
        raise InvalidInput(f"{fn}: c={c} successes cannot exceed n={n} trials")
    if k > n:
        raise InsufficientTrials(
            f"{fn}: k={k} exceeds the n={n} trials run for this task; run at least {k} "
            f"trials per task (k={k}) or lower k to <= {n}. (The bare HumanEval estimator "
            "silently returns 1.0 here; a task with too few trials is not evidence.)"
        )
    return n, c, k


def pass_at_k(*, n: int, c: int, k: int) -> float:
    """Unbiased ``pass@k``: probability that **at least one** of k samples succeeds.

    The HumanEval estimator ``1 - C(n-c, k) / C(n, k)``, computed as the stable product
    ``1 - prod_{i=n-c+1..n} (1 - k/i)``. ``k > n`` raises
    :class:`~ek_agents.errors.InsufficientTrials`; ``k < 1`` or ``c > n`` raise
    :class:`~ek_agents.errors.InvalidInput`.

    >>> round(pass_at_k(n=10, c=1, k=1), 3)
    0.1
    >>> pass_at_k(n=10, c=10, k=5)
    1.0
    """
    n, c, k = _check_nck("pass_at_k", n, c, k)
    if n - c < k:
        return 1.0
    prod = 1.0
    for i in range(n - c + 1, n + 1):
        prod *= 1.0 - k / i
    return 1.0 - prod


def pass_hat_k(*, n: int, c: int, k: int) -> float:
    """Unbiased ``pass^k``: probability that **all k** independent trials succeed.

    The tau-bench estimator ``C(c, k) / C(n, k)``, computed as ``prod_{i<k} (c-i)/(n-i)``.

    >>> pass_hat_k(n=8, c=8, k=8)
    1.0
    >>> pass_hat_k(n=8, c=4, k=2)
    0.21428571428571427
    """
    n, c, k = _check_nck("pass_hat_k", n, c, k)
    if c < k:
        return 0.0
    prod = 1.0
    for i in range(k):
        prod *= (c - i) / (n - i)
    return prod


def wilson_interval(successes: int, n: int, *, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval for a proportion -- correct in the tails, unlike Wald/CLT.

    ``n == 0`` gives the maximally uncertain ``(0.0, 1.0)``. The bounds are exactly 0.0 at
    ``successes == 0`` and exactly 1.0 at ``successes == n``.

    >>> lo, hi = wilson_interval(0, 10)
    >>> lo == 0.0, round(hi, 3)
    (True, 0.278)
    """
    c, n = _count("successes", successes), _count("n", n)
    if c > n:
        raise InvalidInput(f"wilson_interval: successes={c} exceed n={n}")
    if not z > 0:
        raise InvalidInput(f"wilson_interval: z must be > 0, got {z!r}")
    if n == 0:
        return (0.0, 1.0)
    p = c / n
    z2 = z * z
    denom = 1.0 + z2 / n
    center = (p + z2 / (2.0 * n)) / denom
    half = z * math.sqrt(p * (1.0 - p) / n + z2 / (4.0 * n * n)) / denom
    lo = 0.0 if c == 0 else min(max(center - half, 0.0), 1.0)
    hi = 1.0 if c == n else min(max(center + half, 0.0), 1.0)
    return (lo, hi)


def newcombe_difference(successes_a: int, n_a: int, successes_b: int, n_b: int, *,
                        z: float = Z95) -> tuple[float, float]:
    """Newcombe score interval for the **difference** of two proportions ``p_a - p_b``.

    Newcombe (1998) method 10 (the hybrid score interval): from each proportion's Wilson
    interval ``(l, u)``,
    ``lower = d - sqrt((p_a - l_a)^2 + (u_b - p_b)^2)``,
    ``upper = d + sqrt((u_a - p_a)^2 + (p_b - l_b)^2)`` with ``d = p_a - p_b``.
    A *confident regression* of a against b is ``upper < 0``.

    >>> lo, hi = newcombe_difference(56, 70, 48, 80)   # Newcombe's example: 0.0524 .. 0.3339
    >>> round(lo, 4), round(hi, 4)
    (0.0524, 0.3339)
    """
    ca, na = _count("successes_a", successes_a), _count("n_a", n_a)
    cb, nb = _count("successes_b", successes_b), _count("n_b", n_b)
    if na == 0 or nb == 0:
        raise InsufficientTrials(
            f"newcombe_difference: both runs need trials (n_a={na}, n_b={nb}); "
            "run at least one trial on each side")
    la, ua = wilson_interval(ca, na, z=z)
    lb, ub = wilson_interval(cb, nb, z=z)
    pa, pb = ca / na, cb / nb
    d = pa - pb
    lower = d - math.sqrt((pa - la) ** 2 + (ub - pb) ** 2)
    upper = d + math.sqrt((ua - pa) ** 2 + (pb - lb) ** 2)
    return (lower, upper)


def difference_upper_bound(value_a: Optional[float], ci_a: Optional[Sequence[float]],
                           value_b: Optional[float], ci_b: Optional[Sequence[float]], *,
                           z: float = Z95, ci_z: float = Z95) -> Optional[float]:
    """Upper bound of ``a - b``, at ``z``, for two statistics known only through their CIs.

    Each CI is a ``ci_z``-level interval (default: 95%), so the side facing the difference
    gives a standard error: ``se_a = (hi_a - a) / ci_z`` (a's upper side) and
    ``se_b = (b - lo_b) / ci_z`` (b's lower side); the bound is
    ``(a - b) + z * sqrt(se_a^2 + se_b^2)``. With ``z == ci_z`` this is the MOVER / Newcombe
    recovery of a difference interval from two asymmetric intervals (for symmetric CIs: the
    classic combined-SE bound); a larger ``z`` widens the margin to a stricter level.
    Returns ``None`` when any input is missing or not finite -- an unknown bound is not a
    number.

    >>> round(difference_upper_bound(0.5, (0.4, 0.6), 0.7, (0.6, 0.8)), 4)   # -0.2 + 0.1*sqrt(2)
    -0.0586
    """
    if value_a is None or value_b is None or ci_a is None or ci_b is None:
        return None
    try:
        a, b = float(value_a), float(value_b)
        lo_a, hi_a = (float(x) for x in ci_a)
        lo_b, hi_b = (float(x) for x in ci_b)
    except (TypeError, ValueError) as exc:
        raise InvalidInput(
            f"difference_upper_bound: values must be numbers and CIs (lo, hi) pairs; got "
            f"{value_a!r} {ci_a!r} / {value_b!r} {ci_b!r}") from exc
    if not all(math.isfinite(x) for x in (a, b, lo_a, hi_a, lo_b, hi_b)):
        return None
    if not (z > 0 and ci_z > 0):
        raise InvalidInput(f"difference_upper_bound: z and ci_z must be > 0, got {z!r}, {ci_z!r}")
    up_a = max(hi_a - a, 0.0)
    down_b = max(b - lo_b, 0.0)
    return (a - b) + (z / ci_z) * math.sqrt(up_a ** 2 + down_b ** 2)


def trials_for_power(p_a: float, p_b: float, *, alpha: float = 0.05, power: float = 0.8) -> int:
    """Trials per run for a one-sided two-proportion z-test to detect ``p_b - p_a``.

    The standard (Fleiss, unpooled-alternative) sample size per arm, equal arms:

    ``n = ceil( (z_{1-alpha} * sqrt(2 * pbar * (1 - pbar))
               + z_{power} * sqrt(p_a (1 - p_a) + p_b (1 - p_b)))^2 / (p_b - p_a)^2 )``

    with ``pbar = (p_a + p_b) / 2`` (no continuity correction). Use it to size a run before
    trusting a gate: e.g. detecting a drop from 90% to 80% success at 80% power needs

    >>> trials_for_power(0.9, 0.8)
    157
    """
    for name, v in (("p_a", p_a), ("p_b", p_b)):
        if not 0.0 <= float(v) <= 1.0:
            raise InvalidInput(f"trials_for_power: {name} must be a proportion in [0, 1], got {v!r}")
    if not 0.0 < alpha < 1.0 or not 0.0 < power < 1.0:
        raise InvalidInput(f"trials_for_power: alpha and power must be in (0, 1), got {alpha!r}, {power!r}")
    delta = float(p_b) - float(p_a)
    if delta == 0.0:
        raise InvalidInput(
            f"trials_for_power: p_a == p_b == {p_a!r}; no number of trials detects a zero "
            "difference -- pass the smallest change you need to see")
    z_a, z_b = normal_quantile(1.0 - alpha), normal_quantile(power)
    pbar = (p_a + p_b) / 2.0
    num = z_a * math.sqrt(2.0 * pbar * (1.0 - pbar)) + z_b * math.sqrt(
        p_a * (1.0 - p_a) + p_b * (1.0 - p_b))
    return max(1, math.ceil(num * num / (delta * delta) - 1e-9))


# -- bootstrap ---------------------------------------------------------------------------

def _ratio_of_sums(x: Any, axis: int = -1) -> Any:
    import numpy as np

    num, den = x[..., 0].sum(axis=axis), x[..., 1].sum(axis=axis)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1), np.inf)


#: Names ``bootstrap_ci`` computes vectorized over all resamples at once.
#: ``"ratio"`` takes ``(numerator, denominator)`` rows and returns ``sum(num) / sum(den)``
#: (``inf`` when the denominator sums to 0) -- e.g. cost per success.
VECTORIZED_STATISTICS: dict[str, Callable[..., Any]] = {}


def _vec_stats() -> dict[str, Callable[..., Any]]:
    if not VECTORIZED_STATISTICS:
        import numpy as np

        VECTORIZED_STATISTICS.update({
            "mean": np.mean, "median": np.median, "sum": np.sum, "std": np.std,
            "var": np.var, "min": np.min, "max": np.max, "ratio": _ratio_of_sums,
        })
    return VECTORIZED_STATISTICS


_BLOCK_ELEMENTS = 4_000_000  # resampled values held in memory at once (~32 MB of float64)


def _percentile(stats: Any, alpha: float) -> tuple[float, float]:
    import numpy as np

    if np.isnan(stats).any():
        raise InvalidInput(
            f"bootstrap_ci: the statistic returned NaN on {int(np.isnan(stats).sum())} of "
            f"{stats.size} resamples; make it defined on every resample (e.g. return inf, or "
            "guard an empty denominator)")
    q = (alpha / 2.0, 1.0 - alpha / 2.0)
    if np.isfinite(stats).all():
        lo, hi = np.quantile(stats, q)
    else:  # linear interpolation between infinities is NaN: take order statistics instead
        lo = np.quantile(stats, q[0], method="lower")
        hi = np.quantile(stats, q[1], method="higher")
    return (float(lo), float(hi))


def bootstrap_ci(values: Sequence[Any], statistic: Union[str, Callable[..., Any]], *,
                 resamples: int = 2000, alpha: float = 0.05, seed: int = 0,
                 vectorized: bool = False) -> tuple[float, float]:
    """Percentile bootstrap CI for any ``statistic`` over ``values`` (deterministic by seed).

    Resampling indices are drawn once, as a ``(resamples, n)`` matrix, from
    ``numpy.random.default_rng(seed)``. ``values`` is a sequence of numbers, or of equal-length
    rows (e.g. ``(dollars, success)`` per episode: rows are resampled together).
    ``statistic`` may be:

    - a name in :data:`VECTORIZED_STATISTICS` (``"mean"``, ``"median"``, ``"sum"``, ``"std"``,
      ``"var"``, ``"min"``, ``"max"``, ``"ratio"``) -- computed for all resamples in one numpy
      call (2000 resamples over 10k values take a few tens of milliseconds);
    - with ``vectorized=True``, a callable ``f(samples, axis=1)`` taking the
      ``(resamples, n[, m])`` array and returning one value per resample (``numpy.mean`` works);
    - otherwise any callable over one resample (a 1-D numpy array, or a 2-D array of rows),
      called once per resample -- general but slower.

    The interval is the ``alpha/2`` and ``1 - alpha/2`` percentiles of the resampled
    statistic. Infinite statistics are allowed (order statistics are used then); NaN ones
    raise :class:`~ek_agents.errors.InvalidInput`.

    >>> lo, hi = bootstrap_ci([1.0] * 20, lambda v: sum(v) / len(v), resamples=50)
    >>> lo == hi == 1.0
    True
    >>> bootstrap_ci([0, 1] * 50, "mean", seed=1) == bootstrap_ci([0, 1] * 50, "mean", seed=1)
    True
    """
    import numpy as np

    try:
        data = np.asarray(values, dtype=float)
    except (TypeError, ValueError) as exc:
        raise InvalidInput(
            "bootstrap_ci: values must be numbers or equal-length numeric rows") from exc
    if data.ndim == 0 or data.ndim > 2:
        raise InvalidInput(f"bootstrap_ci: values must be 1-D or 2-D, got shape {data.shape}")
    n = data.shape[0]
    if n == 0:
        raise InvalidInput("bootstrap_ci: no values to resample; pass at least one value")
    resamples = _count("resamples", resamples)
    if resamples < 1:
        raise InvalidInput("bootstrap_ci: resamples must be >= 1")
    if not 0.0 < alpha < 1.0:
        raise InvalidInput(f"bootstrap_ci: alpha must be in (0, 1), got {alpha!r}")
    if isinstance(statistic, str):
        table = _vec_stats()
        fn = table.get(statistic)
        if fn is None:
            raise InvalidInput(
                f"bootstrap_ci: unknown statistic {statistic!r}"
                f"{did_you_mean(statistic, table)} (one of {sorted(table)}, or pass a callable)")
        if statistic == "ratio" and (data.ndim != 2 or data.shape[1] != 2):
            raise InvalidInput(
                "bootstrap_ci: statistic='ratio' needs (numerator, denominator) rows, got "
                f"shape {data.shape}")
        reduce = lambda block: fn(block, axis=1)  # noqa: E731
    elif vectorized and callable(statistic):
        reduce = lambda block: statistic(block, axis=1)  # noqa: E731
    elif callable(statistic):
        reduce = lambda block: [statistic(s) for s in block]  # noqa: E731
    else:
        raise InvalidInput(f"bootstrap_ci: statistic must be a name or a callable, got {statistic!r}")
    # Resample in blocks of rows (bounded memory); drawing the index matrix block by block
    # consumes the generator exactly as one (resamples, n) draw would.
    block = max(1, min(resamples, _BLOCK_ELEMENTS // max(1, data.size)))
    if statistic == "ratio":  # sums of resampled columns: counts x table, no 2-D gather
        num, den = _resampled_sums([data[:, 0], data[:, 1]], resamples, seed)
        return _percentile(_ratio(num, den), alpha)
    if statistic == "mean" and data.ndim == 1:  # the same means, cache-sized blocks of draws
        return _percentile(_resampled_means([data], resamples, seed)[0], alpha)
    rng = np.random.default_rng(seed)
    out: list = []
    for start in range(0, resamples, block):
        rows = min(block, resamples - start)
        idx = rng.integers(0, n, size=(rows, n))
        res = reduce(data[idx])  # (rows, n) or (rows, n, m)
        out.extend(np.asarray(res, dtype=float).reshape(-1).tolist()
                   if not isinstance(res, list) else res)
    try:
        stats = np.asarray(out, dtype=float).reshape(-1)
    except (TypeError, ValueError) as exc:
        raise InvalidInput("bootstrap_ci: the statistic must return one number per resample") from exc
    if stats.size != resamples:
        raise InvalidInput(
            f"bootstrap_ci: the statistic returned {stats.size} values for {resamples} resamples"
            " (a vectorized statistic must reduce along axis=1)")
    return _percentile(stats, alpha)


def bootstrap_mean_cis(columns: Sequence[Sequence[float]], *, resamples: int = 2000,
                       alpha: float = 0.05, seed: int = 0) -> list[tuple[float, float]]:
    """``[bootstrap_ci(c, "mean", resamples=resamples, alpha=alpha, seed=seed) for c in
    columns]``, the same numbers, with the resampling indices drawn once for every column of
    the same length (same seed, same length: the same draws) and each block of them gathered
    from every such column in turn: a pass^k curve's 40 intervals draw their indices once.

    >>> cols = [[0.0, 1.0, 0.5], [1.0, 1.0, 0.0, 0.25]]
    >>> bootstrap_mean_cis(cols, seed=3) == [bootstrap_ci(c, "mean", seed=3) for c in cols]
    True
    """
    import numpy as np

    resamples = _count("resamples", resamples)
    if resamples < 1:
        raise InvalidInput("bootstrap_mean_cis: resamples must be >= 1")
    if not 0.0 < alpha < 1.0:
        raise InvalidInput(f"bootstrap_mean_cis: alpha must be in (0, 1), got {alpha!r}")
    data = []
    for i, c in enumerate(columns):
        try:
            col = np.asarray(c, dtype=float)
        except (TypeError, ValueError) as exc:
            raise InvalidInput(f"bootstrap_mean_cis: column {i} must be numbers") from exc
        if col.ndim != 1 or col.size == 0:
            raise InvalidInput(f"bootstrap_mean_cis: column {i} must be a non-empty 1-D "
                               f"sequence of numbers, got shape {col.shape}")
        data.append(col)
    by_length: dict[int, list[int]] = {}
    for i, col in enumerate(data):
        by_length.setdefault(col.size, []).append(i)
    stats: list = [None] * len(data)
    for members in by_length.values():
        for i, st in zip(members, _resampled_means([data[i] for i in members], resamples, seed)):
            stats[i] = st
    return [_percentile(st, alpha) for st in stats]


def _resampled_means(columns: Sequence[Any], resamples: int, seed: int) -> list:
    """For each 1-D float column (all of one length ``n``), its mean over each of
    ``resamples`` resamples: row ``r`` of ``numpy.random.default_rng(seed).integers(0, n,
    (resamples, n))`` gathered from the column and averaged with ``numpy.mean(..., axis=1)``
    (so exactly the numbers of one such draw), the indices drawn by :class:`_TaskIndices`
    a cache-sized sub-block of rows at a time (``_COUNT_ELEMENTS``), never the whole matrix."""
    import numpy as np

    n = columns[0].size
    draws = _TaskIndices(seed, n)
    sub = max(1, min(resamples, _COUNT_ELEMENTS // n))
    slots = np.empty(sub * n, dtype=np.uint64)
    outs = [np.empty(resamples) for _ in columns]
    for start in range(0, resamples, sub):
        m = min(sub, resamples - start)
        part = slots[:m * n]
        draws.fill(part)
        idx = part.view(np.int64).reshape(m, n)
        for col, out in zip(columns, outs):
            out[start:start + m] = np.mean(col[idx], axis=1)
    return outs


# -- Student t (no scipy) ------------------------------------------------------------------

def _t_cdf_int(t: float, df: int) -> float:
    """Student-t CDF for an integer ``df`` (Abramowitz & Stegun 26.7.3 / 26.7.4: exact series)."""
    theta = math.atan(abs(t) / math.sqrt(df))
    s, c2 = math.sin(theta), math.cos(theta) ** 2
    if df % 2:  # odd
        if df == 1:
            a = 2.0 * theta / math.pi
        else:
            term = total = math.cos(theta)
            for j in range(1, (df - 1) // 2):
                term *= c2 * (2 * j) / (2 * j + 1)
                total += term
            a = 2.0 / math.pi * (theta + s * total)
    else:
        term = total = 1.0
        for j in range(1, df // 2):
            term *= c2 * (2 * j - 1) / (2 * j)
            total += term
        a = s * total
    return 0.5 + 0.5 * a if t >= 0 else 0.5 - 0.5 * a


def t_quantile(q: float, df: int) -> float:
    """The Student-t quantile ``t_{df}^-1(q)`` for an integer ``df >= 1`` (stdlib, no scipy).

    Newton steps on the exact integer-df CDF (Abramowitz & Stegun 26.7.3-4) from the
    Cornish-Fisher start; beyond ``df = 400`` the four-term Cornish-Fisher expansion itself
    (error < 1e-9). Used for task-clustered intervals, whose degrees of freedom are
    ``n_tasks - 1``.

    >>> round(t_quantile(0.975, 23), 4), round(t_quantile(0.975, 1), 4)
    (2.0687, 12.7062)
    """
    df = _count("df", df)
    if df < 1:
        raise InvalidInput(f"t_quantile: df must be >= 1, got {df}")
    z = normal_quantile(q)
    if df == 1:
        return math.tan(math.pi * (q - 0.5))
    if df == 2:
        return (2 * q - 1) / math.sqrt(2 * q * (1 - q))
    v = float(df)
    t = (z + (z ** 3 + z) / (4 * v) + (5 * z ** 5 + 16 * z ** 3 + 3 * z) / (96 * v ** 2)
         + (3 * z ** 7 + 19 * z ** 5 + 17 * z ** 3 - 15 * z) / (384 * v ** 3)
         + (79 * z ** 9 + 776 * z ** 7 + 1482 * z ** 5 - 1920 * z ** 3 - 945 * z) / (92160 * v ** 4))
    if df > 400:
        return t
    logc = math.lgamma((v + 1) / 2) - math.lgamma(v / 2) - 0.5 * math.log(v * math.pi)
    for _ in range(50):
        pdf = math.exp(logc - (v + 1) / 2 * math.log1p(t * t / v))
        step = (_t_cdf_int(t, df) - q) / pdf
        t -= step
        if abs(step) < 1e-12 * max(1.0, abs(t)):
            break
    return t


# -- task-clustered estimates (Miller 2024, "Adding Error Bars to Evals") ------------------

@shape()
class ClusteredRate:
    """A rate over trials grouped in tasks, with a task-clustered interval.

    ``rate`` = sum(successes) / sum(trials); ``se`` its cluster-robust standard error
    (CR1: ``sqrt(G/(G-1) * sum_i (c_i - rate * n_i)^2) / N``, what statsmodels reports for an
    intercept-only OLS with ``cov_type="cluster"``); ``design_effect`` how much the clustering
    inflates the variance over independent trials (floored at 1); ``n_effective`` =
    ``N / design_effect``; ``df`` = ``n_tasks - 1``; ``ci`` and the ``method`` that made it.
    """

    rate: float
    se: float
    ci: tuple[float, float]
    n_tasks: int
    n_trials: int
    design_effect: float
    n_effective: float
    df: int
    method: str


#: ``method`` names of the success-rate intervals (``reliability(..., ci=...)``).
CI_METHODS: tuple[str, ...] = ("clustered", "wilson")


def _z_two_sided(level: float) -> float:
    """z of a two-sided ``level`` interval; the spec's 1.96 at 95% (so Wilson stays as it was)."""
    return Z95 if level == 0.95 else normal_quantile(1.0 - (1.0 - level) / 2.0)


def _wilson_p(p: float, n: float, z: float) -> tuple[float, float]:
    z2 = z * z
    denom = 1.0 + z2 / n
    center = (p + z2 / (2.0 * n)) / denom
    half = z * math.sqrt(max(p * (1.0 - p), 0.0) / n + z2 / (4.0 * n * n)) / denom
    lo = 0.0 if p <= 0.0 else min(max(center - half, 0.0), 1.0)
    hi = 1.0 if p >= 1.0 else min(max(center + half, 0.0), 1.0)
    return (lo, hi)


def _task_counts(fn: str, successes: Sequence[Any], trials: Sequence[Any]) -> list[tuple[int, int]]:
    cs, ns = list(successes), list(trials)
    if len(cs) != len(ns):
        raise InvalidInput(f"{fn}: {len(cs)} success counts for {len(ns)} trial counts; give one "
                           "of each per task")
    out = []
    for i, (c, n) in enumerate(zip(cs, ns)):
        if type(c) is not int or type(n) is not int or c < 0 or n < 0:  # checks where needed
            c, n = _count(f"successes[{i}]", c), _count(f"trials[{i}]", n)
        if c > n:
            raise InvalidInput(f"{fn}: task {i} has {c} successes in {n} trials")
        if n:
            out.append((c, n))
    return out


def clustered_rate(successes: Sequence[int], trials: Sequence[int], *, level: float = 0.95) -> ClusteredRate:
    """Success rate of trials clustered in tasks, with an interval over **tasks like these**.

    Trials of one task share its difficulty, so they are not independent draws: a Wilson
    interval over all ``N`` trials is too narrow for the question "how good is this agent on
    tasks like these", and gets narrower as k grows while the between-task spread does not
    shrink (Miller 2024, "Adding Error Bars to Evals", section on clustered standard errors).
    The interval here is the Wilson score interval at the **effective sample size**
    ``N / design_effect`` (Korn & Graubard 1998), where ``design_effect`` =
    ``sum_i (c_i - p n_i)^2 / (N p (1-p))`` (floored at 1: clustering is never taken to
    help) is the ratio of the task-clustered variance to the binomial one, and with the
    Student-t quantile at ``n_tasks - 1`` degrees of freedom instead of z: the between-task
    variance is estimated from only that many tasks, and with a couple of dozen tasks the
    normal quantile under-covers. The score form keeps the interval inside [0, 1] and honest
    near 0 and 1, where a Wald interval (rate +/- t * se) collapses.

    With **one trial per task** the trials are independent Bernoulli draws, the design
    effect is exactly 1, and the interval **is** the plain Wilson interval (z quantile).
    Fewer than two tasks with trials cannot show the between-task spread: ``(0.0, 1.0)``.

    >>> r = clustered_rate([4, 0, 3, 1], [4, 4, 4, 4])
    >>> r.rate, r.df, r.design_effect > 1
    (0.5, 3, True)
    >>> clustered_rate([1, 0, 1], [1, 1, 1]).ci == wilson_interval(2, 3)
    True
    """
    if not 0.0 < level < 1.0:
        raise InvalidInput(f"clustered_rate: level must be in (0, 1), got {level!r}")
    rows = _task_counts("clustered_rate", successes, trials)
    g = len(rows)
    n_tot = sum(n for _, n in rows)
    s_tot = sum(c for c, _ in rows)
    q = 1.0 - (1.0 - level) / 2.0
    if n_tot == 0:
        return ClusteredRate(0.0, math.inf, (0.0, 1.0), 0, 0, 1.0, 0.0, 0,
                             "no trials: maximally uncertain")
    p = s_tot / n_tot
    ss = math.fsum((c - p * n) ** 2 for c, n in rows)
    se = math.sqrt(g / (g - 1) * ss) / n_tot if g > 1 else math.inf
    binom = p * (1.0 - p) * n_tot
    deff = max(1.0, ss / binom) if binom > 0 else 1.0
    if max(n for _, n in rows) == 1:
        return ClusteredRate(p, se, wilson_interval(s_tot, n_tot, z=_z_two_sided(level)), g, n_tot,
                             1.0, float(n_tot), g - 1,
                             "wilson: one trial per task, so the trials are independent")
    if g < 2:
        return ClusteredRate(p, se, (0.0, 1.0), g, n_tot, deff, n_tot / deff, 0,
                             "task-clustered: a single task cannot show the between-task "
                             "spread; reporting (0, 1)")
    n_eff = n_tot / deff
    return ClusteredRate(p, se, _wilson_p(p, n_eff, t_quantile(q, g - 1)), g, n_tot, deff, n_eff,
                         g - 1, "task-clustered: Wilson at the effective sample size N / design "
                                "effect, t quantile with n_tasks - 1 df")


def success_interval(successes: Sequence[int], trials: Sequence[int], *, method: str = "clustered",
                     level: float = 0.95) -> tuple[tuple[float, float], str]:
    """``(ci, method description)`` of a success rate by ``method``: ``"clustered"``
    (:func:`clustered_rate`, the default) or ``"wilson"`` (:func:`wilson_interval` over all
    trials as if independent)."""
    if method == "clustered":
        r = clustered_rate(successes, trials, level=level)
        return r.ci, r.method
    if method == "wilson":
        rows = _task_counts("success_interval", successes, trials)
        return (wilson_interval(sum(c for c, _ in rows), sum(n for _, n in rows),
                                z=_z_two_sided(level)),
                "wilson: all trials as independent draws")
    raise InvalidInput(f"unknown success-interval method ci={method!r}"
                       f"{did_you_mean(str(method), CI_METHODS)} (one of {CI_METHODS})")


# -- cluster bootstrap ----------------------------------------------------------------------

def _resampled_sums(columns: Sequence[Any], resamples: int, seed: int) -> list:
    """For each 1-D column (one value per task), its sum over ``resamples`` cluster
    resamples of the tasks (the same draws for every column): a list of ``(resamples,)``
    arrays.

    Resample ``r`` is row ``r`` of ``numpy.random.default_rng(seed).integers(0, g, (resamples,
    g))`` -- the same indices, drawn by :class:`_TaskIndices` -- but that matrix is never held
    whole: a cache-sized sub-block of rows at a time (``_COUNT_ELEMENTS`` indices). One or two
    columns are gathered as one complex column (``num + 1j * den``: one 16-byte read per index)
    and summed along each row. More columns go through counts: each row's count of every task
    (one weighted ``bincount``, the weights ones, so the counts come out as floats) times the
    columns (``einsum``), measured faster than gathering column pairs at four and five columns
    (bench/bench_bootstrap.py). Either way the sums are those of the gathered values up to
    floating-point summation order."""
    import numpy as np

    table = np.ascontiguousarray(np.vstack([np.asarray(c, dtype=float) for c in columns]))
    k, g = table.shape
    draws = _TaskIndices(seed, g)
    sub = max(1, min(resamples, _COUNT_ELEMENTS // max(1, g)))
    slots = np.empty(sub * g, dtype=np.uint64)  # a sub-block's indices (counts: slot r * g + i)
    out = np.empty((resamples, k))
    if k <= 2:
        pair = table[0] + 1j * (table[1] if k == 2 else 0.0)
        for start in range(0, resamples, sub):
            m = min(sub, resamples - start)
            part = slots[:m * g]
            draws.fill(part)
            sums = pair[part.view(np.int64).reshape(m, g)].sum(axis=1)
            out[start:start + m, 0] = sums.real
            if k == 2:
                out[start:start + m, 1] = sums.imag
        return [np.ascontiguousarray(out[:, j]) for j in range(k)]
    offsets = np.arange(sub, dtype=np.uint64)[:, None] * np.uint64(g)
    ones = np.ones(sub * g)

    def count(part: Any, m: int, start: int) -> None:
        counts = np.bincount(part.view(np.int64), weights=ones[:m * g], minlength=m * g)
        # einsum's own loops, not BLAS: a threaded BLAS on a busy 2-core machine measured
        # 3-15x slower than this for these thin products
        np.einsum("ij,kj->ik", counts.reshape(m, g), table, out=out[start:start + m])

    starts = range(0, resamples, sub)
    if len(starts) == 1:
        draws.fill(slots[:resamples * g])
        np.add(slots.reshape(sub, g), offsets, out=slots.reshape(sub, g))
        count(slots, resamples, 0)
        return [np.ascontiguousarray(out[:, j]) for j in range(k)]
    # Two stages in two threads (numpy releases the GIL in both): this one draws sub-block
    # i + 1 (the generator's stream, in order) while the other counts sub-block i into its own
    # rows of ``out``. Each sub-block's arithmetic is the one-thread loop's, so the sums are
    # the same bits; ``_PIPELINE`` buffers bound the memory.
    ring = [slots] + [np.empty(sub * g, dtype=np.uint64) for _ in range(_PIPELINE - 1)]
    pending: deque = deque()
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="ek-bootstrap") as counter:
        for i, start in enumerate(starts):
            if len(pending) == _PIPELINE - 1:
                pending.popleft().result()  # its buffer is the one about to be refilled
            m = min(sub, resamples - start)
            part = ring[i % _PIPELINE][:m * g]
            draws.fill(part)
            np.add(part.reshape(m, g), offsets[:m], out=part.reshape(m, g))
            pending.append(counter.submit(count, part, m, start))
        for done in pending:
            done.result()
    return [np.ascontiguousarray(out[:, j]) for j in range(k)]


#: Sub-block buffers the two-thread count in :func:`_resampled_sums` cycles through.
_PIPELINE = 3


_COUNT_ELEMENTS = 1 << 16  # indices per sub-block: its slots, counts and ones stay in L2


class _TaskIndices:
    """The stream of ``numpy.random.default_rng(seed).integers(0, g, dtype=np.int32)``,
    index for index, made from the generator's raw 64-bit outputs with array operations.

    numpy draws each bounded integer by Lemire's method on 32-bit words: ``m = word * g``,
    the index is ``m >> 32``, and a word whose ``m mod 2**32`` falls below
    ``(2**32 - g) % g`` is rejected and the next word tried (fewer than ``g / 2**32`` of
    them). A 64-bit output supplies two words, its low half first. Done here in bulk:
    ``random_raw`` for the words (a third of the time numpy's per-index loop takes; with the
    mapping, about 60%), the rejected words (rare) dropped, and the rest mapped to indices --
    the same indices in the same order, so every interval computed from them is the one the
    plain ``integers`` draws give (tests check this against loops over such draws)."""

    def __init__(self, seed: int, g: int) -> None:
        import numpy as np

        if not 1 <= g <= 2 ** 31 - 1:
            raise InvalidInput(f"bootstrap: cannot resample {g} tasks (from 1 to {2 ** 31 - 1}); "
                               "group the values into fewer clusters")
        self._bits = np.random.default_rng(seed).bit_generator
        self._g = g
        self._threshold = (2 ** 32 - g) % g
        self._spare = np.empty(0, dtype=np.uint32)  # the unused high half of the last output

    def _words(self, want: int) -> Any:
        import numpy as np

        if self._spare.size:
            words, self._spare = self._spare[:want], self._spare[want:]
            return words
        # little-endian view: the low half of each output first, as numpy's next_uint32
        words = np.asarray(self._bits.random_raw((want + 1) // 2), dtype="<u8").view("<u4")
        words, self._spare = words[:want], words[want:]
        return words

    def fill(self, out: Any) -> None:
        """Fill the 1-D uint64 array ``out`` with the next ``out.size`` indices."""
        import numpy as np

        g, done = self._g, 0
        while done < out.size:
            words = self._words(out.size - done)
            if self._threshold and int(np.multiply(words, np.uint32(g)).min()) < self._threshold:
                words = words[np.multiply(words, np.uint32(g)) >= self._threshold]
            dst = out[done:done + words.size]
            np.copyto(dst, words)
            dst *= np.uint64(g)
            dst >>= np.uint64(32)
            done += words.size


def _ratio(num: Any, den: Any) -> Any:
    import numpy as np

    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1), np.inf)


def _check_columns(fn: str, *cols: Any) -> int:
    import numpy as np

    lens = {len(c) for c in cols}
    if len(lens) != 1:
        raise InvalidInput(f"{fn}: the per-task columns differ in length ({sorted(lens)}); give "
                           "one value per task in each")
    g = lens.pop()
    if g == 0:
        raise InvalidInput(f"{fn}: no tasks to resample; pass at least one task")
    for c in cols:
        a = np.asarray(c, dtype=float)
        if not np.isfinite(a).all() or (a < 0).any():
            raise InvalidInput(f"{fn}: per-task values must be finite and >= 0, got {list(c)[:8]!r}")
    return g


def cluster_bootstrap_ratio(numerators: Sequence[float], denominators: Sequence[float], *,
                            resamples: int = 2000, alpha: float = 0.05,
                            seed: int = 0) -> tuple[float, float]:
    """Bootstrap-t CI of ``R = sum(num) / sum(den)`` resampling **tasks** (a cluster bootstrap).

    One value per task: e.g. the dollars a task's trials spent and the successes they had,
    so each resample keeps every task's trials together (Field & Welsh 2007; Miller 2024):
    cost and success vary between tasks (hard tasks cost more and succeed less), and
    resampling episodes instead treats that shared variation as independent noise.

    The interval is **studentized** (bootstrap-t, Efron & Tibshirani 1993 ch. 12): each
    resample's ``t* = (R* - R) / se*`` with the linearised cluster-robust
    ``se = sqrt(G/(G-1) * sum_i (num_i - R den_i)^2) / sum(den)``, and the CI is
    ``[R - t*_{1-alpha/2} se, R - t*_{alpha/2} se]``. A ratio of skewed sums over a few
    dozen tasks is itself skewed; the percentile interval under-covers there (measured 0.928
    at 30 tasks x 4 trials with lognormal costs, bench/bench_stats.py), the bootstrap-t does
    not. When the ratio cannot be studentized (fewer than two tasks, a zero standard error,
    or no success at all) the percentile interval is returned. A resample without
    successes has an infinite ratio.

    >>> cluster_bootstrap_ratio([2.0, 2.0, 2.0], [1, 1, 1])
    (2.0, 2.0)
    """
    import numpy as np

    g = _check_columns("cluster_bootstrap_ratio", numerators, denominators)
    resamples = _count("resamples", resamples)
    if resamples < 1 or not 0.0 < alpha < 1.0:
        raise InvalidInput(f"cluster_bootstrap_ratio: resamples must be >= 1 and alpha in (0, 1), "
                           f"got {resamples!r}, {alpha!r}")
    num = np.asarray(numerators, dtype=float)
    den = np.asarray(denominators, dtype=float)
    sn, sd, snn, snd, sdd = _resampled_sums([num, den, num * num, num * den, den * den],
                                            resamples, seed)
    ratios = _ratio(sn, sd)
    if g < 2 or den.sum() <= 0:
        return _percentile(ratios, alpha)
    r = num.sum() / den.sum()
    se = math.sqrt(g / (g - 1) * float(((num - r * den) ** 2).sum())) / den.sum()
    if not se > 0:
        return _percentile(ratios, alpha)
    with np.errstate(divide="ignore", invalid="ignore"):
        ok = sd > 0
        rr = np.where(ok, ratios, 0.0)
        ss = np.maximum(snn - 2 * rr * snd + rr * rr * sdd, 0.0)
        se_star = np.sqrt(g / (g - 1) * ss) / np.where(ok, sd, 1.0)
        t_star = np.where(ok, (rr - r) / np.where(se_star > 0, se_star, np.inf), np.inf)
    t_lo, t_hi = _percentile(t_star, alpha)
    return (float(max(0.0, r - t_hi * se)), float(r - t_lo * se))


@shape()
class PairedDifference:
    """``a - b`` of two ratio-of-sums statistics measured on the **same tasks**.

    ``diff`` = ``sum(num_a)/sum(den_a) - sum(num_b)/sum(den_b)``; ``se`` its cluster-robust
    (CR1) standard error over tasks by linearisation; ``df`` = ``n_tasks - 1``.
    """

    diff: float
    se: float
    n_tasks: int
    df: int

    def upper(self, alpha: float) -> float:
        """One-sided ``1 - alpha`` upper bound (Student t at ``df``)."""
        return self.diff + t_quantile(1.0 - alpha, max(self.df, 1)) * self.se

    def lower(self, alpha: float) -> float:
        """One-sided ``1 - alpha`` lower bound (Student t at ``df``)."""
        return self.diff - t_quantile(1.0 - alpha, max(self.df, 1)) * self.se


def paired_difference(num_a: Sequence[float], den_a: Sequence[float], num_b: Sequence[float],
                      den_b: Sequence[float]) -> PairedDifference:
    """Paired, task-clustered difference of two rates over the same tasks (Miller 2024, "paired
    differences").

    Task ``i`` contributes ``num_a[i] / den_a[i]`` trials to run a and the same for run b
    (successes / trials for a success rate; a per-task value / 1 for pass^k). Both runs
    share every task's difficulty, so the difference is estimated from per-task
    differences: the linearised residuals ``u_i = (num_a_i - R_a den_a_i) / D_a -
    (num_b_i - R_b den_b_i) / D_b`` give ``se = sqrt(G/(G-1) * sum u_i^2)``. That removes the
    between-task variance both runs share, which Newcombe's unpaired interval counts twice
    (it is too wide for the same tasks: false alarms well below its nominal level, and lost
    power). With equal weights this is the paired t-test on per-task differences.

    >>> d = paired_difference([3, 2, 4], [4, 4, 4], [4, 3, 4], [4, 4, 4])
    >>> round(d.diff, 4), d.df
    (-0.1667, 2)
    """
    import numpy as np

    g = _check_columns("paired_difference", num_a, den_a, num_b, den_b)
    na, da, nb, db = (np.asarray(x, dtype=float) for x in (num_a, den_a, num_b, den_b))
    if da.sum() <= 0 or db.sum() <= 0:
        raise InsufficientTrials("paired_difference: a run has no trials (denominators sum to 0); "
                                 "run at least one trial on each side")
    ra, rb = na.sum() / da.sum(), nb.sum() / db.sum()
    u = (na - ra * da) / da.sum() - (nb - rb * db) / db.sum()
    se = math.sqrt(g / (g - 1) * float(np.dot(u, u))) if g > 1 else math.inf
    return PairedDifference(float(ra - rb), se, g, g - 1)


def paired_bootstrap_ratio_difference(num_a: Sequence[float], den_a: Sequence[float],
                                      num_b: Sequence[float], den_b: Sequence[float], *,
                                      resamples: int = 2000, alpha: float = 0.05,
                                      seed: int = 0) -> tuple[float, float]:
    """Percentile CI of ``R_a - R_b`` (``R = sum(num) / sum(den)``) by resampling **tasks
    jointly** in both runs: the paired cluster bootstrap for cost per success
    (``num`` = a task's dollars, ``den`` = its successes). An infinite ratio in a resample
    (no success) gives an infinite difference there.

    >>> paired_bootstrap_ratio_difference([2, 2], [1, 1], [1, 1], [1, 1])
    (1.0, 1.0)
    """
    import numpy as np

    _check_columns("paired_bootstrap_ratio_difference", num_a, den_a, num_b, den_b)
    resamples = _count("resamples", resamples)
    if resamples < 1 or not 0.0 < alpha < 1.0:
        raise InvalidInput("paired_bootstrap_ratio_difference: resamples must be >= 1 and alpha "
                           f"in (0, 1), got {resamples!r}, {alpha!r}")
    sa, sda, sb, sdb = _resampled_sums([num_a, den_a, num_b, den_b], resamples, seed)
    ra, rb = _ratio(sa, sda), _ratio(sb, sdb)
    with np.errstate(invalid="ignore"):
        d = np.where(np.isinf(ra) & np.isinf(rb), 0.0, ra - rb)
    return _percentile(d, alpha)


def tasks_for_power(se: float, n_tasks: int, effect: float, *, alpha: float = 0.025,
                    power: float = 0.8) -> int:
    """Tasks per run for a one-sided paired test at ``alpha`` to detect ``effect`` with
    ``power``, from the standard error ``se`` measured on ``n_tasks`` tasks (the paired
    per-task variance ``se^2 * n_tasks`` scales as ``1 / tasks``):
    ``ceil((z_{1-alpha} + z_power)^2 * se^2 * n_tasks / effect^2)``.

    >>> tasks_for_power(0.05, 60, 0.1)
    118
    """
    if not (se > 0 and math.isfinite(se)) or not effect > 0:
        raise InvalidInput(f"tasks_for_power: se and effect must be > 0, got {se!r}, {effect!r}")
    if not 0.0 < alpha < 1.0 or not 0.0 < power < 1.0:
        raise InvalidInput(f"tasks_for_power: alpha and power must be in (0, 1), got {alpha!r}, {power!r}")
    z = normal_quantile(1.0 - alpha) + normal_quantile(power)
    return max(2, math.ceil(z * z * se * se * n_tasks / (effect * effect) - 1e-9))


# -- group-sequential boundaries (alpha spending) -----------------------------------------------

def obrien_fleming_spending(t: float, alpha: float) -> float:
    """Lan & DeMets (1983) O'Brien-Fleming-type spending function for a one-sided level
    ``alpha``: ``alpha(t) = 2 - 2 Phi(z_{1-alpha/2} / sqrt(t))``, the false-alarm
    probability allowed to be spent by information fraction ``t`` (``alpha(1) = alpha``).
    It spends almost nothing early, so early stops need overwhelming evidence and the last
    look keeps nearly the whole level."""
    if not 0.0 < t <= 1.0:
        raise InvalidInput(f"obrien_fleming_spending: t must be in (0, 1], got {t!r}")
    z = normal_quantile(1.0 - alpha / 2.0)
    return 2.0 - 2.0 * NormalDist().cdf(z / math.sqrt(t))


def group_sequential_bounds(fractions: Sequence[float], alpha: float = 0.025) -> tuple[float, ...]:
    """One-sided z boundaries ``c_1..c_K`` for looks at information ``fractions``
    (increasing, last 1.0), spending ``alpha`` by :func:`obrien_fleming_spending`: under the
    null, ``P(Z_1 > c_1 or ... or Z_K > c_K) = alpha`` for the canonical joint distribution
    (independent increments, ``corr(Z_i, Z_j) = sqrt(t_i / t_j)``), computed by the
    recursive numerical integration of Armitage, McPherson & Rowe (1969) on a grid.

    >>> [round(c, 2) for c in group_sequential_bounds([0.5, 1.0])]
    [2.96, 1.97]
    """
    import numpy as np

    ts = [float(t) for t in fractions]
    if not ts or any(not 0 < t <= 1 for t in ts) or any(b <= a for a, b in zip(ts, ts[1:])) \
            or abs(ts[-1] - 1.0) > 1e-12:
        raise InvalidInput(f"group_sequential_bounds: fractions must increase within (0, 1] and "
                           f"end at 1.0, got {list(fractions)!r}")
    if not 0.0 < alpha < 0.5:
        raise InvalidInput(f"group_sequential_bounds: alpha must be in (0, 0.5), got {alpha!r}")
    return _gs_bounds(tuple(round(t, 12) for t in ts), float(alpha))


def _norm_sf(x: Any) -> Any:
    import numpy as np

    return 0.5 * np.vectorize(math.erfc, otypes=[float])(np.asarray(x, dtype=float) / math.sqrt(2.0))


@functools.lru_cache(maxsize=64)
def _gs_bounds(ts: tuple, alpha: float) -> tuple[float, ...]:
    import numpy as np

    spent = [obrien_fleming_spending(t, alpha) for t in ts]
    grid = np.linspace(-9.0, 9.0, 1201)  # B(t) = Z sqrt(t), Brownian scale
    h = grid[1] - grid[0]
    bounds = [normal_quantile(1.0 - spent[0])]
    dens = np.exp(-grid ** 2 / (2 * ts[0])) / math.sqrt(2 * math.pi * ts[0])
    dens = np.where(grid < bounds[0] * math.sqrt(ts[0]), dens, 0.0)
    for j in range(1, len(ts)):
        dt = ts[j] - ts[j - 1]
        target = spent[j] - spent[j - 1]
        sd = math.sqrt(dt)

        def cross(c: float) -> float:
            return float(h * np.dot(dens, _norm_sf((c * math.sqrt(ts[j]) - grid) / sd)))

        lo, hi = -8.0, 12.0
        for _ in range(42):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if cross(mid) > target else (lo, mid)
        c = (lo + hi) / 2
        bounds.append(c)
        kern = np.exp(-(grid[:, None] - grid[None, :]) ** 2 / (2 * dt)) / math.sqrt(2 * math.pi * dt)
        dens = h * kern @ dens
        dens = np.where(grid < c * math.sqrt(ts[j]), dens, 0.0)
    return tuple(float(b) for b in bounds)
