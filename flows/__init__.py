"""Prefect flows of ek-agents: each body reads as the plan, the work is in ``ek_agents``.

- ``evaluate_agent`` ("evaluate-agent"): run trials (or ingest) -> grade -> metrics -> cost ->
  gate -> manifest -> report (HTML into the store beside the run; Markdown and table artifacts
  keyed per tracked series; the figures in the run log).
- ``audit_run`` ("audit-run"): verify a stored run's bytes and recompute its figures.
- ``promote_baseline`` ("promote-baseline"): a run becomes ``baselines/<name>.json``.
- ``evaluate_at_scale`` ("evaluate-at-scale"): trials in segments, chunks on a Dask cluster,
  the report merged from the segments' summaries (``flows/scale.py``).
- ``monitor_production`` ("monitor-production"): one production window of OTLP traces judged,
  label-corrected, appended to its series; Failed on an alert (``flows/monitor.py``).

The names load on first use (``import`` of this package imports no Prefect), so that the CLI
can start a temporary Prefect server from ``.local`` before it pays for importing Prefect.
"""
from __future__ import annotations

import importlib
from typing import Any

__all__ = ["evaluate_agent", "audit_run", "promote_baseline", "evaluate_at_scale", "call_flow",
           "monitor_production"]

_HOMES = {"evaluate_agent": "evaluate", "audit_run": "audit",
          "promote_baseline": "audit", "evaluate_at_scale": "scale", "call_flow": "local",
          "monitor_production": "monitor"}


def __getattr__(name: str) -> Any:
    if name == "demo":
        return importlib.import_module(f"{__name__}.demo")
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{_HOMES[name]}"), name)
    globals()[name] = value
    return value
