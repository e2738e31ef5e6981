"""Ingest runs recorded elsewhere (Inspect logs, tau-bench results, message transcripts)."""
from __future__ import annotations

from prefect import task

from ek_agents.stages import evaluate as stages
from ek_agents.records.stagecache import StageRef, SuiteRef
from ek_agents.store import Store

from .common import IO_RETRIES, TASK_DEFAULTS


@task(name="ingest-bridge", task_run_name="ingest-{kind}-{run_id}", **TASK_DEFAULTS, **IO_RETRIES)
def ingest_bridge(store_url: str, run_id: str, kind: str, path: str) -> StageRef:
    """``stages.ingest_run``: ``bridge.read_*`` -> the run's episodes, cached on the source's digest."""
    return stages.ingest_run(Store(store_url), run_id, kind, path)


@task(name="ingest-tasks", task_run_name="ingested-tasks-{run_id}", **TASK_DEFAULTS, **IO_RETRIES)
def ingest_tasks(store_url: str, run_id: str, episodes: StageRef) -> SuiteRef:
    """``stages.ingest_suite``: with no suite, one task per ingested task id, graded by the
    success the source recorded."""
    return stages.ingest_suite(Store(store_url), run_id, episodes)
