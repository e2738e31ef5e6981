"""Trajectory (process) evaluation: a cost-weighted **sequence** edit distance over steps.

Costs come from the grammar: a missing, extra or wrong-tool call costs the call weight
(``node_cost``; a destructive tool's is 10 by default); a call to the right tool with wrong
arguments costs the weighted argument mismatch (``node_cost * field_cost`` per wrong argument,
compared with the rules of :mod:`ek_agents.toolcalls`), never more than replacing the call.

========== ==========================================================================
scheme     distance
========== ==========================================================================
in_order   Needleman-Wunsch alignment: order matters, gaps allowed
exact      0 iff the call sequences are identical, else the full mass
any_order  multiset distance: optimal pairing within each tool, order ignored
superset   0 iff every gold call occurs in the prediction; extra calls are free
subset     0 iff every predicted call occurs in the gold (agentevals' fourth mode);
           missing calls are free
========== ==========================================================================

Per episode, ``Score.value`` = raw distance / maximum distance, in [0, 1] (0 = perfect; the
maximum is every call wrong: both sides' call weights for in_order / exact / any_order, the gold
side's for superset, the prediction's for subset). ``detail`` has ``distance`` and
``max_distance``; :meth:`TrajectoryMetric.aggregate` is total raw / total max.

>>> m = TrajectoryMetric("in_order")
>>> m.score(["search", "answer"], ["search", "answer"]).value
0.0
>>> s = m.score(["search", "search", "answer"], ["search", "answer"])  # one extra call
>>> s.detail["distance"], s.detail["max_distance"]
(1.0, 5.0)
>>> TrajectoryMetric("any_order").score(["b", "a"], ["a", "b"]).value
0.0
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Callable, Optional

from .core import GraphGrammar, Score
from .errors import UnknownName, did_you_mean
from .toolcalls import CallComparer, _detail_sums, _grammar_for, _Matcher, as_calls

__all__ = ["TrajectoryMetric", "SCHEMES", "trajectory_distance"]

#: The distance schemes of :class:`TrajectoryMetric`.
SCHEMES = ("in_order", "exact", "any_order", "superset", "subset")


def _sub(cmp: CallComparer, p: Any, g: Any) -> float:
    """Cost of aligning predicted ``p`` with gold ``g`` (<= deleting one and inserting the other)."""
    if p.tool != g.tool:
        return p.weight + g.weight
    return min(math.fsum(w for _, _, w in cmp.mismatch(p, g)), p.weight + g.weight)


def _exact(cmp: CallComparer, p: Any, g: Any) -> bool:
    return p.tool == g.tool and not cmp.mismatch(p, g)


def _in_order(cmp: CallComparer, pv: list, gv: list) -> float:
    lo = 0
    hi_p, hi_g = len(pv), len(gv)
    while lo < hi_p and lo < hi_g and _exact(cmp, pv[lo], gv[lo]):  # common prefix is free
        lo += 1
    while hi_p > lo and hi_g > lo and _exact(cmp, pv[hi_p - 1], gv[hi_g - 1]):  # and suffix
        hi_p -= 1
        hi_g -= 1
    P, G = pv[lo:hi_p], gv[lo:hi_g]
    if not P:
        return math.fsum(g.weight for g in G)
    if not G:
        return math.fsum(p.weight for p in P)
    wg = [g.weight for g in G]
    prev = [0.0]
    for w in wg:
        prev.append(prev[-1] + w)
    for p in P:
        wp = p.weight
        cur = [prev[0] + wp]
        for j, g in enumerate(G):
            best = prev[j] + _sub(cmp, p, g)
            d = prev[j + 1] + wp
            if d < best:
                best = d
            ins = cur[j] + wg[j]
            if ins < best:
                best = ins
            cur.append(best)
        prev = cur
    return prev[-1]


def _matched(cmp: CallComparer, pv: list, gv: list, cap: float, pay_pred: bool, pay_gold: bool) -> float:
    matcher = _Matcher(cmp, pv, gv, "distance")
    matcher.cap = cap
    pairs, up, ug = matcher.run()
    parts = [matcher(i, j) for i, j in pairs if matcher.errors(i, j)]  # exact pairs cost 0
    if pay_pred:
        parts.extend(pv[i].weight for i in up)
    if pay_gold:
        parts.extend(gv[j].weight for j in ug)
    return math.fsum(parts)


def trajectory_distance(pred: Any, gold: Any, *, scheme: str = "in_order",
                        grammar: Optional[GraphGrammar] = None,
                        canonicalizer: Optional[Callable[[str], Any]] = None,
                        comparer: Optional[CallComparer] = None) -> tuple[float, float]:
    """``(raw, max)`` distance between two call sequences under ``scheme`` (see the module doc).

    >>> trajectory_distance(["a", "b"], ["b", "a"], scheme="in_order")
    (2.0, 4.0)
    """
    if scheme not in SCHEMES:
        raise UnknownName(f"unknown trajectory scheme {scheme!r}{did_you_mean(str(scheme), SCHEMES)} (one of {SCHEMES})")
    cmp = comparer if comparer is not None else CallComparer(grammar, canonicalizer)
    pv = [cmp.pred(c) for c in as_calls(pred)]
    gv = [cmp.gold(c) for c in as_calls(gold)]
    wp = math.fsum(p.weight for p in pv)
    wg = math.fsum(g.weight for g in gv)
    if scheme == "in_order":
        return _in_order(cmp, pv, gv), wp + wg
    if scheme == "exact":
        same = len(pv) == len(gv) and all(_exact(cmp, p, g) for p, g in zip(pv, gv))
        return (0.0 if same else wp + wg), wp + wg
    if scheme == "any_order":
        return _matched(cmp, pv, gv, 2.0, True, True), wp + wg
    if scheme == "superset":
        return _matched(cmp, pv, gv, 1.0, False, True), wg
    return _matched(cmp, pv, gv, 1.0, True, False), wp  # subset


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
        self._cmp: Optional[CallComparer] = None

    def _comparer(self, grammar: Optional[GraphGrammar]) -> CallComparer:
        c = self._cmp
        want = grammar if grammar is not None else CallComparer().grammar
        if c is None or c.grammar is not want:
            c = self._cmp = CallComparer(grammar, self.canonicalizer)
        return c

    def score(self, pred: Any, gold: Any, *, grammar: Optional[GraphGrammar] = None) -> Score:
        cmp = self._comparer(_grammar_for(gold, grammar, self.grammar))
        raw, mx = trajectory_distance(pred, gold, scheme=self.scheme, comparer=cmp)
        value = 0.0 if mx == 0 else min(1.0, max(0.0, raw / mx))
        return Score(value, {"distance": raw, "max_distance": mx, "scheme": self.scheme})

    def aggregate(self, scores: Sequence[Score]) -> float:
        """Corpus distance = total raw distance / total maximum distance (never a mean)."""
        raw, mx = _detail_sums(scores, ("distance", "max_distance"), "TrajectoryMetric")
        return 0.0 if mx == 0 else min(1.0, raw / mx)

    def __repr__(self) -> str:
        return f"TrajectoryMetric(scheme={self.scheme!r})"
