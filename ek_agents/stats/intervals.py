"""Estimators for k-trial agent runs: pass@k, pass^k, Wilson, Newcombe, the normal and t quantiles.

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

Bootstraps are in :mod:`.bootstrap`, task-clustered rates in :mod:`.clustered`, power and
group-sequential planning in :mod:`.power`.
"""
from __future__ import annotations

import math
import operator
from collections.abc import Sequence
from statistics import NormalDist
from typing import Any, Optional

from ..errors import InsufficientTrials, InvalidInput

__all__ = ["pass_at_k", "pass_hat_k", "wilson_interval", "wilson_score", "newcombe_difference",
           "difference_upper_bound", "normal_quantile", "Z95", "t_quantile", "whole_count"]

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


def whole_count(name: str, value: Any) -> int:
    """``value`` as a whole number >= 0 (a float that is whole is accepted), else InvalidInput
    naming ``name``."""
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
    n, c, k = whole_count("n", n), whole_count("c", c), whole_count("k", k)
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
    c, n = whole_count("successes", successes), whole_count("n", n)
    if c > n:
        raise InvalidInput(f"wilson_interval: successes={c} exceed n={n}")
    if not z > 0:
        raise InvalidInput(f"wilson_interval: z must be > 0, got {z!r}")
    if n == 0:
        return (0.0, 1.0)
    return wilson_score(c / n, n, z=z)


def wilson_score(p: float, n: float, *, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of a proportion ``p`` in [0, 1] seen on ``n > 0`` trials, where
    ``n`` may be fractional (an effective sample size: the task-clustered and the
    judge-corrected intervals use it so); the quantile ``z`` may be a t quantile. The bounds
    are exactly 0.0 at ``p == 0`` and exactly 1.0 at ``p == 1``. :func:`wilson_interval` is
    this at ``p = successes / n``.

    >>> wilson_score(0.0, 10) == wilson_interval(0, 10)
    True
    """
    z2 = z * z
    denom = 1.0 + z2 / n
    center = (p + z2 / (2.0 * n)) / denom
    half = z * math.sqrt(p * (1.0 - p) / n + z2 / (4.0 * n * n)) / denom
    lo = 0.0 if p <= 0.0 else min(max(center - half, 0.0), 1.0)
    hi = 1.0 if p >= 1.0 else min(max(center + half, 0.0), 1.0)
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
    ca, na = whole_count("successes_a", successes_a), whole_count("n_a", n_a)
    cb, nb = whole_count("successes_b", successes_b), whole_count("n_b", n_b)
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
    df = whole_count("df", df)
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
