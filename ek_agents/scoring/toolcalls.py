"""Tool-call correctness: BFCL-style AST matching over a *multiset* of calls.

Three layers:

1. **Argument equality** (:class:`~ek_agents.scoring.argmatch.CallComparer`): BFCL's typed AST rules
   and the gold vocabulary :class:`~ek_agents.scoring.argmatch.AnyOf` / :data:`~ek_agents.scoring.argmatch.OMITTED`
   / :data:`~ek_agents.scoring.argmatch.ANY` -- see :mod:`ek_agents.scoring.argmatch`.

2. **Assignment** (:func:`match_calls`): within a tool name, predicted calls are paired with
   gold calls by an **optimal** min-cost assignment (:func:`~ek_agents.scoring.assignment.min_cost_assignment`,
   a self-contained Hungarian solver), never pairing different tools.

3. **Scoring** (:class:`ToolCallMetric`): TP/FP/FN weighted by the grammar, micro-F1 aggregate.

With the C extension, :meth:`ToolCallMetric.score` reads an episode of plain calls in one C
call (:class:`~ek_agents.scoring.argmatch.CallClasses`: each distinct call prepared once per metric,
identical calls paired on their exact keys in C) and sends only the calls left over through
layers 1-2; the result is the one the prepared views give (a property test holds them equal).

The names of :mod:`ek_agents.scoring.argmatch` and :mod:`ek_agents.scoring.assignment` it uses are
re-exported here, so ``from ek_agents.scoring.toolcalls import AnyOf`` keeps working.

>>> m = ToolCallMetric()
>>> s = m.score([("get_weather", {"city": "Paris"}), ("get_weather", {"city": "Rome"})],
...             [("get_weather", {"city": "rome"}), ("get_weather", {"city": "PARIS"})])
>>> s.value, s.detail["tp"], s.detail["fp"]
(1.0, 2.0, 0.0)
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from itertools import chain
from typing import Any, Callable, Iterable, Optional

from ..core import GraphGrammar, Score, make_score
from ..errors import InvalidInput, UnknownName, did_you_mean
from .argmatch import ANY, OMITTED, AnyOf, CallClasses, CallComparer, standardize_string
from .assignment import min_cost_assignment
from .bfcl import CheckResult as CheckResult, bfcl_check as bfcl_check
from .callviews import as_calls as as_calls, batch_grammar, cached_comparer, call_grammar, pair_views

__all__ = [
    "AnyOf", "OMITTED", "ANY", "standardize_string", "as_calls", "CallComparer",
    "min_cost_assignment", "match_calls", "ToolCallMetric", "LEVELS", "bfcl_check", "CheckResult",
]

#: The levels of :class:`ToolCallMetric`.
LEVELS = ("call", "arg")

# --------------------------------------------------------------------------- matching calls

def calls_by_tool(views: list) -> dict[str, list[int]]:
    """Indices of prepared calls grouped by tool name (first-seen order)."""
    groups: dict = {}
    for i, v in enumerate(views):
        groups.setdefault(v.tool, []).append(i)
    return groups


class _Matcher:
    """Pairs two prepared call lists tool by tool, optimally: the most exact pairs, then the
    least argument mismatch (a lexicographic objective folded into one cost)."""

    def __init__(self, comparer: CallComparer, pv: list, gv: list) -> None:
        self.cmp, self.pv, self.gv = comparer, pv, gv
        self._mis: dict = {}

    def errors(self, i: int, j: int) -> list:
        k = (i, j)
        e = self._mis.get(k)
        if e is None:
            e = self._mis[k] = self.cmp.mismatch(self.pv[i], self.gv[j])
        return e

    def set_group(self, P: list, G: list) -> None:
        """Bound the group's total mismatch, so one inexact pair outweighs any mismatch sum."""
        cmp, tool = self.cmp, self.pv[P[0]].tool
        req = sum(cmp.arg_weight(tool, a) for a in cmp.required(tool))
        self._big = 1.0 + sum(cmp.pred_mass(self.pv[i]) + req for i in P) + sum(self.gv[j].mass for j in G) \
            + sum(cmp.arg_weight(tool, a) for j in G for a in self.gv[j].specs)

    def __call__(self, i: int, j: int) -> float:
        errs = self.errors(i, j)
        mis = math.fsum(w for _, _, w in errs)
        return (self._big if errs else 0.0) + mis

    def _assign(self, P: list, G: list) -> list[tuple[int, int]]:
        """Optimal pairs of indices within one tool group (exact-key pairs are taken first)."""
        # exact fast path: identical plain calls (an equivalence) are paired in index order; by the
        # triangle inequality of the argument-mismatch cost this never loses optimality.
        by_key: dict = {}
        for j in G:
            k = self.gv[j].key
            if k is not None:
                by_key.setdefault(k, []).append(j)
        pairs: list = []
        restP = []
        taken = set()
        for i in P:
            p = self.pv[i]
            bucket = by_key.get(p.key) if not p.own_errors else None
            if bucket:
                j = bucket.pop(0)
                taken.add(j)
                pairs.append((i, j))
            else:
                restP.append(i)
        restG = [j for j in G if j not in taken]
        if restP and restG:
            pairs.extend(self.assign_rest(restP, restG))
        return pairs

    def assign_rest(self, P: list, G: list) -> list[tuple[int, int]]:
        """Optimal pairs of the calls of one tool left after the exact-key pairs (both non-empty)."""
        self.set_group(P, G)
        matrix = [[self(i, j) for j in G] for i in P]
        return [(P[r], G[c]) for r, c in min_cost_assignment(matrix)]

    def assign_by_tool(self, P: Iterable[int], G: Iterable[int]) -> list[tuple[int, int]]:
        """:meth:`assign_rest` of the calls ``P`` / ``G`` (indices) left after the exact-key
        pairs, tool by tool: the pairs, sorted (in prediction order)."""
        by_tool: dict = {}
        for j in G:
            by_tool.setdefault(self.gv[j].tool, []).append(j)
        groups: dict = {}
        for i in P:
            t = self.pv[i].tool
            if t in by_tool:
                groups.setdefault(t, []).append(i)
        pairs: list = []
        for t, Pt in groups.items():
            pairs.extend(self.assign_rest(Pt, by_tool[t]))
        pairs.sort()
        return pairs

    def know_exact(self, pairs: Iterable[tuple[int, int]]) -> None:
        """Record ``pairs`` as pairs without a wrong argument (found equal on their exact keys)."""
        for pair in pairs:
            self._mis[pair] = []

    def run(self) -> tuple[list, list, list]:
        pv, gv = self.pv, self.gv
        if len(pv) == len(gv) and all(p.key == g.key and not p.own_errors for p, g in zip(pv, gv)):
            pairs = [(i, i) for i in range(len(pv))]  # identical plain calls in the same order
            self.know_exact(pairs)
            return pairs, [], []
        groups_g = calls_by_tool(gv)
        pairs: list = []
        for tool, P in calls_by_tool(pv).items():
            G = groups_g.get(tool)
            if G:
                pairs.extend(self._assign(P, G))
        pairs.sort()
        matched_p = {i for i, _ in pairs}
        matched_g = {j for _, j in pairs}
        up = [i for i in range(len(self.pv)) if i not in matched_p]
        ug = [j for j in range(len(self.gv)) if j not in matched_g]
        return pairs, up, ug


def match_calls(pred: Any, gold: Any, *, canon: Optional[Callable[[str], Any]] = None,
                grammar: Optional[GraphGrammar] = None) -> tuple[list, list, list]:
    """Assign predicted calls to gold calls -- the layer a field-level metric does not provide.

    Calls are grouped by tool name (a call to the *wrong tool* is never a match). Within a tool
    name the assignment is **optimal**: it maximizes the number of exactly matching pairs, then
    minimizes the weighted argument mismatch of the rest (a min-cost bipartite matching solved
    by :func:`min_cost_assignment`). So identical repeated calls are a multiset, a reordered
    (parallel) set still matches, and a strong pairing is never stolen by a weaker one.

    Deviation from the spec text, which describes a *greedy* best-first approximation: this
    is the full Hungarian assignment it says "could differ only on pathological many-to-many
    partial-overlap sets" -- those sets are scored correctly here. Ties between equally good
    assignments are broken deterministically (input order).

    ``canon`` replaces BFCL's string standardization; ``grammar`` supplies argument types and
    weights. Returns ``(pairs, unmatched_pred, unmatched_gold)``, ``pairs`` being
    ``(pred_call, gold_call)`` in prediction order.

    >>> pairs, up, ug = match_calls([("s", {"q": "b"}), ("s", {"q": "a"})],
    ...                             [("s", {"q": "a"}), ("s", {"q": "b"})])
    >>> len(pairs), up, ug  # order-insensitive within a tool name
    (2, [], [])
    """
    P, G = as_calls(pred), as_calls(gold)
    cmp = CallComparer(grammar, canon)
    pairs, up, ug = _Matcher(cmp, cmp.preds(P), cmp.golds(G)).run()
    return [(P[i], G[j]) for i, j in pairs], [P[i] for i in up], [G[j] for j in ug]


# --------------------------------------------------------------------------- the metric

_FN_KINDS = frozenset({"wrong_value", "missing", "missing_required"})


def _no_errors(i: int, j: int) -> list:
    return []


def _all_exact(tp: float, n: int) -> Score:
    """The call-level score of ``n`` predicted calls each paired exactly (``tp`` their weight)."""
    return make_score(_f1(tp, 0.0, 0.0), {
        "tp": tp, "fp": 0.0, "fn": 0.0, "level": "call", "n_pred": n, "n_gold": n, "n_exact": n,
        "n_unmatched_pred": 0, "n_unmatched_gold": 0})


def detail_sums(scores: Sequence[Score], keys: tuple, who: str) -> list[float]:
    """Exact sums of ``detail[key]`` over a non-empty corpus of scores (for ratio-of-sums aggregates)."""
    scores = list(scores)
    if not scores:
        raise InvalidInput(f"{who}.aggregate: no scores given; an aggregate of nothing is undefined")
    try:
        return [math.fsum(s.detail[k] for s in scores) for k in keys]
    except KeyError as exc:
        raise InvalidInput(f"{who}.aggregate: a score lacks detail[{exc.args[0]!r}]; give scores made by {who}.score") from None


def _f1(tp: float, fp: float, fn: float) -> float:
    denom = 2.0 * tp + fp + fn
    return 1.0 if denom == 0 else 2.0 * tp / denom


class ToolCallMetric:
    """Tool-call correctness (BFCL AST match) as a cost-weighted Metric.

    ``level="call"`` scores whole calls: a call is a TP (weight ``node_cost(tool)``) only on an
    exact match; a matched call with any wrong argument is one FP plus one FN; an unmatched
    predicted call is an FP (extra calls are penalised) and an unmatched gold call an FN.
    ``level="arg"`` gives partial credit: a matched pair earns its tool name (``node_cost``) and
    each argument weighs ``node_cost * field_cost`` (right: TP; wrong value: FP + FN; supplied
    but not expected / undeclared: FP; expected or required but missing: FN); an unmatched call
    counts its name and all its arguments.

    ``Score.value`` is the episode's F1 (1.0 when both sides are empty); ``detail`` holds
    ``tp``/``fp``/``fn`` so :meth:`aggregate` is a **micro** F1 (sum, then divide).
    ``canonicalizer`` replaces BFCL's string standardization; ``grammar`` (or the per-call
    ``grammar=``, or the gold TaskSpec's tools) supplies types and weights.

    >>> m = ToolCallMetric()
    >>> m.score([("a", {}), ("b", {})], [("a", {}), ("b", {})]).value
    1.0
    >>> round(m.score([("a", {})], [("a", {}), ("b", {})]).value, 3)  # expected [A, B], only A made
    0.667
    """

    higher_is_better = True

    def __init__(self, level: str = "call", *, canonicalizer: Optional[Callable[[str], Any]] = None,
                 grammar: Optional[GraphGrammar] = None) -> None:
        if level not in LEVELS:
            raise UnknownName(f"unknown ToolCallMetric level {level!r}{did_you_mean(str(level), LEVELS)} (one of {LEVELS})")
        self.level = level
        self.canonicalizer = canonicalizer
        self.grammar = grammar
        self.name = "tool_call" if level == "call" else "tool_call_arg"
        self._comparers: dict = {}

    def score(self, pred: Any, gold: Any, *, grammar: Optional[GraphGrammar] = None) -> Score:
        cmp = cached_comparer(self._comparers, call_grammar(gold, grammar, self.grammar), self.canonicalizer)
        return self._score(cmp, pred, gold)

    def _score(self, cmp: CallComparer, pred: Any, gold: Any) -> Score:
        classes = cmp.classes()
        if classes is not None:  # plain calls: classified in C, each class prepared once
            sums = self.level == "call"
            coded = classes.read(pred, gold, sums) if type(pred) is list and type(gold) is list else None
            if coded is None:
                pred, gold = as_calls(pred), as_calls(gold)
                coded = classes.read(pred, gold, sums)
            if type(coded) is float:  # every call an exact match, in order; coded: their weight
                return _all_exact(coded, len(pred))
            if coded is None:
                return self._score_views(cmp, cmp.preds(pred), cmp.golds(gold))
            if len(coded) == 5:  # exact-key pairs made in C
                score = self._score_paired(classes, *coded)
                if score is not None:
                    return score
                cp, cg = coded[:2]
                coded = (cp, cg, [classes.pkey[c] for c in cp], [classes.gkey[c] for c in cg])
            return self._score_coded(classes, *coded)
        return self._score_views(cmp, cmp.preds(as_calls(pred)), cmp.golds(as_calls(gold)))

    def score_batch(self, preds: Sequence, golds: Sequence, *, grammar: Optional[GraphGrammar] = None,
                    shared: Optional[dict] = None) -> list[Score]:
        """``[self.score(p, g) for p, g in zip(preds, golds)]``: with the C extension just that
        (each class of call is prepared once per metric); without it each call's view is built
        once for the batch (and, with ``shared``, shared with the other metrics of one corpus
        evaluation)."""
        preds = preds if type(preds) is list else list(preds)  # kept: shared views are found by identity
        golds = golds if type(golds) is list else list(golds)
        if len(preds) != len(golds):
            raise InvalidInput(f"ToolCallMetric.score_batch: {len(preds)} predictions but {len(golds)} golds; give one gold per prediction")
        one, g = batch_grammar(golds, grammar, self.grammar)
        if not one:
            return [self.score(p, q, grammar=grammar) for p, q in zip(preds, golds)]
        cmp = cached_comparer(self._comparers, g, self.canonicalizer)
        if cmp.classes() is not None:  # pair by pair through the C classes: cheaper than any view
            return [self._score(cmp, p, q) for p, q in zip(preds, golds)]
        views = pair_views(cmp, preds, golds, shared)
        return [self._score_views(cmp, pv, gv) for pv, gv in zip(views.pred, views.gold)]

    def _score_views(self, cmp: CallComparer, pv: list, gv: list) -> Score:
        matcher = _Matcher(cmp, pv, gv)
        pairs, up, ug = matcher.run()
        return self._tally(cmp, pv, gv, pairs, matcher.errors, up, ug)

    def _score_paired(self, classes: CallClasses, cp: tuple, cg: tuple, tp: float, rest: tuple,
                      left: tuple) -> Optional[Score]:
        """The call-level :meth:`_score_views` of one episode whose exact-key pairs were made
        in C (:meth:`CallClasses.read`: ``tp`` their weight, ``rest`` / ``left`` the calls left
        unpaired): what is left is assigned tool by tool as :meth:`_Matcher.run` does, on the
        views of those calls only. None (take :meth:`_score_coded`) in the case this sum does
        not cover: an assigned pair without a wrong argument (never with plain calls)."""
        pview, gview = classes.pview, classes.gview
        fp = fn = 0.0
        up, ug = rest, left
        if len(rest) == 1 and len(left) == 1:  # one call each left (a wrong argument?): by classes
            pc, gc = cp[rest[0]], cg[left[0]]
            if pview[pc].tool == gview[gc].tool:
                errs = classes.pairs.get((pc, gc))
                if errs is None:
                    matcher = _Matcher(classes.comparer, [pview[pc]], [gview[gc]])
                    matcher.assign_rest([0], [0])  # as _Matcher.run prices it (a cost must be finite)
                    errs = classes.pairs[pc, gc] = matcher.errors(0, 0)
                if not errs:
                    return None
                w = pview[pc].weight
                fp += w
                fn += w
                up = ug = ()
        elif rest and left:
            pv = [pview[cp[i]] for i in rest]
            matcher = _Matcher(classes.comparer, pv, [gview[cg[j]] for j in left])
            pairs = matcher.assign_by_tool(range(len(rest)), range(len(left)))
            if pairs:
                for r, c in pairs:  # in prediction order, as _tally adds them
                    if not matcher.errors(r, c):
                        return None
                    w = pv[r].weight
                    fp += w
                    fn += w
                done_p = {r for r, _ in pairs}
                done_g = {c for _, c in pairs}
                up = [rest[r] for r in range(len(rest)) if r not in done_p]
                ug = [left[c] for c in range(len(left)) if c not in done_g]
        fp += sum([pview[cp[i]].weight for i in up])
        fn += sum([gview[cg[j]].weight for j in ug])
        n = len(cp)
        return make_score(_f1(tp, fp, fn), {
            "tp": tp, "fp": fp, "fn": fn, "level": "call", "n_pred": n, "n_gold": len(cg),
            "n_exact": n - len(rest), "n_unmatched_pred": len(up), "n_unmatched_gold": len(ug)})

    def _score_coded(self, classes: CallClasses, cp: tuple, cg: tuple, kp: list, kg: list) -> Score:
        """:meth:`_score_views` of one episode read by :meth:`CallClasses.read`: the same pairs
        (:meth:`_Matcher.run`'s, found on the calls' exact keys; views only for what is left)."""
        pview = classes.pview
        if kp == kg:  # the same exact keys in the same order (the common, all-exact episode)
            if self.level == "call":
                tp = 0.0
                for c in cp:
                    tp += pview[c].weight
                return _all_exact(tp, len(cp))
            pairs = [(i, i) for i in range(len(cp))]
            up = ug = []
        else:  # pair equal exact keys in prediction order, each with its first free gold call
            buckets: dict = {}
            for j, k in enumerate(kg):
                b = buckets.get(k)
                if b is None:
                    buckets[k] = [j]
                else:
                    b.append(j)
            pairs, rest = [], []
            for i, k in enumerate(kp):
                b = buckets.get(k)
                if b:
                    pairs.append((i, b.pop(0)))
                else:
                    rest.append(i)
            left = sorted(chain.from_iterable(buckets.values()))
            if rest and left:  # the calls left: the optimal assignment, tool by tool
                pv, gv = [pview[c] for c in cp], [classes.gview[c] for c in cg]
                matcher = _Matcher(classes.comparer, pv, gv)
                assigned = matcher.assign_by_tool(rest, left)
                if assigned:
                    matcher.know_exact(pairs)  # no wrong argument (as mismatch() finds)
                    pairs = sorted(pairs + assigned)
                    matched = {j for _, j in pairs}
                    ug = [j for j in left if j not in matched]
                    matched = {i for i, _ in pairs}
                    up = [i for i in rest if i not in matched]
                    return self._tally(classes.comparer, pv, gv, pairs, matcher.errors, up, ug)
            up, ug = rest, left
        pv, gv = [pview[c] for c in cp], [classes.gview[c] for c in cg]
        return self._tally(classes.comparer, pv, gv, pairs, _no_errors, up, ug)

    def _tally(self, cmp: CallComparer, pv: list, gv: list, pairs: list, errors: Callable[[int, int], list],
               up: list, ug: list) -> Score:
        """The Score of matched ``pairs`` (``errors(i, j)``: their wrong arguments) and unmatched calls."""
        tp = fp = fn = 0.0
        n_exact = 0
        if self.level == "call":
            for i, j in pairs:
                w = pv[i].weight
                if errors(i, j):
                    fp += w
                    fn += w
                else:
                    tp += w
                    n_exact += 1
            fp += sum(pv[i].weight for i in up)
            fn += sum(gv[j].weight for j in ug)
        else:
            for i, j in pairs:
                p, g = pv[i], gv[j]
                errs = errors(i, j)
                n_exact += not errs
                wrong = {}
                for a, kind, w in errs:
                    wrong.setdefault(a, set()).add(kind)
                tp += p.weight  # the right tool was called
                for a in set(p.keys) | set(g.specs) | set(wrong):
                    kinds = wrong.get(a)
                    w = cmp.arg_weight(p.tool, a)
                    if not kinds:
                        tp += w if a in p.keys else 0.0  # absent and allowed to be: not counted
                        continue
                    if a in p.keys:
                        fp += w
                    if kinds & _FN_KINDS or ("undeclared" in kinds and a in g.specs and not g.specs[a][1]):
                        fn += w
            fp += sum(cmp.pred_mass(pv[i]) for i in up)
            fn += sum(gv[j].mass for j in ug)
        detail = {"tp": tp, "fp": fp, "fn": fn, "level": self.level, "n_pred": len(pv),
                  "n_gold": len(gv), "n_exact": n_exact, "n_unmatched_pred": len(up),
                  "n_unmatched_gold": len(ug)}
        return make_score(_f1(tp, fp, fn), detail)

    def aggregate(self, scores: Sequence[Score]) -> float:
        """Micro-averaged F1 over the corpus (sum TP/FP/FN, then divide) -- never a mean."""
        return _f1(*detail_sums(scores, ("tp", "fp", "fn"), "ToolCallMetric"))

    def __repr__(self) -> str:
        return f"ToolCallMetric(level={self.level!r})"
