"""ek-agents: evaluate AI agents in dollars per successfully completed task.

The public facade. Names resolve lazily, so ``import ek_agents`` is fast and imports
neither Prefect nor numpy until a name that needs them is used.

>>> from ek_agents import TaskSpec, run_suite, as_agent
>>> tasks = [TaskSpec("t1", input="hi", gold="HI"), TaskSpec("t2", input="yo", gold="YO")]
>>> run_suite(as_agent(str.upper), tasks).success_rate
1.0
"""
from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

# public name -> submodule that defines it (the spec's table, plus the project's additions)
_EXPORTS: dict[str, str] = {}
for _mod, _names in {
    "base": ["Step", "Trajectory", "Episode", "Cost", "RunProvenance", "ToolSpec", "TaskSpec",
             "tool_grammar", "suite_grammar", "as_call", "is_episode", "DEFAULT_TASK_VALUE",
             "DESTRUCTIVE_WEIGHT"],
    "core": ["FieldSpec", "GraphGrammar", "NodeType", "Score", "Metric", "Signal", "Finding",
             "Provenance", "canonicalize"],
    "errors": ["EkAgentsError", "UnknownModelPrice", "TransientAgentError"],
    "bridge": ["as_agent", "trajectory_from_messages", "episode_from_messages", "cost_from_usage",
               "from_inspect_sample", "from_deepeval_test_case", "read_inspect_log",
               "read_tau_bench_results", "read_messages_jsonl"],
    "metrics": ["output_match", "final_state_match", "recorded_success", "Checker",
                "TaskSuccessMetric", "CostPerSuccessMetric", "get_checker", "grade"],
    "toolcalls": ["match_calls", "ToolCallMetric", "AnyOf", "OMITTED", "ANY"],
    "bfcl": ["bfcl_check", "CheckResult"],
    "trajectory": ["TrajectoryMetric"],
    "stats": ["pass_at_k", "pass_hat_k", "wilson_interval", "bootstrap_ci", "newcombe_difference",
              "difference_upper_bound", "trials_for_power"],
    "agreement": ["krippendorff_alpha", "cohen_kappa"],
    "prices": ["ModelPrice", "load_prices", "price_of", "DEFAULT_CACHE_DISCOUNT", "DEFAULT_BATCH_DISCOUNT"],
    "cost": ["per_million", "dollars", "episode_dollars", "cost_of_pass", "cost_report"],
    "judge": ["JudgeSignal", "JudgeMetric", "pairwise_judge", "judge_validation"],
    "reporting": ["reliability", "ReliabilityReport"],
    "harness": ["run_suite", "save_agent_baseline", "load_agent_baseline",
                "agent_regression_gate", "AgentGateResult", "run_trials", "build_report"],
    "facades": ["score", "evaluate", "estimate_quality"],
    "store": ["Store"],
    "suite": ["load_suite", "dump_suite", "Suite"],
    "manifest": ["RunManifest"],
    "audit": ["AuditResult"],
}.items():
    for _n in _names:
        _EXPORTS[_n] = _mod

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    mod = _EXPORTS.get(name)
    if mod is None:
        raise AttributeError(f"module 'ek_agents' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{mod}"), name)
    globals()[name] = value  # cache: the next access is a plain lookup
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
