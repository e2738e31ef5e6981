"""Populations a pilot could have come from: draws of the variance components a plan rests on.

A pilot of 30 tasks x k = 4 estimates the between-task variance of the success rate from 30
numbers; its point estimate is often 0 when the true spread is not, and a plan sized from the
point estimate misses its target about half the time by construction. :func:`success_draws`
gives draws of ``(mean, between, within)`` from the **posterior** of the beta-binomial model
behind those components (per-task success ``p_i ~ Beta`` with mean ``m`` and intra-task
correlation ``rho``, so ``between = rho m (1 - m)`` and ``within = E[p(1 - p)] = (1 - rho)
m (1 - m)``; trials of a task ``~ Binomial(k_i, p_i)``), under a uniform prior on
``(m, rho)`` in the unit square. The likelihood is exact (the beta-binomial probability of each
task's count, ``prod_{j<c}(m + j t) prod_{j<k-c}(1 - m + j t) / prod_{j<k}(1 + j t)`` with
``t = rho / (1 - rho)``), evaluated on a grid that is refined to where the posterior lives;
draws are taken from the grid's cells, uniformly within a cell.

What the pilot cannot tell stays uncertain instead of vanishing: a pilot of one trial per task
carries no information on ``rho`` (the likelihood is flat in it), so its draws keep the prior's
whole range, and a pilot of a few tasks gives a wide posterior. The planner
(:mod:`ek_agents.stats.budget`) takes the ``assurance`` quantile of each design's variance over
these draws: the design then meets its goal with that posterior probability (an *assurance*,
O'Hagan & Stevens 2001), the Bayesian counterpart of planning from an upper confidence limit on
the pilot's variance (Browne 1995).

:func:`cost_draws` does the same for the cost-per-success components by the Bayesian bootstrap
over the pilot's priced tasks (Rubin 1981: Dirichlet(1, ..., 1) weights on the tasks), the
within-task part including each trial's dollar spread (see :func:`cost_draws`).

numpy is imported inside the functions: ``ek_agents.stats`` is imported by every command, and
numpy's import costs tens of milliseconds that only a plan needs.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

__all__ = ["SuccessDraws", "CostDraws", "success_draws", "cost_draws", "MIN_PILOT_TASKS",
           "disagreement_upper", "quantile",
           "within_z_variances"]

#: Fewer pilot tasks than this cannot say much about the between-task spread: the plan says so.
MIN_PILOT_TASKS: int = 10


class SuccessDraws(NamedTuple):
    """Draws of the success-rate components (numpy arrays of one length)."""

    mean: Any
    between: Any
    within: Any


class CostDraws(NamedTuple):
    """Draws of the cost-per-success components (numpy arrays of one length): the pooled cost
    per success ``R``, successes per trial ``mu``, the between-task variance of a task's mean
    ``z = dollars - R success`` and the within-task variance of a trial's ``z``."""

    cost_per_success: Any
    success_per_trial: Any
    between: Any
    within: Any


def _loglik(rows: Sequence[tuple[int, int]], m: Any, rho: Any) -> Any:
    """Beta-binomial log likelihood of the task counts ``rows`` at grid points ``(m, rho)``."""
    import numpy as np

    t = rho / (1.0 - rho)
    cs = np.array([c for c, _ in rows])
    ns = np.array([n for _, n in rows])
    ll = np.zeros(np.broadcast(m, t).shape)
    for j in range(int(ns.max())):
        # tasks with more than j successes / failures / trials contribute the j-th factor
        a, b, d = int((cs > j).sum()), int((ns - cs > j).sum()), int((ns > j).sum())
        if a:
            ll = ll + a * np.log(m + j * t)
        if b:
            ll = ll + b * np.log(1.0 - m + j * t)
        if d and j:
            ll = ll - d * np.log1p(j * t)
    return ll


def success_draws(rows: Sequence[tuple[int, int]], *, draws: int = 4000,
                  seed: int = 0) -> SuccessDraws:
    """``draws`` posterior draws of ``(mean, between, within)`` from per-task ``(successes,
    trials)`` ``rows`` (see the module docstring). Seeded: the same pilot gives the same draws.

    >>> d = success_draws([(c, 4) for c in [0, 1, 2, 3, 4] * 6], draws=2000)
    >>> 0.4 < float(d.mean.mean()) < 0.6, float(d.between.min()) >= 0.0
    (True, True)
    """
    import numpy as np

    rows = [(int(c), int(n)) for c, n in rows if n]
    lo_m, hi_m, lo_r, hi_r = 0.0, 1.0, 0.0, 1.0
    for size in (100, 140):  # a coarse grid, then one on the box where the posterior lives
        em = np.linspace(lo_m, hi_m, size + 1)
        er = np.linspace(lo_r, hi_r, size + 1)
        m, r = np.meshgrid((em[1:] + em[:-1]) / 2, (er[1:] + er[:-1]) / 2, indexing="ij")
        ll = _loglik(rows, m, r)
        live = ll > ll.max() - 30.0
        im, ir = np.nonzero(live)
        lo_m, hi_m = em[max(im.min() - 1, 0)], em[min(im.max() + 2, size)]
        lo_r, hi_r = er[max(ir.min() - 1, 0)], er[min(ir.max() + 2, size)]
    w = np.exp(ll - ll.max()).ravel()
    rng = np.random.default_rng(seed)
    cell = rng.choice(w.size, draws, p=w / w.sum())
    dm, dr = (em[1] - em[0]), (er[1] - er[0])
    md = np.clip(m.ravel()[cell] + dm * (rng.random(draws) - 0.5), 1e-9, 1 - 1e-9)
    rd = np.clip(r.ravel()[cell] + dr * (rng.random(draws) - 0.5), 0.0, 1.0)
    total = md * (1.0 - md)
    return SuccessDraws(md, rd * total, (1.0 - rd) * total)


def cost_draws(rows: Sequence[tuple[float, int, int, float]], *, draws: int = 4000,
               seed: int = 0) -> CostDraws:
    """Bayesian-bootstrap draws of the cost-per-success components from per-task ``(dollars,
    successes, trials, within)`` rows, ``within`` the within-task variance of one trial's
    ``z = dollars - R success`` at the pilot's ``R`` (the success coin's and each trial's dollar
    spread). Each draw weights the tasks by Dirichlet(1, ..., 1) and recomputes ``R``, ``mu``,
    the between-task variance of ``zbar_i`` (less the within part's share ``within / k_i``) and
    the mean within part."""
    import numpy as np

    d, s, n, wz = (np.array([r[i] for r in rows], dtype=float) for i in range(4))
    rng = np.random.default_rng(seed)
    g = len(rows)
    wt = rng.dirichlet(np.ones(g), draws)  # (draws, g)
    spent, wins, trials = wt @ d, wt @ s, wt @ n
    r = spent / np.maximum(wins, 1e-300)
    zbar = (d[None, :] - r[:, None] * s[None, :]) / n[None, :]
    zm = (wt * zbar).sum(axis=1)
    var_z = (wt * (zbar - zm[:, None]) ** 2).sum(axis=1) * g / (g - 1)
    within = wt @ wz
    between = np.maximum(var_z - within * (wt @ (1.0 / n)), 0.0)
    return CostDraws(r, wins / trials, between, within)


def within_z_variances(rows: Sequence[tuple], r: float, within_success: float,
                       cost_cv: float) -> tuple[list[float], str]:
    """Each priced task's within-task variance of a trial's ``z = dollars - r success`` (the
    ``within`` of :func:`cost_draws`' rows), from rows ``(dollars, successes, trials,
    dollars_sq, dollars_success)``: measured from ``dollars_sq`` / ``dollars_success`` where
    every task has them (and 2+ trials), else the success coin's ``r^2 within_success`` plus
    ``(cost_cv x the task's mean dollars per trial)^2``. Also ``"measured"`` or ``"assumed"``."""
    measured = all(q is not None and ds is not None and k >= 2 for _, _, k, q, ds in rows)
    out = []
    for d, s, k, q, ds in rows:
        if measured:
            sz2 = q - 2.0 * r * ds + r * r * s  # sum of z^2 (success squared is success)
            out.append(max(0.0, (sz2 - (d - r * s) ** 2 / k) / (k - 1)))
        else:
            out.append(r * r * within_success + (cost_cv * d / k) ** 2)
    return out, "measured" if measured else "assumed"


def disagreement_upper(n_disagree: float, n: int, assurance: float, *, seed: int = 0) -> float:
    """The ``assurance`` quantile of the judge's disagreement rate given ``n_disagree`` of ``n``
    labeled trials: the Jeffreys posterior Beta(x + 1/2, n - x + 1/2), by 20,000 seeded draws
    (numpy's Beta sampler: no scipy in the core install)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    x = rng.beta(n_disagree + 0.5, max(n - n_disagree, 0.0) + 0.5, 20_000)
    return float(np.quantile(x, assurance))


def quantile(values: Any, q: float) -> float:
    """The ``q`` quantile of a draws array."""
    import numpy as np

    return float(np.quantile(np.ravel(values), q))
