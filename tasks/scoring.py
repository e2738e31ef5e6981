"""Grade -> metrics -> cost -> gate: each one library call, cached on its inputs' digests."""
from __future__ import annotations

from typing import Optional

from prefect import task

from ek_agents.stages import evaluate as stages
from ek_agents.stages.judgerun import JudgeSpec
from ek_agents.records.stagecache import GateRef, StageRef, SuiteRef
from ek_agents.store import Store

from .common import IO_RETRIES, TASK_DEFAULTS, run_name


@task(name="grade", task_run_name="grade-{run_id}", **TASK_DEFAULTS, **IO_RETRIES)
def grade(store_url: str, run_id: str, episodes: StageRef, tasks: SuiteRef,
          check: Optional[str], judge: Optional[JudgeSpec] = None) -> StageRef:
    """``stages.run_grade``: ``metrics.grade`` (or the endpoint ``judge``) -> the run's graded
    episodes."""
    return stages.run_grade(Store(store_url), run_id, episodes, tasks, check, judge)


@task(name="metrics", task_run_name="metrics-{run_id}-k{k}", **TASK_DEFAULTS, **IO_RETRIES)
def metrics(store_url: str, run_id: str, graded: StageRef, tasks: SuiteRef, k: int, seed: int,
            run: dict) -> StageRef:
    """``stages.run_metrics``: ``reporting.reliability`` -> the run's metrics."""
    return stages.run_metrics(Store(store_url), run_id, graded, tasks, k=k, seed=seed, run=run)


@task(name="cost", task_run_name="cost-{run_id}", **TASK_DEFAULTS, **IO_RETRIES)
def cost(store_url: str, run_id: str, graded: StageRef, metrics: StageRef,
         prices: Optional[StageRef], seed: int) -> StageRef:
    """``stages.run_cost``: ``cost.cost_report`` -> the run's report (reliability with cost)."""
    return stages.run_cost(Store(store_url), run_id, graded, metrics, prices, seed=seed)


@task(name="gate", task_run_name=run_name("gate", against="baseline"), **TASK_DEFAULTS, **IO_RETRIES)
def gate(store_url: str, run_id: str, report: StageRef, baseline: Optional[str],
         tolerance: float, cost_tolerance: float) -> Optional[GateRef]:
    """``stages.run_gate``: the gate against the named baseline -> the run's gate verdict.

    The baseline used is copied into the run (the audit re-checks the verdict against it). A
    baseline the gate refuses (incomparable, empty, malformed) gives a verdict with
    ``refused`` set: the flow records it in the manifest, then fails with it.
    """
    return stages.run_gate(Store(store_url), run_id, report, baseline, tolerance=tolerance,
                           cost_tolerance=cost_tolerance)
