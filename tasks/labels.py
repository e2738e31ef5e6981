"""Prefect tasks of the judge correction: store a run's labels, correct its report by them."""
from __future__ import annotations

from typing import Union

from prefect import task

from ek_agents.labels import GradedBy
from ek_agents.stages import labelrun
from ek_agents.records.stagecache import StageRef, SuiteRef
from ek_agents.store import Store

from .common import IO_RETRIES, TASK_DEFAULTS


@task(name="load-labels", task_run_name="load-labels-{run_id}", **TASK_DEFAULTS, **IO_RETRIES)
def load_labels(store_url: str, run_id: str, path: str) -> StageRef:
    """``labelrun.run_labels``: the labels file, checked, stored as the run's labels."""
    return labelrun.run_labels(Store(store_url), run_id, path)


@task(name="judge-correct", task_run_name="judge-correct-{run_id}", **TASK_DEFAULTS, **IO_RETRIES)
def judge_correct(store_url: str, run_id: str, report: StageRef, graded: StageRef, labels: StageRef,
                  tasks: SuiteRef, check: Union[str, GradedBy, None]) -> StageRef:
    """``labelrun.run_judge_correct``: the report with the judge-corrected success rate
    (``check``: the checker's name, or how the run was graded)."""
    return labelrun.run_judge_correct(Store(store_url), run_id, report, graded, labels, tasks, check)
