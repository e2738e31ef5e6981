"""The monitor's task: one production window (``ek_agents.monitor.monitor_window``) and its
Markdown artifact, keyed per series (``monitor-<series>``: one version per window)."""
from __future__ import annotations

from typing import Optional

from prefect import get_run_logger, task
from prefect.artifacts import create_markdown_artifact

from ek_agents.monitor import run_monitor

from .common import IO_RETRIES, TASK_DEFAULTS

__all__ = ["monitor_window_task"]


@task(name="monitor-window", task_run_name="window-{series}-{window_id}", **TASK_DEFAULTS,
      **IO_RETRIES)
def monitor_window_task(store_url: str, source: str, series: str, window_id: Optional[str],
                        window: dict, series_options: dict, prices: Optional[str] = None,
                        judge_model: Optional[str] = None, judge_base_url: Optional[str] = None,
                        judge_rubric: Optional[str] = None, judge_api_key: Optional[str] = None
                        ) -> dict:
    """One window read, judged, recorded; the series re-evaluated; the report (a dict)."""
    rep = run_monitor(source, series, store=store_url, window_id=window_id, window=window,
                      series_options=series_options, prices=prices, judge_model=judge_model,
                      judge_base_url=judge_base_url, judge_rubric=judge_rubric,
                      judge_api_key=judge_api_key)
    create_markdown_artifact(rep["markdown"], key=f"monitor-{series}".lower(),
                             description=f"ek-agents monitor window {rep['window_id']}")
    get_run_logger().info(rep["sentence"])
    return rep
