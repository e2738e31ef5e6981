"""A sequential regression gate: look after every batch of trials, stop once the verdict is decided.

The fixed-design gate (:func:`~ek_agents.gate.regression_gate`) needs the whole run. Here
the current run is built **batch by batch** -- batch ``j`` is trial ``j`` of every task, so
after each batch every task has ``j`` trials and the comparison with the baseline stays
paired over all tasks -- and after each batch the paired, task-clustered difference of the
success rates (:func:`~ek_agents.stats.paired_difference`) is compared with a
**group-sequential boundary**:

- **Method: alpha spending** (Lan & DeMets 1983) with the O'Brien-Fleming-type spending
  function (:func:`~ek_agents.stats.obrien_fleming_spending`), boundaries by the recursive
  numerical integration of Armitage, McPherson & Rowe 1969
  (:func:`~ek_agents.stats.group_sequential_bounds`), information fraction = the fraction of
  the planned trials run. Looking after every batch then does not inflate the false-alarm
  rate: the probability of ever crossing the boundary under "no regression" is the one-sided
  ``alpha``. Each look converts its z boundary to a Student-t boundary at ``n_tasks - 1`` df
  (same tail probability).
- **Level**: by default the success-rate check's share of the gate's family-wise
  :data:`~ek_agents.gate.ALPHA` in the fixed design (:func:`per_check_alpha`: ``ALPHA / m``,
  m = the checks the fixed gate makes on such a run -- success rate, pass^k when k > 1, cost
  when priced), so the sequential verdict is held to the fixed gate's standard for that
  check. (At the full 2.5% the measured false alarms were 2.85% on 2000 simulated pairs: the
  paired t-test on 60 tasks is at, not below, its nominal level.)
- **Stop for regression** when ``(diff + tolerance) / se < -c_j``.
- **Stop for a clear pass** when ``(diff + tolerance + min_effect) / se > c_j``: the run is
  confidently no worse than ``min_effect`` beyond the tolerance. This futility rule is
  *non-binding* (the boundaries are computed without it), so it can only lower false alarms.
- At the last look the boundary ``c_K`` decides; a run that is worse but not beyond it passes,
  flagged *underpowered*, as the fixed gate does.

The verdict covers the **success-rate** check (the only one that exists after one trial per
task; pass^k needs all k trials). :func:`sequential_gate` drives the looks with two callables
(run one batch of ``(task_id, trial)`` pairs; read a success from an episode) so this module
does not depend on the harness: ``run_suite(..., baseline=..., sequential=True)`` wires it to
:func:`~ek_agents.execution.harness.run_trials`.

>>> base = {f"t{i}": (3, 4) for i in range(40)}
>>> look = sequential_look({t: (0, 1) for t in base}, base, look=1, n_looks=4)
>>> look["decision"]
'regression'
"""
from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Optional

from pydantic import Field

from .base import NonFiniteJson
from .core import shape
from .errors import InvalidInput
from .gate import ALPHA, as_run, check_comparable
from .stats.power import group_sequential_bounds
from .stats.bootstrap import paired_difference
from .stats.intervals import t_quantile

__all__ = ["SequentialVerdict", "sequential_look", "sequential_gate", "baseline_task_counts",
           "per_check_alpha", "replay_sequential", "gate_document", "check_baseline_comparable",
           "SEQUENTIAL_METHOD", "DEFAULT_MIN_EFFECT"]

#: How the sequential gate controls its false alarms (recorded on every verdict).
SEQUENTIAL_METHOD = ("group-sequential paired test, Lan-DeMets O'Brien-Fleming alpha spending "
                     "(Lan & DeMets 1983; boundaries by Armitage-McPherson-Rowe integration), "
                     "one look per batch of one trial per task, non-binding futility stop")
#: The drop (beyond the tolerance) a clear pass must rule out to stop early.
DEFAULT_MIN_EFFECT: float = 0.05


@shape()
class SequentialVerdict(NonFiniteJson):
    """The outcome of a sequential gate.

    ``decision`` is ``"regression"`` or ``"pass"``; ``stopped_early`` whether the agent was
    called for fewer than the planned trials, ``reason`` why it stopped (which look, the
    statistic and the boundary); ``trials_run`` / ``trials_planned`` what the verdict cost;
    ``looks`` every look's numbers; ``underpowered`` a pass that is worse but not
    significantly so.
    """

    decision: str = "pass"
    passed: bool = True
    stopped_early: bool = False
    reason: str = ""
    trials_run: int = 0
    trials_planned: int = 0
    n_looks: int = 0
    underpowered: bool = False
    alpha: float = 0.025
    tolerance: float = 0.0
    min_effect: float = DEFAULT_MIN_EFFECT
    method: str = SEQUENTIAL_METHOD
    looks: tuple[dict, ...] = ()
    detail: dict = Field(default_factory=dict)

    def __bool__(self) -> bool:
        return self.passed


def baseline_task_counts(report: Any) -> dict[str, tuple[int, int]]:
    """``{task_id: (successes, trials)}`` of a baseline :class:`~ek_agents.reporting.ReliabilityReport`
    (or its dict form); :class:`~ek_agents.errors.InvalidInput` when it has no per-task counts
    (a sequential gate is paired: it needs them)."""
    per_task = report.get("per_task") if isinstance(report, Mapping) else getattr(report, "per_task", None)
    out: dict[str, tuple[int, int]] = {}
    for tid, e in (per_task or {}).items():
        n, c = (e.get("n"), e.get("c")) if isinstance(e, Mapping) else (None, None)
        if not (isinstance(n, int) and isinstance(c, int) and 0 <= c <= n and n > 0):
            raise InvalidInput(f"sequential gate: the baseline's task {tid!r} has no usable trial "
                               f"counts ({e!r:.80}); save the baseline again from a full report")
        out[str(tid)] = (c, n)
    if not out:
        raise InvalidInput("sequential gate: the baseline has no per-task counts, and a sequential "
                           "gate compares task by task; save the baseline from a report that has "
                           "them (reliability() records per_task)")
    return out


def per_check_alpha(k: int, priced: bool = False) -> float:
    """The fixed gate's one-sided level for its success-rate check on a run with this ``k``
    and pricing: ``ALPHA / m`` with m = 1 + (k > 1) + priced (Bonferroni over its checks).

    >>> per_check_alpha(1), per_check_alpha(4), per_check_alpha(4, priced=True)
    (0.025, 0.0125, 0.008333333333333333)
    """
    return ALPHA / (1 + (k > 1) + bool(priced))


def _boundary(look: int, n_looks: int, alpha: float, df: int) -> float:
    z = group_sequential_bounds([j / n_looks for j in range(1, n_looks + 1)], alpha)[look - 1]
    tail = 0.5 * math.erfc(z / math.sqrt(2.0))
    return t_quantile(1.0 - tail, max(df, 1))


def _z(x: float, se: float) -> float:
    if not math.isfinite(se):  # a single task: no evidence either way
        return 0.0
    if se > 0:
        return x / se
    return 0.0 if x == 0 else math.copysign(math.inf, x)  # no spread at all: the sign decides


def sequential_look(current: Mapping[str, tuple[int, int]], baseline: Mapping[str, tuple[int, int]],
                    *, look: int, n_looks: int, alpha: float = 0.025, tolerance: float = 0.0,
                    min_effect: float = DEFAULT_MIN_EFFECT) -> dict:
    """One look of the sequential gate (pure): the paired difference of the current counts
    (``{task_id: (successes, trials)}``, trials so far) and the baseline's over the same
    tasks, its statistic and boundary, and ``decision``: ``"regression"``, ``"pass"`` or
    ``"continue"`` (the last look always decides)."""
    if set(current) != set(baseline) or not current:
        only = sorted(set(current) ^ set(baseline))[:5]
        raise InvalidInput(f"sequential gate: the run and the baseline must cover the same tasks "
                           f"(differing: {only}); gate a different suite with the fixed gate")
    if not 1 <= look <= n_looks:
        raise InvalidInput(f"sequential_look: look must be in 1..{n_looks}, got {look!r}")
    tids = sorted(current)
    pd = paired_difference([current[t][0] for t in tids], [current[t][1] for t in tids],
                           [baseline[t][0] for t in tids], [baseline[t][1] for t in tids])
    c = _boundary(look, n_looks, alpha, pd.df)
    z_fail = _z(pd.diff + tolerance, pd.se)
    z_pass = _z(pd.diff + tolerance + min_effect, pd.se)
    if z_fail < -c:
        decision = "regression"
    elif look == n_looks:
        decision = "pass"
    elif z_pass > c:
        decision = "pass"
    else:
        decision = "continue"
    return {"look": look, "n_looks": n_looks, "trials": sum(current[t][1] for t in tids),
            "diff": pd.diff, "se": pd.se, "df": pd.df, "z": z_fail, "z_pass": z_pass,
            "boundary": c, "decision": decision}


def sequential_gate(run_batch: Callable[[list], Sequence[Any]], task_ids: Sequence[str], *,
                    k: int, baseline: Any, success: Callable[[Any], bool],
                    alpha: Optional[float] = None, priced: bool = False, tolerance: float = 0.0,
                    min_effect: float = DEFAULT_MIN_EFFECT) -> tuple[list, SequentialVerdict]:
    """Run the current agent batch by batch until the verdict is decided.

    ``run_batch(pairs)`` runs the ``(task_id, trial)`` pairs of one batch and returns their
    episodes (graded or gradable); ``success(episode)`` reads one's outcome. Batch ``j`` is
    trial ``j`` of every task in ``task_ids``; at most ``k`` batches. ``baseline``: a report
    (or dict) whose per-task counts cover the same tasks. Returns ``(episodes, verdict)``:
    the episodes of the batches that ran, and the :class:`SequentialVerdict`. ``alpha``
    (one-sided) defaults to :func:`per_check_alpha` of ``k`` and ``priced``.
    """
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise InvalidInput(f"sequential gate: k must be an int >= 1, got {k!r}")
    for nm, v in (("tolerance", tolerance), ("min_effect", min_effect)):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
            raise InvalidInput(f"sequential gate: {nm} must be a number >= 0, got {v!r}")
    if alpha is None and not isinstance(k, bool) and isinstance(k, int) and k >= 1:
        alpha = per_check_alpha(k, priced)
    if not isinstance(alpha, (int, float)) or isinstance(alpha, bool) or not 0.0 < alpha < 0.5:
        raise InvalidInput(f"sequential gate: alpha must be in (0, 0.5), got {alpha!r}")
    base = baseline_task_counts(baseline)
    tids = sorted(str(t) for t in task_ids)
    if set(tids) != set(base):
        only = sorted(set(tids) ^ set(base))[:5]
        raise InvalidInput(f"sequential gate: the suite and the baseline cover different tasks "
                           f"(e.g. {only}); a sequential gate is paired -- run the baseline's "
                           "suite, or use the fixed gate")
    counts = {t: (0, 0) for t in tids}
    episodes: list = []
    looks: list[dict] = []
    for j in range(k):
        batch = run_batch([(t, j) for t in tids])
        for ep in batch:
            c, n = counts[str(ep.task_id)]
            counts[str(ep.task_id)] = (c + bool(success(ep)), n + 1)
        episodes.extend(batch)
        look = sequential_look(counts, base, look=j + 1, n_looks=k, alpha=alpha,
                               tolerance=tolerance, min_effect=min_effect)
        looks.append(look)
        if look["decision"] != "continue":
            break
    last = looks[-1]
    failed = last["decision"] == "regression"
    early = last["look"] < k
    if failed:
        reason = (f"regression at look {last['look']} of {k}: success rate {100 * last['diff']:+.1f} "
                  f"pts vs the baseline, statistic {last['z']:.2f} below the boundary "
                  f"-{last['boundary']:.2f}")
    elif early:
        reason = (f"clear pass at look {last['look']} of {k}: no drop of more than "
                  f"{100 * (tolerance + min_effect):.1f} pts (statistic {last['z_pass']:.2f} "
                  f"above the boundary {last['boundary']:.2f})")
    else:
        reason = (f"pass at the last look: statistic {last['z']:.2f} not below the boundary "
                  f"-{last['boundary']:.2f}")
    verdict = SequentialVerdict(
        decision=last["decision"], passed=not failed, stopped_early=early, reason=reason,
        trials_run=len(episodes), trials_planned=k * len(tids), n_looks=k,
        underpowered=not failed and last["diff"] < -tolerance, alpha=alpha,
        tolerance=tolerance, min_effect=min_effect, looks=tuple(looks))
    return episodes, verdict


def replay_sequential(episodes: Sequence[Any], baseline: Any, *, k: int, alpha: float,
                      tolerance: float = 0.0,
                      min_effect: float = DEFAULT_MIN_EFFECT) -> SequentialVerdict:
    """The verdict :func:`sequential_gate` reached, recomputed from the graded episodes it
    ran (``meta["trial"]`` says each one's batch): the looks are replayed in order over the
    stored outcomes, so an audit (or ``ek-agents gate``) of a sequential run reproduces its
    decision, its reason and the trials it cost without calling the agent."""
    by_pair = {(str(e.task_id), (e.meta or {}).get("trial")): e for e in episodes}
    tids = sorted({t for t, _ in by_pair})

    def stored(pairs: list) -> list:
        missing = [p for p in pairs if p not in by_pair]
        if missing:
            raise InvalidInput(f"replay_sequential: the run stored no episode for {missing[:3]}, "
                               "but the sequential gate needed that batch; the run is incomplete "
                               "-- re-run it")
        return [by_pair[p] for p in pairs]

    return sequential_gate(stored, tids, k=k, baseline=baseline, success=lambda ep: bool(ep.success),
                           alpha=alpha, tolerance=tolerance, min_effect=min_effect)[1]


def gate_document(verdict: SequentialVerdict, baseline: Optional[str] = None) -> dict:
    """A sequential verdict as a run records its gate: the fixed gate's keys (``passed``,
    ``reasons``, ``warnings``, ``underpowered``, ``baseline``) -- so reports, exit codes and
    ``raise_for_verdict`` read it alike -- plus ``test: "sequential"`` and the whole verdict
    under ``sequential``."""
    warnings = []
    if verdict.underpowered:
        warnings.append("underpowered: the success rate got worse, but not beyond the sequential "
                        "boundary; this pass is not evidence of no regression")
    return {"passed": verdict.passed, "reasons": [verdict.reason] if not verdict.passed else [],
            "warnings": warnings, "underpowered": verdict.underpowered, "test": "sequential",
            "sequential": verdict.to_dict(), "baseline": baseline}


def check_baseline_comparable(run: Any, baseline: Any) -> None:
    """Refuse (:class:`~ek_agents.errors.IncomparableRuns`) a sequential gate of a run with
    provenance ``run`` (a RunProvenance, its dict or None) against a baseline (a saved
    baseline document or a report) whose simulator, suite version or scaffold differ -- the
    fixed gate's rule, checked before any trial runs."""
    if isinstance(baseline, Mapping):
        base_run = baseline.get("run") if "report" in baseline else \
            (baseline.get("detail") or {}).get("run")
    else:
        base_run = (getattr(baseline, "detail", None) or {}).get("run")
    check_comparable(as_run(run, "the current run"), as_run(base_run, "the baseline"),
                     "the baseline")
