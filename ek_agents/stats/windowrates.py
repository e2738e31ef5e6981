"""A production window's success rate without gold, and the alert that compares windows.

Live traffic has no gold: every trace (or a sample stratified by slice) is graded by a judge,
and a few traces a window are labeled by a person. The judge's error is measured as
**sensitivity and specificity** (its verdict given the truth), the quantities that carry over
from one window to the next when the agent's success moves but the judge does not; the
window's corrected rate is the **Rogan–Gladen** estimate::

    estimate = (q + specificity - 1) / (sensitivity + specificity - 1)

with ``q`` the window's judge rate (the slice-stratified estimator ``sum_s W_s q_s`` when only a
sample of each slice was judged: ``W_s`` the slice's share of the window's traces, ``q_s`` its
judged traces' pass rate -- an inverse-probability-weighted mean with the sampling fraction of
each slice). The labels behind sensitivity and specificity are the window's own plus, by
default, every earlier window's of the series (:class:`LabelTable` adds them up). The variance is
the delta method over the three independent parts (the judge rate's binomial variance per
slice; sensitivity's and specificity's from their labeled counts, each with 0.5 pseudo-trials so
that a judge never seen to err is not taken as perfect), and the interval is a Wilson interval
at the effective sample size ``p(1 - p) / V`` (it stays inside [0, 1] and leans toward 1/2 where
the delta interval misses on one side). The target is the rate of the process that produced the
window's traffic (the agent's success probability that day), not the finite count of the
window's traces. Measured coverage: ``python -m bench.bench_monitor``.

**The alert** (:func:`window_alert`) compares a window with its reference (the earlier windows
pooled, or one promoted baseline window) on two one-sided checks:

- *success*: the corrected difference ``d = (q - q_ref) / J`` (``J = sensitivity + specificity
  - 1``: both windows share the judge's error, so its uncertainty enters only through ``J``)
  alerts when ``d + tolerance`` is significantly below 0;
- *cost*: the log ratio of dollars per corrected success, ``log(c / c_ref) - log((q + sp - 1) /
  (q_ref + sp - 1))`` (``J`` cancels), alerts when it is significantly above
  ``log(1 + cost_tolerance)``.

False alarms across windows are controlled by a **Bonferroni split over the planned horizon**:
each of the two checks of each of the ``horizon - 1`` comparisons of a series (the first window
has no reference) is made at ``alpha / (2 (horizon - 1))``, so that the chance that a stable
series of ``horizon`` windows raises any alert is at most ``alpha`` (the checks are positively
correlated -- they share the reference -- so the split is conservative; the measured rate is in
``bench/bench_monitor.py``). Past the horizon the same per-check level holds, so the guarantee is
per block of ``horizon`` windows.

Pure numbers: no episode, store or judge here.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Optional

from ..core import shape
from ..errors import InvalidInput
from .intervals import normal_quantile, wilson_score

__all__ = ["LabelTable", "SliceCounts", "WindowRate", "WindowAlert", "stratified_judge_rate",
           "window_rate", "window_alert", "WindowPoint", "PSEUDO_TRIALS", "MIN_LABELED_BOTH"]

#: Pseudo-trials added to each side of sensitivity and specificity for their variance.
PSEUDO_TRIALS: float = 0.5
#: A correction needs at least this many labeled successes and labeled failures.
MIN_LABELED_BOTH: int = 1


@shape()
class LabelTable:
    """The 2x2 table of labeled traces: person's verdict (gold) x judge's verdict."""

    pass_pass: int = 0
    """Gold PASS, judge PASS."""
    pass_fail: int = 0
    """Gold PASS, judge FAIL."""
    fail_pass: int = 0
    """Gold FAIL, judge PASS."""
    fail_fail: int = 0
    """Gold FAIL, judge FAIL."""

    @classmethod
    def of(cls, gold: Sequence[bool], judge: Sequence[bool]) -> "LabelTable":
        """The table of paired verdicts."""
        if len(gold) != len(judge):
            raise InvalidInput(f"LabelTable.of: {len(gold)} gold verdicts for {len(judge)} judge "
                               "verdicts; give one of each per labeled trace")
        c = [0, 0, 0, 0]
        for y, h in zip(gold, judge):
            c[(0 if y else 2) + (0 if h else 1)] += 1
        return cls(*c)

    def __add__(self, other: "LabelTable") -> "LabelTable":
        return LabelTable(self.pass_pass + other.pass_pass, self.pass_fail + other.pass_fail,
                          self.fail_pass + other.fail_pass, self.fail_fail + other.fail_fail)

    @property
    def n(self) -> int:
        """Labeled traces."""
        return self.pass_pass + self.pass_fail + self.fail_pass + self.fail_fail

    def sensitivity(self) -> tuple[float, float]:
        """``(sensitivity, its variance)`` (variance with :data:`PSEUDO_TRIALS`)."""
        return _prop(self.pass_pass, self.pass_pass + self.pass_fail)

    def specificity(self) -> tuple[float, float]:
        """``(specificity, its variance)``."""
        return _prop(self.fail_fail, self.fail_pass + self.fail_fail)


def _prop(k: int, n: int) -> tuple[float, float]:
    a = PSEUDO_TRIALS
    p = k / n if n else 0.5
    pv = (k + a) / (n + 2 * a)
    return p, pv * (1.0 - pv) / (n + 2 * a)


@shape()
class SliceCounts:
    """One slice of a window: its traces, how many were judged, how many the judge passed."""

    traces: int
    judged: int
    passed: int


def stratified_judge_rate(slices: Mapping[str, SliceCounts]) -> tuple[float, float]:
    """``(q, variance)``: the window's judge rate over its slices, each judged slice weighted by
    its share of the window's traces (the stratified estimator). A slice with traces but no
    judged trace is refused (its rate would be a guess)."""
    total = sum(s.traces for s in slices.values())
    if total <= 0:
        raise InvalidInput("stratified_judge_rate: the window has no trace")
    q = var = 0.0
    for name, s in slices.items():
        if s.traces <= 0:
            continue
        if s.judged <= 0:
            raise InvalidInput(f"stratified_judge_rate: slice {name!r} has {s.traces} traces and "
                               "none judged; raise judge_sample so every slice gets a judged trace")
        if not 0 <= s.passed <= s.judged <= s.traces:
            raise InvalidInput(f"stratified_judge_rate: slice {name!r}: need 0 <= passed <= "
                               f"judged <= traces, got {s}")
        w = s.traces / total
        qs = s.passed / s.judged
        pv = (s.passed + 0.5) / (s.judged + 1.0)
        q += w * qs
        var += w * w * pv * (1.0 - pv) / s.judged
    return q, var


@shape()
class WindowRate:
    """A window's success rate, corrected for the judge's error, with its interval."""

    estimate: float
    """Rogan–Gladen estimate (may fall a little outside [0, 1]; the interval does not)."""
    ci: tuple[float, float]
    se: float
    judge_rate: float
    """The judge's raw (slice-weighted) rate."""
    judge_se: float
    judge_ci: tuple[float, float]
    """The raw rate's Wilson interval: what the judge says, not the truth."""
    sensitivity: float
    specificity: float
    sens_var: float
    spec_var: float
    labels: LabelTable
    """The labels behind the judge's error (this window's and the earlier ones used)."""
    level: float = 0.95

    @property
    def youden(self) -> float:
        """``sensitivity + specificity - 1``."""
        return self.sensitivity + self.specificity - 1.0


def window_rate(slices: Mapping[str, SliceCounts], labels: LabelTable, *,
                own: Optional[LabelTable] = None, alpha: float = 0.05) -> WindowRate:
    """The window's corrected success rate (see the module docstring). ``labels`` are every
    label used for the judge's error; ``own`` the part of them labeled in this window (their
    judge verdicts are also in the window's judge rate: the covariance that makes is taken into
    account, with each judged trace's weight taken as ``1 / judged``)."""
    if not 0.0 < alpha < 1.0:
        raise InvalidInput(f"window_rate: alpha must be in (0, 1), got {alpha!r}")
    npos = labels.pass_pass + labels.pass_fail
    nneg = labels.fail_pass + labels.fail_fail
    if npos < MIN_LABELED_BOTH or nneg < MIN_LABELED_BOTH:
        raise InvalidInput(f"window_rate: the labels hold {npos} successes and {nneg} failures; "
                           "the judge's error needs both: label more traces (`ek-agents "
                           "plan-labels WINDOW`)")
    q, vq = stratified_judge_rate(slices)
    se_, vse = labels.sensitivity()
    sp_, vsp = labels.specificity()
    j = se_ + sp_ - 1.0
    if j <= 0.05:
        raise InvalidInput(f"window_rate: the judge's sensitivity {se_:.2f} + specificity "
                           f"{sp_:.2f} - 1 = {j:.2f}: its verdicts carry no information about "
                           "success; use a better judge or rubric")
    est = (q + sp_ - 1.0) / j
    var = vq + est * est * vse + (1.0 - est) ** 2 * vsp
    n_judged = sum(s.judged for s in slices.values())
    if own is not None and own.n:
        # a labeled success the judge passed raises q and sensitivity together (coefficients
        # 1 and -est), a labeled failure it passed raises q and lowers specificity (1, 1 - est)
        npos = labels.pass_pass + labels.pass_fail
        nneg = labels.fail_pass + labels.fail_fail
        own_pos = own.pass_pass + own.pass_fail
        own_neg = own.fail_pass + own.fail_fail
        cov_se = se_ * (1.0 - se_) * own_pos / (n_judged * npos) if npos else 0.0
        cov_sp = -sp_ * (1.0 - sp_) * own_neg / (n_judged * nneg) if nneg else 0.0
        var += 2.0 * (-est * cov_se + (1.0 - est) * cov_sp)
    var = max(var, vq * 0.25) / (j * j)
    z = normal_quantile(1.0 - alpha / 2.0)
    p = min(max(est, 1e-6), 1.0 - 1e-6)
    n_eff = max(p * (1.0 - p) / var, 1.0) if var > 0 else 1e9
    n_total = n_judged
    return WindowRate(estimate=est, ci=wilson_score(p, n_eff, z=z), se=math.sqrt(var),
                      judge_rate=q, judge_se=math.sqrt(vq),
                      judge_ci=wilson_score(min(max(q, 0.0), 1.0), max(n_total, 1), z=z),
                      sensitivity=se_, specificity=sp_, sens_var=vse, spec_var=vsp,
                      labels=labels, level=1.0 - alpha)


@shape()
class WindowPoint:
    """What the alert needs of one window: its judge rate and mean agent dollars per trace."""

    judge_rate: float
    judge_var: float
    traces: int
    dollars_per_trace: Optional[float] = None
    dollars_var: Optional[float] = None


@shape()
class WindowAlert:
    """The alert's verdict on one window."""

    alert: bool
    reasons: tuple[str, ...]
    success_drop: Optional[float]
    """Corrected success of the window minus the reference's."""
    success_z: Optional[float]
    cost_ratio: Optional[float]
    """Dollars per corrected success, window over reference."""
    cost_z: Optional[float]
    threshold_z: float
    """Each check's one-sided critical value (Bonferroni over the horizon)."""
    alpha_per_check: float
    reference_windows: int


def _pool(ref: Sequence[WindowPoint]) -> WindowPoint:
    n = sum(r.traces for r in ref)
    q = sum(r.traces * r.judge_rate for r in ref) / n
    vq = sum(r.traces ** 2 * r.judge_var for r in ref) / (n * n)
    if all(r.dollars_per_trace is not None for r in ref):
        c = sum(r.traces * r.dollars_per_trace for r in ref) / n
        vc = sum(r.traces ** 2 * (r.dollars_var or 0.0) for r in ref) / (n * n)
    else:
        c = vc = None
    return WindowPoint(judge_rate=q, judge_var=vq, traces=n, dollars_per_trace=c, dollars_var=vc)


def window_alert(current: WindowPoint, reference: Sequence[WindowPoint], rate: WindowRate, *,
                 tolerance: float = 0.0, cost_tolerance: float = 0.0, alpha: float = 0.05,
                 horizon: int = 30) -> WindowAlert:
    """Whether ``current`` moved from ``reference`` (the windows it is compared with, pooled) by
    more than the tolerances; ``rate`` is the current window's (its pooled judge error is the one
    both sides share). See the module docstring for the checks and the false-alarm control."""
    if not 0.0 <= tolerance < 1.0:
        raise InvalidInput(f"window_alert: tolerance is a drop in success rate in [0, 1), got "
                           f"{tolerance!r}")
    if not 0.0 <= cost_tolerance:
        raise InvalidInput(f"window_alert: cost_tolerance is a relative rise (0.1 = 10%) >= 0, "
                           f"got {cost_tolerance!r}")
    if isinstance(horizon, bool) or not isinstance(horizon, int) or horizon < 2:
        raise InvalidInput(f"window_alert: horizon is the planned number of windows (>= 2), got "
                           f"{horizon!r}")
    a = alpha / (2 * (horizon - 1))
    zc = normal_quantile(1.0 - a)
    if not reference:
        return WindowAlert(alert=False, reasons=(), success_drop=None, success_z=None,
                           cost_ratio=None, cost_z=None, threshold_z=zc, alpha_per_check=a,
                           reference_windows=0)
    ref = _pool(reference)
    j = rate.youden
    vj = rate.sens_var + rate.spec_var
    d = (current.judge_rate - ref.judge_rate) / j
    vd = (current.judge_var + ref.judge_var) / (j * j) + d * d * vj / (j * j)
    zs = (d + tolerance) / math.sqrt(vd) if vd > 0 else math.copysign(math.inf, d + tolerance)
    reasons = []
    if zs < -zc:
        reasons.append(f"corrected success fell by {-d:.1%} (more than the tolerance "
                       f"{tolerance:.1%}; z = {zs:.2f} beyond -{zc:.2f})")
    ratio = zcost = None
    sp = rate.specificity
    a_cur, a_ref = current.judge_rate + sp - 1.0, ref.judge_rate + sp - 1.0
    if (current.dollars_per_trace and ref.dollars_per_trace and a_cur > 0 and a_ref > 0):
        lr = (math.log(current.dollars_per_trace / ref.dollars_per_trace) - math.log(a_cur / a_ref))
        vlr = ((current.dollars_var or 0.0) / current.dollars_per_trace ** 2
               + (ref.dollars_var or 0.0) / ref.dollars_per_trace ** 2
               + current.judge_var / a_cur ** 2 + ref.judge_var / a_ref ** 2
               + rate.spec_var * (1.0 / a_cur - 1.0 / a_ref) ** 2)
        ratio = math.exp(lr)
        excess = lr - math.log1p(cost_tolerance)
        zcost = excess / math.sqrt(vlr) if vlr > 0 else math.copysign(math.inf, excess)
        if zcost > zc:
            reasons.append(f"dollars per corrected success rose x{ratio:.2f} (more than the "
                           f"tolerance +{cost_tolerance:.0%}; z = {zcost:.2f} beyond {zc:.2f})")
    return WindowAlert(alert=bool(reasons), reasons=tuple(reasons), success_drop=d, success_z=zs,
                       cost_ratio=ratio, cost_z=zcost, threshold_z=zc, alpha_per_check=a,
                       reference_windows=len(reference))

