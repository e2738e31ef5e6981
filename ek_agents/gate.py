"""The regression gate that fails only on evidence, not on noise: documents in, verdict out.

:func:`regression_gate` compares a new :class:`~ek_agents.reporting.ReliabilityReport` with a
baseline (a report and its :class:`~ek_agents.base.RunProvenance`; storing and loading named
baselines is :mod:`ek_agents.records.baselines`'s job, which also holds the spec's name-taking
``agent_regression_gate``):

- **success rate** -- when both runs cover the same tasks (their ``per_task`` tables list the
  same task ids) the test is **paired**: the task-clustered difference of the two rates from
  per-task differences (:func:`~ek_agents.stats.paired_difference`, Student t at
  ``n_tasks - 1`` df; Miller 2024, "paired differences"); both runs share every task's
  difficulty, so that shared variance cancels instead of being counted twice. Otherwise
  (different task sets, or an old report without per-task counts) Newcombe's unpaired score
  interval on ``current - baseline``. A regression when the upper bound is below
  ``-tolerance``.
- **pass^k** (both runs with the same ``k > 1``) -- paired per-task differences of the
  per-task pass^k estimators when the tasks match, else the combined bound
  (:func:`~ek_agents.stats.difference_upper_bound` of the two bootstrap CIs); a regression
  below ``-tolerance``.
- **cost per success** (both runs priced) -- paired: a bootstrap over tasks resampled jointly
  in both runs (:func:`~ek_agents.stats.paired_bootstrap_ratio_difference`, from the reports'
  ``cost["task_totals"]``); unpaired: the combined bound of the two bootstrap CIs. A
  regression when the *lower* bound of ``current - baseline`` exceeds ``cost_tolerance *
  baseline``; without CIs the point estimates decide (``current > baseline * (1 +
  cost_tolerance)``). An infinite cost per success (no success at all) is left to the
  success-rate check.

- **judge-corrected success rate** -- when *both* reports carry labels
  (``detail["judge_corrected"]``: a judge graded the runs and people labeled some trials), the
  success check compares the **corrected** rates instead of the judge's raw ones
  (:func:`~ek_agents.stats.correctedrates.corrected_check`: paired over tasks by their influences when
  the runs share tasks) and its sentence says so; with labels on one side only, the raw rates
  are compared and a warning says why.

``details["test"]`` says which test ran (``"paired"`` or ``"unpaired"``) and every check its
``method``.

The gate fails when *any* check fires, so its false-alarm rate is held family-wise: with m
checks made (success rate, plus pass^k and cost when they apply) each runs at one-sided
``ALPHA / m`` (Bonferroni; ``ALPHA`` = 2.5%, so a lone check uses the spec's z = 1.96 and two
checks z = 2.24). Without that split, two 2.5% checks on the same run would false-alarm up to
5-7% of the time (measured: the pass^k bootstrap bound alone is a little anti-conservative on
60 tasks). A result that is worse but not
significantly so passes with ``underpowered=True``, a warning, and a ``hint``: the trials per
run that would detect the observed drop at 80% power (paired: from the measured paired
variance, :func:`~ek_agents.stats.tasks_for_power`; unpaired:
:func:`~ek_agents.stats.trials_for_power`).

>>> from ek_agents.reporting import reliability
>>> base = reliability({f"t{i}": [True] * 9 + [False] for i in range(20)}, k=1)
>>> gate = regression_gate(reliability({f"t{i}": [True] * 5 + [False] * 5 for i in range(20)}), base)
>>> gate.passed, gate.reasons[0].split(":")[0]
(False, 'success rate')
>>> regression_gate(base, base).passed
True
"""
from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Optional

from pydantic import Field

from . import stats
from .base import NonFiniteJson, RunProvenance
from .core import shape
from .errors import BaselineError, IncomparableRuns, InvalidInput, RunIncomplete
from .modelcosts import upper_bound_reason
from .stats.correctedrates import corrected_check
from .reporting import ReliabilityReport
from .scoring.unresolved import incomplete_because

__all__ = ["AgentGateResult", "regression_gate", "as_report", "as_run", "check_comparable", "ALPHA",
           "POWER", "Z"]
#: The gate's family-wise one-sided false-alarm rate: each of its m checks runs at ALPHA / m.
ALPHA = 0.025
#: z of the bound when a single check is made (the spec's 95% two-sided intervals).
Z = 1.96
#: Power the sample-size hint aims for.
POWER = 0.8


@shape()
class AgentGateResult(NonFiniteJson):
    """Outcome of a variance-aware agent regression check.

    ``reasons`` holds one sentence per failed check (metric, change, its interval, the
    threshold); ``warnings`` the non-failing concerns (``underpowered``, skipped checks);
    ``hint`` the sample-size advice when underpowered; ``details["checks"]`` every check with
    its numbers.
    """

    passed: bool = True
    reasons: tuple[str, ...] = ()
    pass_hat_k: Optional[float] = None
    pass_hat_k_baseline: Optional[float] = None
    success_rate: Optional[float] = None
    success_rate_baseline: Optional[float] = None
    cost_per_success: Optional[float] = None
    cost_per_success_baseline: Optional[float] = None
    underpowered: bool = False
    warnings: tuple[str, ...] = ()
    hint: Optional[str] = None
    details: dict = Field(default_factory=dict)

    def __bool__(self) -> bool:
        return self.passed


# --------------------------------------------------------------------------- coercions

def as_report(x: Any, what: str, err: type = InvalidInput) -> Any:
    """``x`` (a ReliabilityReport or its dict form) as a ReliabilityReport; ``err`` naming
    ``what`` otherwise."""
    if isinstance(x, ReliabilityReport):
        return x
    if isinstance(x, Mapping):
        try:
            return ReliabilityReport.from_dict(x)
        except Exception as exc:  # noqa: BLE001 -- any parse failure is a malformed input
            raise err(f"{what} is not a valid ReliabilityReport: {exc}") from None
    raise err(f"{what} must be a ReliabilityReport (or its to_dict()), got {type(x).__name__}")


def as_run(x: Any, what: str, err: type = InvalidInput) -> Optional[RunProvenance]:
    """``x`` (None, a RunProvenance or its dict form) as a RunProvenance; ``err`` naming
    ``what`` otherwise."""
    if x is None or isinstance(x, RunProvenance):
        return x
    if isinstance(x, Mapping):
        try:
            return RunProvenance.from_dict(x)
        except Exception as exc:  # noqa: BLE001
            raise err(f"{what} has a malformed run provenance: {exc}") from None
    raise err(f"{what}: run provenance must be a RunProvenance or a dict, got {type(x).__name__}")


def _baseline_parts(baseline: Any, label: str) -> tuple:
    if isinstance(baseline, ReliabilityReport):
        return baseline, as_run(baseline.detail.get("run"), label, BaselineError), label
    if not isinstance(baseline, Mapping):
        raise BaselineError(f"{label} must be a name, a saved baseline dict or a "
                            f"ReliabilityReport, got {type(baseline).__name__}")
    if "report" in baseline:
        rep = as_report(baseline["report"], label, BaselineError)
        run = baseline.get("run")
    elif "n_trials" in baseline:  # a bare report dict
        rep = as_report(baseline, label, BaselineError)
        run = rep.detail.get("run")
    else:
        raise BaselineError(f"{label} is malformed: expected the dict save_agent_baseline "
                            f"returns (keys 'report' and 'run'), got keys {sorted(baseline)[:8]}")
    return rep, as_run(run, label, BaselineError), label


def _check_counts(rep: Any, label: str, err: type) -> None:
    if rep.n_trials <= 0:
        raise err(f"{label} recorded zero trials: it would be a permanent free pass; "
                  "re-run the suite and save a baseline that evaluated something")
    if not 0 <= rep.n_success <= rep.n_trials:
        raise err(f"{label} is malformed: n_success={rep.n_success} with n_trials={rep.n_trials}")


# --------------------------------------------------------------------------- the gate

def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def _pts(x: float) -> str:
    return f"{100 * x:+.1f} pts" if x else "0.0 pts"


def _usd(x: float) -> str:
    return f"${x:.4g}"


def regression_gate(report: Any, baseline: Any, *, tolerance: float = 0.0,
                    cost_tolerance: float = 0.0, label: str = "the baseline",
                    paired: Optional[bool] = None) -> AgentGateResult:
    """Fail only when the evidence says the agent **really** got worse -- not on noise.

    Pure: documents in, verdict out. ``baseline`` is the dict ``records.baselines.save_agent_baseline`` /
    ``records.baselines.load_agent_baseline`` return, or a report (a ReliabilityReport or its dict);
    ``label`` names it in the messages. (``ek_agents.agent_regression_gate`` also takes a
    baseline's name and loads it from a store first.)
    ``tolerance`` is in success-rate / pass^k units (0.02 = 2 points); ``cost_tolerance`` a
    relative increase of cost per success (0.1 = 10%). ``paired``: ``None`` (default) pairs
    when both runs cover the same tasks, ``False`` forces the unpaired tests, ``True``
    requires pairing (:class:`~ek_agents.errors.InvalidInput` when the task sets differ). See
    the module docstring for the rules.

    Raises :class:`~ek_agents.errors.IncomparableRuns` (a ValueError) when the simulator, suite
    version or scaffold differ, and :class:`~ek_agents.errors.BaselineError` (a ValueError)
    when the baseline recorded zero trials or is malformed.
    """
    for nm, v in (("tolerance", tolerance), ("cost_tolerance", cost_tolerance)):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
            raise InvalidInput(f"agent_regression_gate: {nm} must be a number >= 0, got {v!r}")
    cur = as_report(report, "agent_regression_gate: report")
    base, base_run, label = _baseline_parts(baseline, label)
    _check_counts(base, label, BaselineError)
    _check_counts(cur, "the current run", InvalidInput)
    why = incomplete_because(cur.detail, n_trials=cur.n_trials)
    if why:
        raise RunIncomplete(f"the current run is incomplete ({why}): its figures cover only the "
                            "trials that completed, so the gate neither passes nor fails it; "
                            "complete it with --retry-errored (same run id), then gate it")
    cur_run = as_run(cur.detail.get("run"), "the current report")
    check_comparable(cur_run, base_run, label)

    warnings: list[str] = []
    # which checks apply decides the per-check level (Bonferroni over the checks made)
    do_hat = False
    if cur.k > 1 or base.k > 1:
        if cur.k != base.k:
            warnings.append(f"pass^k not compared: this run has k={cur.k}, {label} k={base.k}; "
                            "run both with the same k")
        elif cur.pass_hat_k is None or base.pass_hat_k is None:
            warnings.append("pass^k not compared: a run has no task with k trials")
        else:
            do_hat = True
    cost_inputs = _cost_inputs(cur.cost, base.cost, warnings)
    m = 1 + do_hat + (cost_inputs is not None)
    z = Z if m == 1 else stats.normal_quantile(1.0 - ALPHA / m)
    level = 1.0 - 2.0 * ALPHA / m
    checks: list[dict] = []
    a = ALPHA / m
    tids = _paired_tasks(cur, base, paired, label)

    # success rate: the judge-corrected rates when both runs carry labels, else paired per-task
    # differences, else Newcombe
    corrected = corrected_check(cur.detail.get("judge_corrected"), base.detail.get("judge_corrected"),
                                alpha=a, warnings=warnings)
    if corrected is not None:
        p_c, p_b, diff, (lo, hi), method = corrected
        checks.append(_check("success rate (judge-corrected rates compared)", p_c, p_b, diff, (lo, hi), -tolerance,
                             level, regressed=hi < -tolerance, worse=diff < -tolerance,
                             method=method))
    else:
        p_c, p_b = cur.n_success / cur.n_trials, base.n_success / base.n_trials
        if tids is not None:
            col = lambda rep, f: [rep.per_task[t][f] for t in tids]  # noqa: E731
            pd = stats.paired_difference(col(cur, "c"), col(cur, "n"), col(base, "c"), col(base, "n"))
            lo, hi = pd.lower(a), pd.upper(a)
            method = (f"paired per-task differences over {pd.n_tasks} tasks (cluster-robust "
                      f"standard error, t with {pd.df} df)")
        else:
            pd = None
            lo, hi = stats.newcombe_difference(cur.n_success, cur.n_trials, base.n_success, base.n_trials, z=z)
            method = "Newcombe score interval on the difference (unpaired)"
        checks.append(_check("success rate", p_c, p_b, p_c - p_b, (lo, hi), -tolerance, level,
                             regressed=hi < -tolerance, worse=p_c - p_b < -tolerance,
                             method=method, paired=pd))

    # pass^k: paired per-task pass^k differences, else the combined bound of the two CIs
    if do_hat:
        d = cur.pass_hat_k - base.pass_hat_k
        hat_ids = None if tids is None else [
            t for t in tids if cur.per_task[t].get("pass_hat_k") is not None
            and base.per_task[t].get("pass_hat_k") is not None]
        if hat_ids:
            ones = [1.0] * len(hat_ids)
            ph = stats.paired_difference([cur.per_task[t]["pass_hat_k"] for t in hat_ids], ones,
                                         [base.per_task[t]["pass_hat_k"] for t in hat_ids], ones)
            lb_hat, ub = ph.lower(a), ph.upper(a)
            d = ph.diff
            hat_method = (f"paired per-task pass^k differences over {ph.n_tasks} tasks "
                          f"(t with {ph.df} df)")
        else:
            ph = None
            ub = stats.difference_upper_bound(cur.pass_hat_k, cur.pass_hat_k_ci, base.pass_hat_k, base.pass_hat_k_ci, z=z)
            lb = stats.difference_upper_bound(base.pass_hat_k, base.pass_hat_k_ci, cur.pass_hat_k, cur.pass_hat_k_ci, z=z)
            lb_hat = None if lb is None else -lb
            hat_method = "combined bound of the two bootstrap CIs (unpaired)"
        if ub is None:
            warnings.append("pass^k not compared: a pass^k interval is missing or not finite")
        else:
            checks.append(_check(f"pass^{cur.k}", cur.pass_hat_k, base.pass_hat_k, d,
                                 (lb_hat, ub), -tolerance, level,
                                 regressed=ub < -tolerance, worse=d < -tolerance,
                                 method=hat_method, paired=ph))

    # cost per success
    if cost_inputs is not None:
        totals = None if tids is None else _paired_cost(cur.cost, base.cost, tids)
        checks.append(_cost_check(*cost_inputs, cost_tolerance, z, level, stats, totals=totals,
                                  alpha=a))

    regressed = [c for c in checks if c["regressed"]]
    underpowered = not regressed and any(c["worse"] for c in checks)
    hint = None
    if underpowered:
        worse = [c["metric"] for c in checks if c["worse"]]
        warnings.insert(0, f"underpowered: {', '.join(worse)} got worse, but not by more than "
                           "the noise of runs this size; this pass is not evidence of no regression")
        hint = _power_hint(checks, cur, base, tolerance, a, stats)
    return AgentGateResult(
        passed=not regressed, reasons=tuple(c["sentence"] for c in regressed),
        pass_hat_k=cur.pass_hat_k, pass_hat_k_baseline=base.pass_hat_k,
        success_rate=p_c, success_rate_baseline=p_b,
        cost_per_success=_num(cur.cost.get("cost_per_success")),
        cost_per_success_baseline=_num(base.cost.get("cost_per_success")),
        underpowered=underpowered, warnings=tuple(warnings), hint=hint,
        details={"checks": checks, "tolerance": tolerance, "cost_tolerance": cost_tolerance,
                 "z": z, "alpha_per_check": a, "alpha": ALPHA,
                 "test": "paired" if tids is not None else "unpaired",
                 "n_trials": cur.n_trials, "n_trials_baseline": base.n_trials,
                 "k": cur.k, "k_baseline": base.k, "baseline": label},
    )


def _num(x: Any) -> Optional[float]:
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) else None


def check_comparable(cur: Optional[RunProvenance], base: Optional[RunProvenance], label: str) -> None:
    """:class:`~ek_agents.errors.IncomparableRuns` when the simulator, suite version or
    scaffold of two runs differ (the fixed and the sequential gate refuse such a pair)."""
    a, b = cur or RunProvenance(), base or RunProvenance()
    diffs = [f"{f}: {getattr(b, f)!r} in {label}, {getattr(a, f)!r} now"
             for f in ("simulator", "suite_version", "scaffold") if getattr(a, f) != getattr(b, f)]
    if diffs:
        raise IncomparableRuns(
            "the runs are not comparable (" + "; ".join(diffs) + "): re-run with the baseline's "
            "settings, or save a new baseline for the new ones (save_agent_baseline)")


def _check(metric: str, now: float, before: float, change: float, ci: tuple, threshold: float,
           level: float, *, regressed: bool, worse: bool, method: str, relative: bool = False,
           paired: Any = None) -> dict:
    lo, hi = ci
    pct = f"{100 * level:.4g}% CI"
    if relative:  # cost per success: change and interval as relative increases
        fmt_d = (lambda x: "?" if x is None else f"{100 * x:+.1f}%")
        sentence = (f"{metric}: {_usd(before)} -> {_usd(now)} (change {fmt_d(change)}, {pct} "
                    f"[{fmt_d(lo)}, {fmt_d(hi)}]); the lower bound is "
                    f"{'above' if regressed else 'not above'} the threshold {fmt_d(threshold)}")
    else:
        fmt_p = (lambda x: "?" if x is None else _pts(x))
        sentence = (f"{metric}: {_pct(before)} -> {_pct(now)} (change {_pts(change)}, {pct} "
                    f"[{fmt_p(lo)}, {fmt_p(hi)}]); the upper bound is "
                    f"{'below' if regressed else 'not below'} the threshold {_pts(threshold)}")
    if regressed:
        sentence += " -- a real regression, not noise"
    out = {"metric": metric, "value": now, "baseline": before, "change": change,
           "ci": [lo, hi], "level": level, "threshold": threshold, "regressed": regressed,
           "worse": worse, "method": method, "sentence": sentence}
    if paired is not None:  # what the power hint sizes a paired run from
        out.update(se=paired.se, n_tasks=paired.n_tasks)
    return out


def _finite(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def _cost_inputs(cur: Mapping, base: Mapping, warnings: list) -> Optional[tuple]:
    c, b = cur.get("cost_per_success"), base.get("cost_per_success")
    if c is None or b is None:
        if c is not None or b is not None:
            warnings.append("cost per success not compared: one of the runs has no prices")
        return None
    if not (_finite(c) and _finite(b)) or b <= 0:
        warnings.append(f"cost per success not compared: {c!r} now vs {b!r} in the baseline "
                        "(infinite means no success; the success-rate check covers that)")
        return None
    for side, doc in (("now", cur), ("in the baseline", base)):  # cost.cost_report's mark
        reason = upper_bound_reason(doc)
        if reason is not None:
            warnings.append(f"cost per success {side} is an upper bound, not an exact figure: {reason}")
    return float(c), float(b), cur.get("cost_per_success_ci"), base.get("cost_per_success_ci")


def _paired_tasks(cur: Any, base: Any, paired: Optional[bool], label: str) -> Optional[list]:
    """The task ids both runs cover with per-task trial counts (the paired tests' units), or
    ``None`` for the unpaired tests."""
    if paired is not None and not isinstance(paired, bool):
        raise InvalidInput(f"agent_regression_gate: paired must be None, True or False, got {paired!r}")
    if paired is False:
        return None
    ok = (set(cur.per_task) == set(base.per_task) and len(cur.per_task) > 0
          and all(isinstance(rep.per_task[t], Mapping) and _count_ok(rep.per_task[t])
                  for rep in (cur, base) for t in cur.per_task))
    if not ok:
        if paired:
            raise InvalidInput(
                f"regression_gate(paired=True): this run and {label} do not cover the same "
                f"tasks with per-task counts ({len(cur.per_task)} vs {len(base.per_task)} tasks, "
                f"{len(set(cur.per_task) ^ set(base.per_task))} in only one); run the baseline's "
                "suite, or pass paired=None to fall back to the unpaired tests")
        return None
    return sorted(cur.per_task)


def _count_ok(entry: Mapping) -> bool:
    n, c = entry.get("n"), entry.get("c")
    return (isinstance(n, int) and isinstance(c, int) and not isinstance(n, bool)
            and 0 <= c <= n and n > 0)


def _paired_cost(cur: Mapping, base: Mapping, tids: list) -> Optional[tuple]:
    """Per-task ``(dollars, successes)`` columns of both runs over ``tids``, or ``None`` when
    a report has no ``task_totals`` for exactly those tasks (an older report)."""
    tc, tb = cur.get("task_totals"), base.get("task_totals")
    if not isinstance(tc, Mapping) or not isinstance(tb, Mapping) or set(tc) != set(tids) \
            or set(tb) != set(tids):
        return None
    try:
        cols = tuple([float(tt[t][f]) for t in tids] for tt in (tc, tb)
                     for f in ("dollars", "n_success"))
    except (KeyError, TypeError, ValueError):
        return None
    if not all(math.isfinite(x) for col in cols for x in col):
        return None
    return cols


def _cost_check(c: float, b: float, ci_c: Any, ci_b: Any, tol: float, z: float, level: float,
                stats: Any, *, totals: Optional[tuple] = None, alpha: float = ALPHA) -> dict:
    change = (c - b) / b
    lb_abs = ub_abs = None
    if totals is not None:
        lb_abs, ub_abs = stats.paired_bootstrap_ratio_difference(*totals, alpha=2 * alpha, seed=0)
        return _check("cost per success", c, b, change, (lb_abs / b, ub_abs / b), tol, level,
                      regressed=lb_abs > tol * b, worse=change > tol, relative=True,
                      method="paired bootstrap over tasks (both runs resampled together)")
    if ci_c is not None and ci_b is not None:
        ub_neg = stats.difference_upper_bound(b, ci_b, c, ci_c, z=z)  # upper bound of (b - c)
        ub_abs = stats.difference_upper_bound(c, ci_c, b, ci_b, z=z)  # upper bound of (c - b)
        lb_abs = None if ub_neg is None else -ub_neg
    if lb_abs is not None:
        chk = _check("cost per success", c, b, change,
                     (lb_abs / b, None if ub_abs is None else ub_abs / b), tol, level,
                     regressed=lb_abs > tol * b, worse=change > tol, relative=True,
                     method="lower bound of the difference from the two bootstrap CIs")
    else:
        regressed = c > b * (1 + tol)
        chk = _check("cost per success", c, b, change, (None, None), tol, level,
                     regressed=regressed, worse=change > tol, relative=True,
                     method="point estimates (no bootstrap CIs to bound the change)")
        chk["sentence"] = (f"cost per success: {_usd(b)} -> {_usd(c)} (change {100 * change:+.1f}%, "
                           "no CI available, so the point estimates decide); the change is "
                           f"{'above' if regressed else 'not above'} the threshold {100 * tol:+.1f}%"
                           + (" -- a regression" if regressed else ""))
    return chk


def _power_hint(checks: list, cur: Any, base: Any, tolerance: float, alpha: float,
                stats: Any) -> Optional[str]:
    parts = []
    for c in checks:
        if not c["worse"] or c["metric"] == "cost per success":
            continue
        before = c["baseline"]
        effect = -c["change"] - tolerance  # the part of the drop beyond the tolerance
        if effect <= 0:
            continue
        if c.get("se") is not None and math.isfinite(c["se"]) and c["se"] > 0:
            n = stats.tasks_for_power(c["se"], c["n_tasks"], effect, alpha=alpha, power=POWER)
            parts.append(f"detecting a {c['metric']} drop of {100 * effect:.1f} pts beyond the "
                         f"tolerance at {int(POWER * 100)}% power needs about {n} tasks x "
                         f"k={cur.k} = {n * cur.k} trials per run with the paired test (this "
                         f"run has {c['n_tasks']} tasks)")
            continue
        target = min(max(before - effect, 0.0), 1.0)
        try:
            n = stats.trials_for_power(before, target, alpha=alpha, power=POWER)
        except (InvalidInput, ValueError):
            continue
        if c["metric"] == "success rate":
            parts.append(f"detecting a success-rate drop of {100 * effect:.1f} pts beyond the "
                         f"tolerance (from {_pct(before)}) at {int(POWER * 100)}% power needs about {n} trials "
                         f"per run (this run has {cur.n_trials}, the baseline {base.n_trials})")
        else:  # pass^k averages per-task estimators: the units are tasks (k trials each)
            parts.append(f"detecting a {c['metric']} drop of {100 * effect:.1f} pts at "
                         f"{int(POWER * 100)}% power needs about {n} tasks x k={cur.k} = "
                         f"{n * cur.k} trials per run (this run has {cur.n_tasks} tasks)")
    return "; ".join(parts) + "." if parts else None
