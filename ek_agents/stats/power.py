"""Planning: trials and tasks for a wanted power, and group-sequential (O'Brien-Fleming) bounds
for a gate that looks at a run more than once.
"""
from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from statistics import NormalDist
from typing import Any

from ..errors import InvalidInput
from .intervals import normal_quantile

__all__ = ["trials_for_power", "tasks_for_power", "obrien_fleming_spending",
           "group_sequential_bounds"]

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
