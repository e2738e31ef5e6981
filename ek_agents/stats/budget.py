"""The budget planner: how many tasks x trials (and labels, and dollars) a question needs.

From a **pilot** run's report -- its per-task success counts and its measured dollars per trial
-- :func:`plan_budget` fits the two variance components of a success rate over tasks like these
(one-way ANOVA, method of moments):

- within-task ``s_w^2 = mean_i p_i(1 - p_i) k_i / (k_i - 1)`` (unbiased for ``E[p(1-p)]``),
- between-task ``s_b^2 = max(0, var_i(p_i) - s_w^2 * mean(1/k_i))``,

so that a run of ``G`` tasks x ``k`` trials has ``Var(rate) = (s_b^2 + s_w^2 / k) / G``. Then:

- ``target_width=W``: the cheapest ``(G, k)`` (fewest trials) whose 95% interval
  ``2 t_{G-1} sqrt(Var)`` is at most ``W`` (``G`` at most ``max_tasks``, the suite's size by
  default: between-task spread only shrinks with more tasks, so a width beyond what the suite's
  tasks allow is said, with the tasks it would need);
- ``power=P, drop=D``: the paired gate (the same ``G`` tasks in both runs, one-sided 2.5%)
  detects a drop of ``D`` points with probability ``P``: per-task differences have variance
  ``(s_w^2 + s_w'^2) / k + s_b^2 (D / mean)^2`` (a proportional drop ``p -> p (1 - D/mean)``,
  ``s_w'^2`` the candidate's within-task variance under it), so ``D / sqrt(that / G) >=
  t_{0.975, G-1} + t_{P, G-1}``; the cheapest ``(G, k)`` (all the suite's tasks, the fewest
  trials each).
- ``cps_width=W``: the cheapest ``(G, k)`` whose 95% interval on the **cost per success** is at
  most ``W`` times the pilot's cost per success wide (relative, the natural unit of a dollar
  ratio: 0.2 is "within about +-10%"). The report's interval is over tasks on the ratio
  ``R = sum_i D_i / sum_i S_i`` (dollars, successes per task: ``cost.task_totals``); its
  linearisation ``z_ij = x_ij - R y_ij`` (trial dollars, success) has the same two
  components, fitted from the pilot's task totals: within ``s_zw^2 = R^2 s_w^2`` (a trial's
  dollars taken as its task's mean: the success coin is the within-task noise; within-task
  cost noise, unseen in task totals, is left out) and between
  ``s_zb^2 = max(0, var_i(zbar_i) - s_zw^2 mean(1/k_i))``, so
  ``Var(R) = (s_zb^2 + s_zw^2 / k) / (G mu^2)`` (``mu`` successes per trial) and the relative
  width is ``2 t_{G-1} sqrt(Var(R)) / R``.
- ``labels=`` a pilot :class:`~ek_agents.stats.judgecorrect.JudgeCorrectedRate` (a judged run): the
  labels the correction needs too. The corrected rate's variance adds the rectifier's,
  ``d / n_labels`` (``d = Var(y - h)``: the judge's measured disagreement rate with the labels
  less its squared bias), and the
  judge's rate is over the unlabeled trials only (prediction-powered inference: a task keeps
  ``k (1 - n_labels / (G k))`` unlabeled trials on average, which is the ``k`` of the within
  term); the plan gives the labels half of the target variance (``label_share``) and the
  trials the rest (with
  ``cps_width``: the rectifier's relative variance ``d / (n_labels mu^2)``, since cost per
  corrected success is dollars over corrected successes).

Checked by simulation (``bench/bench_judge.py``; a small version in the tests): a plan for
width W, run 200 times from the pilot's fitted distribution (per-task success from the Beta
with the pilot's mean and between-task variance), delivers a mean width within 10% of W; a
plan for power P delivers at least P - 0.05; a plan for a cost-per-success width W, run 200
times (per-task success and dollars drawn from the pilot's tasks, success shrunk to the
fitted between-task variance), delivers a report interval (bootstrap-t over tasks) of mean
relative width within 10% of W (0.998-1.002 x W; 1.16-1.18 x W when each trial's dollars
also vary within a task, which task totals cannot show); a judged plan's ``n_labels``
delivers 0.889-1.062 x the corrected-rate width it promises, 16 of 18 pilot x width plans
within 10% (the two outside over-deliver: narrower than promised) (``bench/bench_budget.py``).

>>> pilot = {"per_task": {f"t{i}": {"n": 4, "c": [0, 1, 2, 3, 4][i % 5]} for i in range(50)},
...          "cost": {"mean_dollars": 0.02}}
>>> plan = plan_budget(pilot, target_width=0.1)
>>> plan.n_trials == plan.n_tasks * plan.k, plan.dollars == round(plan.n_trials * 0.02, 2)
(True, True)
"""
from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from statistics import NormalDist
from typing import Any, Optional

from ..core import shape
from ..errors import InvalidInput
from .intervals import normal_quantile, t_quantile
from .judgecorrect import JudgeCorrectedRate

__all__ = ["BudgetPlan", "plan_budget", "pilot_components", "PilotComponents", "MAX_K_PLANNED",
           "CostComponents", "cost_components"]

#: The most trials per task a plan proposes (beyond it the within-task part is gone anyway).
MAX_K_PLANNED: int = 200


@shape()
class PilotComponents:
    """A pilot's success rate split into its variance components (see the module)."""

    mean: float
    """Success rate over tasks (the mean of per-task rates)."""
    between: float
    """Between-task variance of the per-task success probability."""
    within: float
    """Mean within-task Bernoulli variance ``E[p(1-p)]``."""
    n_tasks: int
    """Tasks in the pilot."""
    dollars_per_trial: Optional[float]
    """Measured mean dollars per trial (None: the pilot was not priced)."""


@shape()
class CostComponents:
    """A pilot's cost per success split into the variance components of its linearisation
    ``z = dollars - R * success`` over tasks (see the module)."""

    cost_per_success: float
    """The pilot's pooled cost per success ``R = sum(dollars) / sum(successes)``."""
    success_per_trial: float
    """``mu = sum(successes) / sum(trials)`` over the priced tasks."""
    between: float
    """Between-task variance of a task's mean ``z``."""
    within: float
    """Within-task variance of a trial's ``z`` (``R^2 E[p(1-p)]``)."""
    n_tasks: int
    """Priced tasks in the pilot."""


@shape()
class BudgetPlan:
    """What a run needs: tasks x trials, labels, dollars -- and one sentence saying so."""

    n_tasks: int
    """Tasks to run."""
    k: int
    """Trials per task."""
    n_trials: int
    """``n_tasks * k``."""
    n_labels: int
    """Trials to label by hand (0 when no judge correction is planned)."""
    dollars: Optional[float]
    """Agent dollars for the trials at the pilot's measured cost per trial (None: unpriced)."""
    sentence: str
    """The plan as one sentence a person can act on."""
    goal: str
    """``"width"``, ``"cps_width"`` or ``"power"``."""
    expected_width: Optional[float] = None
    """The 95% interval width the plan expects (width goal, and for information with power;
    ``cps_width``: relative to the pilot's cost per success)."""
    expected_power: Optional[float] = None
    """The gate's power the plan expects against ``drop`` (power goal)."""
    enough_tasks: bool = True
    """False when the suite's tasks cannot reach the goal at any k (the sentence says how many
    tasks it would take)."""
    components: Optional[PilotComponents] = None
    """The pilot's fitted variance components."""
    cost_components: Optional[CostComponents] = None
    """The pilot's cost-per-success components (``cps_width`` goal)."""


def cost_components(pilot: Any, success: Optional[PilotComponents] = None) -> CostComponents:
    """The cost-per-success variance components of a pilot report (its ``cost.task_totals``)."""
    doc = pilot.to_dict() if hasattr(pilot, "to_dict") else pilot
    c = success or pilot_components(doc)
    cost = doc.get("cost") if isinstance(doc, Mapping) else None
    totals = cost.get("task_totals") if isinstance(cost, Mapping) else None
    rows = [(float(t["dollars"]), int(t["n_success"]), int(t["n"])) for t in totals.values()
            if isinstance(t, Mapping) and t.get("n") and isinstance(t.get("dollars"), (int, float))
            and math.isfinite(t["dollars"])] if isinstance(totals, Mapping) else []
    if len(rows) < 2:
        raise InvalidInput("plan_budget: cps_width needs a priced pilot (the report's "
                           "cost.task_totals, dollars and successes per task, on 2+ tasks); "
                           "run the pilot with prices (run_suite(price=/prices=), `ek-agents run --prices "
                           "FILE`)")
    spent, wins, n = (math.fsum(r[i] for r in rows) for i in range(3))
    if wins <= 0:
        raise InvalidInput("plan_budget: the pilot had no success, so its cost per success is "
                           "infinite and no width on it can be planned; pilot on tasks the agent "
                           "can solve, or plan target_width= on the success rate")
    r, mu = spent / wins, wins / n
    zbar = [(d - r * s) / k for d, s, k in rows]
    zm = sum(zbar) / len(zbar)
    var_z = sum((z - zm) ** 2 for z in zbar) / (len(zbar) - 1)
    within = r * r * c.within
    between = max(0.0, var_z - within * sum(1.0 / k for *_, k in rows) / len(rows))
    return CostComponents(cost_per_success=r, success_per_trial=mu, between=between,
                          within=within, n_tasks=len(rows))


def pilot_components(pilot: Any) -> PilotComponents:
    """The variance components of a pilot report (a ``ReliabilityReport`` or its dict)."""
    doc = pilot.to_dict() if hasattr(pilot, "to_dict") else pilot
    if not isinstance(doc, Mapping) or not isinstance(doc.get("per_task"), Mapping):
        raise InvalidInput(f"plan_budget: the pilot must be a run's report (with per_task counts), "
                           f"got {type(pilot).__name__}; pass run_suite(...)'s report or a stored "
                           "run's report document")
    rows = [(int(v["c"]), int(v["n"])) for v in doc["per_task"].values()
            if isinstance(v, Mapping) and v.get("n")]
    if len(rows) < 2:
        raise InvalidInput(f"plan_budget: the pilot has {len(rows)} task(s) with trials; a pilot "
                           "needs at least 2 tasks (10+ to say much about the between-task spread)")
    if all(n < 2 for _, n in rows):
        raise InvalidInput("plan_budget: the pilot ran 1 trial per task, which cannot separate "
                           "within- from between-task variance; run the pilot with k >= 2")
    ps = [c / n for c, n in rows]
    mean = sum(ps) / len(ps)
    within_rows = [p * (1 - p) * n / (n - 1) for p, (_, n) in zip(ps, rows) if n >= 2]
    within = sum(within_rows) / len(within_rows)
    var_p = sum((p - mean) ** 2 for p in ps) / (len(ps) - 1)
    inv_k = sum(1.0 / n for _, n in rows) / len(rows)
    between = max(0.0, var_p - within * inv_k)
    cost = doc.get("cost") or {}
    dpt = cost.get("mean_dollars") if isinstance(cost, Mapping) else None
    return PilotComponents(mean=mean, between=between, within=within, n_tasks=len(rows),
                           dollars_per_trial=float(dpt) if isinstance(dpt, (int, float)) else None)


@functools.lru_cache(maxsize=4096)
def _t(q: float, df: int) -> float:
    """``t_quantile(q, df)``, once per ``(q, df)``: a plan's search asks for the same few
    thousand quantiles at every k (Newton steps on an O(df) series each)."""
    return t_quantile(q, df)


def _width(c: PilotComponents, g: int, k: int, extra_var: float = 0.0, n_labels: int = 0) -> float:
    """Expected 95% width on the success rate; with ``n_labels`` of the ``g k`` trials labeled
    (at random), the judge's part is over the ``g k - n_labels`` unlabeled trials only."""
    unlabeled = 1.0 - n_labels / (g * k)
    if g < 2 or unlabeled <= 0:
        return math.inf
    return 2.0 * _t(0.975, g - 1) * math.sqrt((c.between + c.within / (k * unlabeled)) / g
                                              + extra_var)


def _cps_width(c: CostComponents, g: int, k: int, extra_rel: float = 0.0) -> float:
    """Expected 95% interval width on cost per success, as a fraction of the pilot's."""
    if g < 2:
        return math.inf
    rel_var = (c.between + c.within / k) / (g * (c.success_per_trial * c.cost_per_success) ** 2)
    return 2.0 * _t(0.975, g - 1) * math.sqrt(rel_var + extra_rel)


def _power(c: PilotComponents, g: int, k: int, drop: float, alpha: float = 0.025) -> float:
    if g < 2:
        return 0.0
    f = drop / c.mean if c.mean > 0 else 0.0
    s = 1.0 - f  # the candidate's per-task success: p * s (a proportional drop)
    within_b = max(0.0, s * c.mean - s * s * (c.between + c.mean * c.mean))  # E[ps(1 - ps)]
    var_d = ((c.within + within_b) / k + c.between * f * f) / g
    if var_d <= 0:
        return 1.0
    # the usual approximation Phi(D / se - t_{1-alpha, G-1}) of the noncentral t's tail
    return NormalDist().cdf(drop / math.sqrt(var_d) - _t(1.0 - alpha, g - 1))


def plan_budget(pilot: Any, *, target_width: Optional[float] = None, power: Optional[float] = None,
                drop: Optional[float] = None, labels: Optional[JudgeCorrectedRate] = None,
                max_tasks: Optional[int] = None, label_share: float = 0.5,
                cps_width: Optional[float] = None) -> BudgetPlan:
    """Plan tasks x k (and labels, and dollars) for a target 95% interval width on the success
    rate (``target_width``, in rate units) or on the cost per success (``cps_width``, a fraction
    of the pilot's cost per success), or for the gate's power against a drop. See the module
    docstring for the model."""
    c = pilot_components(pilot)
    if sum(x is not None for x in (target_width, power, cps_width)) != 1:
        raise InvalidInput("plan_budget: give target_width=W (an interval width, e.g. 0.1), "
                           "cps_width=W (a width on cost per success relative to the pilot's, e.g. "
                           "0.2) or power=P with drop=D (e.g. power=0.8, drop=0.1), one of the three")
    cc = cost_components(pilot, c) if cps_width is not None else None
    gmax = c.n_tasks if max_tasks is None else int(max_tasks)
    if gmax < 2:
        raise InvalidInput(f"plan_budget: max_tasks={max_tasks!r}; a plan needs at least 2 tasks")
    n_labels, extra = 0, 0.0
    if target_width is not None or cps_width is not None:
        width_goal = target_width if cps_width is None else cps_width
        name = "target_width" if cps_width is None else "cps_width"
        if not 0.0 < width_goal < (1.0 if cps_width is None else 4.0):
            raise InvalidInput(f"plan_budget: {name} must be in (0, {1 if cps_width is None else 4}),"
                               f" got {width_goal!r}")
        # the label rectifier's variance, in the goal's units (relative for cost per success)
        unit = 1.0 if cc is None else cc.success_per_trial ** 2
        if labels is not None:
            if not 0.0 < label_share < 1.0:
                raise InvalidInput(f"plan_budget: label_share must be in (0, 1), got {label_share!r}")
            d = _disagreement(labels)
            v_target = (width_goal / (2.0 * normal_quantile(0.975))) ** 2
            n_labels = max(10, math.ceil(d / (label_share * v_target * unit)))
            extra = d / (n_labels * unit)

        def width_of(g_: int, k_: int) -> float:
            return (_width(c, g_, k_, extra, n_labels) if cc is None
                    else _cps_width(cc, g_, k_, extra))

        def cheapest(limit: int) -> Optional[tuple[int, int, int]]:
            best: Optional[tuple[int, int, int]] = None
            for k in range(1, MAX_K_PLANNED + 1):
                g = _fewest_tasks(lambda g_: width_of(g_, k) <= width_goal, limit)
                if g is not None and (best is None or g * k < best[0]):
                    best = (g * k, g, k)
            return best

        best = cheapest(gmax)
        enough = best is not None
        if best is None:  # the suite's tasks cannot reach it: the cheapest design with more tasks
            best = cheapest(10 ** 7) or (10 ** 7, 10 ** 7, 1)
        _, g, k = best
        w = width_of(g, k)
        plan_power = None
        goal = (f"a 95% interval {100 * width_goal:.1f} points wide on the success rate"
                if cc is None else
                f"a 95% interval on the cost per success {100 * width_goal:.0f}% of the pilot's "
                f"${cc.cost_per_success:.4f} wide (+-{50 * width_goal:.0f}%)")
    else:
        if drop is None or not 0.0 < drop < 1.0:
            raise InvalidInput(f"plan_budget: power needs drop=D, the drop in success to detect "
                               f"(in (0, 1), e.g. 0.1 for 10 points), got {drop!r}")
        if not 0.0 < power < 1.0:
            raise InvalidInput(f"plan_budget: power must be in (0, 1), got {power!r}")
        best = None
        for k in range(1, MAX_K_PLANNED + 1):
            if _power(c, gmax, k, drop) >= power:
                g = _fewest_tasks(lambda g_: _power(c, g_, k, drop) >= power, gmax) or gmax
                best = (g * k, g, k)
                break
        enough = best is not None
        if not enough:
            k = MAX_K_PLANNED
            g = _fewest_tasks(lambda g_: _power(c, g_, k, drop) >= power, 10 ** 7) or 10 ** 7
            best = (g * k, g, k)
        _, g, k = best
        w = _width(c, g, k)
        plan_power = _power(c, g, k, drop)
        goal = f"{100 * power:.0f}% power to catch a {100 * drop:.1f}-point drop (paired gate, one-sided 2.5%)"
    n_trials = g * k
    dollars = round(n_trials * c.dollars_per_trial, 2) if c.dollars_per_trial is not None else None
    money = f"${dollars:,.2f} at the pilot's ${c.dollars_per_trial:.4f} per trial" \
        if dollars is not None else "dollars unknown (the pilot was not priced)"
    lab = f" and label {n_labels} trials (stratified by task: `ek-agents plan-labels RUN --n {n_labels}`)" \
        if n_labels else ""
    sentence = (f"For {goal}: run {g} tasks x k={k} = {n_trials} trials{lab}, {money}"
                + ("" if enough else f" -- more tasks than the suite's {gmax}: add tasks, no k "
                                     "reaches it with these")
                + f" (pilot: success {100 * c.mean:.1f}%, between-task sd {math.sqrt(c.between):.3f}).")
    return BudgetPlan(n_tasks=g, k=k, n_trials=n_trials, n_labels=n_labels, dollars=dollars,
                      sentence=sentence,
                      goal="power" if power is not None else "width" if cc is None else "cps_width",
                      expected_width=w, expected_power=plan_power, enough_tasks=enough,
                      components=c, cost_components=cc)


def _fewest_tasks(ok: Any, gmax: int) -> Optional[int]:
    """The smallest ``g`` in [2, gmax] with ``ok(g)`` (monotone), or None."""
    if gmax < 2 or not ok(gmax):
        return None
    lo, hi = 2, gmax
    while lo < hi:
        mid = (lo + hi) // 2
        if ok(mid):
            hi = mid
        else:
            lo = mid + 1
    return lo


def _disagreement(rate: JudgeCorrectedRate) -> float:
    """``Var(y - h)`` of a labeled trial: the judge's measured disagreement rate with the labels
    ``d = fn + fp`` (from its sensitivity and specificity at the labeled trials' own mix) less
    its squared bias ``(fn - fp)^2``, floored at 1/(n+2)."""
    n_pos, n_neg = rate.sensitivity_n, rate.specificity_n
    n = max(n_pos + n_neg, 1)
    fn = n_pos * (1 - (rate.sensitivity or 0.0)) / n
    fp = n_neg * (1 - (rate.specificity or 0.0)) / n
    return max(fn + fp - (fn - fp) ** 2, 1.0 / (n_pos + n_neg + 2))
