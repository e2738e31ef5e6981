"""The per-model cost breakdown as the reports show it.

``cost.cost_report`` adds ``per_model`` (``{model: {calls, episodes, input_tokens, ...,
dollars, upper_bound}}``), ``upper_bound`` and ``upper_bound_reason`` to a run's cost figures
when its episodes record their model calls. The JSON, Markdown and HTML reports lay that out
with these helpers, one table row per model, and mark dollars that are an upper bound (a call
that did not report its cached tokens was billed at full input rates) -- visibly, never
silently. A run without per-call records shows nothing new.

>>> pm = {"gpt-4o": {"calls": 2, "episodes": 1, "input_tokens": 3600, "cached_input_tokens": 2560,
...                  "cache_write_tokens": 0, "output_tokens": 400, "reasoning_tokens": 0,
...                  "dollars": 0.0098, "upper_bound": False},
...       "gpt-4o-mini": {"calls": 1, "episodes": 1, "input_tokens": 3000, "cached_input_tokens": 0,
...                       "cache_write_tokens": 0, "output_tokens": 400, "reasoning_tokens": 0,
...                       "dollars": 0.00069, "upper_bound": True}}
>>> per_model_rows(pm, money=lambda d: f"${d:.5f}", count=str)[1]
['gpt-4o-mini', '1', '3000', '0', '0', '400', '0', '$0.00069 (upper bound)']
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Optional

__all__ = ["PER_MODEL_HEAD", "UPPER_BOUND", "per_model_rows", "upper_bound_reason", "marked"]

#: The columns of a per-model table.
PER_MODEL_HEAD: tuple[str, ...] = ("model", "calls", "input tokens", "cached input", "cache writes",
                                   "output tokens", "reasoning", "dollars")
#: What follows a dollar figure that is an upper bound.
UPPER_BOUND = "(upper bound)"

_COUNTS = ("calls", "input_tokens", "cached_input_tokens", "cache_write_tokens", "output_tokens",
           "reasoning_tokens")


def marked(text: str, upper_bound: Any) -> str:
    """``text`` followed by ``(upper bound)`` when ``upper_bound`` is true."""
    return f"{text} {UPPER_BOUND}" if upper_bound else text


def per_model_rows(per_model: Any, *, money: Callable[[Any], str],
                   count: Callable[[Any], str]) -> list[list[str]]:
    """One row of formatted cells per model (in the report's order: largest spend first), the
    dollars of a model whose calls did not all report cached tokens marked ``(upper bound)``.
    ``[]`` for anything but a ``{model: row}`` mapping (a report without per-call records)."""
    if not isinstance(per_model, Mapping):
        return []
    rows = []
    for model, r in per_model.items():
        if not isinstance(r, Mapping):
            continue
        rows.append([str(model)] + [count(r.get(k)) for k in _COUNTS]
                    + [marked(money(r.get("dollars")), r.get("upper_bound"))])
    return rows


def upper_bound_reason(cost: Any) -> Optional[str]:
    """Why a run's dollars are an upper bound (``cost_report``'s ``upper_bound_reason``), or
    None when they are not (or the report predates per-call billing)."""
    if not isinstance(cost, Mapping) or not cost.get("upper_bound"):
        return None
    return str(cost.get("upper_bound_reason") or "some model calls did not report cached tokens")
