"""Task-clustered rates (Miller 2024, "Adding Error Bars to Evals"): a success rate over trials
grouped in tasks with a cluster-robust interval, and the success-interval method switch.
"""
from __future__ import annotations

import math
from collections.abc import Collection, Sequence
from typing import Any

from ..core import shape
from ..errors import InvalidInput, did_you_mean
from .intervals import Z95, normal_quantile, t_quantile, whole_count, wilson_interval, wilson_score

__all__ = ["ClusteredRate", "clustered_rate", "CI_METHODS", "success_interval", "cr1_variance"]

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


def cr1_variance(influences: Collection[float]) -> float:
    """The cluster-robust (CR1) variance of an estimate from its per-task influences ``psi_i``:
    ``G/(G-1) * sum_i psi_i^2`` over the ``G`` tasks; ``inf`` with fewer than two tasks (one
    task cannot show the between-task spread).

    >>> cr1_variance([0.1, -0.1]), cr1_variance([0.3])
    (0.04000000000000001, inf)
    """
    g = len(influences)
    return g / (g - 1) * math.fsum(v * v for v in influences) if g > 1 else math.inf


def _task_counts(fn: str, successes: Sequence[Any], trials: Sequence[Any]) -> list[tuple[int, int]]:
    cs, ns = list(successes), list(trials)
    if len(cs) != len(ns):
        raise InvalidInput(f"{fn}: {len(cs)} success counts for {len(ns)} trial counts; give one "
                           "of each per task")
    out = []
    for i, (c, n) in enumerate(zip(cs, ns)):
        if type(c) is not int or type(n) is not int or c < 0 or n < 0:  # checks where needed
            c, n = whole_count(f"successes[{i}]", c), whole_count(f"trials[{i}]", n)
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
    return ClusteredRate(p, se, wilson_score(p, n_eff, z=t_quantile(q, g - 1)), g, n_tot, deff, n_eff,
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
