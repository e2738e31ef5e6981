"""Load a run's inputs -- the suite and the price catalog -- into the run's folder."""
from __future__ import annotations

from typing import Optional

from prefect import task

from ek_agents import stages
from ek_agents.store import Store
from ek_agents.suite import load_suite as _load_suite

from .common import IO_RETRIES, TASK_DEFAULTS


@task(name="load-suite", **TASK_DEFAULTS, **IO_RETRIES)
def load_suite(store_url: str, run_id: str, suite: str) -> dict:
    """``suite.load_suite`` -> ``runs/<run_id>/tasks.json`` (identity, digest and every task)."""
    return stages.write_tasks(Store(store_url), run_id, stages.tasks_doc(_load_suite(suite)))


@task(name="load-prices", **TASK_DEFAULTS, **IO_RETRIES)
def load_prices(store_url: str, run_id: str, prices: Optional[str]) -> Optional[dict]:
    """``prices.load_prices`` -> ``runs/<run_id>/prices.json`` (None when no catalog is given)."""
    doc = stages.prices_doc(prices)
    return None if doc is None else stages.write_doc(Store(store_url), run_id, "prices", doc)
