"""ek-agents: evaluate AI agents in dollars per successfully completed task.

The public facade. Names resolve lazily, so ``import ek_agents`` is fast and imports
neither Prefect nor numpy until a name that needs them is used.

>>> from ek_agents import TaskSpec, run_suite, as_agent
>>> tasks = [TaskSpec("t1", input="hi", gold="HI"), TaskSpec("t2", input="yo", gold="YO")]
>>> run_suite(as_agent(str.upper), tasks).success_rate
1.0
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .lazy import lazy_exports

from .version import __version__ as __version__

# public name -> submodule that defines it (the spec's table, plus the project's additions)
_EXPORTS: dict[str, str] = {}
for _mod, _names in {
    "base": ["Step", "Trajectory", "Episode", "Cost", "ModelCall", "RunProvenance", "ToolSpec", "TaskSpec",
             "tool_grammar", "suite_grammar", "as_call", "is_episode", "DEFAULT_TASK_VALUE",
             "DESTRUCTIVE_WEIGHT"],
    "core": ["FieldSpec", "GraphGrammar", "NodeType", "Score", "Metric", "Signal", "Finding",
             "Provenance", "canonicalize"],
    "errors": ["EkAgentsError", "UnknownModelPrice", "TransientAgentError"],
    "bridge": ["as_agent", "trajectory_from_messages", "episode_from_messages", "cost_from_usage",
               "from_inspect_sample", "from_deepeval_test_case", "read_inspect_log",
               "read_tau_bench_results", "read_messages_jsonl", "episodes_from_otel"],
    "scoring.metrics": ["output_match", "final_state_match", "recorded_success", "Checker",
                "TaskSuccessMetric", "CostPerSuccessMetric", "get_checker", "grade"],
    "scoring.toolcalls": ["match_calls", "ToolCallMetric"],
    "scoring.argvalues": ["AnyOf", "OMITTED", "ANY"],
    "scoring.bfcl": ["bfcl_check", "CheckResult"],
    "scoring.trajectory": ["TrajectoryMetric"],
    "stats.intervals": ["pass_at_k", "pass_hat_k", "wilson_interval", "newcombe_difference",
                        "difference_upper_bound"],
    "stats.bootstrap": ["bootstrap_ci"],
    "stats.power": ["trials_for_power"],
    "stats.agreement": ["krippendorff_alpha", "cohen_kappa"],
    "prices": ["ModelPrice", "load_prices", "price_of", "DEFAULT_CACHE_DISCOUNT", "DEFAULT_BATCH_DISCOUNT"],
    "cost": ["per_million", "dollars", "episode_dollars", "cost_of_pass", "cost_report"],
    "scoring.judge": ["JudgeSignal", "JudgeMetric", "pairwise_judge", "judge_validation"],
    "reporting": ["reliability", "ReliabilityReport", "build_report"],
    "execution.harness": ["run_suite", "run_trials"],
    "records.baselines": ["save_agent_baseline", "load_agent_baseline", "agent_regression_gate"],
    "gate": ["AgentGateResult"],
    "scoring.facades": ["score", "evaluate", "estimate_quality"],
    "store": ["Store"],
    "suite": ["load_suite", "dump_suite", "Suite"],
    "records.manifest": ["RunManifest"],
    "stages.audit": ["AuditResult"],
    "stats.judgecorrect": ["judge_corrected_rate", "JudgeCorrectedRate"],
    "stats.correctedrates": ["cost_per_corrected_success"],
    "stats.budget": ["plan_budget", "BudgetPlan"],
    "labels": ["read_labels", "plan_labels"],
    "report.frames": ["runs_frame", "trials_frame", "calls_frame", "steps_frame"],
}.items():
    for _n in _names:
        _EXPORTS[_n] = _mod

__all__ = sorted(_EXPORTS)

if TYPE_CHECKING:  # type checkers see the real types; at runtime the names resolve lazily
    from .base import (Step as Step, Trajectory as Trajectory, Episode as Episode, Cost as Cost,
                       ModelCall as ModelCall,
                       RunProvenance as RunProvenance, ToolSpec as ToolSpec,
                       TaskSpec as TaskSpec, tool_grammar as tool_grammar,
                       suite_grammar as suite_grammar, as_call as as_call,
                       is_episode as is_episode, DEFAULT_TASK_VALUE as DEFAULT_TASK_VALUE,
                       DESTRUCTIVE_WEIGHT as DESTRUCTIVE_WEIGHT)
    from .core import (FieldSpec as FieldSpec, GraphGrammar as GraphGrammar,
                       NodeType as NodeType, Score as Score, Metric as Metric, Signal as Signal,
                       Finding as Finding, Provenance as Provenance,
                       canonicalize as canonicalize)
    from .errors import (EkAgentsError as EkAgentsError, UnknownModelPrice as UnknownModelPrice,
                         TransientAgentError as TransientAgentError)
    from .bridge import (as_agent as as_agent,
                         trajectory_from_messages as trajectory_from_messages,
                         episode_from_messages as episode_from_messages,
                         cost_from_usage as cost_from_usage,
                         from_inspect_sample as from_inspect_sample,
                         from_deepeval_test_case as from_deepeval_test_case,
                         read_inspect_log as read_inspect_log,
                         read_tau_bench_results as read_tau_bench_results,
                         read_messages_jsonl as read_messages_jsonl,
                         episodes_from_otel as episodes_from_otel)
    from .scoring.metrics import (output_match as output_match, final_state_match as final_state_match,
                          recorded_success as recorded_success, Checker as Checker,
                          TaskSuccessMetric as TaskSuccessMetric,
                          CostPerSuccessMetric as CostPerSuccessMetric,
                          get_checker as get_checker, grade as grade)
    from .scoring.toolcalls import (match_calls as match_calls, ToolCallMetric as ToolCallMetric)
    from .scoring.argvalues import (AnyOf as AnyOf, OMITTED as OMITTED, ANY as ANY)
    from .scoring.bfcl import (bfcl_check as bfcl_check, CheckResult as CheckResult)
    from .scoring.trajectory import (TrajectoryMetric as TrajectoryMetric)
    from .stats.intervals import (pass_at_k as pass_at_k, pass_hat_k as pass_hat_k,
                                  wilson_interval as wilson_interval,
                                  newcombe_difference as newcombe_difference,
                                  difference_upper_bound as difference_upper_bound)
    from .stats.bootstrap import (bootstrap_ci as bootstrap_ci)
    from .stats.power import (trials_for_power as trials_for_power)
    from .stats.agreement import (krippendorff_alpha as krippendorff_alpha,
                            cohen_kappa as cohen_kappa)
    from .prices import (ModelPrice as ModelPrice, load_prices as load_prices,
                         price_of as price_of, DEFAULT_CACHE_DISCOUNT as DEFAULT_CACHE_DISCOUNT,
                         DEFAULT_BATCH_DISCOUNT as DEFAULT_BATCH_DISCOUNT)
    from .cost import (per_million as per_million, dollars as dollars,
                       episode_dollars as episode_dollars, cost_of_pass as cost_of_pass,
                       cost_report as cost_report)
    from .scoring.judge import (JudgeSignal as JudgeSignal, JudgeMetric as JudgeMetric,
                        pairwise_judge as pairwise_judge, judge_validation as judge_validation)
    from .reporting import (reliability as reliability, ReliabilityReport as ReliabilityReport,
                            build_report as build_report)
    from .execution.harness import run_suite as run_suite, run_trials as run_trials
    from .records.baselines import (save_agent_baseline as save_agent_baseline,
                                    load_agent_baseline as load_agent_baseline,
                                    agent_regression_gate as agent_regression_gate)
    from .gate import (AgentGateResult as AgentGateResult)
    from .scoring.facades import (score as score, evaluate as evaluate,
                          estimate_quality as estimate_quality)
    from .store import (Store as Store)
    from .suite import (load_suite as load_suite, dump_suite as dump_suite, Suite as Suite)
    from .records.manifest import RunManifest as RunManifest
    from .stages.audit import AuditResult as AuditResult
    from .stats.judgecorrect import (judge_corrected_rate as judge_corrected_rate,
                                     JudgeCorrectedRate as JudgeCorrectedRate)
    from .stats.correctedrates import (cost_per_corrected_success as cost_per_corrected_success)
    from .stats.budget import (plan_budget as plan_budget, BudgetPlan as BudgetPlan)
    from .labels import (read_labels as read_labels, plan_labels as plan_labels)
    from .report.frames import (runs_frame as runs_frame, trials_frame as trials_frame,
                                calls_frame as calls_frame, steps_frame as steps_frame)


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
