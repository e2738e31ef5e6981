"""Run an agent over a suite: k trials per task, in chunks, persisted as they finish.

A run of n tasks x k trials is planned into about ``pipeline_support.DEFAULT_CHUNKS`` chunks
(2000 trials -> 16 task runs, not 2000); each chunk is one ``harness.run_trials(only=chunk)``
call that stores every episode as it finishes, so a killed run resumes where it stopped (a
Prefect retry of a chunk re-runs only its missing trials). The episodes are cached on the
digest of everything that decides them: a second identical run makes no agent call at all.
"""
from __future__ import annotations

from typing import Optional

from prefect import task

from ek_agents import pipeline_support
from ek_agents.store import Store

from .common import IO_RETRIES, TASK_DEFAULTS


@task(name="plan-trials", **TASK_DEFAULTS, **IO_RETRIES)
def plan_trials(store_url: str, run_id: str, tasks: dict, agent: str, k: int, seed: Optional[int],
                run: dict, chunk_size: Optional[int], timeout_s: Optional[float],
                retries: int) -> dict:
    """``pipeline_support.plan_trials``: the input digest, and the cached episodes or the chunks."""
    return pipeline_support.plan_trials(Store(store_url), run_id, tasks, agent, k=k, seed=seed,
                                        run=run, chunk_size=chunk_size, timeout_s=timeout_s,
                                        retries=retries)


@task(name="run-trial-chunk", task_run_name="trials-{run_id}-{index}", **TASK_DEFAULTS,
      **IO_RETRIES)
def run_trial_chunk(store_url: str, run_id: str, index: int, tasks: dict, agent: str, k: int,
                    seed: Optional[int], run: dict, pairs: list, max_concurrency: int,
                    timeout_s: Optional[float], retries: int) -> int:
    """``pipeline_support.run_trial_chunk``: run (or resume) chunk ``index``; its episode count."""
    return pipeline_support.run_trial_chunk(Store(store_url), run_id, tasks, agent, k=k, seed=seed,
                                            run=run, pairs=pairs, max_concurrency=max_concurrency,
                                            timeout_s=timeout_s, retries=retries)


@task(name="collect-episodes", **TASK_DEFAULTS, **IO_RETRIES)
def collect_episodes(store_url: str, run_id: str, tasks: dict, agent: str, k: int,
                     seed: Optional[int], run: dict, digest: str, max_concurrency: int,
                     timeout_s: Optional[float], retries: int) -> dict:
    """``pipeline_support.collect_episodes``: every stored trial -> the run's episodes document."""
    return pipeline_support.collect_episodes(Store(store_url), run_id, tasks, agent, k=k,
                                             seed=seed, run=run, digest=digest,
                                             max_concurrency=max_concurrency,
                                             timeout_s=timeout_s, retries=retries)
