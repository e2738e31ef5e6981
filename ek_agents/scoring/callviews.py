"""Reading tool calls (from an episode, a trajectory, a list of calls or of pairs), and calls
read once per batch: the grammar a batch of gold calls is scored under, the comparer
cached per grammar, and the pair views (each prediction's and gold's calls, read and keyed once)
that the tool-call and trajectory metrics share.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import chain
from operator import itemgetter
from typing import Any, Callable, Iterable, Optional

from ..base import Step, TaskSpec, Trajectory, as_call, is_episode
from ..core import GraphGrammar
from ..errors import InvalidInput
from .argmatch import CallComparer

__all__ = ["as_calls", "call_grammar", "cached_comparer", "PairViews", "pair_views", "batch_grammar"]

# --------------------------------------------------------------------------- reading calls

def as_calls(x: Any) -> list:
    """Read a list of ``(tool, args)`` calls from an Episode, a Trajectory, a TaskSpec (its
    gold), a mapping with key ``"calls"``, or a sequence of calls (anything :func:`as_call` reads).

    >>> as_calls({"calls": [("a", {"x": 1}), "b"]})
    [('a', {'x': 1}), ('b', {})]
    """
    if type(x) is list:  # the common case first (the isinstance chain below costs ~1 us)
        return [c if type(c) is tuple and len(c) == 2 and type(c[0]) is str else as_call(c) for c in x]
    if isinstance(x, TaskSpec):
        return as_calls(x.gold)
    if is_episode(x):
        return list(x.trajectory.calls)
    if isinstance(x, Trajectory):
        return list(x.calls)
    if isinstance(x, Mapping):
        if "calls" in x:
            return as_calls(x["calls"])
        if "trajectory" in x:
            return as_calls(x["trajectory"])
        raise InvalidInput(
            f"cannot read tool calls from a mapping with keys {sorted(map(str, x))}; give a list "
            "of calls or a mapping with key 'calls'"
        )
    if isinstance(x, Step):
        return [x.call]
    if isinstance(x, str):
        raise InvalidInput(
            f"cannot read tool calls from the string {x!r:.60} (a final answer?); give a list of "
            "calls such as [('search', {'q': 'cat'})] or ['search'], or a mapping with key 'calls'"
        )
    if x is None:
        raise InvalidInput("no tool calls given (None); give a list of calls (an empty list means 'no calls')")
    if isinstance(x, (list, tuple)):
        return [c if type(c) is tuple and len(c) == 2 and type(c[0]) is str else as_call(c) for c in x]
    if isinstance(x, Iterable):
        return [as_call(c) for c in x]
    raise InvalidInput(f"cannot read tool calls from {x!r:.80}; give a list of (tool, args) calls")

def call_grammar(gold: Any, *given: Optional[GraphGrammar]) -> Optional[GraphGrammar]:
    for g in given:
        if g is not None:
            return g
    if isinstance(gold, TaskSpec) and gold.tools:
        return gold.grammar()
    return None


def cached_comparer(cache: dict, grammar: Optional[GraphGrammar],
                  canonicalizer: Optional[Callable[[str], Any]]) -> CallComparer:
    """A metric's :class:`CallComparer` for ``grammar``, kept in ``cache`` (by grammar object)
    so that its per-tool and per-call caches survive from one ``score()`` to the next."""
    c = cache.get(id(grammar))
    if c is None:  # a cached comparer holds its grammar, so an id is never reused while cached
        if len(cache) > 64:
            cache.clear()
        c = cache[id(grammar)] = CallComparer(grammar, canonicalizer)
    return c


class PairViews:
    """The prepared calls (:meth:`CallComparer.pred` / :meth:`~CallComparer.gold` views) of a
    batch of ``(pred, gold)`` pairs, built **once per call** and shared by every metric that
    compares under the same grammar and canonicalizer (see :func:`pair_views`).

    ``pred[b]`` / ``gold[b]`` are the views of pair ``b`` (built on first use); ``comparer``
    built them. ``pred_unique`` / ``pred_index`` (and the gold ones) are the distinct views and
    each call's position among them, list after list; ``pred_lens`` / ``gold_lens`` the
    number of calls of each pair (see :meth:`CallComparer.prepare`).
    """

    __slots__ = ("comparer", "pred_unique", "pred_index", "pred_lens", "gold_unique", "gold_index",
                 "gold_lens", "_rows")

    def __init__(self, comparer: CallComparer, preds: Sequence, golds: Sequence) -> None:
        self.comparer = comparer
        p, g = _read_calls(preds), _read_calls(golds)
        self.pred_lens, self.gold_lens = [len(x) for x in p], [len(x) for x in g]
        self.pred_unique, self.pred_index = comparer.prepare(p)
        self.gold_unique, self.gold_index = comparer.prepare(g, gold=True)
        self._rows: dict = {}

    def _split(self, side: str) -> list:
        rows = self._rows.get(side)
        if rows is None:
            uniq, index, lens = ((self.pred_unique, self.pred_index, self.pred_lens) if side == "pred"
                                 else (self.gold_unique, self.gold_index, self.gold_lens))
            views = [uniq[i] for i in index]
            rows, s = [], 0
            for n in lens:
                rows.append(views[s:s + n])
                s += n
            self._rows[side] = rows
        return rows

    @property
    def pred(self) -> list:
        return self._split("pred")

    @property
    def gold(self) -> list:
        return self._split("gold")


def _read_calls(items: Sequence) -> list:
    """:func:`as_calls` of each item, once per distinct object (a task's gold repeats over trials).
    Lists that already hold only ``(str, args)`` tuples are returned as they are (checked in C)."""
    items = items if type(items) is list else list(items)
    if set(map(type, items)) <= {list}:
        calls = list(chain.from_iterable(items))
        if not calls or (set(map(type, calls)) == {tuple} and set(map(len, calls)) == {2}
                         and set(map(type, map(itemgetter(0), calls))) == {str}):
            return items
    seen: dict = {}
    out = []
    for x in items:
        calls = seen.get(id(x))
        if calls is None:
            calls = seen[id(x)] = as_calls(x)
        out.append(calls)
    return out


def pair_views(comparer: CallComparer, preds: Sequence, golds: Sequence,
               shared: Optional[dict] = None) -> PairViews:
    """:class:`PairViews` of ``preds``/``golds`` under ``comparer``; with ``shared`` (a dict
    one corpus evaluation passes to each metric) the views are built once per grammar and
    canonicalizer and reused by the next metric that asks for the same batch."""
    if shared is None:
        return PairViews(comparer, preds, golds)
    key = (id(preds), id(golds), id(comparer.grammar), id(comparer.canon))
    hit = shared.get(key)
    if hit is None or hit[0] is not preds or hit[1] is not golds:
        views = PairViews(comparer, preds, golds)
        shared[key] = (preds, golds, views)  # holds preds/golds: their ids stay valid
        return views
    return hit[2]


def batch_grammar(golds: Sequence, *given: Optional[GraphGrammar]) -> tuple[bool, Optional[GraphGrammar]]:
    """``(True, grammar)`` when every pair of a batch compares under one grammar (the given
    one, or none and no gold TaskSpec brings its own tools), else ``(False, None)``."""
    for g in given:
        if g is not None:
            return True, g
    if any(isinstance(x, TaskSpec) and x.tools for x in golds):
        return False, None
    return True, None
