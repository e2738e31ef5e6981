"""Prefect flows of ek-agents: each body reads as the plan, the work is in ``ek_agents``.

- ``evaluate_agent`` ("evaluate-agent"): run trials (or ingest) -> grade -> metrics -> cost ->
  gate -> manifest -> report (HTML into the store beside the run; Markdown and table artifacts
  keyed per tracked series; the figures in the run log).
- ``audit_run`` ("audit-run"): verify a stored run's bytes and recompute its figures.
- ``promote_baseline`` ("promote-baseline"): a run becomes ``baselines/<name>.json``.
- ``run_trials_flow`` ("run-trials"): the chunked fan-out, on a bounded task runner.
"""
from .audit import audit_run, promote_baseline
from .evaluate import evaluate_agent, run_trials_flow
from . import demo
from .local import call_flow

__all__ = ["evaluate_agent", "audit_run", "promote_baseline", "run_trials_flow", "call_flow"]
