"""Prefect tasks of the ek-agents pipeline: each one library call plus Prefect settings.

Every task takes the store URL and small JSON references (``{"key", "sha256", ...}``) to the
documents it reads, and returns the reference of the document it wrote, so a task runs the
same on a thread, a Dask worker or another machine sharing the store. Caching is ours, not
Prefect's: a stage's output is a content-addressed artifact in the store, indexed by the
digest of its inputs (``ek_agents.records.stagecache.cached``); Prefect result persistence stays off, so
nothing is ever pickled.
"""
from .inputs import load_prices, load_suite
from .ingest import ingest_bridge, ingest_tasks
from .trials import check_errors, collect_episodes, plan_trials, run_trial_chunk
from .scoring import cost, gate, grade, metrics
from .record import audit, promote, publish_audit, publish_report, write_manifest
from .labels import judge_correct, load_labels

__all__ = ["load_suite", "load_prices", "ingest_bridge", "ingest_tasks", "plan_trials",
           "run_trial_chunk",
           "collect_episodes", "check_errors", "grade", "metrics", "cost", "gate", "write_manifest",
           "publish_report", "audit", "publish_audit", "promote", "load_labels", "judge_correct"]
