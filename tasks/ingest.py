"""Ingest runs recorded elsewhere (Inspect logs, tau-bench results, message transcripts)."""
from __future__ import annotations

from prefect import task

from ek_agents import stages
from ek_agents.store import Store

from .common import IO_RETRIES, TASK_DEFAULTS


@task(name="ingest-bridge", **TASK_DEFAULTS, **IO_RETRIES)
def ingest_bridge(store_url: str, run_id: str, kind: str, path: str) -> dict:
    """``bridge.read_*`` -> ``runs/<run_id>/episodes.json``, cached on the source file's digest."""
    st = Store(store_url)
    digest = stages.input_digest("episodes", source=stages.source_digest(path), kind=kind)
    return stages.stage_output(st, run_id, "episodes", digest,
                               lambda: stages.episodes_doc(stages.read_source(kind, path)))


@task(name="ingest-tasks", **TASK_DEFAULTS, **IO_RETRIES)
def ingest_tasks(store_url: str, run_id: str, episodes: dict) -> dict:
    """With no suite: one task per ingested task id, graded by the success the source recorded."""
    st = Store(store_url)
    doc = stages.tasks_for_episodes(stages.episodes_of(st.read_json(episodes["key"])))
    return stages.write_tasks(st, run_id, doc)
