"""The three facades: ``score`` (one item, reference-based), ``evaluate`` (a corpus,
reference-based) and ``estimate_quality`` (one item, reference-free).

>>> from ek_agents.scoring.toolcalls import ToolCallMetric
>>> score([("search", {"q": "cat"})], [("search", {"q": "Cat"})], ToolCallMetric()).value
1.0
>>> evaluate([["a"], ["a", "b"]], [["a"], ["a"]], {"calls": ToolCallMetric()})
{'calls': 0.8}
>>> r = estimate_quality("Paris", [lambda out: 1.0 if out else 0.0])
>>> r["estimate"]
1.0
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Callable, Optional

from ..core import GraphGrammar, Score
from ..errors import InvalidInput, UnknownName, did_you_mean

__all__ = ["score", "evaluate", "score_all", "estimate_quality", "get_metric", "METRICS"]


def _metric_table() -> dict[str, Callable[[], Any]]:
    from .metrics import CostPerSuccessMetric, TaskSuccessMetric
    from .toolcalls import ToolCallMetric
    from .trajectory import SCHEMES, TrajectoryMetric

    table: dict[str, Callable[[], Any]] = {
        "task_success": TaskSuccessMetric,
        "cost_per_success": CostPerSuccessMetric,
        "tool_call": ToolCallMetric,
        "tool_call_arg": lambda: ToolCallMetric("arg"),
        "trajectory": TrajectoryMetric,
    }
    for s in SCHEMES:
        table[f"trajectory_{s}"] = (lambda s=s: TrajectoryMetric(s))
    return table


#: Metric names :func:`get_metric` builds with default settings.
METRICS = ("task_success", "cost_per_success", "tool_call", "tool_call_arg", "trajectory",
           "trajectory_in_order", "trajectory_exact", "trajectory_any_order",
           "trajectory_superset", "trajectory_subset")


def get_metric(metric: Any) -> Any:
    """A Metric object: given one, or built from a name in :data:`METRICS`.

    >>> get_metric("tool_call")
    ToolCallMetric(level='call')
    """
    if isinstance(metric, str):
        table = _metric_table()
        if metric not in table:
            raise UnknownName(f"unknown metric {metric!r}{did_you_mean(metric, table)} (one of {sorted(table)})")
        return table[metric]()
    if callable(getattr(metric, "score", None)) and callable(getattr(metric, "aggregate", None)):
        return metric
    raise InvalidInput(f"{metric!r:.80} is not a metric: give an object with score() and aggregate(), or a name in {METRICS}")


def score(pred: Any, gold: Any, metric: Any, *, grammar: Optional[GraphGrammar] = None) -> Score:
    """Score one prediction against its gold with ``metric`` (an object or a name).

    ``grammar`` (the task/tool grammar) is passed through to the metric, so tool and argument
    weights reach a tool-call or trajectory metric.
    """
    return get_metric(metric).score(pred, gold, grammar=grammar)


def _named(metrics: Any) -> dict[str, Any]:
    if isinstance(metrics, Mapping):
        return {str(k): get_metric(m) for k, m in metrics.items()}
    if isinstance(metrics, (str,)) or not isinstance(metrics, Iterable):
        metrics = [metrics]
    out: dict[str, Any] = {}
    for m in metrics:
        obj = get_metric(m)
        name = m if isinstance(m, str) else getattr(obj, "name", None) or type(obj).__name__
        if name in out:
            raise InvalidInput(f"evaluate: two metrics are both named {name!r}; pass a {{name: metric}} mapping")
        out[name] = obj
    return out


def evaluate(preds: Sequence, golds: Sequence, metrics: Any, *,
             grammar: Optional[GraphGrammar] = None) -> dict[str, float]:
    """Score a corpus: ``{name: metric.aggregate(scores)}`` -- each metric's **own** aggregate
    (micro F1 for tool calls, total/total for trajectories, a ratio of sums for cost per
    success), never a mean of per-item values.

    ``metrics`` is a ``{name: metric}`` mapping or a list (names then come from each metric's
    ``name``, else its class name; a string is its own name).
    """
    preds, golds = list(preds), list(golds)
    if len(preds) != len(golds):
        raise InvalidInput(f"evaluate: {len(preds)} predictions but {len(golds)} golds; give one gold per prediction")
    table = _named(metrics)
    if not table:
        raise InvalidInput("evaluate: no metrics given")
    shared: dict = {}  # prepared calls, built once and shared by the metrics that compare alike
    return {name: _aggregate(m, preds, golds, grammar, shared) for name, m in table.items()}


def _aggregate(metric: Any, preds: list, golds: list, grammar: Optional[GraphGrammar], shared: dict) -> float:
    """``metric.aggregate(score_all(...))``, through the metric's ``aggregate_batch`` when it
    has one (the same number without a Score per item)."""
    batch = getattr(metric, "aggregate_batch", None)
    if callable(batch):
        return batch(preds, golds, grammar=grammar, shared=shared)
    return metric.aggregate(score_all(metric, preds, golds, grammar=grammar, shared=shared))


def score_all(metric: Any, preds: Sequence, golds: Sequence, *, grammar: Optional[GraphGrammar] = None,
              shared: Optional[dict] = None) -> list[Score]:
    """``[metric.score(p, g, grammar=grammar) for p, g in zip(preds, golds)]`` -- through the
    metric's ``score_batch`` when it has one (tool-call and trajectory metrics: each call
    prepared once, the in_order alignment vectorised over the pairs; the same numbers).
    ``shared`` (a dict kept over one corpus) lets metrics share the prepared calls.

    >>> from ek_agents.scoring.trajectory import TrajectoryMetric
    >>> [s.value for s in score_all(TrajectoryMetric(), [["a", "b"]], [["a", "c"]])]
    [0.5]
    """
    batch = getattr(metric, "score_batch", None)
    if callable(batch):
        return batch(preds, golds, grammar=grammar, shared=shared)
    return [metric.score(p, g, grammar=grammar) for p, g in zip(preds, golds)]


def _signals(signals: Any) -> list[tuple[str, int, Callable[[Any], float]]]:
    if isinstance(signals, Mapping):
        items = [(str(k), s) for k, s in signals.items()]
    elif callable(signals):
        items = [(None, signals)]
    else:
        items = [(None, s) for s in signals]
    out = []
    for name, s in items:
        if not callable(s):
            raise InvalidInput(f"estimate_quality: signal {name or s!r:.60} is not callable (a Signal is output -> float)")
        name = name or getattr(s, "name", None) or getattr(s, "__name__", None) or type(s).__name__
        tier = getattr(s, "cost_tier", 0)
        if not isinstance(tier, (int, float)) or isinstance(tier, bool):
            raise InvalidInput(f"estimate_quality: signal {name!r} has cost_tier {tier!r}; give a number")
        out.append((name, tier, s))
    names = [n for n, _, _ in out]
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        raise InvalidInput(f"estimate_quality: several signals are named {sorted(dup)}; pass a {{name: signal}} mapping")
    return sorted(out, key=lambda t: t[1])  # stable: equal tiers keep the given order


def estimate_quality(output: Any, signals: Any, *, combine: str = "min",
                     stop_below: Optional[float] = 0.0, weights: Optional[Mapping[str, float]] = None) -> dict:
    """Reference-free quality estimate of one output from :class:`~ek_agents.core.Signal` s.

    Signals run **cheapest first** (ascending ``cost_tier``; plain callables are tier 0), each
    returning a float in [0, 1]. The combined ``estimate`` is:

    - ``combine="min"`` (default): the weakest signal -- signals are read as necessary
      conditions (valid format AND grounded AND judged good). This is what makes the cascade
      exact: once a signal returns a value ``<= stop_below`` (default 0.0) the estimate cannot
      rise again, so the costlier signals are skipped (listed in ``skipped``).
    - ``combine="mean"``: the ``weights``-weighted mean (default weight 1); every signal runs.

    Returns ``{"estimate", "signals": {name: value}, "order": [names run], "skipped": [names],
    "combine"}``. A signal returning a non-number, NaN or a value outside [0, 1] is refused.

    >>> fmt = lambda out: 1.0 if out.endswith(".") else 0.0
    >>> class Judge:
    ...     name, cost_tier = "judge", 5
    ...     def __call__(self, out): raise AssertionError("never reached: format already failed")
    >>> r = estimate_quality("no period", [Judge(), fmt])
    >>> r["estimate"], r["order"], r["skipped"]
    (0.0, ['<lambda>'], ['judge'])
    """
    if combine not in ("min", "mean"):
        raise InvalidInput(f"estimate_quality: combine must be 'min' or 'mean', got {combine!r}{did_you_mean(str(combine), ['min', 'mean'])}")
    table = _signals(signals)
    if not table:
        raise InvalidInput("estimate_quality: no signals given")
    values: dict[str, float] = {}
    order: list[str] = []
    skipped: list[str] = []
    stopped = False
    for name, _, sig in table:
        if stopped:
            skipped.append(name)
            continue
        v = sig(output)
        if isinstance(v, bool) or not isinstance(v, (int, float)) or math.isnan(v) or not 0.0 <= v <= 1.0:
            raise InvalidInput(f"estimate_quality: signal {name!r} returned {v!r}; a signal returns a float in [0, 1]")
        values[name] = float(v)
        order.append(name)
        if combine == "min" and stop_below is not None and v <= stop_below:
            stopped = True
    if combine == "min":
        estimate = min(values.values())
    else:
        w = {n: float((weights or {}).get(n, 1.0)) for n in values}
        total = math.fsum(w.values())
        if total <= 0:
            raise InvalidInput(f"estimate_quality: weights {dict(w)} sum to {total}; give positive weights")
        estimate = math.fsum(w[n] * values[n] for n in values) / total
    return {"estimate": estimate, "signals": values, "order": order, "skipped": skipped, "combine": combine}
