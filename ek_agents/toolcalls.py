"""Tool-call correctness: BFCL-style AST matching over a *multiset* of calls.

Three layers:

1. **Argument equality** (:class:`CallComparer`), typed by the tool's
   :class:`~ek_agents.core.FieldSpec` (looked up with ``grammar.field(tool, arg)``), following
   BFCL's AST rules:

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

2. **Assignment** (:func:`match_calls`): within a tool name, predicted calls are paired with
   gold calls by an **optimal** min-cost assignment (:func:`min_cost_assignment`, a
   self-contained Hungarian solver), never pairing different tools.

3. **Scoring** (:class:`ToolCallMetric`): TP/FP/FN weighted by the grammar, micro-F1 aggregate.

>>> m = ToolCallMetric()
>>> s = m.score([("get_weather", {"city": "Paris"}), ("get_weather", {"city": "Rome"})],
...             [("get_weather", {"city": "rome"}), ("get_weather", {"city": "PARIS"})])
>>> s.value, s.detail["tp"], s.detail["fp"]
(1.0, 2.0, 0.0)
"""
from __future__ import annotations

import itertools
import math
import re
from collections.abc import Mapping, Sequence, Set
from typing import Any, Callable, Iterable, Optional

from .base import Step, TaskSpec, Trajectory, as_call, is_episode
from .core import GraphGrammar, Score
from .errors import InvalidInput, UnknownName, did_you_mean

__all__ = [
    "AnyOf", "OMITTED", "ANY", "standardize_string", "as_calls", "CallComparer",
    "min_cost_assignment", "match_calls", "ToolCallMetric", "LEVELS", "bfcl_check", "CheckResult",
]

#: The levels of :class:`ToolCallMetric`.
LEVELS = ("call", "arg")
_EMPTY_GRAMMAR = GraphGrammar()
_MAX_ALTERNATIVES = 4096


# --------------------------------------------------------------------------- gold vocabulary

class _Sentinel:
    __slots__ = ("_name",)

    def __init__(self, name: str) -> None:
        self._name = name

    def __repr__(self) -> str:
        return self._name

    def __reduce__(self) -> str:
        return self._name


#: Gold marker: the argument may be left out (inside :class:`AnyOf`) / must be left out (alone).
OMITTED = _Sentinel("OMITTED")
#: Gold marker: any supplied value is accepted.
ANY = _Sentinel("ANY")


class AnyOf:
    """A gold argument with several acceptable values (BFCL's list of possible answers).

    >>> AnyOf("NYC", "New York", OMITTED)
    AnyOf('NYC', 'New York', OMITTED)
    """

    __slots__ = ("values",)

    def __init__(self, *values: Any) -> None:
        if not values:
            raise InvalidInput("AnyOf() needs at least one acceptable value (use OMITTED for 'may be left out')")
        flat: list = []
        for v in values:
            flat.extend(v.values if isinstance(v, AnyOf) else (v,))
        self.values = tuple(flat)

    def __repr__(self) -> str:
        return f"AnyOf({', '.join(map(repr, self.values))})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, AnyOf) and self.values == other.values

    def __hash__(self) -> int:
        return hash(("AnyOf", self.values))


_STD = re.compile(r"[ ,./\-_*^]")


def standardize_string(s: str) -> str:
    """BFCL's string standardization: drop spaces and ``, . / - _ * ^``, lower-case, ``'`` -> ``"``.

    >>> standardize_string("April 1, 2024") == standardize_string("april 1 2024")
    True
    """
    return _STD.sub("", s).lower().replace("'", '"')


# --------------------------------------------------------------------------- reading calls

def as_calls(x: Any) -> list:
    """Read a list of ``(tool, args)`` calls from an Episode, a Trajectory, a TaskSpec (its
    gold), a mapping with key ``"calls"``, or a sequence of calls (anything :func:`as_call` reads).

    >>> as_calls({"calls": [("a", {"x": 1}), "b"]})
    [('a', {'x': 1}), ('b', {})]
    """
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


def _args_of(call: tuple) -> Mapping:
    tool, args = call
    if type(args) is dict or isinstance(args, Mapping):
        return args
    if isinstance(args, str):  # unparseable raw JSON kept by a bridge: one undeclarable argument
        return {"<unparsed>": args}
    raise InvalidInput(f"tool call {tool!r}: args must be a mapping, got {args!r:.80}")


# --------------------------------------------------------------------------- typed value keys

_NUMERIC = ("number", "float")


def _key(v: Any, t: Optional[str], canon: Callable[[str], Any], items: Optional[str] = None) -> Any:
    """A hashable normal form: two values are equal (for a parameter of type ``t``) iff their
    keys are equal."""
    if t is None or t == "any":
        return _infer_key(v, canon)
    if t == "string":
        return ("s", canon(v)) if isinstance(v, str) else _bad(v)
    if t == "boolean":
        return ("b", v) if isinstance(v, bool) else _bad(v)
    if t == "integer":
        if isinstance(v, bool):
            return _bad(v)
        if isinstance(v, int):
            return ("n", v)
        return ("f", v) if isinstance(v, float) else _bad(v)
    if t in _NUMERIC:
        return ("n", v) if isinstance(v, (int, float)) and not isinstance(v, bool) else _bad(v)
    if t in ("array", "tuple"):
        if isinstance(v, (list, tuple)):
            return ("l", tuple(_key(e, items, canon) for e in v))
        return _bad(v)
    if t in ("dict", "object"):
        if isinstance(v, Mapping):
            return ("d", frozenset((k, _infer_key(x, canon)) for k, x in v.items()))
        return _bad(v)
    return _infer_key(v, canon)


def _infer_key(v: Any, canon: Callable[[str], Any]) -> Any:
    if v is None:
        return ("z",)
    if isinstance(v, bool):
        return ("b", v)
    if isinstance(v, (int, float)):
        return ("n", v)
    if isinstance(v, str):
        return ("s", canon(v))
    if isinstance(v, Mapping):
        return ("d", frozenset((k, _infer_key(x, canon)) for k, x in v.items()))
    if isinstance(v, (list, tuple)):
        return ("l", tuple(_infer_key(e, canon) for e in v))
    if isinstance(v, (Set, frozenset)):
        return ("S", frozenset(_infer_key(e, canon) for e in v))
    return _bad(v)


def _bad(v: Any) -> tuple:
    try:
        hash(v)
        return ("x", type(v).__name__, v)
    except TypeError:
        return ("x", type(v).__name__, repr(v))


_SCALARS = frozenset({str, int, float, bool, type(None)})


def _has_marker(v: Any) -> bool:
    if type(v) in _SCALARS:
        return False
    if v is OMITTED or v is ANY or isinstance(v, AnyOf):
        return True
    if isinstance(v, Mapping):
        return any(_has_marker(x) for x in v.values())
    if isinstance(v, (list, tuple)):
        return any(_has_marker(x) for x in v)
    return False


def _alternatives(v: Any, t: Optional[str], canon: Callable, items: Optional[str]) -> tuple:
    """(set of acceptable keys, omittable, anything) for a gold value with markers."""
    alts = v.values if isinstance(v, AnyOf) else (v,)
    keys: set = set()
    omittable = anything = False
    for a in alts:
        if a is OMITTED:
            omittable = True
        elif a is ANY:
            anything = True
        elif _has_marker(a):
            keys.update(_expand(a, t, canon, items))
        else:
            keys.add(_key(a, t, canon, items))
    return frozenset(keys), omittable, anything


def _expand(v: Any, t: Optional[str], canon: Callable, items: Optional[str]) -> set:
    """All keys a nested gold value with markers (inside a list or a dict) accepts."""
    if isinstance(v, Mapping) and (t in (None, "any", "dict", "object")):
        names = list(v)
        choices = []
        for k in names:
            sub = v[k]
            alts = sub.values if isinstance(sub, AnyOf) else (sub,)
            opts: list = []
            for a in alts:
                if a is OMITTED:
                    opts.append(None)
                elif a is ANY:
                    raise InvalidInput(f"ANY is only supported as a whole argument, not inside a dict (key {k!r})")
                else:
                    opts.extend((k, x) for x in (_expand(a, None, canon, None) if _has_marker(a)
                                                 else [_infer_key(a, canon)]))
            choices.append(opts)
        _check_size(choices, v)
        return {("d", frozenset(c for c in combo if c is not None)) for combo in itertools.product(*choices)}
    if isinstance(v, (list, tuple)) and t in (None, "any", "array", "tuple"):
        el_t = items if t in ("array", "tuple") else None
        choices = []
        for e in v:
            alts = e.values if isinstance(e, AnyOf) else (e,)
            opts = []
            for a in alts:
                if a is OMITTED or a is ANY:
                    raise InvalidInput(f"{a!r} cannot be a list element; give the acceptable lists with AnyOf([...], [...])")
                opts.extend(_expand(a, el_t, canon, None) if _has_marker(a) else [_key(a, el_t, canon)])
            choices.append(opts)
        _check_size(choices, v)
        return {("l", tuple(combo)) for combo in itertools.product(*choices)}
    raise InvalidInput(f"gold value {v!r:.80}: AnyOf/OMITTED/ANY may only appear as an argument or inside a list or dict")


def _check_size(choices: list, v: Any) -> None:
    if math.prod(len(c) for c in choices) > _MAX_ALTERNATIVES:
        raise InvalidInput(
            f"gold value {v!r:.80} expands to more than {_MAX_ALTERNATIVES} acceptable values; "
            "list fewer alternatives (or use ANY for the whole argument)"
        )


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


def _signature(call: tuple) -> Any:
    """A hashable, type-exact signature of a call (None when an argument is unhashable)."""
    args = call[1]
    if type(args) is not dict:
        return None
    try:
        sig = (call[0], tuple([(k, v.__class__, v) for k, v in args.items()]))
        hash(sig)
    except TypeError:
        return None
    return sig


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

    def _canon(self, s: str) -> Any:
        c = self._cache.get(s)
        if c is None:
            if len(self._cache) > _CACHE_SIZE:
                self._cache.clear()
            c = self._cache[s] = self.canon(s)
        return c

    def pred(self, call: tuple) -> _PredView:
        """Prepare a predicted call (cached by content while repeats are common)."""
        return self._cached(call, self._preds, self._pred_stats, self._pred)

    def gold(self, call: tuple) -> _GoldView:
        """Prepare a gold call (its arguments may hold AnyOf / OMITTED / ANY); cached likewise."""
        return self._cached(call, self._golds, self._gold_stats, self._gold)

    @staticmethod
    def _cached(call: tuple, cache: dict, stats: list, make: Callable[[tuple], Any]) -> Any:
        if stats[0] >= _CACHE_PROBE and stats[1] * 5 < stats[0]:
            stats[2] += 1  # under 20% repeats: caching costs more than it saves; probe again later
            if stats[2] > 25 * _CACHE_PROBE:
                stats[:] = [0, 0, 0]
            return make(call)
        sig = _signature(call)
        if sig is None:
            return make(call)
        stats[0] += 1
        view = cache.get(sig)
        if view is None:
            if len(cache) > _CACHE_SIZE:
                cache.clear()
                stats[0] = stats[1] = 0
            view = cache[sig] = make(call)
        else:
            stats[1] += 1
        return view

    def _pred(self, call: tuple) -> _PredView:
        tool = call[0]
        args = _args_of(call)
        w, nt, fields, req, default = self._tool(tool)
        keys = {}
        own: list = []
        for a, v in args.items():
            f = fields.get(a)
            if f is None:
                keys[a] = _key(v, None, self._canon)
                if nt is not None:
                    own.append((a, "undeclared", w * default))
            else:
                keys[a] = _key(v, f[0], self._canon, f[1])
        for a in req:
            if a not in args:
                own.append((a, "missing_required", fields[a][2]))
        return _PredView(tool, keys, w, tuple(own))

    def _gold(self, call: tuple) -> _GoldView:
        tool = call[0]
        args = _args_of(call)
        w, nt, fields, req, default = self._tool(tool)
        specs = {}
        plain = True
        mass = w
        for a, v in args.items():
            f = fields.get(a)
            t, items, aw = (f if f is not None else (None, None, w * default))
            if _has_marker(v):
                plain = False
                specs[a] = _alternatives(v, t, self._canon, items)
                if not specs[a][1]:
                    mass += aw
            else:
                specs[a] = (frozenset((_key(v, t, self._canon, items),)), False, False)
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


# --------------------------------------------------------------------------- assignment

def min_cost_assignment(cost: Sequence[Sequence[float]]) -> list[tuple[int, int]]:
    """Optimal (min total cost) assignment for a rectangular cost matrix: the Hungarian method
    with potentials (Kuhn-Munkres / Jonker-Volgenant form), O(n^2 m), pure Python.

    Returns ``min(n_rows, n_cols)`` pairs ``(row, col)`` sorted by row. Deterministic: ties
    are broken by scan order (lowest column index first), so the same input gives the same pairs.

    >>> min_cost_assignment([[4, 1, 3], [2, 0, 5], [3, 2, 2]])
    [(0, 1), (1, 0), (2, 2)]
    """
    n = len(cost)
    if n == 0:
        return []
    m = len(cost[0])
    if m == 0:
        return []
    if any(len(row) != m for row in cost) or not all(map(math.isfinite, itertools.chain.from_iterable(cost))):
        raise InvalidInput("min_cost_assignment needs a rectangular matrix of finite costs")
    if n == 1:
        row = cost[0]
        return [(0, min(range(m), key=row.__getitem__))]
    transposed = n > m
    if transposed:
        cost = [list(col) for col in zip(*cost)]
        n, m = m, n
    inf = math.inf
    u = [0.0] * (n + 1)
    v = [0.0] * (m + 1)
    p = [0] * (m + 1)
    way = [0] * (m + 1)
    cols = range(1, m + 1)
    for i in range(1, n + 1):
        p[0] = i
        j0 = 0
        minv = [inf] * (m + 1)
        used = [False] * (m + 1)
        while True:
            used[j0] = True
            i0 = p[j0]
            row = cost[i0 - 1]
            ui0 = u[i0]
            delta = inf
            j1 = 0
            for j in cols:
                if not used[j]:
                    cur = row[j - 1] - ui0 - v[j]
                    if cur < minv[j]:
                        minv[j] = cur
                        way[j] = j0
                    if minv[j] < delta:
                        delta = minv[j]
                        j1 = j
            for j in range(m + 1):
                if used[j]:
                    u[p[j]] += delta
                    v[j] -= delta
                else:
                    minv[j] -= delta
            j0 = j1
            if p[j0] == 0:
                break
        while j0:
            j1 = way[j0]
            p[j0] = p[j1]
            j0 = j1
    pairs = [(p[j] - 1, j - 1) for j in cols if p[j]]
    if transposed:
        pairs = [(j, i) for i, j in pairs]
    return sorted(pairs)


def _assign_group(P: list, G: list, cost_fn: Callable[[int, int], float]) -> list[tuple[int, int]]:
    """Optimal pairs of indices within one tool group (exact-key pairs are taken first)."""
    pairs: list = []
    if not P or not G:
        return pairs
    # exact fast path: identical plain calls (an equivalence) are paired in index order; by the
    # triangle inequality of the argument-mismatch cost this never loses optimality.
    by_key: dict = {}
    for gi in G:
        k = cost_fn.gold_key(gi)  # type: ignore[attr-defined]
        if k is not None:
            by_key.setdefault(k, []).append(gi)
    restP = []
    taken = set()
    for pi in P:
        bucket = by_key.get(cost_fn.pred_key(pi))  # type: ignore[attr-defined]
        if bucket:
            gi = bucket.pop(0)
            taken.add(gi)
            pairs.append((pi, gi))
        else:
            restP.append(pi)
    restG = [gi for gi in G if gi not in taken]
    if restP and restG:
        cost_fn.set_group(restP, restG)  # type: ignore[attr-defined]
        matrix = [[cost_fn(pi, gi) for gi in restG] for pi in restP]
        pairs.extend((restP[r], restG[c]) for r, c in min_cost_assignment(matrix))
    return pairs


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
        req = sum(w for a, w in ((a, cmp.arg_weight(tool, a)) for a in cmp._tool(tool)[3]))
        self._big = 1.0 + sum(cmp.pred_mass(self.pv[i]) + req for i in P) + sum(self.gv[j].mass for j in G) \
            + sum(cmp.arg_weight(tool, a) for j in G for a in self.gv[j].specs)

    def pred_key(self, i: int) -> Any:
        p = self.pv[i]
        return p.key if not p.own_errors else ("own-errors", i)

    def gold_key(self, j: int) -> Any:
        return self.gv[j].key

    def __call__(self, i: int, j: int) -> float:
        errs = self.errors(i, j)
        mis = math.fsum(w for _, _, w in errs)
        return (self._big if errs else 0.0) + mis

    def run(self) -> tuple[list, list, list]:
        pv, gv = self.pv, self.gv
        if len(pv) == len(gv) and all(p.key == g.key and not p.own_errors for p, g in zip(pv, gv)):
            for i in range(len(pv)):  # identical plain calls in the same order: nothing to solve
                self._mis[(i, i)] = []
            return [(i, i) for i in range(len(pv))], [], []
        groups_p: dict = {}
        groups_g: dict = {}
        for i, p in enumerate(self.pv):
            groups_p.setdefault(p.tool, []).append(i)
        for j, g in enumerate(self.gv):
            groups_g.setdefault(g.tool, []).append(j)
        pairs: list = []
        for tool, P in groups_p.items():
            G = groups_g.get(tool)
            if G:
                pairs.extend(_assign_group(P, G, self))
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
    pairs, up, ug = _Matcher(cmp, [cmp.pred(c) for c in P], [cmp.gold(c) for c in G]).run()
    return [(P[i], G[j]) for i, j in pairs], [P[i] for i in up], [G[j] for j in ug]


# --------------------------------------------------------------------------- the metric

def _grammar_for(gold: Any, *given: Optional[GraphGrammar]) -> Optional[GraphGrammar]:
    for g in given:
        if g is not None:
            return g
    if isinstance(gold, TaskSpec) and gold.tools:
        return gold.grammar()
    return None


_FN_KINDS = frozenset({"wrong_value", "missing", "missing_required"})


def _detail_sums(scores: Sequence[Score], keys: tuple, who: str) -> list[float]:
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

    def _comparer(self, grammar: Optional[GraphGrammar]) -> CallComparer:
        key = id(grammar)
        c = self._comparers.get(key)
        if c is None or c.grammar is not (grammar if grammar is not None else _EMPTY_GRAMMAR):
            if len(self._comparers) > 64:
                self._comparers.clear()
            c = self._comparers[key] = CallComparer(grammar, self.canonicalizer)
        return c

    def score(self, pred: Any, gold: Any, *, grammar: Optional[GraphGrammar] = None) -> Score:
        cmp = self._comparer(_grammar_for(gold, grammar, self.grammar))
        pv = [cmp.pred(c) for c in as_calls(pred)]
        gv = [cmp.gold(c) for c in as_calls(gold)]
        matcher = _Matcher(cmp, pv, gv)
        pairs, up, ug = matcher.run()
        tp = fp = fn = 0.0
        n_exact = 0
        if self.level == "call":
            for i, j in pairs:
                w = pv[i].weight
                if matcher.errors(i, j):
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
                errs = matcher.errors(i, j)
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
        return Score(_f1(tp, fp, fn), detail)

    def aggregate(self, scores: Sequence[Score]) -> float:
        """Micro-averaged F1 over the corpus (sum TP/FP/FN, then divide) -- never a mean."""
        return _f1(*_detail_sums(scores, ("tp", "fp", "fn"), "ToolCallMetric"))

    def __repr__(self) -> str:
        return f"ToolCallMetric(level={self.level!r})"


def __getattr__(name: str) -> Any:  # bfcl_check / CheckResult live in .bfcl (lazy: no cycle)
    if name in ("bfcl_check", "CheckResult"):
        from . import bfcl

        return getattr(bfcl, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
