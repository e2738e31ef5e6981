"""The stages of a run: each turns the documents of its inputs into the document of its output by
calling the library (``metrics.grade``, ``reporting.reliability_with_run``,
``reporting.with_cost``, ``gate.regression_gate``, ``sequential.replay_sequential``), and the
``run_*`` steps that run one stage over a store -- they compute their own input digest, reuse
the stage cache (:mod:`.stagecache`) and return the :class:`~.stagecache.StageRef` the next
stage takes. The library's persisted ``harness.run_suite``, the audit and the Prefect tasks in
``tasks/`` all use these, so a recorded figure and its recomputation can only differ when
stored bytes differ.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Optional

from ..base import Episode, RunProvenance
from ..errors import BaselineError
from ..gate import regression_gate
from ..reporting import ReliabilityReport, reliability_with_run, with_cost
from ..scoring.metrics import grade
from ..sequential import (DEFAULT_MIN_EFFECT, SequentialVerdict, gate_document, per_check_alpha,
                          replay_sequential)
from ..store import run_key
from ..suite import load_suite
from ..records.baselines import load_baseline
from ..records.documents import (episodes_doc, episodes_of, prices_doc, prices_of, read_ref,
                                 read_source, run_report, source_digest, tasks_doc,
                                 tasks_for_episodes, tasks_of, verified_bytes)
from ..records.manifest import input_digest
from ..records.stagecache import (GateRef, StageRef, SuiteRef, reused_output, write_doc,
                                  write_output, write_tasks)
from ..records.trials import (episodes_json, graded_digest, read_episodes, remember_episodes,
                              take_graded)
from .judgerun import JudgeSpec, judged_episodes, with_evaluation_cost

__all__ = ["grade_stage", "graded_episodes", "metrics_stage", "metrics_report", "cost_stage",
           "cost_report_doc", "gate_stage", "guarded_gate", "sequential_stage", "regate",
           "gate_run", "record_suite", "record_prices", "ingest_run", "ingest_suite", "run_grade",
           "run_metrics", "run_cost", "run_gate", "run_sequential_gate", "write_gate"]

# --------------------------------------------------------------------------- the stages

def grade_stage(episodes: Mapping, tasks: Mapping, *, check: Any = None) -> dict:
    """Grade stored episodes against the stored suite (``metrics.grade``)."""
    return episodes_doc(graded_episodes(episodes_of(episodes), tasks, check))


def graded_episodes(episodes: list[Episode], tasks: Mapping, check: Any) -> list[Episode]:
    return grade(episodes, tasks_of(tasks), check=check if check is not None else tasks.get("checker"))


def metrics_stage(graded: Mapping, tasks: Mapping, *, k: int, seed: int = 0,
                  run: Optional[Mapping] = None) -> dict:
    """Reliability of graded episodes: success, pass@k, pass^k, per task and slice.

    ``detail["run"]`` records the run's provenance (what the gate checks comparability on):
    ``run`` as given, its empty fields filled from what the agent recorded on its episodes
    (``reporting.run_provenance``); ``detail["errors"]`` counts the errored trials. The same
    helper as ``reporting.build_report``.
    """
    return metrics_report(episodes_of(graded), tasks, k=k, seed=seed, run=run)


def metrics_report(graded: list[Episode], tasks: Mapping, *, k: int, seed: int,
             run: Optional[Mapping]) -> dict:
    return reliability_with_run(graded, tasks_of(tasks), k=k, seed=seed,
                                run=RunProvenance.from_dict(run) if run else None).to_dict()


def cost_stage(graded: Mapping, metrics: Mapping, prices: Optional[Mapping], *, seed: int = 0) -> dict:
    """The report: :func:`metrics_stage`'s reliability carrying ``cost.cost_report`` of all
    episodes, with one ``cost_report`` per slice under ``cost["per_slice"]`` (the same helper
    as ``reporting.build_report``)."""
    return cost_report_doc(episodes_of(graded), metrics, prices, seed=seed)


def cost_report_doc(graded: list[Episode], metrics: Mapping, prices: Optional[Mapping], *, seed: int) -> dict:
    """The report document; a judged run's judge calls as its evaluation cost, apart."""
    table = prices_of(prices)
    return with_evaluation_cost(with_cost(ReliabilityReport.from_dict(metrics), graded,
                                          prices=table, seed=seed).to_dict(), graded, table)


def gate_stage(report: Mapping, baseline: Mapping, *, tolerance: float = 0.0,
               cost_tolerance: float = 0.0) -> dict:
    """The gate's verdict on a report against a loaded baseline (``gate.regression_gate``).

    An incomparable or malformed baseline raises (a ValueError naming why).
    """
    if not isinstance(baseline, Mapping):
        raise BaselineError(f"baseline must be a stored baseline document, got {baseline!r:.80}")
    verdict = regression_gate(ReliabilityReport.from_dict(report), dict(baseline),
                                    tolerance=tolerance, cost_tolerance=cost_tolerance)
    return verdict.to_dict()  # non-finite floats already encoded, as reports do


def guarded_gate(report: Mapping, baseline: Mapping, *, tolerance: float = 0.0,
                 cost_tolerance: float = 0.0, baseline_name: Optional[str] = None) -> dict:
    """:func:`gate_stage`, with a baseline the gate refuses (incomparable, empty, malformed:
    a ValueError) turned into a verdict ``{"passed": False, "refused": message, "error": type}``
    that can be recorded before the run fails with it."""
    try:
        verdict = gate_stage(report, baseline, tolerance=tolerance, cost_tolerance=cost_tolerance)
    except ValueError as exc:
        verdict = {"passed": False, "refused": str(exc), "error": type(exc).__name__}
    return {**verdict, "baseline": baseline_name}


def sequential_stage(graded: Mapping, baseline: Mapping, *, k: int, alpha: float,
                     tolerance: float = 0.0, min_effect: float,
                     baseline_name: Optional[str] = None) -> dict:
    """The gate document of a sequentially gated run, recomputed from its graded episodes and
    the baseline it used (``sequential.replay_sequential`` -> ``sequential.gate_document``)."""
    base = baseline.get("report", baseline) if isinstance(baseline, Mapping) else baseline
    verdict = replay_sequential(episodes_of(graded), base, k=k, alpha=alpha, tolerance=tolerance,
                                min_effect=min_effect)
    return gate_document(verdict, baseline_name)


def regate(report: Mapping, graded: Mapping, baseline: Mapping, recorded: Optional[Mapping], *,
           k: int, tolerance: float = 0.0, cost_tolerance: float = 0.0,
           baseline_name: Optional[str] = None) -> dict:
    """The gate verdict of a stored run, recomputed the way the run was gated: a sequential
    run (its ``recorded`` verdict has ``sequential``) replays its looks with the recorded
    level and minimum effect (:func:`sequential_stage`); any other is :func:`guarded_gate`."""
    seq = (recorded or {}).get("sequential")
    if not seq:
        return guarded_gate(report, baseline, tolerance=tolerance, cost_tolerance=cost_tolerance,
                            baseline_name=baseline_name)
    v = SequentialVerdict.from_dict(seq)
    return sequential_stage(graded, baseline, k=k, alpha=v.alpha, tolerance=tolerance,
                            min_effect=v.min_effect, baseline_name=baseline_name)



def gate_run(store: Any, run_id: str, baseline: str, *, tolerance: float = 0.0,
             cost_tolerance: float = 0.0) -> dict:
    """The gate's verdict on a stored run against the named baseline (nothing is written);
    the run's report is a verified read (:func:`run_report`); a sequentially gated run is gated
    sequentially again (:func:`regate`)."""
    manifest, report = run_report(store, run_id)
    graded = store.read_json(run_key(run_id, "graded")) if manifest.get("sequential") else None
    return regate(report, graded, load_baseline(store, baseline), manifest.get("gate"),
                  k=(manifest.get("inputs") or {}).get("k", 1), tolerance=tolerance,
                  cost_tolerance=cost_tolerance, baseline_name=baseline)



# --------------------------------------------------------------------------- one stage over a store
# Each takes a store and the references of its inputs, computes its own input digest, and
# returns the reference of the document it wrote: what one pipeline task calls.

def record_suite(store: Any, run_id: str, suite: str) -> SuiteRef:
    """``suite.load_suite`` -> the run's tasks document (identity, digest and every task)."""
    return write_tasks(store, run_id, tasks_doc(load_suite(suite)))


def record_prices(store: Any, run_id: str, prices: Optional[str]) -> Optional[StageRef]:
    """``prices.load_prices`` -> the run's prices document (None when no catalog is given)."""
    doc = prices_doc(prices)
    return None if doc is None else write_doc(store, run_id, "prices", doc)


def ingest_run(store: Any, run_id: str, kind: str, path: str) -> StageRef:
    """``bridge.read_*`` -> the run's episodes document, cached on the source file's digest."""
    digest = input_digest("episodes", source=source_digest(path), kind=kind)
    return (reused_output(store, run_id, "episodes", digest)
            or write_output(store, run_id, "episodes", digest, episodes_doc(read_source(kind, path))))


def ingest_suite(store: Any, run_id: str, episodes: StageRef) -> SuiteRef:
    """With no suite: one task per ingested task id, graded by the success the source recorded."""
    return write_tasks(store, run_id, tasks_for_episodes(episodes_of(read_ref(store, episodes))))


def run_grade(store: Any, run_id: str, episodes: StageRef, tasks: SuiteRef,
              check: Optional[str], judge: Optional[JudgeSpec] = None) -> StageRef:
    """:func:`grade_stage` -> the run's graded document, cached on its inputs' digests.

    When this process already graded exactly these inputs (the trial chunks grade what they
    stored: :func:`trial_grader`, :func:`remember_graded`), that document is taken as is --
    after the episodes document is read and verified, as always. With ``judge`` the endpoint
    judge grades instead (``stages.judgerun``), and its identity is in the digest."""
    digest = (graded_digest(episodes.sha256, tasks.digest, check) if judge is None else
              input_digest("graded", episodes=episodes.sha256, suite=tasks.digest, check=check,
                           judge=judge.identity))
    ref = reused_output(store, run_id, "graded", digest)
    if ref is not None:
        return ref
    done = take_graded(digest)
    if done is not None:
        verified_bytes(store, episodes)  # a changed document is refused, as ever
        made, doc = list(done[1]), done[0]
    elif judge is not None:
        made = judged_episodes(read_episodes(store, episodes), tasks_of(read_ref(store, tasks)), judge)
        doc = episodes_json(made)
    else:
        made = graded_episodes(read_episodes(store, episodes), read_ref(store, tasks), check)
        doc = episodes_json(made)
    ref = write_output(store, run_id, "graded", digest, doc)
    remember_episodes(ref.sha256, made)  # what the next stages read back: already validated here
    return ref


def run_metrics(store: Any, run_id: str, graded: StageRef, tasks: SuiteRef, *, k: int, seed: int,
                run: Optional[Mapping]) -> StageRef:
    """:func:`metrics_stage` -> the run's metrics document, cached on its inputs' digests."""
    digest = input_digest("metrics", graded=graded.sha256, suite=tasks.digest, k=k,
                          seed=seed, run=run)
    return reused_output(store, run_id, "metrics", digest) or write_output(
        store, run_id, "metrics", digest, metrics_report(
            read_episodes(store, graded), read_ref(store, tasks), k=k, seed=seed, run=run))


def run_cost(store: Any, run_id: str, graded: StageRef, metrics: StageRef,
             prices: Optional[StageRef], *, seed: int) -> StageRef:
    """:func:`cost_stage` -> the run's report document, cached on its inputs' digests."""
    digest = input_digest("report", graded=graded.sha256, metrics=metrics.sha256,
                          prices=prices and prices.sha256, seed=seed)
    return reused_output(store, run_id, "report", digest) or write_output(
        store, run_id, "report", digest, cost_report_doc(
            read_episodes(store, graded), read_ref(store, metrics),
            prices and read_ref(store, prices), seed=seed))


def run_gate(store: Any, run_id: str, report: StageRef, baseline: Optional[str], *,
             tolerance: float, cost_tolerance: float) -> Optional[GateRef]:
    """:func:`guarded_gate` against the named baseline -> the run's gate document.

    The baseline used is copied into the run (``baseline``: the audit re-checks the verdict
    against it). A baseline the gate refuses gives a verdict with ``refused`` set.
    """
    if baseline is None:
        return None
    doc = load_baseline(store, baseline)
    verdict = guarded_gate(read_ref(store, report), doc, tolerance=tolerance,
                           cost_tolerance=cost_tolerance, baseline_name=baseline)
    return write_gate(store, run_id, doc, verdict)


def run_sequential_gate(store: Any, run_id: str, episodes: StageRef, tasks: SuiteRef,
                        baseline: str, *, k: int, check: Optional[str] = None,
                        tolerance: float = 0.0, priced: bool = False) -> GateRef:
    """The verdict of a sequentially gated run (the pipeline's): its episodes graded as
    :func:`run_grade` grades them, the looks replayed against the named baseline
    (:func:`sequential_stage`, at ``sequential.per_check_alpha(k, priced)``) -> the run's gate
    document and the baseline it used (:func:`write_gate`)."""
    doc = load_baseline(store, baseline)
    graded = grade_stage(store.read_json(episodes.key), store.read_json(tasks.key), check=check)
    verdict = sequential_stage(graded, doc, k=k, alpha=per_check_alpha(k, priced),
                               tolerance=tolerance, min_effect=DEFAULT_MIN_EFFECT,
                               baseline_name=baseline)
    return write_gate(store, run_id, doc, verdict)


def write_gate(store: Any, run_id: str, baseline: Mapping, verdict: Mapping) -> GateRef:
    """Write the baseline a gate used (``baseline``: the audit re-checks against it) and its
    verdict (``gate``) into the run; the :class:`GateRef` :func:`record_run` takes."""
    used = write_doc(store, run_id, "baseline", baseline)
    ref = write_doc(store, run_id, "gate", verdict)
    return GateRef(stage=ref.stage, key=ref.key, sha256=ref.sha256, baseline=used,
                   verdict=dict(verdict))
