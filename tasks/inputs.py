"""Load a run's inputs -- the suite and the price catalog -- into the run's folder."""
from __future__ import annotations

from typing import Optional

from prefect import task

from ek_agents.stages import evaluate as stages
from ek_agents.records.stagecache import StageRef, SuiteRef
from ek_agents.store import Store

from .common import IO_RETRIES, TASK_DEFAULTS


@task(name="load-suite", task_run_name="suite-{run_id}", **TASK_DEFAULTS, **IO_RETRIES)
def load_suite(store_url: str, run_id: str, suite: str) -> SuiteRef:
    """``stages.record_suite``: ``suite.load_suite`` -> the run's tasks document."""
    return stages.record_suite(Store(store_url), run_id, suite)


@task(name="load-prices", task_run_name="prices-{run_id}", **TASK_DEFAULTS, **IO_RETRIES)
def load_prices(store_url: str, run_id: str, prices: Optional[str]) -> Optional[StageRef]:
    """``stages.record_prices``: ``prices.load_prices`` -> the run's prices (None: no catalog)."""
    return stages.record_prices(Store(store_url), run_id, prices)
