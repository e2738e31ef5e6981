"""``ek_agents.harness``: a spec module name, kept as a thin re-export of ``ek_agents.runs.harness``.

New code imports from the home module; this file only re-exports its public names
(see docs/ARCHITECTURE.md)."""
from __future__ import annotations

from .runs.harness import (run_suite as run_suite, run_trials as run_trials,
    store_trials as store_trials, build_report as build_report, new_run_id as new_run_id,
    trial_fingerprint as trial_fingerprint, EPISODE_DEPTH as EPISODE_DEPTH,
    save_agent_baseline as save_agent_baseline, load_agent_baseline as load_agent_baseline,
    agent_regression_gate as agent_regression_gate, AgentGateResult as AgentGateResult)

__all__ = ["run_suite", "run_trials", "store_trials", "build_report", "new_run_id",
           "trial_fingerprint", "EPISODE_DEPTH", "save_agent_baseline", "load_agent_baseline",
           "agent_regression_gate", "AgentGateResult"]
