"""Argument equality under BFCL's AST rules: the gold vocabulary and :class:`CallComparer`.

Arguments are typed by the tool's :class:`~ek_agents.core.FieldSpec` (looked up with
``grammar.field(tool, arg)``):

- strings compare after BFCL's standardization (:func:`standardize_string`: lower-case;
  spaces and ``, . / - _ * ^`` removed; ``'`` read as ``"``) unless a canonicalizer is given;
- an ``int`` is accepted for a ``number`` / ``float`` parameter (``2`` matches ``2.0``), a
  ``float`` is **not** accepted for an ``integer`` one; a bool is never a number; a string
  is never a number (``2`` vs ``"2"`` differ);
- lists compare element by element (order matters); dicts key by key;
- an undeclared type (``any``, or no ToolSpec) is read from the values themselves;
- numbers compare exactly; arguments a bridge could not parse (a raw string) never match.

(The spec page defaults the string rule to ek's canonicalizer; following the issue, the
default here is BFCL's standardization -- pass ``canonicalizer=canonicalize`` for the other.)

A gold argument may be :class:`AnyOf` several acceptable values; :data:`OMITTED` among them
means "may be left out" (alone, it means "must be left out"), and :data:`ANY` accepts any
supplied value. A call that lacks a parameter its ToolSpec marks ``required`` is wrong even
when the gold is silent about it; an argument the ToolSpec does not declare is wrong (only
when the grammar declares the tool); an argument the gold does not mention is wrong (BFCL's
``unexpected_param``: write ``AnyOf(ANY, OMITTED)`` to allow anything).

>>> c = CallComparer()
>>> c.mismatch(c.pred(("f", {"city": "New York", "n": 2})), c.gold(("f", {"city": "new-york", "n": 2.0})))
[]

The gold vocabulary and the typed keys of argument values are :mod:`.argvalues`.
"""
from __future__ import annotations

import math
from itertools import chain
from typing import Any, Callable, Optional

from . import callcodes
from ..core import GraphGrammar
from ..errors import InvalidInput
from .argvalues import ANY as ANY, OMITTED as OMITTED, AnyOf as AnyOf  # the gold vocabulary, re-exported
from .argvalues import (SCALAR_TYPES, alternatives, args_of, has_marker, standardize_string,
                        value_key)

__all__ = ["AnyOf", "OMITTED", "ANY", "standardize_string", "CallComparer", "CallClasses"]

_EMPTY_GRAMMAR = GraphGrammar()

# --------------------------------------------------------------------------- comparing calls

class _PredView:
    __slots__ = ("tool", "keys", "weight", "own_errors", "key")

    def __init__(self, tool, keys, weight, own_errors):
        self.tool, self.keys, self.weight, self.own_errors = tool, keys, weight, own_errors
        # the whole-call key: equal keys + no own errors => an exact match of two plain calls
        self.key = (tool, frozenset(keys.items()))


class _GoldView:
    __slots__ = ("tool", "specs", "weight", "key", "mass")

    def __init__(self, tool, specs, weight, key, mass):
        self.tool, self.specs, self.weight, self.key, self.mass = tool, specs, weight, key, mass


_CACHE_SIZE = 100_000
_CACHE_PROBE = 2_000


def signature(call: tuple) -> Any:
    """A hashable, type-exact signature of a call (None when an argument is not a plain scalar):
    the tool, the argument items and their types (``1``, ``1.0`` and ``True`` are equal in
    Python, not under the typed rules), built in C. Only ``str``/``int``/``float``/``bool``/
    ``None`` values qualify: a tuple ``(1,)`` equals ``(1.0,)`` and hashes alike, but an
    ``integer`` array tells them apart."""
    args = call[1]
    if type(args) is not dict:
        return None
    types = tuple(map(type, args.values()))
    if not SCALAR_TYPES.issuperset(types):
        return None
    return (call[0], tuple(args.items()), types)


class CallComparer:
    """Compares calls under one grammar and one string canonicalizer (cached per tool).

    ``mismatch(p, g)`` lists the wrong arguments of a predicted call ``p`` against a gold call
    ``g`` of the same tool, each with its weight ``node_cost(tool) * field_cost(tool, arg)``:
    a wrong argument to a destructive tool (call weight 10) costs 10, not 1.
    """

    def __init__(self, grammar: Optional[GraphGrammar] = None,
                 canonicalizer: Optional[Callable[[str], Any]] = None) -> None:
        self.grammar = grammar if grammar is not None else _EMPTY_GRAMMAR
        self.canon = canonicalizer if canonicalizer is not None else standardize_string
        self._tools: dict = {}
        self._cache: dict = {}
        self._preds: dict = {}
        self._golds: dict = {}
        self._pred_stats = [0, 0, 0]  # lookups, hits, bypassed
        self._gold_stats = [0, 0, 0]
        self._classes: Optional[CallClasses] = None

    def _tool(self, tool: str) -> tuple:
        info = self._tools.get(tool)
        if info is None:
            g = self.grammar
            nt = g.nodes.get(tool)
            w = g.node_cost(tool)
            if nt is None:
                info = (w, None, {}, (), g.default)
            else:
                fields = {n: (f.type, f.items, w * float(f.importance)) for n, f in nt.fields.items()}
                req = tuple(n for n, f in nt.fields.items() if f.required)
                info = (w, nt, fields, req, g.default)
            self._tools[tool] = info
        return info

    def weight(self, tool: str) -> float:
        """The call weight of ``tool`` under this comparer's grammar (``node_cost``)."""
        return self._tool(tool)[0]

    def required(self, tool: str) -> tuple:
        """The names of ``tool``'s required arguments under this comparer's grammar (none for
        a tool the grammar does not declare)."""
        return self._tool(tool)[3]

    def _canon(self, s: str) -> Any:
        c = self._cache.get(s)
        if c is None:
            if len(self._cache) > _CACHE_SIZE:
                self._cache.clear()
            c = self._cache[s] = self.canon(s)
        return c

    def pred(self, call: tuple) -> _PredView:
        """Prepare a predicted call (cached by content while repeats are common)."""
        return self._cached((call,), self._preds, self._pred_stats, self._pred)[0]

    def gold(self, call: tuple) -> _GoldView:
        """Prepare a gold call (its arguments may hold AnyOf / OMITTED / ANY); cached likewise."""
        return self._cached((call,), self._golds, self._gold_stats, self._gold)[0]

    def preds(self, calls: Any) -> list:
        """``[self.pred(c) for c in calls]``, in one loop (what a per-episode score uses)."""
        return self._cached(calls, self._preds, self._pred_stats, self._pred)

    def golds(self, calls: Any) -> list:
        """``[self.gold(c) for c in calls]``, in one loop."""
        return self._cached(calls, self._golds, self._gold_stats, self._gold)

    def prepare(self, lists: Any, *, gold: bool = False) -> tuple[list, list]:
        """Many call lists at once: ``(unique views, index)``, ``index`` giving each call's
        position in ``unique`` (list after list). Each distinct call is prepared once: calls are
        told apart by a type-exact signature (the tool, the argument items and their types; as
        :func:`signature`); a call whose arguments are not all plain scalars (a tuple ``(1,)``
        equals ``(1.0,)``), not hashable, or not a dict is prepared on its own."""
        make = self.gold if gold else self.pred
        lists = list(lists)
        rows = {id(r): r for r in lists}  # a list given several times (a task's gold over k trials)
        if len(rows) < len(lists):        # is read once
            uniq, sub = self.prepare(list(rows.values()), gold=gold)
            spans, s = {}, 0
            for key, row in rows.items():
                spans[key] = (s, s + len(row))
                s += len(row)
            index: list = []
            for row in lists:
                a, b = spans[id(row)]
                index.extend(sub[a:b])
            return uniq, index
        calls = list(chain.from_iterable(lists))
        memo: dict = {}
        try:  # signature(c) inline: this comprehension is the per-call cost of a batch (each key
            # tuple is dropped at once unless it is new: no garbage for the collector to walk)
            index = [memo.setdefault((c[0], tuple(c[1].items()), tuple(map(type, c[1].values()))), len(memo))
                     for c in calls]
        except (TypeError, AttributeError):  # unhashable values, or arguments that are not a dict
            index = [i for i, _ in enumerate(calls)]
            memo = {i: i for i in index}
            alone = set(index)
        else:  # a group whose values are not all plain scalars may hold (1,) beside (1.0,): split it
            alone = {i for k, i in memo.items() if not SCALAR_TYPES.issuperset(k[2])}
        first = dict(zip(reversed(index), range(len(index) - 1, -1, -1)))  # first call of each group
        uniq = [None if i in alone else make(calls[first[i]]) for i in range(len(memo))]
        if alone:  # each of their calls on its own (through the comparer's cache, which refuses them too)
            for n, i in enumerate(index):
                if i in alone:
                    index[n] = len(uniq)
                    uniq.append(make(calls[n]))
            keep = [i for i, v in enumerate(uniq) if v is not None]
            renum = {old: new for new, old in enumerate(keep)}
            uniq = [uniq[i] for i in keep]
            index = [renum[i] for i in index]
        return uniq, index

    @staticmethod
    def _cached(calls: Any, cache: dict, stats: list, make: Callable[[tuple], Any]) -> list:
        """The views of ``calls``, each looked up by its :func:`signature` (inline: this loop is
        the per-call cost of scoring an episode) while repeats are common enough."""
        out = []
        for call in calls:
            if stats[0] >= _CACHE_PROBE and stats[1] * 5 < stats[0]:
                stats[2] += 1  # under 20% repeats: caching costs more than it saves; probe again later
                if stats[2] > 25 * _CACHE_PROBE:
                    stats[:] = [0, 0, 0]
                out.append(make(call))
                continue
            args = call[1]
            if type(args) is not dict:
                out.append(make(call))
                continue
            types = tuple(map(type, args.values()))
            if not SCALAR_TYPES.issuperset(types):
                out.append(make(call))
                continue
            sig = (call[0], tuple(args.items()), types)
            stats[0] += 1
            view = cache.get(sig)
            if view is None:
                if len(cache) > _CACHE_SIZE:
                    cache.clear()
                    stats[0] = stats[1] = 0
                view = cache[sig] = make(call)
            else:
                stats[1] += 1
            out.append(view)
        return out

    def _pred(self, call: tuple) -> _PredView:
        tool = call[0]
        args = args_of(call)
        w, nt, fields, req, default = self._tool(tool)
        keys = {}
        own: list = []
        for a, v in args.items():
            f = fields.get(a)
            if f is None:
                keys[a] = value_key(v, None, self._canon)
                if nt is not None:
                    own.append((a, "undeclared", w * default))
            else:
                keys[a] = value_key(v, f[0], self._canon, f[1])
        for a in req:
            if a not in args:
                own.append((a, "missing_required", fields[a][2]))
        return _PredView(tool, keys, w, tuple(own))

    def _gold(self, call: tuple) -> _GoldView:
        tool = call[0]
        args = args_of(call)
        w, nt, fields, req, default = self._tool(tool)
        specs = {}
        plain = True
        mass = w
        for a, v in args.items():
            f = fields.get(a)
            t, items, aw = (f if f is not None else (None, None, w * default))
            if has_marker(v):
                plain = False
                specs[a] = alternatives(v, t, self._canon, items)
                if not specs[a][1]:
                    mass += aw
            else:
                specs[a] = (frozenset((value_key(v, t, self._canon, items),)), False, False)
                mass += aw
        key = (tool, frozenset((a, next(iter(s[0]))) for a, s in specs.items())) if plain else None
        return _GoldView(tool, specs, w, key, mass)

    def arg_weight(self, tool: str, arg: str) -> float:
        w, nt, fields, req, default = self._tool(tool)
        f = fields.get(arg)
        return f[2] if f is not None else w * default

    def considered_weight(self, p: _PredView, g: _GoldView, errors: list) -> float:
        """Total weight of the arguments a pair is judged on: the prediction's, the gold's
        non-omittable ones, and any required one (the denominator of a mismatch fraction)."""
        names = set(p.keys)
        names.update(a for a, s in g.specs.items() if not s[1])
        names.update(a for a, _, _ in errors)
        return math.fsum(self.arg_weight(p.tool, a) for a in names)

    def mismatch(self, p: _PredView, g: _GoldView) -> list:
        """The wrong arguments ``[(arg, kind, weight)]`` of ``p`` against ``g`` (same tool).

        kinds: ``wrong_value``, ``unexpected`` (gold does not mention it), ``missing`` (gold
        requires it), ``missing_required`` (the ToolSpec requires it), ``undeclared``.
        """
        if p.tool != g.tool:
            raise InvalidInput(f"cannot compare a call to {p.tool!r} with a call to {g.tool!r}")
        if g.key is not None and p.key == g.key:
            return list(p.own_errors)
        errs = list(p.own_errors)
        flagged = {a for a, _, _ in errs}
        for a, k in p.keys.items():
            if a in flagged:
                continue
            spec = g.specs.get(a)
            if spec is None:
                errs.append((a, "unexpected", self.arg_weight(p.tool, a)))
            elif not (spec[2] or k in spec[0]):
                errs.append((a, "wrong_value", self.arg_weight(p.tool, a)))
        for a, spec in g.specs.items():
            if a not in p.keys and a not in flagged and not spec[1]:
                errs.append((a, "missing", self.arg_weight(p.tool, a)))
        return errs

    def pred_mass(self, p: _PredView) -> float:
        """Weight of a predicted call counted whole (call + its arguments)."""
        return p.weight + sum(self.arg_weight(p.tool, a) for a in p.keys)

    def classes(self) -> Optional["CallClasses"]:
        """This comparer's :class:`CallClasses` (made on first use), or None without the C
        extension (:data:`ek_agents.scoring.callcodes.CallTable`)."""
        if callcodes.CallTable is None:
            return None
        c = self._classes
        if c is None:
            c = self._classes = CallClasses(self)
        return c


#: Keys (:meth:`CallClasses.read`) of a predicted call with its own errors / a gold call with markers.
PRED_NOT_EXACT = -1
GOLD_NOT_EXACT = -2


class CallClasses:
    """The calls a :class:`CallComparer` has seen, by *class* (same tool, equal arguments of
    the same types; :data:`ek_agents.scoring.callcodes.CallTable`, in C), each class prepared once per
    side it appears on.

    Each class gets an *exact key* per side: an int, equal for a predicted and a gold call of
    plain arguments iff :meth:`CallComparer.mismatch` finds no error between them (``1`` and
    ``1.0`` for a ``number`` parameter, or two strings equal after canonicalization, share a
    key though not a class). A predicted call with errors of its own (an undeclared or a
    missing required argument) has the key :data:`PRED_NOT_EXACT`, a gold call with markers
    :data:`GOLD_NOT_EXACT` (neither ever matches). ``pview[c]`` / ``gview[c]`` are the prepared
    calls (:meth:`CallComparer.pred` / :meth:`~CallComparer.gold`) of class ``c``, ``pkey[c]``
    / ``gkey[c]`` their keys (None until prepared). ``pairs`` is a dict a caller may keep
    results per pair of classes in (cleared with the classes).
    """

    __slots__ = ("comparer", "table", "pview", "gview", "pkey", "gkey", "keys", "pairs", "probe")

    def __init__(self, comparer: CallComparer) -> None:
        self.comparer = comparer
        self.table = callcodes.CallTable()
        self.pview: list = []
        self.gview: list = []
        self.pkey: list = []
        self.gkey: list = []
        self.keys: dict = {}
        self.pairs: dict = {}
        self.probe = [0, 0, 0]  # calls read, new classes among them, episodes left to pass by

    def clear(self) -> None:
        """Forget every class (bounded: :meth:`read` clears past 100k classes or pairs)."""
        self.table.clear()
        self.pview, self.gview, self.pkey, self.gkey = [], [], [], []
        self.keys = {}
        self.pairs = {}

    def read(self, pred: Any, gold: Any, sums: bool = True) -> Any:
        """One episode's two lists of plain calls: ``None`` when a call is not plain (see
        :mod:`ek_agents.scoring.callcodes`), or while most calls lately were new (over a third of 2,000
        read: then the next 2,000 episodes) -- the caller then takes the general path; with ``sums``, a
        float -- the predicted calls' weights added in order -- when both lists have the same
        length and each call's key equals the key of the call at the same position on the
        other side (every call an exact match, in order); else, with ``sums`` and every class
        prepared, ``(pred classes, gold classes, tp, rest, left)``: each predicted call paired,
        in order, with the first free gold call of its key, ``tp`` their weights added in order,
        ``rest`` / ``left`` the positions of the calls left unpaired; else ``(pred classes, gold
        classes, pred keys, gold keys)``, one item per call."""
        probe = self.probe
        if probe[2]:  # mostly new calls lately: classes cost more than they save (see below)
            probe[2] -= 1
            return None
        if len(self.pkey) > _CACHE_SIZE or len(self.pairs) > _CACHE_SIZE:
            self.clear()
        r = self.table.read(pred, gold) if sums else self.table.classes(pred, gold)
        if r is None:
            return r
        probe[0] += len(pred) + len(gold)
        if type(r) is float or len(r) == 5:
            return r
        n = len(self.table)
        probe[1] += n - len(self.pkey)
        if probe[0] >= _CACHE_PROBE:
            new = probe[1] * 3 > probe[0]
            probe[0] = probe[1] = 0
            if new:  # over a third of the calls were new: every call prepared on its own is
                probe[2] = _CACHE_PROBE  # cheaper (and holds less for the collector); pass the
                self.clear()  # next episodes by, then probe again
                return None
        cp, cg = r
        pkey, gkey = self.pkey, self.gkey
        if n > len(pkey):
            grow = [None] * (n - len(pkey))
            pkey += grow
            gkey += grow
            self.pview += grow
            self.gview += grow
        kp = [pkey[c] for c in cp]
        if None in kp:
            kp = self._prepare(pred, cp, False)
        kg = [gkey[c] for c in cg]
        if None in kg:
            kg = self._prepare(gold, cg, True)
        return cp, cg, kp, kg

    def _prepare(self, calls: list, ids: tuple, gold: bool) -> list:
        """Prepare the classes of ``ids`` not yet prepared on this side, in call order (so an
        error is the one preparing the calls one by one would raise first); their keys."""
        cmp, keys, table = self.comparer, self.keys, self.table
        views, out = (self.gview, self.gkey) if gold else (self.pview, self.pkey)
        for call, c in zip(calls, ids):
            if out[c] is None:
                if gold:
                    v = cmp._gold(call)
                    k = GOLD_NOT_EXACT if v.key is None else keys.setdefault(v.key, len(keys))
                    table.set_gold(c, k)
                else:
                    v = cmp._pred(call)
                    k = PRED_NOT_EXACT if v.own_errors else keys.setdefault(v.key, len(keys))
                    table.set_pred(c, k, v.weight)
                views[c] = v
                out[c] = k
        return [out[c] for c in ids]
