"""What is done with a judge-corrected rate: its cost per corrected success, the difference
of two (the gate's statistic), and what a report and the gate show of it.

:func:`cost_per_corrected_success` divides a run's dollars by its corrected successes with a
**Fieller** interval that carries both the cost's and the rate's uncertainty (and, with task
groups, their covariance); :func:`corrected_difference` bounds ``current - baseline`` of two
corrected rates (paired over shared tasks by their influences); :func:`corrected_check` is the
gate's success check on two reports' ``detail["judge_corrected"]``; :func:`judge_rows` and
:func:`judge_error_line` are the raw-beside-corrected rows and the judge's-error line the
Markdown and HTML reports print. The rate itself is :mod:`ek_agents.stats.judgecorrect`'s.

>>> from ek_agents.stats.judgecorrect import judge_corrected_rate
>>> r = judge_corrected_rate([1, 0] * 10, [1, 0] * 10, [1, 0] * 90)
>>> c = cost_per_corrected_success(r, [0.01] * 200)
>>> c.trials, round(c.dollars, 2)
(200, 2.0)
"""
from __future__ import annotations

import dataclasses

import math
from collections.abc import Mapping, Sequence
from typing import Any, Optional

from ..core import shape
from ..errors import InvalidInput
from .clustered import cr1_variance
from .intervals import normal_quantile, t_quantile
from .judgecorrect import DF_CAP, JudgeCorrectedRate, rate_of_doc, rate_quantile

__all__ = ["CorrectedCostPerSuccess", "cost_per_corrected_success", "CorrectedDifference",
           "corrected_difference", "corrected_check", "judge_rows", "judge_error_line"]


# -- cost per corrected success -------------------------------------------------------------

@shape()
class CorrectedCostPerSuccess:
    """Dollars per truly successful trial: the run's dollars over (corrected rate x trials)."""

    estimate: float
    """``dollars / (rate.estimate * trials)`` (``inf`` when the corrected rate is <= 0)."""
    ci: tuple[float, float]
    """Fieller interval on the ratio mean cost per trial / corrected rate, carrying both
    uncertainties and their covariance (upper ``inf`` when the rate's interval reaches 0)."""
    dollars: float
    """The run's dollars over every judged trial."""
    trials: int
    """Judged trials (labeled + unlabeled)."""
    method: str
    """How the interval was made."""
    estimated: int = 0
    """Judged trials without a known cost (from ``task_totals``: trials the cost report could
    not price) whose dollars are estimated at the priced trials' mean: ``dollars`` rests on
    ``trials - estimated`` measured costs. 0 when every trial was priced."""


def cost_per_corrected_success(rate: JudgeCorrectedRate, costs: Optional[Sequence[float]] = None, *,
                               groups: Optional[Sequence[Any]] = None,
                               task_totals: Optional[Mapping[str, Mapping[str, Any]]] = None
                               ) -> CorrectedCostPerSuccess:
    """Cost per corrected success with a **Fieller** interval that carries both uncertainties.

    ``costs`` holds every judged trial's dollars (labeled and unlabeled, any order) and
    ``groups`` (optional) their task ids. The ratio ``R = C / theta`` (``C`` mean dollars per
    trial, ``theta`` the corrected rate): R is in the interval when
    ``(C - R theta)^2 <= t^2 (var C - 2 R cov + R^2 var theta)`` (Fieller 1954), with
    ``var theta`` the corrected rate's (from its interval's half-width, so the score interval's
    width carries over), ``var C`` the mean cost's (cluster-robust over tasks when ``groups``
    are given, and then ``cov`` from the per-task influences of both; without groups the cost
    and the rate are taken as independent: costs are known for every trial, the rate's
    uncertainty is mostly the labels'). The same df as the rate's interval.

    Instead of ``costs``, ``task_totals`` (a cost report's ``{task_id: {"n", "dollars"}}`` of
    the priced trials) gives the per-task sums the grouped form needs; the mean cost per trial
    is then over the priced trials, and dollars are scaled to every judged trial: the trials
    filled in that way are counted in ``estimated`` (and said by :func:`judge_error_line`).

    >>> from ek_agents.stats.judgecorrect import judge_corrected_rate
    >>> r = judge_corrected_rate([1, 0] * 10, [1, 0] * 10, [1, 0] * 90)
    >>> c = cost_per_corrected_success(r, [0.01] * 200)
    >>> round(c.estimate, 3), c.ci[0] < c.estimate < c.ci[1]
    (0.02, True)
    """
    trials = rate.n_labeled + rate.n_unlabeled
    if task_totals is not None:
        return _cost_from_totals(rate, task_totals, trials)
    if costs is None:
        raise InvalidInput("cost_per_corrected_success: give costs (one per judged trial) or "
                           "task_totals (a cost report's per-task totals)")
    cs = [float(c) for c in costs]
    if len(cs) != trials:
        raise InvalidInput(f"cost_per_corrected_success: {len(cs)} costs for {trials} judged trials; "
                           "give one cost per judged trial (labeled and unlabeled)")
    if any(not math.isfinite(c) or c < 0 for c in cs):
        raise InvalidInput("cost_per_corrected_success: costs must be finite dollars >= 0; an "
                           "unknown cost is not 0 (price the trial or leave cost out)")
    dollars = math.fsum(cs)
    cbar = dollars / trials
    if groups is not None:
        gs = list(groups)
        if len(gs) != trials:
            raise InvalidInput(f"cost_per_corrected_success: {len(gs)} task ids for {trials} costs")
        per: dict[str, list[float]] = {}
        for c, t in zip(cs, gs):
            e = per.setdefault(str(t), [0.0, 0.0])
            e[0] += c
            e[1] += 1
        v_c, cov = _cluster_cost(rate, per, cbar, trials)
        how = "cluster-robust over tasks, with the cost-rate covariance"
    else:
        v_c = math.fsum((c - cbar) ** 2 for c in cs) / (trials - 1) / trials if trials > 1 else 0.0
        cov = 0.0
        how = "trials independent, cost and rate independent"
    return _fieller(rate, cbar, v_c, cov, dollars, trials, how)


def _cost_from_totals(rate: JudgeCorrectedRate, totals: Mapping[str, Mapping[str, Any]],
                      trials: int) -> CorrectedCostPerSuccess:
    rows = {str(t): (float(v["dollars"]), int(v["n"])) for t, v in totals.items()
            if isinstance(v, Mapping) and v.get("n")}
    n = sum(k for _, k in rows.values())
    if n == 0 or any(not math.isfinite(d) or d < 0 for d, _ in rows.values()):
        raise InvalidInput("cost_per_corrected_success: task_totals hold no priced trial (or a "
                           "non-finite cost); price the run (prices=...) first")
    cbar = math.fsum(d for d, _ in rows.values()) / n
    v_c, cov = _cluster_cost(rate, rows, cbar, n)
    out = _fieller(rate, cbar, v_c, cov, cbar * trials, trials,
                   f"cluster-robust over {len(rows)} tasks, with the cost-rate covariance")
    return dataclasses.replace(out, estimated=max(trials - n, 0))


def _cluster_cost(rate: JudgeCorrectedRate, per_task: Mapping[str, Sequence[float]], cbar: float,
                  n: int) -> tuple[float, float]:
    """``(var, cov)`` of the mean cost per trial ``cbar`` over ``n`` trials from per-task
    ``(dollars, trials)``: its CR1 variance over tasks and its covariance with the corrected
    rate (from the rate's per-task influences, which already carry their ``G/(G-1)``)."""
    g = len(per_task)
    psi = {t: (d - k * cbar) / n for t, (d, k) in per_task.items()}
    v_c = cr1_variance(psi.values())
    cov = 0.0
    if rate.influence and g > 1:
        cov = math.sqrt(g / (g - 1)) * math.fsum(psi[t] * rate.influence.get(t, 0.0) for t in psi)
    return v_c, cov


def _spread(rate: JudgeCorrectedRate) -> tuple[float, float]:
    """``(q, var)``: the quantile of ``rate``'s interval (:func:`rate_quantile` at its level and
    df) and the variance its half-width implies, ``((hi - lo) / (2 q))^2`` -- so what divides or
    compares corrected rates carries the score interval's small-sample care over."""
    q = rate_quantile(rate.level, rate.df if rate.df is not None else math.inf)
    return q, ((rate.ci[1] - rate.ci[0]) / (2.0 * q)) ** 2


def _fieller(rate: JudgeCorrectedRate, cbar: float, v_c: float, cov: float, dollars: float,
             trials: int, how: str) -> CorrectedCostPerSuccess:
    theta = rate.estimate
    q, v_t = _spread(rate)
    est = cbar / theta if theta > 0 else math.inf
    q2 = q * q
    a = theta * theta - q2 * v_t
    b = -2.0 * (cbar * theta - q2 * cov)
    cc = cbar * cbar - q2 * v_c
    disc = b * b - 4.0 * a * cc
    if a > 0 and disc >= 0:
        r1, r2 = (-b - math.sqrt(disc)) / (2 * a), (-b + math.sqrt(disc)) / (2 * a)
        ci = (max(0.0, r1), r2)
    else:  # the rate's interval reaches 0: no finite upper bound
        lo = cbar / rate.ci[1] if rate.ci[1] > 0 else math.inf
        ci = (lo, math.inf)
    return CorrectedCostPerSuccess(estimate=est, ci=ci, dollars=dollars, trials=trials,
                                   method=f"Fieller interval on mean cost / corrected rate ({how})")


# -- comparing two corrected rates (the gate's statistic) ------------------------------------

@shape()
class CorrectedDifference:
    """``current - baseline`` of two corrected rates, with a one-sided bound."""

    difference: float
    """``current.estimate - baseline.estimate``."""
    upper: float
    """One-sided ``1 - alpha`` upper bound on the true difference (a regression when it is
    below ``-tolerance``)."""
    se: float
    """Standard error of the difference."""
    df: Optional[float]
    """Degrees of freedom of the t quantile (``None``: normal)."""
    paired: bool
    """Whether per-task influences of shared tasks were paired (both runs on the same tasks)."""
    method: str
    """How the bound was made."""


def corrected_difference(current: JudgeCorrectedRate, baseline: JudgeCorrectedRate, *,
                         alpha: float = 0.025) -> CorrectedDifference:
    """One-sided upper bound on ``current - baseline`` of two judge-corrected rates.

    Paired when both rates carry per-task influences (task groups) and share tasks: the
    variance is ``sum_t (psi_cur_t - psi_base_t)^2`` over the union of tasks (a task's
    shared difficulty cancels), df = the smaller of the two rates' df. Otherwise the two
    variances add (Welch–Satterthwaite df). Each rate's variance is taken from its **score
    interval's** half-width (so the small-sample care of the default interval carries over).

    >>> from ek_agents.stats.judgecorrect import judge_corrected_rate
    >>> a = judge_corrected_rate([1, 0] * 10, [1, 0] * 10, [1] * 150 + [0] * 50)
    >>> b = judge_corrected_rate([1, 0] * 10, [1, 0] * 10, [1] * 90 + [0] * 110)
    >>> corrected_difference(b, a).upper < 0
    True
    """
    if not 0.0 < alpha < 0.5:
        raise InvalidInput(f"corrected_difference: alpha must be in (0, 0.5), got {alpha!r}")
    d = current.estimate - baseline.estimate
    vc, vb = _spread(current)[1], _spread(baseline)[1]
    dfc = current.df if current.df is not None else math.inf
    dfb = baseline.df if baseline.df is not None else math.inf
    ic, ib = current.influence, baseline.influence
    if ic and ib and set(ic) & set(ib):
        tasks = set(ic) | set(ib)
        g = len(tasks)
        # each rate's influences rescaled to its interval's variance
        sc = math.sqrt(vc / max(math.fsum(v * v for v in ic.values()), 1e-300))
        sb = math.sqrt(vb / max(math.fsum(v * v for v in ib.values()), 1e-300))
        var = math.fsum((sc * ic.get(t, 0.0) - sb * ib.get(t, 0.0)) ** 2 for t in tasks)
        df, paired = min(dfc, dfb), True
        how = f"paired over {g} tasks (per-task influences), t quantile"
    else:
        var = vc + vb
        den = (vc * vc / dfc if math.isfinite(dfc) else 0.0) + (vb * vb / dfb if math.isfinite(dfb) else 0.0)
        df = var * var / den if den > 0 else math.inf
        paired = False
        how = "unpaired: the two variances add, Welch-Satterthwaite df"
    se = math.sqrt(var)
    q = t_quantile(1.0 - alpha, max(1, int(df))) if math.isfinite(df) and df < DF_CAP \
        else normal_quantile(1.0 - alpha)
    return CorrectedDifference(difference=d, upper=d + q * se, se=se,
                               df=df if math.isfinite(df) else None, paired=paired, method=how)


# -- what a report and the gate show -------------------------------------------------------

def corrected_check(current: Any, baseline: Any, *, alpha: float,
                    warnings: Optional[list] = None) -> Optional[tuple]:
    """The gate's success check on judge-corrected rates: from two reports'
    ``detail["judge_corrected"]`` documents, ``(current rate, baseline rate, difference,
    (lower, upper) two-sided 1 - 2 alpha bounds, method)``; None (and a warning) unless both
    runs carry labels."""
    if not current and not baseline:
        return None
    if not (isinstance(current, Mapping) and isinstance(baseline, Mapping)):
        if warnings is not None:
            side = "this run" if current else "the baseline"
            warnings.append(f"judge-corrected rates not compared: only {side} has labels; the "
                            "judge's raw rates were compared (label the other run too: "
                            "`ek-agents plan-labels RUN --n N`)")
        return None
    cur, base = rate_of_doc(current["rate"]), rate_of_doc(baseline["rate"])
    d = corrected_difference(cur, base, alpha=alpha)
    lower = d.difference - (d.upper - d.difference)
    method = (f"judge-corrected rates compared ({cur.n_labeled} and {base.n_labeled} labels; "
              f"{d.method})")
    return cur.estimate, base.estimate, d.difference, (lower, d.upper), method


def judge_rows(detail: Optional[Mapping[str, Any]]) -> list[dict]:
    """The raw and the corrected rows a report shows side by side (empty without labels):
    ``{"which", "success", "ci", "cost_per_success", "cost_ci"}`` each."""
    if not isinstance(detail, Mapping) or not isinstance(detail.get("rate"), Mapping):
        return []
    r, cps = detail["rate"], detail.get("cost_per_success") or {}
    return [{"which": "judge (raw)", "success": r.get("judge_rate"), "ci": r.get("judge_ci"),
             "cost_per_success": cps.get("raw"), "cost_ci": None},
            {"which": f"corrected by {r.get('n_labeled')} labels", "success": r.get("estimate"),
             "ci": r.get("ci"), "cost_per_success": cps.get("estimate"), "cost_ci": cps.get("ci")}]


def judge_error_line(detail: Optional[Mapping[str, Any]]) -> Optional[str]:
    """One line: the judge's measured error and how the corrected interval was made."""
    if not isinstance(detail, Mapping) or not isinstance(detail.get("rate"), Mapping):
        return None
    r = detail["rate"]
    labs = detail.get("labels") or {}

    def pct(x: Any) -> str:
        return "n/a" if not isinstance(x, (int, float)) else f"{100 * x:.1f}%"
    cps = detail.get("cost_per_success") or {}
    est = cps.get("estimated") or 0
    unpriced = (f"; cost per corrected success: {est} of {cps.get('trials', '?')} trials had no "
                "known cost, their dollars are estimated at the priced trials' mean") if est else ""
    return (f"judge's measured error on {r.get('n_labeled')} labels ({labs.get('source', '?')}, "
            f"sha256 {str(labs.get('digest', ''))[:12]}): sensitivity {pct(r.get('sensitivity'))} "
            f"of {r.get('sensitivity_n')} true successes, specificity {pct(r.get('specificity'))} "
            f"of {r.get('specificity_n')} true failures; {r.get('description', '')}{unpriced}")
