"""``ek_agents.metrics``: a spec module name, kept as a thin re-export of ``ek_agents.scoring.metrics``.

New code imports from the home module; this file only re-exports its public names
(see docs/ARCHITECTURE.md)."""
from __future__ import annotations

from .scoring.metrics import (Checker as Checker, output_match as output_match,
    final_state_match as final_state_match, recorded_success as recorded_success,
    CHECKERS as CHECKERS, register_checker as register_checker, get_checker as get_checker,
    grade as grade, state_equal as state_equal, is_errored as is_errored,
    TaskSuccessMetric as TaskSuccessMetric, CostPerSuccessMetric as CostPerSuccessMetric,
    GOLD_KEYS as GOLD_KEYS)

__all__ = ["Checker", "output_match", "final_state_match", "recorded_success", "CHECKERS",
           "register_checker", "get_checker", "grade", "state_equal", "is_errored",
           "TaskSuccessMetric", "CostPerSuccessMetric", "GOLD_KEYS"]
