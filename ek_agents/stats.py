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

import math
import operator
from collections.abc import Callable, Sequence
from statistics import NormalDist
from typing import Any, Optional, Union

from .errors import InsufficientTrials, InvalidInput, did_you_mean

__all__ = [
    "pass_at_k", "pass_hat_k", "wilson_interval", "newcombe_difference", "bootstrap_ci",
    "difference_upper_bound", "trials_for_power", "normal_quantile", "Z95",
    "VECTORIZED_STATISTICS",
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
    rng = np.random.default_rng(seed)
    # Resample in blocks of rows (bounded memory); drawing the index matrix block by block
    # consumes the generator exactly as one (resamples, n) draw would.
    block = max(1, min(resamples, _BLOCK_ELEMENTS // max(1, data.size)))
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
