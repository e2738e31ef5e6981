"""``ek_agents.judge``: a spec module name, kept as a thin re-export of ``ek_agents.scoring.judge``.

New code imports from the home module; this file only re-exports its public names
(see docs/ARCHITECTURE.md)."""
from __future__ import annotations

from .scoring.judge import (JudgeSignal as JudgeSignal, JudgeMetric as JudgeMetric,
    pairwise_judge as pairwise_judge, judge_validation as judge_validation,
    JUDGE_COST_TIER as JUDGE_COST_TIER, ALPHA_GOOD as ALPHA_GOOD, ALPHA_TENTATIVE as ALPHA_TENTATIVE)

__all__ = ["JudgeSignal", "JudgeMetric", "pairwise_judge", "judge_validation", "JUDGE_COST_TIER",
           "ALPHA_GOOD", "ALPHA_TENTATIVE"]
