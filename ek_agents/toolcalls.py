"""``ek_agents.toolcalls``: a spec module name, kept as a thin re-export of ``ek_agents.scoring.toolcalls``.

New code imports from the home module; this file only re-exports its public names
(see docs/ARCHITECTURE.md)."""
from __future__ import annotations

from .scoring.toolcalls import (AnyOf as AnyOf, OMITTED as OMITTED, ANY as ANY,
    standardize_string as standardize_string, as_calls as as_calls, CallComparer as CallComparer,
    min_cost_assignment as min_cost_assignment, match_calls as match_calls,
    ToolCallMetric as ToolCallMetric, LEVELS as LEVELS, bfcl_check as bfcl_check,
    CheckResult as CheckResult)

__all__ = ["AnyOf", "OMITTED", "ANY", "standardize_string", "as_calls", "CallComparer",
           "min_cost_assignment", "match_calls", "ToolCallMetric", "LEVELS", "bfcl_check",
           "CheckResult"]
