"""The sequential gate's trials: one batch (trial j of every task) at a time, a look after each.

Batches run through the same chunk tasks as a fixed-design run (``run_trial_chunk``); these
tasks plan a batch's chunks, look at the evidence after it, collect the batches that ran, and
record the verdict (``ek_agents.sequential``: alpha spending, so looking after every batch
does not inflate false alarms).
"""
from __future__ import annotations

from typing import Optional

from prefect import task

from ek_agents import pipeline
from ek_agents.stages import evaluate as stages
from ek_agents.pipeline.chunks import TrialChunk, TrialRequest
from ek_agents.records.stagecache import GateRef, StageRef, SuiteRef
from ek_agents.store import Store

from .common import IO_RETRIES, TASK_DEFAULTS


@task(name="plan-batch", **TASK_DEFAULTS, **IO_RETRIES)
def plan_batch(request: TrialRequest, batch: int) -> tuple[TrialChunk, ...]:
    """``pipeline.plan_batch``: the chunks of trial ``batch`` of every task."""
    return pipeline.plan_batch(request, batch)


@task(name="sequential-look", task_run_name="look-{request.run_id}-{look}", **TASK_DEFAULTS,
      **IO_RETRIES)
def batch_look(request: TrialRequest, baseline: str, look: int, check: Optional[str],
               tolerance: float, priced: bool) -> dict:
    """``pipeline.batch_look``: the gate's look after ``look`` batches."""
    return pipeline.batch_look(request, baseline, look, check=check, tolerance=tolerance,
                               priced=priced)


@task(name="collect-batches", **TASK_DEFAULTS, **IO_RETRIES)
def collect_batches(request: TrialRequest, batches: int) -> StageRef:
    """``pipeline.collect_batches``: the trials that ran -> the run's episodes."""
    return pipeline.collect_batches(request, batches)


@task(name="sequential-gate", **TASK_DEFAULTS, **IO_RETRIES)
def sequential_gate(store_url: str, run_id: str, episodes: StageRef, tasks: SuiteRef,
                    baseline: str, k: int, check: Optional[str], tolerance: float,
                    priced: bool) -> GateRef:
    """``stages.run_sequential_gate``: the looks replayed over the graded episodes -> the run's
    gate document (the sequential verdict) and the baseline it used."""
    return stages.run_sequential_gate(Store(store_url), run_id, episodes, tasks, baseline, k=k,
                                      check=check, tolerance=tolerance, priced=priced)
