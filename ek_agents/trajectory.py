"""Trajectory (process) evaluation: a cost-weighted **sequence** edit distance over steps.

Costs come from the grammar (``node_cost`` = the call weight; 10 for a destructive tool by
default): a **missing** or **extra** call costs its call weight; a **wrong** call (another tool
where a call was due) costs the larger of the two call weights; a call to the **right tool with
wrong arguments** costs the weighted argument mismatch: its call weight times the fraction of
its argument weight (``field_cost``) that is wrong -- arguments compared with the rules of
:mod:`ek_agents.argmatch` (BFCL equality, AnyOf/OMITTED, required and undeclared arguments) --
so a single wrong argument of a destructive one-argument tool costs 10, not 1, and a call is
never worse than a wrong call.

========== ==========================================================================
scheme     distance
========== ==========================================================================
in_order   Needleman-Wunsch alignment: order matters, gaps allowed
exact      0 iff the call sequences are identical, else the maximum
any_order  optimal pairing of the two multisets of calls (order ignored)
superset   0 iff every gold call occurs in the prediction; extra calls are free
subset     0 iff every predicted call occurs in the gold (agentevals' fourth mode);
           missing calls are free
========== ==========================================================================

Per episode, ``Score.value`` = raw distance / maximum distance, in [0, 1] (0 = perfect). The
maximum is the distance if every call were wrong: for in_order / exact the alignment of the two
weight sequences with every substitution wrong (``max(len) * w`` for equal weights), for
any_order the same without order, for superset the gold weights, for subset the predicted
weights. ``detail`` has ``distance`` and ``max_distance``; :meth:`TrajectoryMetric.aggregate`
is total raw / total max. ``any_order <= in_order`` always (it minimizes over more pairings).

>>> m = TrajectoryMetric("in_order")
>>> m.score(["search", "answer"], ["search", "answer"]).value
0.0
>>> s = m.score(["search", "search", "answer"], ["search", "answer"])  # one extra call
>>> s.detail["distance"], s.detail["max_distance"]
(1.0, 3.0)
>>> TrajectoryMetric("any_order").score(["b", "a"], ["a", "b"]).value
0.0
"""
from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from typing import Any, Callable, Optional

from .argmatch import CallComparer
from .assignment import min_cost_assignment
from .core import GraphGrammar, Score
from .errors import UnknownName, did_you_mean
from .toolcalls import _by_tool, _comparer_for, _detail_sums, _grammar_for, as_calls

__all__ = ["TrajectoryMetric", "SCHEMES", "trajectory_distance"]

#: The distance schemes of :class:`TrajectoryMetric`.
SCHEMES = ("in_order", "exact", "any_order", "superset", "subset")


def _sub(cmp: CallComparer, p: Any, g: Any) -> float:
    """Cost of aligning predicted ``p`` with gold ``g``: a call to another tool is a wrong call
    (``max`` of the two call weights); the right tool with wrong arguments costs the call weight
    times the weighted fraction of its arguments that are wrong (so never more than a wrong call)."""
    if p.tool != g.tool:
        return p.weight if p.weight >= g.weight else g.weight
    errs = cmp.mismatch(p, g)
    if not errs:
        return 0.0
    total = cmp.considered_weight(p, g, errs)
    wrong = math.fsum(w for _, _, w in errs)
    return p.weight if total <= 0 else p.weight * min(1.0, wrong / total)


def _exact(cmp: CallComparer, p: Any, g: Any) -> bool:
    return p.tool == g.tool and not cmp.mismatch(p, g)


def _in_order(cmp: CallComparer, pv: list, gv: list) -> float:
    """Needleman-Wunsch over the calls (gaps cost the call weight), common ends trimmed first."""
    lo = 0
    hi_p, hi_g = len(pv), len(gv)
    while lo < hi_p and lo < hi_g and _exact(cmp, pv[lo], gv[lo]):  # common prefix is free
        lo += 1
    while hi_p > lo and hi_g > lo and _exact(cmp, pv[hi_p - 1], gv[hi_g - 1]):  # and suffix
        hi_p -= 1
        hi_g -= 1
    P, G = pv[lo:hi_p], gv[lo:hi_g]
    if not P or not G:
        return math.fsum(c.weight for c in P or G)
    wg = [g.weight for g in G]
    prev = [0.0]
    for w in wg:
        prev.append(prev[-1] + w)
    for p in P:
        a = p.weight
        cur = [prev[0] + a]
        for j, g in enumerate(G):
            best = prev[j] + _sub(cmp, p, g)
            d = prev[j + 1] + a
            if d < best:
                best = d
            d = cur[j] + wg[j]
            if d < best:
                best = d
            cur.append(best)
        prev = cur
    return prev[-1]


def _in_order_max(wp: list, wg: list) -> float:
    """The in_order distance if every call were wrong (the normalizer): the same alignment with
    every substitution costing the larger weight."""
    if not wp or not wg:
        return math.fsum(wp) + math.fsum(wg)
    if wp == wg:  # every call must be covered at least at its own weight; the diagonal does it
        return math.fsum(wp)
    w0 = wp[0]
    if all(w == w0 for w in wp) and all(w == w0 for w in wg):
        return w0 * max(len(wp), len(wg))
    prev = [0.0]
    for w in wg:
        prev.append(prev[-1] + w)
    for a in wp:
        cur = [prev[0] + a]
        for j, b in enumerate(wg):
            best = prev[j] + (a if a >= b else b)
            d = prev[j + 1] + a
            if d < best:
                best = d
            d = cur[j] + b
            if d < best:
                best = d
            cur.append(best)
        prev = cur
    return prev[-1]


def _any_order(cmp: CallComparer, pv: list, gv: list) -> float:
    if not any(p.own_errors for p in pv) and all(g.key is not None for g in gv) and \
            Counter(p.key for p in pv) == Counter(g.key for g in gv):
        return 0.0  # the same multiset of calls: a perfect pairing exists
    if not pv or not gv:
        return math.fsum(c.weight for c in pv or gv)
    # total = (all calls unpaired) + sum over pairs of (pair cost - the two weights it saves);
    # each such saving is <= 0, so a largest assignment on the savings is optimal
    cost = [[_sub(cmp, p, g) - p.weight - g.weight for g in gv] for p in pv]
    pairs = min_cost_assignment(cost)
    return math.fsum([p.weight for p in pv] + [g.weight for g in gv] + [cost[i][j] for i, j in pairs])


def _any_order_max(wp: list, wg: list) -> float:
    """Every call wrong: pair the heaviest with the heaviest (maximizes the saved min weights)."""
    a, b = sorted(wp, reverse=True), sorted(wg, reverse=True)
    return math.fsum(wp) + math.fsum(wg) - math.fsum(min(x, y) for x, y in zip(a, b))


def _covered(cmp: CallComparer, pv: list, gv: list, *, pay_pred: bool) -> float:
    """superset (``pay_pred=False``: uncovered gold calls cost) / subset (uncovered predicted
    calls cost): optimal pairing within each tool; a pair costs its argument mismatch."""
    by_p, by_g = _by_tool(pv), _by_tool(gv)
    parts: list = []
    for tool in set(by_p) | set(by_g):
        P, G = by_p.get(tool, []), by_g.get(tool, [])
        paired: set = set()  # positions in P (pay_pred) or G left out of the unpaired charge
        if P and G:
            cost = [[_sub(cmp, pv[i], gv[j]) for j in G] for i in P]
            pairs = min_cost_assignment(cost)
            parts.extend(cost[r][c] for r, c in pairs)
            paired = {r if pay_pred else c for r, c in pairs}
        left, views = (P, pv) if pay_pred else (G, gv)
        parts.extend(views[k].weight for n, k in enumerate(left) if n not in paired)
    return math.fsum(parts)


def trajectory_distance(pred: Any, gold: Any, *, scheme: str = "in_order",
                        grammar: Optional[GraphGrammar] = None,
                        canonicalizer: Optional[Callable[[str], Any]] = None,
                        comparer: Optional[CallComparer] = None) -> tuple[float, float]:
    """``(raw, max)`` distance between two call sequences under ``scheme`` (see the module doc).

    >>> trajectory_distance(["a", "b"], ["b", "a"], scheme="in_order")
    (2.0, 2.0)
    >>> trajectory_distance(["a", "b"], ["b", "a"], scheme="any_order")
    (0.0, 2.0)
    """
    if scheme not in SCHEMES:
        raise UnknownName(f"unknown trajectory scheme {scheme!r}{did_you_mean(str(scheme), SCHEMES)} (one of {SCHEMES})")
    cmp = comparer if comparer is not None else CallComparer(grammar, canonicalizer)
    pv = [cmp.pred(c) for c in as_calls(pred)]
    gv = [cmp.gold(c) for c in as_calls(gold)]
    wp = [p.weight for p in pv]
    wg = [g.weight for g in gv]
    if scheme == "in_order":
        return _in_order(cmp, pv, gv), _in_order_max(wp, wg)
    if scheme == "exact":
        mx = _in_order_max(wp, wg)
        same = len(pv) == len(gv) and all(_exact(cmp, p, g) for p, g in zip(pv, gv))
        return (0.0 if same else mx), mx
    if scheme == "any_order":
        return _any_order(cmp, pv, gv), _any_order_max(wp, wg)
    if scheme == "superset":
        return _covered(cmp, pv, gv, pay_pred=False), math.fsum(wg)
    return _covered(cmp, pv, gv, pay_pred=True), math.fsum(wp)  # subset


class TrajectoryMetric:
    """Cost-weighted trajectory distance as a Metric (**lower is better**).

    ``scheme`` is one of :data:`SCHEMES`; ``grammar`` supplies call and argument weights (may
    also be passed per call, or come from a gold TaskSpec's tools); ``canonicalizer`` replaces
    BFCL's string standardization for string arguments. ``pred``/``gold`` are Episodes,
    Trajectories, mappings with ``"calls"``, or lists of calls.

    >>> TrajectoryMetric("superset").score(["search", "open", "answer"], ["answer"]).value
    0.0
    >>> TrajectoryMetric("subset").score(["search", "answer"], ["answer"]).value
    0.5
    """

    higher_is_better = False

    def __init__(self, scheme: str = "in_order", *, grammar: Optional[GraphGrammar] = None,
                 canonicalizer: Optional[Callable[[str], Any]] = None) -> None:
        if scheme not in SCHEMES:
            raise UnknownName(f"unknown trajectory scheme {scheme!r}{did_you_mean(str(scheme), SCHEMES)} (one of {SCHEMES})")
        self.scheme = scheme
        self.grammar = grammar
        self.canonicalizer = canonicalizer
        self.name = f"trajectory_{scheme}"
        self._comparers: dict = {}

    def score(self, pred: Any, gold: Any, *, grammar: Optional[GraphGrammar] = None) -> Score:
        cmp = _comparer_for(self._comparers, _grammar_for(gold, grammar, self.grammar), self.canonicalizer)
        raw, mx = trajectory_distance(pred, gold, scheme=self.scheme, comparer=cmp)
        value = 0.0 if mx == 0 else min(1.0, max(0.0, raw / mx))
        return Score(value, {"distance": raw, "max_distance": mx, "scheme": self.scheme})

    def aggregate(self, scores: Sequence[Score]) -> float:
        """Corpus distance = total raw distance / total maximum distance (never a mean)."""
        raw, mx = _detail_sums(scores, ("distance", "max_distance"), "TrajectoryMetric")
        return 0.0 if mx == 0 else min(1.0, raw / mx)

    def __repr__(self) -> str:
        return f"TrajectoryMetric(scheme={self.scheme!r})"
