"""Trajectory (process) evaluation: a cost-weighted **sequence** edit distance over steps.

Costs come from the grammar (``node_cost`` = the call weight; 10 for a destructive tool by
default): a **missing** or **extra** call costs its call weight; a **wrong** call (another tool
where a call was due) costs the larger of the two call weights; a call to the **right tool with
wrong arguments** costs the weighted argument mismatch: its call weight times the fraction of
its argument weight (``field_cost``) that is wrong -- arguments compared with the rules of
:mod:`ek_agents.scoring.argmatch` (BFCL equality, AnyOf/OMITTED, required and undeclared arguments) --
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

The per-pair alignments are :mod:`.alignment`; the batched in-order distance is
:mod:`.trajectory_batch`.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Callable, Optional

from ..core import GraphGrammar, Score
from ..errors import InvalidInput, UnknownName, did_you_mean
from .alignment import pair_distance
from .argmatch import CallComparer
from .callcodes import HAS_C
from .callviews import as_calls, batch_grammar, cached_comparer, call_grammar, pair_views
from .toolcalls import detail_sums
from .trajectory_batch import in_order_batch, in_order_coded, in_order_uniform

__all__ = ["TrajectoryMetric", "SCHEMES", "trajectory_distance", "trajectory_distances"]

#: The distance schemes of :class:`TrajectoryMetric`.
SCHEMES = ("in_order", "exact", "any_order", "superset", "subset")

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
    return pair_distance(cmp, scheme, cmp.preds(as_calls(pred)), cmp.golds(as_calls(gold)))

def trajectory_distances(preds: Sequence, golds: Sequence, *, scheme: str = "in_order",
                         grammar: Optional[GraphGrammar] = None,
                         canonicalizer: Optional[Callable[[str], Any]] = None,
                         comparer: Optional[CallComparer] = None,
                         shared: Optional[dict] = None) -> list[tuple[float, float]]:
    """:func:`trajectory_distance` of many pairs at once: ``[(raw, max)]`` in pair order, equal
    to the single-pair results. Each call is prepared once; ``in_order`` runs its alignment as
    one vectorised DP over blocks of pairs (the other schemes loop over the prepared calls).
    ``shared`` lets several metrics of one corpus evaluation share the prepared calls.

    >>> trajectory_distances([["a", "b"], ["a"]], [["b", "a"], ["a"]])
    [(2.0, 2.0), (0.0, 1.0)]
    """
    if scheme not in SCHEMES:
        raise UnknownName(f"unknown trajectory scheme {scheme!r}{did_you_mean(str(scheme), SCHEMES)} (one of {SCHEMES})")
    preds = preds if type(preds) is list else list(preds)  # kept: shared views are found by identity
    golds = golds if type(golds) is list else list(golds)
    if len(preds) != len(golds):
        raise InvalidInput(f"trajectory_distances: {len(preds)} predictions but {len(golds)} golds; give one gold per prediction")
    cmp = comparer if comparer is not None else CallComparer(grammar, canonicalizer)
    if scheme == "in_order" and preds:
        # (with its pure-Python twin the encoding is slower than preparing views: C only)
        coded = in_order_coded(cmp, preds, golds) if HAS_C else None
        if coded is not None:
            return coded
        views = pair_views(cmp, preds, golds, shared)
        fast = in_order_uniform(cmp, views)
        return fast if fast is not None else in_order_batch(cmp, views)
    views = pair_views(cmp, preds, golds, shared)
    return [pair_distance(cmp, scheme, pv, gv) for pv, gv in zip(views.pred, views.gold)]


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
        cmp = cached_comparer(self._comparers, call_grammar(gold, grammar, self.grammar), self.canonicalizer)
        raw, mx = trajectory_distance(pred, gold, scheme=self.scheme, comparer=cmp)
        return self._score(raw, mx)

    def score_batch(self, preds: Sequence, golds: Sequence, *, grammar: Optional[GraphGrammar] = None,
                    shared: Optional[dict] = None) -> list[Score]:
        """``[self.score(p, g) for p, g in zip(preds, golds)]``, computed in one batch by
        :func:`trajectory_distances` (the same numbers)."""
        golds = golds if type(golds) is list else list(golds)
        one, g = batch_grammar(golds, grammar, self.grammar)
        if not one:
            preds = list(preds)
            if len(preds) != len(golds):
                raise InvalidInput(f"TrajectoryMetric.score_batch: {len(preds)} predictions but {len(golds)} golds; give one gold per prediction")
            return [self.score(p, q, grammar=grammar) for p, q in zip(preds, golds)]
        cmp = cached_comparer(self._comparers, g, self.canonicalizer)
        return [self._score(raw, mx) for raw, mx in
                trajectory_distances(preds, golds, scheme=self.scheme, comparer=cmp, shared=shared)]

    def aggregate_batch(self, preds: Sequence, golds: Sequence, *, grammar: Optional[GraphGrammar] = None,
                        shared: Optional[dict] = None) -> float:
        """``self.aggregate(self.score_batch(preds, golds))`` without a Score per pair (what
        :func:`~ek_agents.evaluate` uses): total raw distance / total maximum distance.

        >>> TrajectoryMetric().aggregate_batch([["a", "b"], ["a"]], [["a", "c"], ["a"]])
        0.3333333333333333
        """
        golds = golds if type(golds) is list else list(golds)
        one, g = batch_grammar(golds, grammar, self.grammar)
        if not one or not golds:
            return self.aggregate(self.score_batch(preds, golds, grammar=grammar, shared=shared))
        cmp = cached_comparer(self._comparers, g, self.canonicalizer)
        pairs = trajectory_distances(preds, golds, scheme=self.scheme, comparer=cmp, shared=shared)
        raw, mx = math.fsum(r for r, _ in pairs), math.fsum(m for _, m in pairs)
        return 0.0 if mx == 0 else min(1.0, raw / mx)

    def _score(self, raw: float, mx: float) -> Score:
        value = 0.0 if mx == 0 else min(1.0, max(0.0, raw / mx))
        return Score(value, {"distance": raw, "max_distance": mx, "scheme": self.scheme})

    def aggregate(self, scores: Sequence[Score]) -> float:
        """Corpus distance = total raw distance / total maximum distance (never a mean)."""
        raw, mx = detail_sums(scores, ("distance", "max_distance"), "TrajectoryMetric")
        return 0.0 if mx == 0 else min(1.0, raw / mx)

    def __repr__(self) -> str:
        return f"TrajectoryMetric(scheme={self.scheme!r})"
