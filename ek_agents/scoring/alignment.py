"""Per-pair trajectory alignments: the price of matching two calls, the in-order (Needleman-Wunsch)
alignment with its common prefix and suffix trimmed, the any-order pairing, superset / subset
coverage, and each scheme's maximum (the normalizer).
"""
from __future__ import annotations

import math
from collections import Counter
from functools import partial
from typing import Any, Callable, Optional

from .argmatch import CallComparer
from .assignment import min_cost_assignment
from .toolcalls import calls_by_tool

__all__ = ["sub_cost", "call_price", "exact_match", "in_order_distance", "PriceMemo", "in_order_max",
           "any_order_distance", "any_order_max", "covered_distance", "pair_distance"]

def sub_cost(cmp: CallComparer, p: Any, g: Any) -> float:
    """Cost of aligning predicted ``p`` with gold ``g``: a call to another tool is a wrong call
    (``max`` of the two call weights); the right tool with wrong arguments costs the call weight
    times the weighted fraction of its arguments that are wrong (so never more than a wrong call)."""
    if p.tool != g.tool:
        return p.weight if p.weight >= g.weight else g.weight
    return call_price(cmp, p, g)[0]


def call_price(cmp: CallComparer, p: Any, g: Any) -> tuple[float, bool]:
    """``(sub_cost(cmp, p, g), exact_match(cmp, p, g))`` of two calls to the same tool, one mismatch."""
    errs = cmp.mismatch(p, g)
    if not errs:
        return 0.0, True
    total = cmp.considered_weight(p, g, errs)
    wrong = math.fsum(w for _, _, w in errs)
    return (p.weight if total <= 0 else p.weight * min(1.0, wrong / total)), False


def exact_match(cmp: CallComparer, p: Any, g: Any) -> bool:
    return p.tool == g.tool and not cmp.mismatch(p, g)


def in_order_distance(cmp: CallComparer, pv: list, gv: list,
              price: Optional[Callable[[Any, Any], tuple[float, bool]]] = None) -> float:
    """Needleman-Wunsch over the calls (gaps cost the call weight), common ends trimmed first.
    ``price(p, g)`` is :func:`call_price` of two calls to the same tool (a batch passes a memo)."""
    if price is None:
        price = partial(call_price, cmp)
    lo = 0
    hi_p, hi_g = len(pv), len(gv)
    while lo < hi_p and lo < hi_g and pv[lo].tool == gv[lo].tool and price(pv[lo], gv[lo])[1]:  # common prefix
        lo += 1                                                                                  # is free
    while hi_p > lo and hi_g > lo and pv[hi_p - 1].tool == gv[hi_g - 1].tool \
            and price(pv[hi_p - 1], gv[hi_g - 1])[1]:  # and suffix
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
            if p.tool != g.tool:  # a wrong call: the larger weight (as sub_cost)
                best = prev[j] + (a if a >= wg[j] else wg[j])
            else:
                best = prev[j] + price(p, g)[0]
            d = prev[j + 1] + a
            if d < best:
                best = d
            d = cur[j] + wg[j]
            if d < best:
                best = d
            cur.append(best)
        prev = cur
    return prev[-1]


class PriceMemo:
    """:func:`call_price` of each (pred view, gold view) pair once per batch (views are shared
    objects there, so a pair is known by the two ids; the memo holds the views alive)."""

    __slots__ = ("cmp", "seen")

    def __init__(self, cmp: CallComparer) -> None:
        self.cmp = cmp
        self.seen: dict = {}

    def __call__(self, p: Any, g: Any) -> tuple[float, bool]:
        key = (id(p), id(g))
        hit = self.seen.get(key)
        if hit is None:
            hit = self.seen[key] = (call_price(self.cmp, p, g), p, g)
        return hit[0]


def in_order_max(wp: list, wg: list) -> float:
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


def any_order_distance(cmp: CallComparer, pv: list, gv: list) -> float:
    if not any(p.own_errors for p in pv) and all(g.key is not None for g in gv) and \
            Counter(p.key for p in pv) == Counter(g.key for g in gv):
        return 0.0  # the same multiset of calls: a perfect pairing exists
    if not pv or not gv:
        return math.fsum(c.weight for c in pv or gv)
    # total = (all calls unpaired) + sum over pairs of (pair cost - the two weights it saves);
    # each such saving is <= 0, so a largest assignment on the savings is optimal
    cost = [[sub_cost(cmp, p, g) - p.weight - g.weight for g in gv] for p in pv]
    pairs = min_cost_assignment(cost)
    return math.fsum([p.weight for p in pv] + [g.weight for g in gv] + [cost[i][j] for i, j in pairs])


def any_order_max(wp: list, wg: list) -> float:
    """Every call wrong: pair the heaviest with the heaviest (maximizes the saved min weights)."""
    a, b = sorted(wp, reverse=True), sorted(wg, reverse=True)
    return math.fsum(wp) + math.fsum(wg) - math.fsum(min(x, y) for x, y in zip(a, b))


def covered_distance(cmp: CallComparer, pv: list, gv: list, *, pay_pred: bool) -> float:
    """superset (``pay_pred=False``: uncovered gold calls cost) / subset (uncovered predicted
    calls cost): optimal pairing within each tool; a pair costs its argument mismatch."""
    by_p, by_g = calls_by_tool(pv), calls_by_tool(gv)
    parts: list = []
    for tool in set(by_p) | set(by_g):
        P, G = by_p.get(tool, []), by_g.get(tool, [])
        paired: set = set()  # positions in P (pay_pred) or G left out of the unpaired charge
        if P and G:
            cost = [[sub_cost(cmp, pv[i], gv[j]) for j in G] for i in P]
            pairs = min_cost_assignment(cost)
            parts.extend(cost[r][c] for r, c in pairs)
            paired = {r if pay_pred else c for r, c in pairs}
        left, views = (P, pv) if pay_pred else (G, gv)
        parts.extend(views[k].weight for n, k in enumerate(left) if n not in paired)
    return math.fsum(parts)

def pair_distance(cmp: CallComparer, scheme: str, pv: list, gv: list) -> tuple[float, float]:
    """``(raw, max)`` of one pair of prepared call lists (the body of :func:`trajectory_distance`)."""
    wp = [p.weight for p in pv]
    wg = [g.weight for g in gv]
    if scheme == "in_order":
        return in_order_distance(cmp, pv, gv), in_order_max(wp, wg)
    if scheme == "exact":
        mx = in_order_max(wp, wg)
        same = len(pv) == len(gv) and all(exact_match(cmp, p, g) for p, g in zip(pv, gv))
        return (0.0 if same else mx), mx
    if scheme == "any_order":
        return any_order_distance(cmp, pv, gv), any_order_max(wp, wg)
    if scheme == "superset":
        return covered_distance(cmp, pv, gv, pay_pred=False), math.fsum(wg)
    return covered_distance(cmp, pv, gv, pay_pred=True), math.fsum(wp)  # subset
