"""``monitor-production``: one window of a monitored series (the CLI's ``ek-agents monitor``).

New OTLP/JSON traces of ``source`` are read past the series' ledger, judged (a sample stratified
by slice with ``judge_sample``), billed (the judges' calls as evaluation cost), recorded as a
window, and the series re-evaluated with the labels stored so far. An alert ends the flow run
Failed with the reason as its message (the window's Markdown artifact, ``monitor-<series>``,
says it too); the judge's API key comes from ``$EK_JUDGE_API_KEY`` / ``$OPENAI_API_KEY`` on the
worker, never a parameter.
"""
from __future__ import annotations

import os
from typing import Optional

from ek_agents.monitorcli import MonitorAlert
from ek_agents.store import Store
from ek_agents_pipeline.tasks.monitor import monitor_window_task

from .entry import entry_flow
from .outcome import fails_as_state

#: Prefect fails (TimedOut) a window that has not finished after this long.
MONITOR_TIMEOUT_S = 6 * 3600


@entry_flow(name="monitor-production", persist_result=False, timeout_seconds=MONITOR_TIMEOUT_S)
@fails_as_state
def monitor_production(source: str, series: str, window_id: Optional[str] = None,
                       group_by: str = "trace", task_attr: Optional[str] = None,
                       slice_attr: Optional[str] = None, prices: Optional[str] = None,
                       judge_model: Optional[str] = None, judge_base_url: Optional[str] = None,
                       judge_rubric: Optional[str] = None, judge_sample: Optional[int] = None,
                       tolerance: float = 0.0, cost_tolerance: float = 0.0, horizon: int = 30,
                       label_windows: Optional[int] = None, baseline: Optional[str] = None,
                       seed: int = 0, store: Optional[str] = None) -> dict:
    """Run one window of ``series`` over ``source``; fail the run on an alert."""
    key = os.environ.get("EK_JUDGE_API_KEY") or os.environ.get("OPENAI_API_KEY")
    rep = monitor_window_task(
        Store(store).url, source, series, window_id,
        dict(group_by=group_by, task_attr=task_attr, slice_attr=slice_attr,
             judge_sample=judge_sample, seed=seed),
        dict(tolerance=tolerance, cost_tolerance=cost_tolerance, horizon=horizon,
             label_windows=label_windows, baseline=baseline),
        prices, judge_model, judge_base_url, judge_rubric, key)
    alert = rep.get("alert") or {}
    if alert.get("alert"):
        raise MonitorAlert(f"alert on series {series!r} window {rep['window_id']!r}: "
                           + "; ".join(alert["reasons"]))
    return rep
