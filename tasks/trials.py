"""Run an agent over a suite: k trials per task, in chunks, persisted as they finish.

A run of n tasks x k trials is planned into about ``pipeline.DEFAULT_CHUNKS`` chunks
(2000 trials -> 16 task runs, not 2000; by default each a whole number of rounds of the trials
it runs at once); each chunk is one ``harness.run_trials(only=chunk)``
call that stores every episode as it finishes, so a killed run resumes where it stopped (a
Prefect retry of a chunk re-runs only its missing trials). The episodes are cached on the
digest of everything that decides them: a second identical run makes no agent call at all.
Each task takes one typed request (``TrialRequest``, ``TrialChunk``, ``TrialPlan``), so the
chunks fan out as task runs of the evaluate flow itself (``flows.runners.run_each`` on the
run's bounded chunk runner; no sub-flow); each returns what it stored
(``ChunkResult``: keys, digests, bytes), which ``collect_episodes`` assembles into the run's
episodes document without listing or re-reading the run's folder.
"""
from __future__ import annotations

from typing import Optional

from collections.abc import Sequence

from prefect import task
from prefect.runtime import task_run

from ek_agents import pipeline
from ek_agents.pipeline.chunks import ChunkResult, TrialChunk, TrialPlan, TrialRequest
from ek_agents.records.stagecache import EpisodesRef, StageRef
from ek_agents.store import Store

from .common import IO_RETRIES, TASK_DEFAULTS


@task(name="plan-trials", **TASK_DEFAULTS, **IO_RETRIES)
def plan_trials(request: TrialRequest) -> TrialPlan:
    """``pipeline.plan_trials``: the input digest, and the cached episodes or the chunks."""
    return pipeline.plan_trials(request)


@task(name="run-trial-chunk", task_run_name="trials-{chunk.request.run_id}-{chunk.index}",
      **TASK_DEFAULTS, **IO_RETRIES)
def run_trial_chunk(chunk: TrialChunk) -> ChunkResult:
    """``pipeline.run_trial_chunk``: run one chunk; what it stored. A retry of the
    task (an earlier attempt may have stored some trials) resumes: only its missing trials run."""
    return pipeline.run_trial_chunk(chunk, resume=task_run.run_count > 1)


@task(name="collect-episodes", **TASK_DEFAULTS, **IO_RETRIES)
def collect_episodes(plan: TrialPlan, chunks: Sequence[ChunkResult] = ()) -> EpisodesRef:
    """``pipeline.collect_episodes``: the chunks' trials (and any kept from an earlier
    attempt of the run) -> the run's episodes document."""
    return pipeline.collect_episodes(plan, chunks)


@task(name="check-errors", **TASK_DEFAULTS, **IO_RETRIES)
def check_errors(store_url: str, run_id: str, report: StageRef,
                 max_error_rate: Optional[float], expected_trials: Optional[int] = None) -> None:
    """``pipeline.check_errors``: fail (TooManyErrors) when too many trials errored,
    (RunIncomplete) when the run is incomplete."""
    pipeline.check_errors(Store(store_url).read_json(report.key),
                          max_error_rate=max_error_rate, run_id=run_id,
                          expected_trials=expected_trials)
