"""Judge-error–corrected success rates: prediction-powered inference with honest intervals.

An LLM judge's verdicts are biased (a lenient judge passes failures), so the judge's raw
success rate and its interval answer the wrong question. Label a small set of judged trials by
hand and correct the judge by its measured error on them: the **PPI++ estimate**
(Angelopoulos, Bates, Fannjiang, Jordan, Zrnic 2023; power-tuned weight ``lam``: Angelopoulos,
Duchi, Zrnic 2023)::

    estimate = lam * mean(judge on unlabeled) + mean(gold - lam * judge on labeled)

``method="clt"`` is that estimate with the CLT interval exactly as ppi_py's ``ppi_mean_ci``
computes it (same ``lam``, same standard error; checked to 1e-9 in the tests). It assumes
independent trials and a normal rectifier, and both fail where it matters (measured, N = 2,000
judged trials, 4,000 runs per cell, ``python -m bench judge``): with 50 labels at true success
0.9 it covers 0.869-0.886; labels sampled **by task** (100 tasks x k = 20, per-task success from
a Beta) it covers 0.51-0.64.

``method="score"`` (the **default**) keeps the same point estimate and changes the interval,
chosen by simulation among candidates (numbers in ``bench/bench_judge.py``'s docstring and the
README, "When a judge grades"):

- **Independent trials** (no groups): the variance of the rectifier is computed within the
  judge's two verdict strata (the labeled trials the judge passed / failed), after adding
  0.03 pseudo-trials to the two disagreement cells (so a sample in which the judge never erred
  does not claim the judge is perfect); the quantile is Student t with **Welch–Satterthwaite
  degrees of freedom** over those strata (a stratum of 5 labeled judge-failures carries 4 df,
  not 49); and the interval is a **Wilson (score) interval at the effective sample size**
  ``p(1-p)/V`` (Korn & Graubard 1998), which stays inside [0, 1] and shifts toward 1/2 near
  the boundary where the Wald interval misses on one side. Measured over the issue's 27 cells
  (true success {0.3, 0.6, 0.9} x judge (sensitivity, specificity) {(0.95, 0.90), (0.85, 0.70),
  (0.99, 0.99)} x {50, 100, 300} labels; 4,000 runs per cell): coverage 0.931-0.963, mean width
  at most 1.07x ppi_py's where ppi_py covers >= 0.93. Rejected in an exploratory run of the same grid
  (6,000 runs per cell, before this module was written): Agresti–Min / Bonett–Price pseudo-counts
  (0.5-1 per cell: cover 0.99 and 1.5x the width with a 99%/99% judge), the stratified
  (Rogan–Gladen / chain-rule) estimator with delta variance (0.85-0.89 at 0.9 / 50 labels),
  Bayesian Beta posteriors per stratum (0.86-0.88), a leave-one-out lambda (0.81-0.91), the
  same Wilson interval with t at n - 1 df instead of Satterthwaite's (0.91 at 0.9 / 50 labels),
  the jackknife over the tuned lambda (0.98 and 1.26x the width with a 99%/99% judge).
- **Trials grouped in tasks** (``labeled_groups`` and ``unlabeled_groups``): the cluster-robust
  (CR1) sandwich over tasks, the labeled and the unlabeled parts each with its own ``G/(G-1)``
  and Satterthwaite df between them (``n_labeled_tasks - 1`` when the two share tasks), never
  below the independent-trials variance, again as a Wilson interval at the effective sample
  size. The weight is fixed at ``lam = 1`` (plain PPI): tuned from 10 labeled tasks, the
  weight's own noise made the estimate's spread 0.032 where ``lam = 1`` gave 0.025 (true
  success 0.9), and coverage fell to 0.84-0.89. Measured (100 tasks x k = 20, per-task success
  ~ Beta(2m, 2(1-m)), 10 or 25 whole tasks labeled, 18 cells, 2,000 runs each): coverage
  0.943-0.965.

Everything here is plain Python over sufficient statistics (the labeled 2x2 table, per-task
sums) with the stdlib-only quantiles of :mod:`ek_agents.stats`: no scipy, not even numpy
(numpy arrays of verdicts are accepted and checked at once); a call on 2,000 judged trials
takes well under a millisecond, so the bench runs the full grid through this very function.

What is done with a corrected rate -- its cost per corrected success (Fieller), the difference
of two (the gate's check), the rows a report prints -- is :mod:`ek_agents.stats.correctedrates`'s.

>>> r = judge_corrected_rate([1, 1, 0, 1, 0, 1, 1, 1, 0, 1], [1, 1, 1, 1, 0, 1, 1, 1, 1, 1],
...                          [1] * 80 + [0] * 20)
>>> round(r.estimate, 3), r.method, r.n_labeled, r.n_unlabeled
(0.659, 'score', 10, 100)
>>> r.ci[0] < r.estimate < r.ci[1] and r.judge_rate > r.estimate
True
"""
from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from typing import Any, Optional

from pydantic import Field

from ..core import shape
from ..errors import InvalidInput, did_you_mean
from .clustered import clustered_rate, cr1_variance
from .intervals import normal_quantile, t_quantile, wilson_interval, wilson_score

__all__ = ["JudgeCorrectedRate", "judge_corrected_rate", "JUDGE_METHODS", "DISAGREEMENT_PSEUDOCOUNT",
           "DF_CAP", "rate_quantile", "rate_doc", "rate_of_doc", "MIN_LABELS"]

#: ``method`` names of :func:`judge_corrected_rate`.
JUDGE_METHODS: tuple[str, ...] = ("score", "clt")
#: Fewest labeled trials a correction accepts, wherever the labels come from (a labels file,
#: a run's labels document, or these verdicts given directly): below it the judge's error is
#: not measured at all.
MIN_LABELS: int = 10
#: Pseudo-trials added to each of the two judge-disagreement cells of the labeled 2x2 table
#: when the default interval estimates the rectifier's variance (chosen by simulation:
#: ``bench_judge.pseudocount_sweep`` over the 27 iid cells, 1,000 runs each: at 0.03 every cell
#: covers 0.931-0.97; at 0 and 0.01 the least 0.908 and 0.921 (a 99%/99% judge, true success 0.9,
#: 50 labels); 0.1 and 0.3 over-cover two and four cells above 0.97, 1.7% and 6% wider).
DISAGREEMENT_PSEUDOCOUNT: float = 0.03
#: t with more degrees of freedom than this is the normal quantile (to 1e-5).
DF_CAP: int = 100_000


@shape()
class JudgeCorrectedRate:
    """A success rate corrected for the judge's measured error, with its interval."""

    estimate: float
    """The corrected success rate (the PPI++ estimate; may fall a little outside [0, 1] with
    few labels, the interval never does)."""
    ci: tuple[float, float]
    """The two-sided ``1 - alpha`` interval on the true success rate, inside [0, 1]."""
    method: str
    """``"score"`` (the default interval) or ``"clt"`` (ppi_py's)."""
    description: str
    """One sentence: how the interval was made."""
    lam: float
    """The weight on the judge's verdicts (0 = labels only, 1 = plain PPI); tuned as ppi_py
    tunes it for independent trials, 1 with task groups."""
    n_labeled: int
    """Trials with a gold (human) verdict and a judge verdict."""
    n_unlabeled: int
    """Trials with a judge verdict only."""
    n_groups: Optional[int]
    """Tasks the trials are grouped in (``None``: trials treated as independent)."""
    n_labeled_groups: Optional[int]
    """Tasks with at least one labeled trial (``None`` without groups)."""
    sensitivity: Optional[float]
    """The judge's measured sensitivity: of the labeled trials that truly succeeded, the
    fraction the judge passed (``None`` when no labeled trial succeeded)."""
    sensitivity_n: int
    """Labeled trials that truly succeeded (the sensitivity's denominator)."""
    specificity: Optional[float]
    """The judge's measured specificity: of the labeled trials that truly failed, the
    fraction the judge failed (``None`` when no labeled trial failed)."""
    specificity_n: int
    """Labeled trials that truly failed (the specificity's denominator)."""
    judge_rate: float
    """The judge's raw success rate over every judged trial (labeled and unlabeled)."""
    judge_ci: tuple[float, float]
    """The raw rate's own interval (Wilson; task-clustered with groups) -- an interval on what
    the judge says, not on the truth: with a biased judge it misses the true rate."""
    se: float
    """The standard error behind ``ci``."""
    df: Optional[float]
    """Degrees of freedom of the t quantile (``None``: the normal quantile, ``clt``)."""
    level: float = 0.95
    """``1 - alpha``."""
    influence: Optional[dict[str, float]] = Field(default=None, repr=False)
    """Per task (with groups) the estimate's influence, whose squares sum to its variance: what
    a paired comparison of two runs on the same tasks uses. ``None`` without groups."""

    @property
    def width(self) -> float:
        """``ci[1] - ci[0]``."""
        return self.ci[1] - self.ci[0]

    def sentence(self) -> str:
        """One sentence a person reads: raw, corrected, the judge's error."""
        def pct(x: Optional[float]) -> str:
            return "n/a" if x is None else f"{100 * x:.1f}%"
        return (f"judge says {pct(self.judge_rate)} [{pct(self.judge_ci[0])}, {pct(self.judge_ci[1])}]; "
                f"corrected by {self.n_labeled} labels {pct(self.estimate)} "
                f"[{pct(self.ci[0])}, {pct(self.ci[1])}] (judge sensitivity {pct(self.sensitivity)} "
                f"of {self.sensitivity_n}, specificity {pct(self.specificity)} of {self.specificity_n})")


# -- inputs ---------------------------------------------------------------------------------

def _verdicts(name: str, values: Any) -> list[int]:
    dtype = getattr(values, "dtype", None)
    if dtype is not None and getattr(values, "ndim", 0) == 1 and dtype.kind in "biuf":
        if dtype.kind == "b" or bool(((values == 0) | (values == 1)).all()):
            return values.astype(int).tolist()  # a numpy array of verdicts: checked at once
    out = []
    for i, v in enumerate(values):
        if isinstance(v, bool) or v in (0, 1):
            if isinstance(v, float) and not v.is_integer():
                raise InvalidInput(f"judge_corrected_rate: {name}[{i}] = {v!r} is not a verdict; "
                                   "give True/False (or 1/0)")
            out.append(int(v))
        else:
            raise InvalidInput(f"judge_corrected_rate: {name}[{i}] = {v!r} is not a verdict; "
                               "give True/False (or 1/0)")
    return out


def _group_ids(name: str, groups: Any, n: int) -> list:
    ids = list(groups)
    if len(ids) != n:
        raise InvalidInput(f"judge_corrected_rate: {name} has {len(ids)} entries for {n} trials; "
                           "give one task id per trial")
    return ids


# -- the estimators -------------------------------------------------------------------------

def _ppi_lam(n: int, nu: int, n11: int, ny: int, nh: int, hu: int) -> float:
    """ppi_py's power-tuned weight (``_calc_lam_glm``, one coordinate, clipped to [0, 1])."""
    if nu == 0 or n == 0:
        return 0.0
    ybar, hbar = ny / n, nh / n
    cov = n11 / n - ybar * hbar  # (1/n) sum (y - ybar)(h - hbar), twice over 2: ppi_py's num/2
    m = n + nu
    hall = (nh + hu) / m
    var_all = hall * (1.0 - hall) * m / (m - 1) if m > 1 else 0.0  # np.cov: ddof = 1
    if var_all <= 0.0:
        return 0.0
    return min(1.0, max(0.0, cov / ((1.0 + n / nu) * var_all)))


def _wilson_at(est: float, var: float, q: float, n_floor: int) -> tuple[float, float]:
    """Wilson interval with quantile ``q`` at the effective sample size ``p(1-p)/var``."""
    p = min(1.0, max(0.0, est))
    if var <= 0.0:
        return (p, p)
    pq = p * (1.0 - p)
    return wilson_score(p, pq / var if pq > 0.0 else float(max(n_floor, 1)), z=q)


def rate_quantile(level: float, df: float) -> float:
    """The two-sided ``level`` quantile a corrected rate's interval uses: Student t at ``df``
    (rounded down), the normal quantile when ``df`` is infinite or above :data:`DF_CAP`.

    >>> round(rate_quantile(0.95, math.inf), 4), round(rate_quantile(0.95, 9.7), 4)
    (1.96, 2.2622)
    """
    q = 1.0 - (1.0 - level) / 2.0
    if not math.isfinite(df) or df >= DF_CAP:
        return normal_quantile(q)
    return t_quantile(q, max(1, int(math.floor(df))))


def _iid_score_var(n: int, nu: int, cells: tuple[int, int, int, int], lam: float,
                   ubar: float) -> tuple[float, float]:
    """Variance of the PPI estimate and its Satterthwaite df, strata = the judge's verdicts."""
    n11, n10, n01, n00 = cells
    c = DISAGREEMENT_PSEUDOCOUNT
    c11, c10, c01, c00 = float(n11), n10 + c, n01 + c, float(n00)
    ns = n + 2 * c
    parts, dfs = [], []
    means = []
    for pos, neg, size in ((c11, c01, c11 + c01), (c10, c00, c10 + c00)):  # judge passed / failed
        if size <= 0:
            means.append(0.0)
            continue
        w = size / ns
        v = pos * neg / (size * size)  # var(gold | judge verdict)
        parts.append(w * w * v / size)
        dfs.append(max(size - 1.0, 1.0))
        means.append(pos / size)
    means[0] -= lam  # the rectifier gold - lam * judge is gold - lam where the judge passed
    w1 = (c11 + c01) / ns
    between = w1 * (1.0 - w1) * (means[0] - means[1]) ** 2 / ns
    parts.append(between)
    dfs.append(max(n - 1.0, 1.0))
    if nu > 0:
        parts.append(lam * lam * ubar * (1.0 - ubar) / nu)
        dfs.append(max(nu - 1.0, 1.0))
    var = math.fsum(parts)
    denom = math.fsum(a * a / d for a, d in zip(parts, dfs))
    df = var * var / denom if denom > 0 else math.inf
    return var, df


def judge_corrected_rate(gold: Sequence[Any], judge_on_labeled: Sequence[Any],
                         judge_on_unlabeled: Sequence[Any], *,
                         labeled_groups: Optional[Sequence[Any]] = None,
                         unlabeled_groups: Optional[Sequence[Any]] = None,
                         alpha: float = 0.05, method: str = "score") -> JudgeCorrectedRate:
    """The success rate corrected for the judge's error, measured on hand-labeled trials.

    ``gold[i]`` is a person's verdict on labeled trial ``i`` and ``judge_on_labeled[i]`` the
    judge's verdict on the same trial; ``judge_on_unlabeled`` the judge's verdicts on the trials
    nobody labeled (every other judged trial of the run). With ``labeled_groups`` /
    ``unlabeled_groups`` (each trial's task id) the interval is cluster-robust over tasks (how
    "tasks like these" is answered, and right when labels were sampled by task). ``method``:
    ``"score"`` (default) or ``"clt"`` (ppi_py's ``ppi_mean_ci``; groups are not used). See the
    module docstring for both and the simulations that chose the default.
    """
    if method not in JUDGE_METHODS:
        raise InvalidInput(f"judge_corrected_rate: unknown method={method!r}"
                           f"{did_you_mean(str(method), JUDGE_METHODS)} (one of {JUDGE_METHODS})")
    if not 0.0 < alpha < 1.0:
        raise InvalidInput(f"judge_corrected_rate: alpha must be in (0, 1), got {alpha!r}")
    y = _verdicts("gold", gold)
    h = _verdicts("judge_on_labeled", judge_on_labeled)
    u = _verdicts("judge_on_unlabeled", judge_on_unlabeled)
    if len(y) != len(h):
        raise InvalidInput(f"judge_corrected_rate: {len(y)} gold verdicts for {len(h)} judge "
                           "verdicts on the labeled trials; give one of each per labeled trial")
    n, nu = len(y), len(u)
    if n < MIN_LABELS:
        raise InvalidInput(f"judge_corrected_rate: {n} labeled trial(s); at least {MIN_LABELS} are "
                           "needed to measure the judge's error -- label more trials "
                           "(`ek-agents plan-labels RUN --n N` picks them)")
    grouped = labeled_groups is not None or unlabeled_groups is not None
    if grouped and (labeled_groups is None or (unlabeled_groups is None and nu)):
        raise InvalidInput("judge_corrected_rate: give both labeled_groups and unlabeled_groups "
                           "(each trial's task id), or neither")
    if grouped:  # checked whatever the method: a list of the wrong length is refused, never cut
        lg = _group_ids("labeled_groups", labeled_groups, n)
        ug = _group_ids("unlabeled_groups", [] if unlabeled_groups is None else unlabeled_groups, nu)
    level = 1.0 - alpha
    n11 = sum(1 for a, b in zip(y, h) if a and b)
    n10 = sum(1 for a, b in zip(y, h) if a and not b)
    n01 = sum(1 for a, b in zip(y, h) if b and not a)
    n00 = n - n11 - n10 - n01
    ny, nh, hu = n11 + n10, n11 + n01, sum(u)
    ubar = hu / nu if nu else 0.0
    common: dict[str, Any] = dict(
        n_labeled=n, n_unlabeled=nu, level=level,
        sensitivity=n11 / ny if ny else None, sensitivity_n=ny,
        specificity=n00 / (n - ny) if n - ny else None, specificity_n=n - ny)
    judge_total, m = nh + hu, n + nu
    if method == "clt" or not grouped:  # ppi_py's power-tuned weight
        lam = _ppi_lam(n, nu, n11, ny, nh, hu)
        est = lam * ubar + (ny - lam * nh) / n

    if method == "clt":
        r = [a - lam * b for a, b in zip(y, h)]
        rbar = sum(r) / n
        var_r = math.fsum((x - rbar) ** 2 for x in r) / n  # numpy std: ddof = 0
        var = var_r / n + (lam * lam * ubar * (1.0 - ubar) / nu if nu else 0.0)
        se = math.sqrt(var)
        z = normal_quantile(1.0 - alpha / 2.0)
        jci = wilson_interval(judge_total, m, z=z)
        if grouped:
            jci = _judge_ci_grouped(h, u, lg, ug, level)
        return JudgeCorrectedRate(
            estimate=est, ci=(est - z * se, est + z * se), method="clt",
            description="ppi_py's PPI++ CLT interval (power-tuned weight, normal quantile, "
                        "trials as independent" + ("; task groups not used)" if grouped else ")"),
            lam=lam, n_groups=None, n_labeled_groups=None, judge_rate=judge_total / m,
            judge_ci=jci, se=se, df=None, **common)

    if not grouped:
        var, df = _iid_score_var(n, nu, (n11, n10, n01, n00), lam, ubar)
        q = rate_quantile(level, df)
        return JudgeCorrectedRate(
            estimate=est, ci=_wilson_at(est, var, q, n), method="score",
            description="PPI++ estimate; Wilson interval at the effective sample size, variance "
                        "within the judge's verdict strata (0.03 pseudo-trials per disagreement "
                        "cell), t quantile with Satterthwaite df",
            lam=lam, n_groups=None, n_labeled_groups=None, judge_rate=judge_total / m,
            judge_ci=wilson_interval(judge_total, m, z=rate_quantile(level, math.inf)),
            se=math.sqrt(var),
            df=None if not math.isfinite(df) else df, **common)

    est, var, df, g, gl, infl = _clustered(y, h, u, lg, ug)
    iid_var, _ = _iid_score_var(n, nu, (n11, n10, n01, n00), 1.0 if nu else 0.0, ubar)
    var = max(var, iid_var)
    q = rate_quantile(level, df)
    ci = _wilson_at(est, var, q, n) if gl >= 2 else (0.0, 1.0)
    return JudgeCorrectedRate(
        estimate=est, ci=ci, method="score",
        description=("PPI (weight 1); Wilson interval at the effective sample size, cluster-robust "
                     f"variance over {g} tasks ({gl} labeled), t quantile with Satterthwaite df"
                     if gl >= 2 else "PPI (weight 1): labels from a single task cannot show the "
                                     "between-task spread; reporting (0, 1)"),
        lam=1.0 if nu else 0.0, n_groups=g, n_labeled_groups=gl, judge_rate=judge_total / m,
        judge_ci=_judge_ci_grouped(h, u, lg, ug, level), se=math.sqrt(var),
        df=None if not math.isfinite(df) else df, influence=infl, **common)


def _judge_ci_grouped(h: list, u: list, lg: Any, ug: Any, level: float) -> tuple[float, float]:
    per: dict[Any, list[int]] = {}
    for v, t in zip(list(h) + list(u), list(lg) + (list(ug) if ug is not None else [])):
        e = per.setdefault(t, [0, 0])
        e[0] += v
        e[1] += 1
    c = clustered_rate([a for a, _ in per.values()], [b for _, b in per.values()], level=level)
    return c.ci


def _clustered(y: list, h: list, u: list, lg: list, ug: list) -> tuple:
    """PPI (lam = 1) with its CR1 variance over tasks: ``(estimate, var, df, G, G_labeled,
    influence per task)``."""
    n, nu = len(y), len(u)
    lam = 1.0 if nu else 0.0  # every trial labeled: the labels alone
    lab: dict[Any, list[float]] = {}
    for a, b, t in zip(y, h, lg):
        e = lab.setdefault(t, [0.0, 0])
        e[0] += a - lam * b
        e[1] += 1
    unl: dict[Any, list[int]] = {}
    for b, t in zip(u, ug):
        e = unl.setdefault(t, [0, 0])
        e[0] += b
        e[1] += 1
    rbar = sum(e[0] for e in lab.values()) / n
    ubar = sum(e[0] for e in unl.values()) / nu if nu else 0.0
    est = lam * ubar + rbar
    psi_l = {t: (e[0] - e[1] * rbar) / n for t, e in lab.items()}
    psi_u = {t: (e[0] - e[1] * ubar) / nu for t, e in unl.items()}
    gl, gu = len(psi_l), len(psi_u)
    tasks = set(psi_l) | set(psi_u)
    infl = {str(t): psi_l.get(t, 0.0) + psi_u.get(t, 0.0) for t in tasks}
    if set(psi_l).isdisjoint(psi_u):
        vl = cr1_variance(psi_l.values())
        if gu > 1:
            vu = cr1_variance(psi_u.values())
        else:  # one unlabeled task (or none): its trials as independent draws
            vu = ubar * (1.0 - ubar) / nu if nu else 0.0
        var = vl + vu
        denom = (vl * vl / (gl - 1) if gl > 1 else 0.0) + (vu * vu / (gu - 1) if gu > 1 else 0.0)
        df = var * var / denom if denom > 0 and math.isfinite(var) else float(max(gl - 1, 1))
    else:  # labeled and unlabeled trials share tasks: one sandwich, df from the labeled tasks
        var = cr1_variance(infl.values())
        df = float(max(gl - 1, 1))
    # the influences, rescaled so that their squares sum to the variance used
    scale = math.sqrt(var / math.fsum(v * v for v in infl.values())) \
        if math.isfinite(var) and any(infl.values()) else 1.0
    return est, var, df, len(tasks), gl, {t: v * scale for t, v in infl.items()}


# -- documents (a report's detail["judge_corrected"]) ----------------------------------------

def rate_doc(rate: JudgeCorrectedRate) -> dict:
    """``rate`` as a plain JSON-ready dict (what a report stores)."""
    doc = dataclasses.asdict(rate)
    doc["ci"], doc["judge_ci"] = list(rate.ci), list(rate.judge_ci)
    return doc


def rate_of_doc(doc: Mapping[str, Any]) -> JudgeCorrectedRate:
    """A :class:`JudgeCorrectedRate` back from :func:`rate_doc` (after a JSON round trip)."""
    fields = set(JudgeCorrectedRate.__pydantic_fields__)
    return JudgeCorrectedRate(**{k: v for k, v in doc.items() if k in fields})
