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
  t_{0.975, G-1} + t_{P, G-1}`` (as ``Phi(D / se - t_{0.975, G-1}) >= P``); the fewest
  trials per task that reach it with all the suite's tasks, then the fewest tasks at that k.
- ``cps_width=W``: the cheapest ``(G, k)`` whose 95% interval on the **cost per success** is at
  most ``W`` times the pilot's cost per success wide (relative, the natural unit of a dollar
  ratio: 0.2 is "within about +-10%"). The report's interval is over tasks on the ratio
  ``R = sum_i D_i / sum_i S_i`` (dollars, successes per task: ``cost.task_totals``); its
  linearisation ``z_ij = x_ij - R y_ij`` (trial dollars, success) has the same two
  components, fitted from the pilot's task totals: within ``s_zw^2 = R^2 s_w^2`` at the point
  estimates (a trial's dollars taken as its task's mean: the success coin is the within-task
  noise; ``method="assurance"`` adds each trial's dollar spread, below) and between
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

**Planning from the pilot's uncertainty** (``method="assurance"``, the default). The
components above are estimates from the pilot's few tasks: a pilot of 30 tasks x k = 4 often
estimates the between-task variance at 0 when it is not, and a plan sized from the point
estimates misses its target about half the time by construction. So the planner takes the
components from the populations the pilot could have come from -- posterior draws of the
beta-binomial model behind them (:mod:`ek_agents.stats.pilotdraws`; the Bayesian bootstrap over
priced tasks for cost per success) -- and sizes each design at the ``assurance`` quantile (0.8)
of its variance over those draws: the plan meets its goal with that probability, the
between-, within-task and mean's uncertainty all carried (an *assurance*, O'Hagan & Stevens
2001; the Bayesian form of Browne 1995's upper confidence limit on a pilot's variance, which is
hard to apply to two components and a mean at once). The labels plan takes the judge's
disagreement rate at its ``assurance`` quantile too. A component the pilot cannot estimate --
fewer than ``MIN_PILOT_TASKS`` tasks, or one trial per task (no within/between split) -- keeps
the prior's whole range in the draws, and the plan says so and names the pilot that would
estimate it. ``method="plug-in"`` plans at the point estimates (the figures a large pilot gives
anyway; ``bench/bench_plan_assurance.py`` prints both).

Cost per success, besides the success coin, has each trial's dollars varying within its task,
which the report's task totals cannot show: with ``dollars_sq`` and ``dollars_success`` per
task in ``cost.task_totals`` (the sums of a trial's squared dollars, and of the successful
trials' dollars) the within-task variance of ``z`` is measured; without them the plan assumes
a within-task coefficient of variation of ``cost_cv`` (0.5 by default) on each trial's dollars
and says so. Tasks of the pilot without dollars are counted (``n_unpriced_tasks``,
``n_unpriced_trials``) and named in the sentence: the dollar figures rest on the priced ones.

Measured (``python -m bench plan_assurance``; 30 pilots of 30 tasks x k = 4 from each of three
populations, each plan run on fresh tasks from its population): see
``docs/guides/plan-a-budget.md`` for the table of hit rates, old planner beside new.

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
from .pilotdraws import (MIN_PILOT_TASKS, CostDraws, SuccessDraws, cost_draws, disagreement_upper,
                         quantile, success_draws, within_z_variances)

__all__ = ["BudgetPlan", "plan_budget", "pilot_components", "PilotComponents", "MAX_K_PLANNED",
           "CostComponents", "cost_components", "PLAN_METHODS", "ASSURANCE", "COST_CV"]

#: ``method`` names of :func:`plan_budget`.
PLAN_METHODS: tuple[str, ...] = ("assurance", "plug-in")
#: The posterior probability a plan meets its goal with (``method="assurance"``).
ASSURANCE: float = 0.8
#: The within-task coefficient of variation of a trial's dollars a cost-per-success plan assumes
#: when the pilot's task totals do not show it.
COST_CV: float = 0.5

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
    """Within-task variance of a trial's ``z`` (``R^2 E[p(1-p)]``; with ``method="assurance"``
    also each trial's dollar spread, measured or assumed: see the module)."""
    n_tasks: int
    """Priced tasks in the pilot."""
    cost_spread: str = "none"
    """How a trial's dollar spread within its task entered ``within``: ``"none"`` (plug-in),
    ``"measured"`` (the task totals' ``dollars_sq``) or ``"assumed"`` (``cost_cv``)."""


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
    method: str = "assurance"
    """``"assurance"`` (sized over the populations the pilot could have come from) or
    ``"plug-in"`` (at the pilot's point estimates)."""
    assurance: Optional[float] = None
    """The probability the plan meets its goal over those populations (None: plug-in)."""
    between_upper: Optional[float] = None
    """The between-task variance at the ``assurance`` quantile of its draws (None: plug-in)."""
    notes: tuple[str, ...] = ()
    """What the pilot cannot tell (each also in the sentence)."""
    n_unpriced_tasks: int = 0
    """Pilot tasks with trials but no dollars (left out of the dollar figures; 0 when the pilot
    has no per-task dollars to tell)."""
    n_unpriced_trials: int = 0
    """Pilot trials without dollars."""


def _doc(pilot: Any) -> Any:
    return pilot.to_dict() if hasattr(pilot, "to_dict") else pilot


def _success_rows(pilot: Any) -> dict[str, tuple[int, int]]:
    """``{task: (successes, trials)}`` of a pilot report's tasks with trials."""
    doc = _doc(pilot)
    if not isinstance(doc, Mapping) or not isinstance(doc.get("per_task"), Mapping):
        raise InvalidInput(f"plan_budget: the pilot must be a run's report (with per_task counts), "
                           f"got {type(pilot).__name__}; pass run_suite(...)'s report or a stored "
                           "run's report document")
    rows = {str(t): (int(v["c"]), int(v["n"])) for t, v in doc["per_task"].items()
            if isinstance(v, Mapping) and v.get("n")}
    if len(rows) < 2:
        raise InvalidInput(f"plan_budget: the pilot has {len(rows)} task(s) with trials; a pilot "
                           f"needs at least 2 tasks ({MIN_PILOT_TASKS}+ to say much about the "
                           "between-task spread)")
    return rows


def _dollars_per_trial(doc: Any) -> Optional[float]:
    cost = doc.get("cost") if isinstance(doc, Mapping) else None
    dpt = cost.get("mean_dollars") if isinstance(cost, Mapping) else None
    return float(dpt) if isinstance(dpt, (int, float)) and math.isfinite(dpt) else None


def pilot_components(pilot: Any) -> PilotComponents:
    """The point estimates of a pilot report's variance components (a ``ReliabilityReport`` or
    its dict; see the module). A pilot of one trial per task cannot split them: refused."""
    doc = _doc(pilot)
    rows = list(_success_rows(doc).values())
    if all(n < 2 for _, n in rows):
        raise InvalidInput("plan_budget: the pilot ran 1 trial per task, which cannot separate "
                           "within- from between-task variance; run the pilot with k >= 2, or "
                           "plan with method='assurance' (it plans over the split's whole range)")
    ps = [c / n for c, n in rows]
    mean = sum(ps) / len(ps)
    within_rows = [p * (1 - p) * n / (n - 1) for p, (_, n) in zip(ps, rows) if n >= 2]
    within = sum(within_rows) / len(within_rows)
    var_p = sum((p - mean) ** 2 for p in ps) / (len(ps) - 1)
    inv_k = sum(1.0 / n for _, n in rows) / len(rows)
    between = max(0.0, var_p - within * inv_k)
    return PilotComponents(mean=mean, between=between, within=within, n_tasks=len(rows),
                           dollars_per_trial=_dollars_per_trial(doc))


def _priced_tasks(doc: Any) -> tuple[list[tuple[float, int, int, Optional[float], Optional[float]]],
                                     int, int]:
    """The pilot's priced tasks ``(dollars, successes, trials, dollars_sq, dollars_success)`` from
    ``cost.task_totals``, and how many tasks / trials of ``per_task`` carry no dollars."""
    cost = doc.get("cost") if isinstance(doc, Mapping) else None
    totals = cost.get("task_totals") if isinstance(cost, Mapping) else None
    per_task = _success_rows(doc)
    if not isinstance(totals, Mapping):
        n_without = cost.get("n_without_cost") if isinstance(cost, Mapping) else None
        return [], 0, int(n_without) if isinstance(n_without, int) else 0

    def opt(t: Mapping, key: str) -> Optional[float]:
        v = t.get(key)
        return float(v) if isinstance(v, (int, float)) and math.isfinite(v) else None

    rows, bare_tasks, bare_trials = [], 0, 0
    for tid, (_, n_all) in per_task.items():
        t = totals.get(tid)
        priced = isinstance(t, Mapping) and bool(t.get("n")) and opt(t, "dollars") is not None
        if priced:
            rows.append((float(t["dollars"]), int(t["n_success"]), int(t["n"]),
                         opt(t, "dollars_sq"), opt(t, "dollars_success")))
        bare_tasks += not priced
        bare_trials += n_all - (int(t["n"]) if priced else 0)
    return rows, bare_tasks, max(bare_trials, 0)


def cost_components(pilot: Any, success: Optional[PilotComponents] = None) -> CostComponents:
    """The cost-per-success variance components of a pilot report (its ``cost.task_totals``),
    at the point estimates (the success coin as the within-task noise)."""
    rows = _cost_rows(_doc(pilot))
    c = success or pilot_components(pilot)
    spent, wins, n = (math.fsum(r[i] for r in rows) for i in range(3))
    r, mu = spent / wins, wins / n
    zbar = [(d - r * s) / k for d, s, k, *_ in rows]
    zm = sum(zbar) / len(zbar)
    var_z = sum((z - zm) ** 2 for z in zbar) / (len(zbar) - 1)
    within = r * r * c.within
    between = max(0.0, var_z - within * sum(1.0 / r_[2] for r_ in rows) / len(rows))
    return CostComponents(cost_per_success=r, success_per_trial=mu, between=between,
                          within=within, n_tasks=len(rows))


def _cost_rows(doc: Any) -> list:
    rows = _priced_tasks(doc)[0]
    if len(rows) < 2:
        raise InvalidInput("plan_budget: cps_width needs a priced pilot (the report's "
                           "cost.task_totals, dollars and successes per task, on 2+ tasks); "
                           "run the pilot with prices (run_suite(price=/prices=), `ek-agents run --prices "
                           "FILE`)")
    if sum(r[1] for r in rows) <= 0:
        raise InvalidInput("plan_budget: the pilot had no success, so its cost per success is "
                           "infinite and no width on it can be planned; pilot on tasks the agent "
                           "can solve, or plan target_width= on the success rate")
    return rows


@functools.lru_cache(maxsize=4096)
def _t(q: float, df: int) -> float:
    """``t_quantile(q, df)``, once per ``(q, df)``: a plan's search asks for the same few
    thousand quantiles at every k (Newton steps on an O(df) series each)."""
    return t_quantile(q, df)


class _Quantiles:
    """The ``q`` quantile over draws of a design's per-task variance as a function of its
    argument (``fn`` takes an array of arguments as a row). With ``batch``, computed in one
    numpy call at ``x = 1/k`` for ``k = 1 .. MAX_K_PLANNED`` and on a fine geometric grid
    between, where other arguments (a labeled plan's ``1 / (k x its unlabeled share)``) are
    interpolated: the quantile is increasing and smooth in ``x``. Other arguments are computed
    once each."""

    def __init__(self, fn: Any, q: float, *, batch: bool = True) -> None:
        import numpy as np

        self.fn, self.q, self.memo, self.grid = fn, q, {}, None
        if batch:
            ks = 1.0 / np.arange(1, MAX_K_PLANNED + 1)
            xs = np.unique(np.r_[ks, np.geomspace(1.0 / MAX_K_PLANNED, 1.0, 60)])
            values = np.quantile(fn(xs[None, :]), q, axis=0)
            self.memo = {round(float(x), 9): float(v) for x, v in zip(xs, values)}
            self.grid = (xs, values)

    def __call__(self, x: float) -> float:
        import numpy as np

        key = round(x, 9)
        if key not in self.memo:
            if self.grid is not None and self.grid[0][0] <= x <= self.grid[0][-1]:
                return float(np.interp(x, *self.grid))
            self.memo[key] = quantile(self.fn(x), self.q)
        return self.memo[key]


def _power_var(d: SuccessDraws, k: int, drop: float) -> Any:
    """Per-task variance of the paired difference at ``k`` trials a side, per draw: the
    candidate's success is ``p (1 - drop / mean)`` (a proportional drop)."""
    import numpy as np

    f = np.where(d.mean > 0, np.minimum(drop / np.maximum(d.mean, 1e-12), 1.0), 0.0)
    s = 1.0 - f
    within_b = np.maximum(0.0, s * d.mean - s * s * (d.between + d.mean * d.mean))  # E[ps(1-ps)]
    return (d.within + within_b) / k + d.between * f * f


def _col(a: Any) -> Any:
    """A draws array as a column, so that a row of design arguments broadcasts against it."""
    return a.reshape(-1, 1)


def _point_draws(c: PilotComponents) -> SuccessDraws:
    import numpy as np

    return SuccessDraws(np.array([c.mean]), np.array([c.between]), np.array([c.within]))


def plan_budget(pilot: Any, *, target_width: Optional[float] = None, power: Optional[float] = None,
                drop: Optional[float] = None, labels: Optional[JudgeCorrectedRate] = None,
                max_tasks: Optional[int] = None, label_share: float = 0.5,
                cps_width: Optional[float] = None, method: str = "assurance",
                assurance: float = ASSURANCE, cost_cv: float = COST_CV, seed: int = 0) -> BudgetPlan:
    """Plan tasks x k (and labels, and dollars) for a target 95% interval width on the success
    rate (``target_width``, in rate units) or on the cost per success (``cps_width``, a fraction
    of the pilot's cost per success), or for the gate's power against a drop. ``method``:
    ``"assurance"`` (default: the plan meets its goal with probability ``assurance`` over the
    populations the pilot could have come from) or ``"plug-in"`` (at the pilot's point
    estimates). See the module docstring for the model; ``seed`` seeds the draws."""
    if method not in PLAN_METHODS:
        raise InvalidInput(f"plan_budget: unknown method={method!r} (one of {PLAN_METHODS})")
    if not 0.5 <= assurance < 1.0:
        raise InvalidInput(f"plan_budget: assurance must be in [0.5, 1), got {assurance!r}")
    if not 0.0 <= cost_cv < 10.0:
        raise InvalidInput(f"plan_budget: cost_cv must be in [0, 10), got {cost_cv!r}")
    if sum(x is not None for x in (target_width, power, cps_width)) != 1:
        raise InvalidInput("plan_budget: give target_width=W (an interval width, e.g. 0.1), "
                           "cps_width=W (a width on cost per success relative to the pilot's, e.g. "
                           "0.2) or power=P with drop=D (e.g. power=0.8, drop=0.1), one of the three")
    doc = _doc(pilot)
    rows = list(_success_rows(doc).values())
    plug = method == "plug-in"
    split = any(n >= 2 for _, n in rows)
    c = pilot_components(doc) if plug or split else None
    q = 0.5 if plug else assurance  # the quantile of one point-draw is the point itself
    draws = _point_draws(c) if plug else success_draws(rows, draws=2000, seed=seed)
    notes = _notes(rows, plug, split)
    priced, bare_tasks, bare_trials = _priced_tasks(doc)
    cc, cdraws = _cost_plan_parts(doc, c, draws, cost_cv, seed) if cps_width is not None \
        else (None, None)
    if cc is not None and cc.n_tasks < MIN_PILOT_TASKS <= len(rows):
        notes.append(f"its {cc.n_tasks} priced tasks cannot pin down the spread of dollars between "
                     f"tasks; a pilot with at least {MIN_PILOT_TASKS} priced tasks would")
    gmax = len(rows) if max_tasks is None else int(max_tasks)
    if gmax < 2:
        raise InvalidInput(f"plan_budget: max_tasks={max_tasks!r}; a plan needs at least 2 tasks")
    n_labels, extra, plan_power = 0, 0.0, None
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
            d = _disagreement(labels, None if plug else assurance, seed)
            v_target = (width_goal / (2.0 * normal_quantile(0.975))) ** 2
            n_labels = max(10, math.ceil(d / (label_share * v_target * unit)))
            extra = d / (n_labels * unit)
        if cc is None:
            vq = _Quantiles(lambda x: _col(draws.between) + _col(draws.within) * x, q)
        else:
            # relative to each draw's own cost per success: the width a run reports is relative
            # to the cost per success it measures
            scale = _col((cdraws.success_per_trial * cdraws.cost_per_success) ** 2)
            vq = _Quantiles(lambda x: (_col(cdraws.between) + _col(cdraws.within) * x) / scale, q)

        def width_of(g_: int, k_: int) -> float:
            unlabeled = 1.0 - n_labels / (g_ * k_)
            if g_ < 2 or unlabeled <= 0:
                return math.inf
            return 2.0 * _t(0.975, g_ - 1) * math.sqrt(vq(1.0 / (k_ * unlabeled)) / g_ + extra)

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
        pq = _Quantiles(lambda k_: _power_var(draws, k_, drop), q, batch=False)

        def power_of(g_: int, k_: int) -> float:
            if g_ < 2:
                return 0.0
            v = pq(k_) / g_
            # the usual approximation Phi(D / se - t_{1-alpha, G-1}) of the noncentral t's tail
            return 1.0 if v <= 0 else NormalDist().cdf(drop / math.sqrt(v) - _t(0.975, g_ - 1))

        best = None
        for k in range(1, MAX_K_PLANNED + 1):
            if power_of(gmax, k) >= power:
                g = _fewest_tasks(lambda g_: power_of(g_, k) >= power, gmax) or gmax
                best = (g * k, g, k)
                break
        enough = best is not None
        if not enough:
            k = MAX_K_PLANNED
            g = _fewest_tasks(lambda g_: power_of(g_, k) >= power, 10 ** 7) or 10 ** 7
            best = (g * k, g, k)
        _, g, k = best
        vw = quantile(draws.between + draws.within / k, q)
        w = 2.0 * _t(0.975, g - 1) * math.sqrt(vw / g)
        plan_power = power_of(g, k)
        goal = f"{100 * power:.0f}% power to catch a {100 * drop:.1f}-point drop (paired gate, one-sided 2.5%)"
    n_trials = g * k
    dpt = _dollars_per_trial(doc)
    between_up = None if plug else quantile(draws.between, assurance)
    sentence = _sentence(goal, g, k, n_labels, dpt, enough, gmax, rows, c, between_up, assurance,
                         notes, bare_tasks, bare_trials, len(priced), cc)
    return BudgetPlan(n_tasks=g, k=k, n_trials=n_trials, n_labels=n_labels,
                      dollars=round(n_trials * dpt, 2) if dpt is not None else None,
                      sentence=sentence,
                      goal="power" if power is not None else "width" if cc is None else "cps_width",
                      expected_width=w, expected_power=plan_power, enough_tasks=enough,
                      components=c, cost_components=cc, method=method,
                      assurance=None if plug else assurance, between_upper=between_up,
                      notes=tuple(notes), n_unpriced_tasks=bare_tasks, n_unpriced_trials=bare_trials)


def _cost_plan_parts(doc: Any, c: Optional[PilotComponents], draws: SuccessDraws, cost_cv: float,
                     seed: int) -> tuple[CostComponents, CostDraws]:
    """The cost-per-success components a ``cps_width`` plan uses: the point estimates
    (plug-in: ``draws`` of length 1), or the components with each trial's dollar spread and
    their Bayesian-bootstrap draws."""
    import numpy as np

    rows = _cost_rows(doc)
    within_success = c.within if c is not None else float(np.mean(draws.within))
    if len(draws.mean) == 1:
        cc = cost_components(doc, c)
        return cc, CostDraws(*(np.array([v]) for v in (cc.cost_per_success, cc.success_per_trial,
                                                        cc.between, cc.within)))
    spent, wins = math.fsum(r[0] for r in rows), math.fsum(r[1] for r in rows)
    r = spent / wins
    wz, how = within_z_variances(rows, r, within_success, cost_cv)
    cd = cost_draws([(d, s, k, w) for (d, s, k, *_), w in zip(rows, wz)], draws=2000, seed=seed)
    zbar = [(d - r * s) / k for d, s, k, *_ in rows]
    zm = sum(zbar) / len(zbar)
    var_z = sum((z - zm) ** 2 for z in zbar) / (len(zbar) - 1)
    within = sum(wz) / len(wz)
    between = max(0.0, var_z - within * sum(1.0 / r_[2] for r_ in rows) / len(rows))
    cc = CostComponents(cost_per_success=r, success_per_trial=wins / math.fsum(r_[2] for r_ in rows),
                        between=between, within=within, n_tasks=len(rows), cost_spread=how)
    return cc, cd


def _notes(rows: list[tuple[int, int]], plug: bool, split: bool) -> list[str]:
    """What the pilot cannot tell, each naming the pilot that would."""
    g = len(rows)
    k = max(2, max(n for _, n in rows))
    notes = []
    if not split:
        notes.append(f"the pilot ran one trial per task, so it cannot split the variance between "
                     f"and within tasks: a plan with k > 1 is sized over the whole range the split "
                     f"could take (a pilot of {max(g, MIN_PILOT_TASKS)} tasks x k=2 would measure it)")
    if g < MIN_PILOT_TASKS:
        notes.append(f"the pilot's {g} tasks cannot pin down the between-task spread"
                     + ("" if plug else f" (sized at its upper value)")
                     + f"; a pilot of at least {MIN_PILOT_TASKS} tasks x k={k} would")
    return notes


def _sentence(goal: str, g: int, k: int, n_labels: int, dpt: Optional[float], enough: bool,
              gmax: int, rows: list, c: Optional[PilotComponents], between_up: Optional[float],
              assurance: float, notes: list[str], bare_tasks: int, bare_trials: int,
              n_priced: int, cc: Optional[CostComponents]) -> str:
    n_trials = g * k
    money = (f"${n_trials * dpt:,.2f} at the pilot's ${dpt:.4f} per trial" if dpt is not None
             else "dollars unknown (the pilot was not priced)")
    if dpt is not None and bare_trials:
        money += (f" (measured on its priced trials only: {bare_trials} trial(s)"
                  + (f", {bare_tasks} of {len(rows)} tasks," if bare_tasks else "")
                  + " carry no dollars)")
    lab = f" and label {n_labels} trials (stratified by task: `ek-agents plan-labels RUN --n {n_labels}`)" \
        if n_labels else ""
    more = "" if enough else (f" -- more tasks than the suite's {gmax}: add tasks, no k reaches it "
                              "with these")
    mean = sum(c_ / n for c_, n in rows) / len(rows)
    spread = f"between-task sd {math.sqrt(c.between):.3f}" if c is not None else \
        "between-task sd unknown"
    if between_up is None:
        basis = f"{spread}; planned at the pilot's point estimates"
    else:
        basis = (f"{spread}, up to {math.sqrt(between_up):.3f} at {100 * assurance:.0f}%; planned to "
                 f"reach the goal with {100 * assurance:.0f}% probability over the populations "
                 "the pilot could have come from")
    costed = ""
    if cc is not None:
        costed = f"; cost per success from its {n_priced} priced task(s)" + (
            "" if cc.cost_spread != "assumed" else
            ", each trial's dollars assumed to vary within its task with a CV of the cost_cv "
            "given (the report's task totals do not show it)")
    return (f"For {goal}: run {g} tasks x k={k} = {n_trials} trials{lab}, {money}{more} (pilot: "
            f"success {100 * mean:.1f}%, {basis}{costed})"
            + "".join(f"; {n}" for n in notes) + ".")


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


def _disagreement(rate: JudgeCorrectedRate, assurance: Optional[float], seed: int) -> float:
    """``Var(y - h)`` of a labeled trial: the judge's disagreement rate with the labels
    ``d = fn + fp`` (from its sensitivity and specificity at the labeled trials' own mix; with
    ``assurance``, its Jeffreys posterior quantile) less its squared bias ``(fn - fp)^2``,
    floored at 1/(n+2)."""
    n_pos, n_neg = rate.sensitivity_n, rate.specificity_n
    n = max(n_pos + n_neg, 1)
    fn = n_pos * (1 - (rate.sensitivity or 0.0)) / n
    fp = n_neg * (1 - (rate.specificity or 0.0)) / n
    dis = fn + fp if assurance is None else disagreement_upper((fn + fp) * n, n, assurance, seed=seed)
    return max(dis - (fn - fp) ** 2, 1.0 / (n_pos + n_neg + 2))
