"""Scoring: how good one answer is -- tool-call matching, trajectories, BFCL rules, checkers, judges.

Owns the gold vocabulary and typed value keys (``argvalues``), argument matching
(``argmatch``), the assignment of predicted to gold calls (``assignment``), per-call class codes
and their optional C extension (``callcodes``, ``_callcodes``), reading calls and per-batch
views (``callviews``), tool-call F1 (``toolcalls``), trajectory distance per pair
(``alignment``), batched (``trajectory_batch``) and its metric (``trajectory``), the BFCL
checker and its typed strings
(``bfcl``, ``bfcl_typed_strings``), task checkers and the success / cost-per-success metrics
(``metrics``), LLM-judge signals (``judge``) and the ``score`` / ``evaluate`` /
``estimate_quality`` facades (``facades``).

May import: ``errors``, ``core``, ``parsing``, ``base``, ``store``, ``stats``, ``cost``
(see ``ek_agents.layers``). The spec's module paths ``ek_agents.toolcalls``, ``.trajectory``,
``.metrics`` and ``.judge`` are thin re-exports of the modules here.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..lazy import lazy_exports

#: public name -> the module of this package that defines it (names resolve lazily:
#: importing one module of the package does not import the others)
_EXPORTS: dict[str, str] = {
    **dict.fromkeys(["in_order_distance", "in_order_max", "any_order_max",
                    "covered_distance"], "alignment"),
    **dict.fromkeys(["CallComparer", "CallClasses"], "argmatch"),
    **dict.fromkeys(["AnyOf", "OMITTED", "ANY", "standardize_string", "value_key",
                    "alternatives"], "argvalues"),
    **dict.fromkeys(["min_cost_assignment"], "assignment"),
    **dict.fromkeys(["bfcl_check", "CheckResult", "CATEGORIES", "BFCL_TYPES", "tool_specs",
                    "gold_calls", "model_calls"], "bfcl"),
    **dict.fromkeys(["LANGUAGES", "language_of", "typed_value"], "bfcl_typed_strings"),
    **dict.fromkeys(["as_calls", "cached_comparer", "PairViews", "pair_views",
                    "batch_grammar"], "callviews"),
    **dict.fromkeys(["score", "evaluate", "score_all", "estimate_quality", "get_metric",
                    "METRICS"], "facades"),
    **dict.fromkeys(["JudgeSignal", "JudgeMetric", "pairwise_judge", "judge_validation",
                    "JUDGE_COST_TIER", "ALPHA_GOOD", "ALPHA_TENTATIVE"], "judge"),
    **dict.fromkeys(["Checker", "output_match", "final_state_match", "recorded_success",
                    "CHECKERS", "register_checker", "get_checker", "grade", "state_equal",
                    "is_errored", "TaskSuccessMetric", "CostPerSuccessMetric",
                    "GOLD_KEYS"], "metrics"),
    **dict.fromkeys(["match_calls", "ToolCallMetric", "LEVELS"], "toolcalls"),
    **dict.fromkeys(["TrajectoryMetric", "SCHEMES", "trajectory_distance",
                    "trajectory_distances"], "trajectory"),
}

__all__ = sorted(_EXPORTS)

if TYPE_CHECKING:  # type checkers see the real types; at runtime the names resolve lazily
    from .alignment import (in_order_distance as in_order_distance, in_order_max as in_order_max,
                            any_order_max as any_order_max, covered_distance as covered_distance)
    from .argmatch import (CallComparer as CallComparer, CallClasses as CallClasses)
    from .argvalues import (AnyOf as AnyOf, OMITTED as OMITTED, ANY as ANY,
                            standardize_string as standardize_string, value_key as value_key,
                            alternatives as alternatives)
    from .assignment import (min_cost_assignment as min_cost_assignment)
    from .bfcl import (bfcl_check as bfcl_check, CheckResult as CheckResult,
                       CATEGORIES as CATEGORIES, BFCL_TYPES as BFCL_TYPES,
                       tool_specs as tool_specs, gold_calls as gold_calls,
                       model_calls as model_calls)
    from .bfcl_typed_strings import (LANGUAGES as LANGUAGES, language_of as language_of,
                                     typed_value as typed_value)
    from .callviews import (as_calls as as_calls, cached_comparer as cached_comparer,
                            PairViews as PairViews, pair_views as pair_views,
                            batch_grammar as batch_grammar)
    from .facades import (score as score, evaluate as evaluate, score_all as score_all,
                          estimate_quality as estimate_quality, get_metric as get_metric,
                          METRICS as METRICS)
    from .judge import (JudgeSignal as JudgeSignal, JudgeMetric as JudgeMetric,
                        pairwise_judge as pairwise_judge, judge_validation as judge_validation,
                        JUDGE_COST_TIER as JUDGE_COST_TIER, ALPHA_GOOD as ALPHA_GOOD,
                        ALPHA_TENTATIVE as ALPHA_TENTATIVE)
    from .metrics import (Checker as Checker, output_match as output_match,
                          final_state_match as final_state_match,
                          recorded_success as recorded_success, CHECKERS as CHECKERS,
                          register_checker as register_checker, get_checker as get_checker,
                          grade as grade, state_equal as state_equal, is_errored as is_errored,
                          TaskSuccessMetric as TaskSuccessMetric,
                          CostPerSuccessMetric as CostPerSuccessMetric, GOLD_KEYS as GOLD_KEYS)
    from .toolcalls import (match_calls as match_calls, ToolCallMetric as ToolCallMetric,
                            LEVELS as LEVELS)
    from .trajectory import (TrajectoryMetric as TrajectoryMetric, SCHEMES as SCHEMES,
                             trajectory_distance as trajectory_distance,
                             trajectory_distances as trajectory_distances)


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
