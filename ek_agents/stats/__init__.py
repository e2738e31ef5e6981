"""Statistics: intervals, pass@k / pass^k, bootstraps, power and sample size, agreement,
judge correction and budget planning.

Owns every interval and test the reports and gates use -- ``intervals`` (pass@k, pass^k,
Wilson, Newcombe, the normal and t quantiles), ``bootstrap`` (percentile and task-cluster
bootstraps, paired differences), ``clustered`` (task-clustered rates), ``power`` (power,
tasks for power, group-sequential bounds), ``judgecorrect`` (judge-error-corrected success
rates: PPI++ with the score interval, cluster-robust over tasks), ``correctedrates`` (cost per
corrected success, the difference of two corrected rates, what a report shows of one),
``budget`` (tasks x k, labels and dollars for a target width or gate power) -- and inter-rater
agreement (``agreement``: Krippendorff's alpha, Cohen's kappa). Pure numbers in, numbers out: nothing
here knows an episode or a store.

May import: ``errors``, ``core`` (see ``ek_agents.layers``). ``from ek_agents.stats import
wilson_interval`` (the documented path) resolves through the table below.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import lazy_exports

#: public name -> the module of this package that defines it (names resolve lazily:
#: importing one module of the package does not import the others)
_EXPORTS: dict[str, str] = {
    **dict.fromkeys(["krippendorff_alpha", "cohen_kappa", "LEVELS", "KAPPA_WEIGHTS", "is_missing"], "agreement"),
    **dict.fromkeys(["bootstrap_ci", "bootstrap_mean_cis", "VECTORIZED_STATISTICS",
                    "cluster_bootstrap_ratio", "PairedDifference", "paired_difference",
                    "paired_bootstrap_ratio_difference"], "bootstrap"),
    **dict.fromkeys(["ClusteredRate", "clustered_rate", "CI_METHODS", "success_interval",
                    "cr1_variance"], "clustered"),
    **dict.fromkeys(["pass_at_k", "pass_hat_k", "wilson_interval", "wilson_score", "newcombe_difference",
                    "difference_upper_bound", "normal_quantile", "Z95", "t_quantile", "whole_count"], "intervals"),
    **dict.fromkeys(["trials_for_power", "tasks_for_power", "obrien_fleming_spending",
                    "group_sequential_bounds"], "power"),
    **dict.fromkeys(["JudgeCorrectedRate", "judge_corrected_rate", "JUDGE_METHODS",
                    "DISAGREEMENT_PSEUDOCOUNT", "DF_CAP", "rate_quantile", "rate_doc",
                    "rate_of_doc"], "judgecorrect"),
    **dict.fromkeys(["CorrectedCostPerSuccess", "cost_per_corrected_success",
                    "CorrectedDifference", "corrected_difference", "corrected_check",
                    "judge_rows", "judge_error_line"], "correctedrates"),
    **dict.fromkeys(["BudgetPlan", "plan_budget", "pilot_components", "PilotComponents",
                    "MAX_K_PLANNED"], "budget"),
}

__all__ = sorted(_EXPORTS)

if TYPE_CHECKING:  # type checkers see the real types; at runtime the names resolve lazily
    from .agreement import (krippendorff_alpha as krippendorff_alpha, cohen_kappa as cohen_kappa,
        LEVELS as LEVELS, KAPPA_WEIGHTS as KAPPA_WEIGHTS, is_missing as is_missing)
    from .bootstrap import (bootstrap_ci as bootstrap_ci, bootstrap_mean_cis as bootstrap_mean_cis,
        VECTORIZED_STATISTICS as VECTORIZED_STATISTICS,
        cluster_bootstrap_ratio as cluster_bootstrap_ratio, PairedDifference as PairedDifference,
        paired_difference as paired_difference,
        paired_bootstrap_ratio_difference as paired_bootstrap_ratio_difference)
    from .clustered import (ClusteredRate as ClusteredRate, clustered_rate as clustered_rate,
        CI_METHODS as CI_METHODS, success_interval as success_interval,
        cr1_variance as cr1_variance)
    from .intervals import (pass_at_k as pass_at_k, pass_hat_k as pass_hat_k,
        wilson_interval as wilson_interval, wilson_score as wilson_score,
        newcombe_difference as newcombe_difference,
        difference_upper_bound as difference_upper_bound, normal_quantile as normal_quantile,
        Z95 as Z95, t_quantile as t_quantile, whole_count as whole_count)
    from .power import (trials_for_power as trials_for_power, tasks_for_power as tasks_for_power,
        obrien_fleming_spending as obrien_fleming_spending,
        group_sequential_bounds as group_sequential_bounds)
    from .judgecorrect import (JudgeCorrectedRate as JudgeCorrectedRate,
        judge_corrected_rate as judge_corrected_rate, JUDGE_METHODS as JUDGE_METHODS,
        DISAGREEMENT_PSEUDOCOUNT as DISAGREEMENT_PSEUDOCOUNT, DF_CAP as DF_CAP,
        rate_quantile as rate_quantile, rate_doc as rate_doc, rate_of_doc as rate_of_doc)
    from .correctedrates import (CorrectedCostPerSuccess as CorrectedCostPerSuccess,
        cost_per_corrected_success as cost_per_corrected_success,
        CorrectedDifference as CorrectedDifference, corrected_difference as corrected_difference,
        corrected_check as corrected_check, judge_rows as judge_rows,
        judge_error_line as judge_error_line)
    from .budget import (BudgetPlan as BudgetPlan, plan_budget as plan_budget,
        pilot_components as pilot_components, PilotComponents as PilotComponents,
        MAX_K_PLANNED as MAX_K_PLANNED)


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
