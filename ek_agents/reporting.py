"""Corpus reliability over a k-trial run: success rate, pass@k, pass^k, per task and per slice.

>>> r = reliability({"t1": [True, True, False], "t2": [True, True, True]}, k=2)
>>> r.n_tasks, r.k
(2, 2)
>>> round(r.pass_hat_k, 3)   # t1: C(2,2)/C(3,2)=1/3 ; t2: 1.0
0.667
>>> ReliabilityReport.from_dict(r.to_dict()) == r
True
"""
from __future__ import annotations

import dataclasses
import math
import warnings
from collections.abc import Iterable, Mapping
from typing import Any, Optional

from pydantic import Field

from .spancounts import otel_read_counts, otel_read_sentence
from .base import (Episode, NonFiniteJson, RunProvenance, TaskSpec, is_episode, suite_grammar,
                   task_table)
from .core import shape
from .cost import cost_report
from .errors import InvalidInput
from .labels import judge_detail
from .prices import ModelPrice, price_of
from .scoring.facades import get_metric, score_all
from .scoring.metrics import get_checker, grade, is_errored
from .scoring.unresolved import retry_overhead, scored, unresolved_detail
from .stats.bootstrap import bootstrap_ci, bootstrap_mean_cis
from .stats.intervals import pass_at_k, pass_hat_k
from .stats.clustered import success_interval

__all__ = ["ReliabilityReport", "reliability", "pass_hat_curve", "DEFAULT_RESAMPLES", "build_report",
           "graded_report", "reliability_with_run", "with_cost", "score_metrics",
           "run_provenance", "check_report_inputs"]

#: Bootstrap resamples for the CI on pass^k over tasks.
DEFAULT_RESAMPLES: int = 2000

@shape()
class ReliabilityReport(NonFiniteJson):
    """Corpus-level reliability over a k-trial run, with per-task and per-slice cuts.

    ``success_rate`` is micro (over all trials); ``success_ci`` is task-clustered by default
    (:func:`~ek_agents.stats.clustered_rate`: trials of one task share its difficulty, so the
    interval is over tasks like these), or Wilson over all trials with ``ci="wilson"``;
    ``success_ci_method`` names the method (the same one for the per-slice intervals);
    ``pass_at_k`` / ``pass_hat_k`` are averaged over *tasks* (each task's own unbiased
    estimator with its own trial count), never over trials, and ``pass_hat_k_ci`` is a seeded
    percentile bootstrap over tasks. ``stochastic`` is False when no task showed mixed
    outcomes. ``per_task[task_id]`` = ``{"n", "c", "slice", "pass_at_k", "pass_hat_k"}``;
    ``per_slice[label]`` = ``{"n_tasks", "n_trials", "n_success", "success_rate",
    "success_ci", "pass_at_k", "pass_hat_k"}``; ``detail`` holds ``skipped`` (task ids with
    fewer than k trials), ``warnings``, ``seed`` and ``resamples``. ``cost`` carries a
    :func:`~ek_agents.cost.cost_report` along. In the JSON form (``to_dict``) non-finite
    numbers (an ``inf`` cost per success) are written as the strings ``"Infinity"`` /
    ``"-Infinity"`` / ``"NaN"`` and read back as floats.
    """

    k: int = 1
    n_tasks: int = 0
    n_trials: int = 0
    n_success: int = 0
    success_rate: float = 0.0
    success_ci: tuple[float, float] = (0.0, 1.0)
    success_ci_method: str = "wilson"
    pass_at_k: Optional[float] = None
    pass_hat_k: Optional[float] = None
    pass_hat_k_ci: tuple[float, float] = (0.0, 1.0)
    stochastic: bool = True
    per_task: dict = Field(default_factory=dict)
    per_slice: dict = Field(default_factory=dict)
    cost: dict = Field(default_factory=dict)
    detail: dict = Field(default_factory=dict)


def _group(source: Any, slices: Optional[Mapping[str, str]]) -> tuple[dict, dict]:
    """``{task_id: [bool, ...]}`` and ``{task_id: slice}`` from episodes or a mapping."""
    outcomes: dict[str, list[bool]] = {}
    labels: dict[str, Optional[str]] = {}
    if isinstance(source, Mapping):
        for tid, vals in source.items():
            if isinstance(vals, (str, bytes)) or not isinstance(vals, Iterable):
                raise InvalidInput(
                    f"reliability: task {tid!r} maps to {vals!r}; give a list of booleans "
                    "(one per trial)")
            row = []
            for v in vals:
                if v is True or v is False:  # the common case, without the duck-typing below
                    row.append(v)
                    continue
                if is_episode(v):
                    v = _episode_success(v)
                if not isinstance(v, bool) and v not in (0, 1):
                    raise InvalidInput(
                        f"reliability: task {tid!r} has trial outcome {v!r}; outcomes must be "
                        "True/False (grade the episodes first)")
                row.append(bool(v))
            outcomes[str(tid)] = row
            labels[str(tid)] = None
    else:
        if isinstance(source, (str, bytes)) or not isinstance(source, Iterable):
            raise InvalidInput(
                f"reliability: source must be graded Episodes or a {{task_id: [bool, ...]}} "
                f"mapping, got {type(source).__name__}")
        for ep in source:
            if not isinstance(ep, Episode) and not is_episode(ep):  # the class: no duck-typing
                raise InvalidInput(
                    f"reliability: {ep!r:.80} is not an Episode; pass graded Episodes or a "
                    "{task_id: [bool, ...]} mapping")
            tid = str(ep.task_id)
            row = outcomes.get(tid)
            if row is None:
                row = outcomes[tid] = []
                labels[tid] = None
            row.append(_episode_success(ep))
            if labels[tid] is None:
                meta = getattr(ep, "meta", None) or {}
                if meta.get("slice") is not None:
                    labels[tid] = str(meta["slice"])
    if slices is not None:
        if not isinstance(slices, Mapping):
            raise InvalidInput(
                f"reliability: slices must be a {{task_id: label}} mapping, got {type(slices).__name__}")
        for tid in outcomes:
            if tid in slices and slices[tid] is not None:
                labels[tid] = str(slices[tid])
    return outcomes, labels


def _episode_success(ep: Any) -> bool:
    if ep.success is None:
        raise InvalidInput(
            f"reliability: episode of task {ep.task_id!r} is ungraded (success=None); grade the "
            "episodes first (ek_agents.scoring.metrics.grade) or record a success")
    return bool(ep.success)


def _mean(xs: list[float]) -> Optional[float]:
    return math.fsum(xs) / len(xs) if xs else None


def reliability(source: Any, *, k: int = 1, slices: Optional[Mapping[str, str]] = None,
                cost: Optional[Mapping] = None, warn_deterministic: bool = True,
                seed: int = 0, ci: str = "clustered") -> ReliabilityReport:
    """Compute ``pass@k`` / ``pass^k`` / success-rate over a k-trial run.

    ``source`` is graded :class:`~ek_agents.base.Episode` s (grouped by ``task_id``) or a
    ``{task_id: [bool, ...]}`` mapping. Each task's estimators use *its own* trial count
    (as tau2-bench does); tasks with fewer than ``k`` trials are skipped for pass@k / pass^k
    and listed in ``detail["skipped"]`` (their trials still count in the success rate).
    Slice labels come from ``slices`` (``{task_id: label}``), else from an episode's
    ``meta["slice"]``; tasks with no label are left out of ``per_slice``. With
    ``warn_deterministic``, a run in which tasks had several trials but **none** had mixed
    outcomes warns (``warnings.warn`` and ``detail["warnings"]``): pass^k then carries no
    information beyond pass^1. The pass^k CI is a percentile bootstrap over tasks seeded
    with ``seed``. ``ci`` chooses the success-rate intervals (overall and per slice):
    ``"clustered"`` (default; :func:`~ek_agents.stats.clustered_rate`, equal to Wilson when
    every task has one trial) or ``"wilson"`` (all trials as independent); the report names
    it in ``success_ci_method``. An ungraded episode (``success=None``) raises
    :class:`~ek_agents.errors.InvalidInput`.

    >>> r = reliability({"t1": [True, True, False], "t2": [True, True, True]}, k=2)
    >>> round(r.pass_hat_k, 3), r.success_rate, r.detail["skipped"]
    (0.667, 0.8333333333333334, [])
    """
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise InvalidInput(f"reliability: k must be an integer >= 1, got {k!r}")
    ci_name = ci
    success_interval([], [], method=ci_name)  # an unknown method fails before any work
    outcomes, labels = _group(source, slices)
    notes: list[str] = []
    per_task: dict[str, dict] = {}
    skipped: list[str] = []
    estimates: dict[tuple[int, int], tuple[float, float]] = {}  # tasks share few distinct (n, c)
    for tid in sorted(outcomes):
        row = outcomes[tid]
        n, c = len(row), sum(row)
        entry: dict[str, Any] = {"n": n, "c": c, "slice": labels.get(tid),
                                 "pass_at_k": None, "pass_hat_k": None}
        if n >= k:
            est = estimates.get((n, c))
            if est is None:
                est = estimates[n, c] = (pass_at_k(n=n, c=c, k=k), pass_hat_k(n=n, c=c, k=k))
            entry["pass_at_k"], entry["pass_hat_k"] = est
        else:
            skipped.append(tid)
        per_task[tid] = entry
    if skipped:
        notes.append(f"{len(skipped)} task(s) had fewer than k={k} trials and were left out of "
                     f"pass@k/pass^k: {skipped[:10]}{' ...' if len(skipped) > 10 else ''}")

    scored = [t for t in per_task if per_task[t]["pass_hat_k"] is not None]
    hats = [per_task[t]["pass_hat_k"] for t in scored]
    n_trials = sum(e["n"] for e in per_task.values())
    n_success = sum(e["c"] for e in per_task.values())
    stochastic = any(0 < e["c"] < e["n"] for e in per_task.values())
    multi = any(e["n"] >= 2 for e in per_task.values())
    if warn_deterministic and multi and not stochastic:
        notes.append(
            "no task showed mixed outcomes across its trials: pass^k degenerates to pass^1 "
            "and says nothing about reliability (is the agent sampled at temperature 0 or "
            "seeded identically on every trial?)")
        warnings.warn(notes[-1], stacklevel=2)
    if not outcomes:
        notes.append("no trials: nothing to report")

    hat_ci = _hat_ci(hats, seed)
    if len(hats) == 1:
        notes.append("pass^k CI: a single scored task cannot be bootstrapped; reporting (0, 1)")

    per_slice: dict[str, dict] = {}
    for label in sorted({lab for lab in labels.values() if lab is not None}):
        tids = [t for t in per_task if per_task[t]["slice"] == label]
        nt = sum(per_task[t]["n"] for t in tids)
        ns = sum(per_task[t]["c"] for t in tids)
        sc = [t for t in tids if per_task[t]["pass_hat_k"] is not None]
        per_slice[label] = {
            "n_tasks": len(tids), "n_trials": nt, "n_success": ns,
            "success_rate": ns / nt if nt else 0.0,
            "success_ci": list(success_interval([per_task[t]["c"] for t in tids],
                                                [per_task[t]["n"] for t in tids], method=ci_name)[0]),
            "pass_at_k": _mean([per_task[t]["pass_at_k"] for t in sc]),
            "pass_hat_k": _mean([per_task[t]["pass_hat_k"] for t in sc]),
        }

    success_ci, ci_method = success_interval([e["c"] for e in per_task.values()],
                                             [e["n"] for e in per_task.values()], method=ci_name)
    return ReliabilityReport(
        k=k, n_tasks=len(per_task), n_trials=n_trials, n_success=n_success,
        success_rate=n_success / n_trials if n_trials else 0.0,
        success_ci=success_ci, success_ci_method=ci_method,
        pass_at_k=_mean([per_task[t]["pass_at_k"] for t in scored]),
        pass_hat_k=_mean(hats), pass_hat_k_ci=hat_ci, stochastic=stochastic,
        per_task=per_task, per_slice=per_slice, cost=dict(cost) if cost is not None else {},
        detail={"skipped": skipped, "warnings": notes, "seed": seed,
                "resamples": DEFAULT_RESAMPLES, "n_tasks_scored": len(scored),
                "estimator": "per-task unbiased pass@k / pass^k, each task with its own "
                             "trial count, averaged over tasks"},
    )


def _hat_ci(hats: list, seed: int) -> tuple[float, float]:
    """The pass^k CI: a percentile bootstrap over the scored tasks' pass^k, clipped to [0, 1];
    (0, 1) with fewer than two scored tasks."""
    if len(hats) < 2:
        return (0.0, 1.0)
    if _all_zero_or_all_one(hats):
        return (hats[0], hats[0])
    return _clipped(bootstrap_ci(hats, "mean", resamples=DEFAULT_RESAMPLES, seed=seed))


def _all_zero_or_all_one(hats: list) -> bool:
    """Whether every pass^k is 0.0 or every one is 1.0 (no task / every task passed every
    trial): then every resample's mean is that value exactly (n ones sum to n in floating
    point), so the bootstrap's interval is ``(v, v)`` without drawing -- or importing numpy."""
    first = hats[0]
    return (first == 0.0 or first == 1.0) and all(h == first for h in hats)


def _clipped(ci: tuple[float, float]) -> tuple[float, float]:
    return (max(0.0, ci[0]), min(1.0, ci[1]))


def pass_hat_curve(counts: Mapping[str, tuple[int, int]], k_max: int, *,
                   seed: int = 0) -> list[tuple[int, Optional[float], float, float]]:
    """``(k, pass^k, ci_low, ci_high)`` for k = 1..``k_max`` from each task's ``(trials,
    successes)``: for every k what :func:`reliability` of those outcomes reports as
    ``pass_hat_k`` and ``pass_hat_k_ci`` (the same estimator, tasks, bootstrap and seed),
    without building the rest of a report at each k.

    >>> pass_hat_curve({"t1": (3, 2), "t2": (3, 3)}, 2)[1][:2]
    (2, 0.6666666666666666)
    """
    rows = [counts[t] for t in sorted(counts)]
    per_k = []
    for k in range(1, k_max + 1):
        each = {nc: pass_hat_k(n=nc[0], c=nc[1], k=k) for nc in set(rows) if nc[0] >= k}
        per_k.append([each[nc] for nc in rows if nc[0] >= k])  # tasks share few distinct (n, c)
    # _hat_ci of every k at once: the bootstrap's draws made once per number of scored tasks,
    # and not at all (nor numpy imported) for a k whose pass^k are all 0 or all 1
    def drawn(hats: list) -> bool:
        return len(hats) >= 2 and not _all_zero_or_all_one(hats)

    boot = [hats for hats in per_k if drawn(hats)]
    cis = iter(_clipped(ci) for ci in bootstrap_mean_cis(boot, resamples=DEFAULT_RESAMPLES,
                                                          seed=seed)) if boot else iter(())
    return [(k, _mean(hats), *(next(cis) if drawn(hats) else _hat_ci(hats, seed)))
            for k, hats in enumerate(per_k, start=1)]


# --------------------------------------------------------------------------- report assembly

def build_report(episodes: Any, tasks: Any, *, k: int, check: Any = None,
                 metrics: Optional[Mapping[str, Any]] = None, price: Any = None,
                 prices: Optional[Mapping] = None, seed: int = 0,
                 run: Optional[RunProvenance] = None, labels: Any = None) -> Any:
    """Grade -> metrics -> cost -> reliability: a :class:`~ek_agents.reporting.ReliabilityReport`.

    ``metrics`` (``{name: Metric}``) are scored on every episode against its task's gold with
    the suite grammar injected (unless the metric carries its own ``grammar``); their
    aggregates land in ``report.detail["metrics"]``. ``report.detail`` also gets ``"run"`` (the
    run's provenance, what the gate checks comparability on: ``run``'s fields, empty ones
    filled from the episodes' own ``run``) and ``"errors"`` (failed trials by ``error_kind``);
    ``report.cost`` has one cost report per slice under ``"per_slice"``. The pipeline's
    ``stages.evaluate.metrics_stage`` and ``stages.evaluate.cost_stage`` compute the same report (the same two
    helpers), so a run recorded by either reads alike.

    ``labels`` (a labels file's path, its bytes, or ``labels.Labels``: people's verdicts on
    some trials of a judge-graded run) adds ``detail["judge_corrected"]``
    (:func:`~ek_agents.labels.judge_detail`): the judge's raw rate beside the judge-corrected
    one, the judge's measured error, and the cost per corrected success.
    """
    return graded_report(episodes, tasks, k=k, check=check, metrics=metrics, price=price,
                   prices=prices, seed=seed, run=run, labels=labels)[2]


def check_report_inputs(tasks: Any, *, check: Any = None, metrics: Any = None, price: Any = None,
                        prices: Any = None) -> None:
    """Refuse what :func:`graded_report` would refuse only after the trials have run (and been
    paid for): a ``check`` that is not a checker (nor a judge), a task's own ``checker`` that is
    unknown, a metric that is not one, a ``price`` that is neither a ``ModelPrice`` nor a model
    in ``prices``, ``prices`` that is not a ``{model: ModelPrice}`` table. Raises the typed error naming the value."""
    specs = task_table(tasks)
    get_checker(check)
    for name in {t.checker for t in specs.values() if t.checker is not None}:
        get_checker(name)
    if metrics:
        if not isinstance(metrics, Mapping):
            raise InvalidInput(f"metrics must be a {{name: Metric}} mapping, got {type(metrics).__name__}")
        for name, given in metrics.items():
            try:
                get_metric(given)
            except InvalidInput as exc:
                raise type(exc)(f"metrics {name!r}: {exc}") from None
    if prices is not None and (not isinstance(prices, Mapping) or not all(
            isinstance(v, ModelPrice) for v in prices.values())):
        raise InvalidInput(f"prices must be a {{model: ModelPrice}} table (load_prices(path)), got "
                           f"{type(prices).__name__}")
    if isinstance(price, str):
        price_of(price, prices=prices)  # UnknownModelPrice naming the closest entries
    elif price is not None and not isinstance(price, ModelPrice):
        raise InvalidInput(f"price must be a ModelPrice (one price for every call) or a model "
                           f"name in prices, got {price!r:.80}")


def graded_report(episodes: Any, tasks: Any, *, k: int, check: Any, metrics: Optional[Mapping],
            price: Any, prices: Optional[Mapping], seed: int, run: Optional[RunProvenance],
            labels: Any = None) -> tuple:
    """:func:`build_report`'s ``(graded episodes, reliability, report)``: the graded, metrics
    and report documents of a run (``harness.run_suite`` stores all three)."""
    specs = task_table(tasks)
    graded = grade(list(episodes), specs, check=check)
    metric_values = score_metrics(graded, specs, metrics)
    reliability = reliability_with_run(graded, specs, k=k, seed=seed, run=run)
    report = with_cost(reliability, graded, prices=prices, price=price, seed=seed)
    if metrics:
        report = dataclasses.replace(report, detail={**report.detail, "metrics": metric_values})
    if labels is not None:
        report = with_labels(report, graded, labels, check=check, tasks=specs)
    return graded, reliability, report


def with_labels(report: Any, graded: list, labels: Any, *, check: Any, tasks: Any) -> Any:
    """``report`` with ``detail["judge_corrected"]`` (:func:`~ek_agents.labels.judge_detail`)."""
    detail = judge_detail(graded, labels, check=check, tasks=tasks, cost=report.cost)
    return dataclasses.replace(report, detail={**report.detail, "judge_corrected": detail})


def reliability_with_run(graded: list, tasks: Any, *, k: int, seed: int,
                          run: Optional[RunProvenance]) -> Any:
    """``reporting.reliability`` of graded episodes (slices from the tasks), with
    ``detail["run"]`` (:func:`run_provenance`), ``detail["errors"]`` (errored trials by
    ``error_kind``) and a warning for each of a provenance clash and errored trials."""
    slices = {tid: t.slice for tid, t in task_table(tasks).items() if t.slice is not None}
    unresolved = unresolved_detail(graded)  # provider errors: not the agent's, not scored
    graded = scored(graded)
    report = reliability(graded, k=k, slices=slices or None, seed=seed)
    warnings = list(report.detail.get("warnings", []))
    prov, prov_warning = run_provenance(graded, run)
    if prov_warning:
        warnings.append(prov_warning)
    errors: dict = {}
    for ep in graded:
        if is_errored(ep):
            kind = ep.meta.get("error_kind", "exception")
            errors[kind] = errors.get(kind, 0) + 1
    if errors:
        warnings.append(f"{sum(errors.values())} of {len(graded)} trials failed with an error "
                        f"({', '.join(f'{n} {kind}' for kind, n in sorted(errors.items()))}); "
                        "they count as failures")
    otel_read = otel_read_counts(graded)  # what the span reads kept once, cut or skipped
    if otel_read:
        warnings.append(otel_read_sentence(otel_read))
    if unresolved:
        warnings.append(f"incomplete: {unresolved['n']} trial(s) left unresolved by provider "
                        f"errors ({', '.join(f'{n} {k}' for k, n in unresolved['by_kind_and_model'].items())}) "
                        "are not scored; complete the run with --retry-errored (same run id)")
    return dataclasses.replace(report, detail={
        **report.detail, "run": None if prov is None else prov.to_dict(), "errors": errors,
        "warnings": warnings, **({"otel_read": otel_read} if otel_read else {}),
        **({"unresolved": unresolved} if unresolved else {})})


def with_cost(report: Any, graded: list, *, prices: Optional[Mapping] = None, price: Any = None,
               seed: int = 0) -> Any:
    """``report`` carrying ``cost.cost_report`` of the graded episodes, with one
    ``cost_report`` per slice (the report's per-task labels) under ``cost["per_slice"]``."""
    overhead = retry_overhead(graded, prices=prices, price=price)
    graded = scored(graded)  # the unresolved trials: neither a success nor a cost of one
    cost = dict(cost_report(graded, prices=prices, price=price, seed=seed))
    if overhead:  # the attempts a provider error ended: spent, apart from the scored ones
        cost["retry_overhead"] = overhead
    labels = {tid: t["slice"] for tid, t in report.per_task.items() if t.get("slice") is not None}
    cost["per_slice"] = {
        label: dict(cost_report([e for e in graded if labels.get(e.task_id) == label],
                                prices=prices, price=price, seed=seed))
        for label in sorted(set(labels.values()))}
    if not overhead:
        return dataclasses.replace(report, cost=cost)
    spent = "unpriced" if overhead["dollars"] is None else f"${overhead['dollars']:.6f}"
    said = (f"{overhead['attempts']} attempt(s) ended by provider errors were run again; their "
            f"{overhead['calls']} model call(s) cost {spent}: retry overhead, apart from the "
            "figures above")
    return dataclasses.replace(report, cost=cost, detail={
        **report.detail, "warnings": [*report.detail.get("warnings", []), said]})


def score_metrics(graded: list, specs: Mapping[str, TaskSpec], metrics: Any) -> dict:
    """``{name: metric.aggregate(scores)}`` of every metric scored on every graded episode
    against its task's gold (the suite grammar injected unless the metric has its own)."""
    if not metrics:
        return {}
    if not isinstance(metrics, Mapping):
        raise InvalidInput(f"metrics must be a {{name: Metric}} mapping, got {type(metrics).__name__}")
    grammar = suite_grammar(specs)
    out = {}
    for name, given in metrics.items():
        try:
            metric = get_metric(given)
        except InvalidInput as exc:  # UnknownName too: name the entry
            raise type(exc)(f"metric {name!r}: {exc}") from None
        g = None if getattr(metric, "grammar", None) is not None else grammar
        scores = score_all(metric, graded, [specs[ep.task_id].gold for ep in graded], grammar=g)
        out[name] = metric.aggregate(scores)
    return out


def run_provenance(episodes: list, run: Optional[RunProvenance]) -> tuple:
    """``(RunProvenance | None, warning | None)``: ``run``'s fields, empty ones filled from the
    episodes' own (what :func:`build_report` and ``stages.evaluate.metrics_stage`` record as
    ``detail["run"]``).

    A field the episodes disagree on (two simulators in one run) is reported as a warning:
    such a run is not one comparable run. The seed is the smallest trial seed (the base seed).
    """
    # each distinct provenance once (a run's trials share a handful of them: one per seed)
    runs = list({id(r): r for r in (ep.run for ep in episodes) if r is not None}.values())
    if run is None and not runs:
        return None, None
    base = run or RunProvenance()
    fields: dict = {}
    clashes = []
    for f in ("temperature", "model", "simulator", "suite_version", "scaffold"):
        values = sorted({getattr(r, f) for r in runs} - {None, ""}, key=repr)
        if getattr(base, f) not in (None, ""):
            fields[f] = getattr(base, f)
        elif values:
            fields[f] = values[0]
        if f in ("simulator", "suite_version", "scaffold") and len(values) > 1:
            clashes.append(f"{f} {values}")
    seeds = [r.seed for r in runs if r.seed is not None]
    seed = base.seed if base.seed is not None else (min(seeds) if seeds else None)
    warning = None
    if clashes:
        warning = (f"the episodes disagree on {'; '.join(clashes)}: they are not one comparable "
                   "run (the gate compares runs by simulator, suite_version and scaffold)")
    return RunProvenance(seed=seed, **fields), warning
