"""ToolCallMetric's per-episode path through the C call classes (``callcodes.CallTable`` +
``argmatch.CallClasses``) gives exactly what the view path gives (``_Matcher.run`` on
prepared calls: the path taken without the C extension, kept as the reference): the same
scores, counts and errors, episode after episode through one metric (a warm class table),
for exact and perturbed calls, ``1`` / ``1.0`` / ``True``, key order, nested arguments, gold
markers, declared tools, canonicalizers, both levels, ``score`` and ``score_batch``."""
from __future__ import annotations

import math
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ek_agents.scoring import argmatch, callcodes
from ek_agents.base import Episode, Step, TaskSpec, ToolSpec, Trajectory, tool_grammar
from ek_agents.core import FieldSpec
from ek_agents.scoring.toolcalls import ANY, OMITTED, AnyOf, ToolCallMetric

needs_c = pytest.mark.skipif(callcodes.CallTable is None, reason="the C extension was not built here")

GRAMMAR = tool_grammar(
    ToolSpec("a", {"x": FieldSpec("x", "integer"), "y": FieldSpec("y", "string", importance=3.0)}),
    ToolSpec("b", {"x": FieldSpec("x", "number", required=True)}, destructive=True),
    ToolSpec("c", {"y": FieldSpec("y", "string"), "z": FieldSpec("z", "array", items="integer")}, importance=2.5),
    ToolSpec("d", {"x": FieldSpec("x", "boolean"), "y": FieldSpec("y", "any")}, importance=0.1),
)
GRAMMAR_ODD = tool_grammar(  # weights whose sums are not exact in binary
    ToolSpec("a", {"x": FieldSpec("x", "number", importance=0.1)}, importance=0.1),
    ToolSpec("b", {"y": FieldSpec("y", "string", importance=0.7)}, importance=0.3),
)
NAN_A, NAN_B = float("nan"), float("nan")
CANONS = {"bfcl": None, "identity": lambda s: s, "strip": lambda s: s.strip().lower()}

scalars = st.sampled_from([0, 1, 2, -1, 10**20, 1.0, 2.0, 0.0, -0.0, 2.5, True, False, None,
                           "p", "P", "p q", "p-q", "q", "", " p", "é", NAN_A, NAN_B])
nested = st.one_of(st.lists(st.sampled_from([1, 1.0, True, "p"]), max_size=2).map(lambda v: v),
                   st.lists(st.sampled_from([1, 2]), max_size=2).map(tuple),
                   st.dictionaries(st.sampled_from(["k", "j"]), st.sampled_from([1, 1.0, "p"]), max_size=2))
values = st.one_of(scalars, scalars, scalars, nested)
args = st.dictionaries(st.sampled_from(["x", "y", "z", "w"]), values, max_size=3)
calls = st.tuples(st.sampled_from(["a", "a", "b", "c", "d", "e"]), args)
golds = st.lists(calls, max_size=6)
markers = st.sampled_from([AnyOf("p", 1), AnyOf(OMITTED, 2), OMITTED, ANY, AnyOf(1.0, True)])


def _perturb(gold: list, rnd: random.Random, plain_only: bool) -> list:
    """A prediction near ``gold``: copied dicts, key order, swaps, drops, extras, 1 / 1.0 / True."""
    pred = [(t, dict(reversed(list(a.items()))) if rnd.random() < 0.3 else dict(a)) for t, a in gold]
    for _ in range(rnd.randrange(4)):
        r = rnd.random()
        if r < 0.2 and len(pred) > 1:
            i = rnd.randrange(len(pred) - 1)
            pred[i], pred[i + 1] = pred[i + 1], pred[i]
        elif r < 0.4 and pred:
            pred.pop(rnd.randrange(len(pred)))
        elif r < 0.55:
            pred.insert(rnd.randrange(len(pred) + 1), (rnd.choice("abce"), {"x": rnd.choice([1, 1.0, True])}))
        elif r < 0.75 and pred:
            t, a = pred[rnd.randrange(len(pred))]
            k = rnd.choice(sorted(a) or ["x"])
            a[k] = rnd.choice([1, 1.0, True, "P", "p", None, NAN_A, -0.0] + ([] if plain_only else [[1], {"k": 1}]))
        elif r < 0.85 and pred:
            pred.append(pred[rnd.randrange(len(pred))])  # the very same call object twice
        elif pred:
            t, a = pred[rnd.randrange(len(pred))]
            a.pop(next(iter(a), None), None)
    return pred


def _reference(make, pairs, batch=False):
    """What the view path gives: the same metric without the C classes."""
    with pytest.MonkeyPatch.context() as m:
        m.setattr(callcodes, "CallTable", None)
        metric = make()
        return _run(metric, pairs, batch)


def _run(metric, pairs, batch=False):
    if batch:
        try:
            return metric.score_batch([p for p, _ in pairs], [g for _, g in pairs])
        except Exception as exc:  # noqa: BLE001 - compared as (type, message)
            return (type(exc), str(exc))
    out = []
    for p, g in pairs:
        try:
            out.append(metric.score(p, g))
        except Exception as exc:  # noqa: BLE001
            out.append((type(exc), str(exc)))
    return out


def _same(a, b) -> bool:
    """Equal scores (floats bit for bit, NaN equal to NaN; every type the same) or equal errors."""
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(map(_same, a, b))
    if isinstance(a, tuple) or isinstance(b, tuple):
        return a == b
    if type(a.value) is not type(b.value) or not _eqf(a.value, b.value):
        return False
    return a.detail.keys() == b.detail.keys() and all(
        type(a.detail[k]) is type(b.detail[k]) and _eqf(a.detail[k], b.detail[k]) for k in a.detail)


def _eqf(x, y) -> bool:
    if isinstance(x, float) and math.isnan(x):
        return isinstance(y, float) and math.isnan(y)
    if isinstance(x, float):
        return x == y and math.copysign(1.0, x) == math.copysign(1.0, y)
    return x == y


@needs_c
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.lists(golds, min_size=1, max_size=12), st.sampled_from(["call", "arg"]),
       st.sampled_from([None, GRAMMAR, GRAMMAR_ODD]), st.sampled_from(sorted(CANONS)),
       st.booleans(), st.booleans(), st.randoms(use_true_random=False))
def test_the_class_path_equals_the_view_path(gold_lists, level, grammar, canon, plain_only, batch, rnd):
    if plain_only:  # mostly the C path: scalar arguments only
        gold_lists = [[(t, {k: v for k, v in a.items() if not isinstance(v, (list, tuple, dict))}) for t, a in g]
                      for g in gold_lists]
    pairs = [(_perturb(g, rnd, plain_only), g) for g in gold_lists]
    pairs += [(g, g) for g in gold_lists[:3]]  # identical lists (the same objects) and
    pairs += [([(t, dict(a)) for t, a in g], g) for g in gold_lists[:3]]  # equal copies
    rnd.shuffle(pairs)
    pairs += pairs[:4]  # a class seen before, now warm

    def make():
        return ToolCallMetric(level, grammar=grammar, canonicalizer=CANONS[canon])

    fast = _run(make(), pairs, batch)
    assert _same(fast, _reference(make, pairs, batch)), (fast, pairs)


@needs_c
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(golds, st.lists(st.tuples(st.integers(0, 5), st.sampled_from(["x", "y"]), markers), max_size=3),
       st.sampled_from(["call", "arg"]), st.randoms(use_true_random=False))
def test_gold_markers_take_the_view_path_with_the_same_result(gold, marks, level, rnd):
    gold = [(t, dict(a)) for t, a in gold]
    pred = _perturb(gold, rnd, True)
    for i, k, mark in marks:
        if i < len(gold):
            gold[i][1][k] = mark
    pairs = [(pred, gold), (gold and [gold[0]] or [], gold)]

    def make():
        return ToolCallMetric(level, grammar=GRAMMAR)

    assert _same(_run(make(), pairs), _reference(make, pairs))


@needs_c
@pytest.mark.parametrize("level", ["call", "arg"])
def test_bench_like_episodes_score_the_same(level):
    """The bench's mix (half exact, half swapped / wrong argument / extra / missing), 2000 episodes."""
    from bench.bench_scoring import GRAMMAR as SHOP, make_episodes

    preds, golds_ = make_episodes(2000, seed=3)
    pairs = list(zip(preds, golds_))
    for grammar in (None, SHOP):
        def make():
            return ToolCallMetric(level, grammar=grammar)

        ref = _reference(make, pairs)
        assert _same(_run(make(), pairs), ref)
        assert _same(_run(make(), pairs, batch=True), ref)


@needs_c
def test_episodes_tasks_and_strings_are_read_as_before():
    spec = TaskSpec("t1", "go", gold=[("a", {"x": 1}), ("b", {"x": 2.0})],
                    tools=[ToolSpec("a", {"x": FieldSpec("x", "integer")}), ToolSpec("b", {"x": FieldSpec("x", "number")})])
    ep = Episode("t1", Trajectory((Step("b", {"x": 2}), Step("a", {"x": 1}))), "done")
    pairs = [(ep, spec), (["a", "b"], [("a", {}), ("b", {})]), ([["a", {"x": 1}]], [("a", {"x": 1})]),
             (Trajectory((Step("a", {"x": 1}),)), {"calls": [("a", {"x": 1.0})]}),
             ("a final answer", [("a", {})]), (None, []), ([("a", "not json")], [("a", {})]),
             ([("a", {"x": 1})], [("a", {"x": 1})])]
    for level in ("call", "arg"):
        def make():
            return ToolCallMetric(level)

        assert _same(_run(make(), pairs), _reference(make, pairs))


@needs_c
def test_a_failing_canonicalizer_fails_the_same_way():
    def canon(s):
        if s == "boom":
            raise ValueError(f"cannot canonicalize {s!r}")
        return s.lower()

    pairs = [([("a", {"y": "X"})], [("a", {"y": "x"})]), ([("a", {"y": "boom"})], [("a", {"y": "x"})]),
             ([("a", {"y": "x"})], [("a", {"y": "boom"})]), ([("a", {"y": "x"})], [("a", {"y": "x"})])]

    def make():
        return ToolCallMetric(canonicalizer=canon)

    fast = _run(make(), pairs)
    assert _same(fast, _reference(make, pairs))
    assert fast[1] == (ValueError, "cannot canonicalize 'boom'")


@needs_c
def test_a_call_changed_after_scoring_is_scored_as_it_is_now():
    """The class table keeps a copy of each class's first call: changing a dict afterwards never
    makes a later call look like the old one."""
    m = ToolCallMetric()
    call = ("a", {"x": 1})
    assert m.score([call], [("a", {"x": 1})]).value == 1.0
    call[1]["x"] = 2
    assert m.score([call], [("a", {"x": 1})]).value == 0.0
    assert m.score([call], [("a", {"x": 2})]).value == 1.0
    assert m.score([("a", {"x": 1})], [("a", {"x": 1})]).value == 1.0


@needs_c
def test_one_one_point_oh_and_true_under_the_typed_rules():
    g = tool_grammar(ToolSpec("a", {"n": FieldSpec("n", "number"), "i": FieldSpec("i", "integer")}))
    m = ToolCallMetric(grammar=g)
    assert m.score([("a", {"n": 1})], [("a", {"n": 1.0})]).value == 1.0  # int for number: accepted
    assert m.score([("a", {"i": 1.0})], [("a", {"i": 1})]).value == 0.0  # float for integer: not
    assert m.score([("a", {"n": True})], [("a", {"n": 1})]).value == 0.0  # a bool is never a number
    # the same episode again (warm classes) and with the arguments in another order
    assert m.score([("a", {"i": 2, "n": 1})], [("a", {"n": 1.0, "i": 2})]).value == 1.0
    assert m.score([("a", {"i": 2, "n": 1})], [("a", {"n": 1.0, "i": 2})]).value == 1.0


@needs_c
def test_the_class_table_is_bounded(monkeypatch):
    monkeypatch.setattr(argmatch, "_CACHE_SIZE", 50)
    m = ToolCallMetric()
    pairs = [([("a", {"x": i}), ("b", {"y": str(i)})], [("a", {"x": i}), ("b", {"y": str(i + 1)})]) for i in range(200)]
    out = [m.score(p, g) for p, g in pairs]
    classes = m._comparers[id(None)].classes()
    assert len(classes.table) <= 50 + 4 and len(classes.pairs) <= 50 + 1
    assert [s.value for s in out] == [0.5] * 200
    with monkeypatch.context() as mp:
        mp.setattr(callcodes, "CallTable", None)
        assert _same(out, [ToolCallMetric().score(p, g) for p, g in pairs])


@needs_c
def test_an_assigned_pair_without_errors_takes_the_general_path(monkeypatch):
    """With the built-in rules two calls of different exact keys always differ somewhere; were
    that not so (here: a comparer that finds no error at all), the C sums are not used."""
    monkeypatch.setattr(argmatch.CallComparer, "mismatch", lambda self, p, g: [])
    pairs = [([("a", {"x": 1})], [("a", {"x": 2})]),
             ([("a", {"x": 1}), ("a", {"x": 3}), ("b", {})], [("a", {"x": 2}), ("a", {"x": 4}), ("b", {})])]

    def make():
        return ToolCallMetric()

    fast = _run(make(), pairs + pairs)
    assert _same(fast, _reference(make, pairs + pairs))
    assert [s.value for s in fast] == [1.0, 1.0] * 2


@needs_c
def test_mostly_new_calls_pass_the_classes_by_with_the_same_results():
    """When over a third of the calls read are new (every argument value unique), preparing
    each call on its own is cheaper: the classes step aside for a while, then probe again."""
    from bench.bench_scoring import make_episodes

    preds, golds_ = make_episodes(1500, seed=5, distinct=True)
    pairs = list(zip(preds, golds_))
    m = ToolCallMetric()
    out = _run(m, pairs)
    classes = m._comparers[id(None)].classes()
    assert classes.probe[2] > 0 and len(classes.table) < 2 * argmatch._CACHE_PROBE
    assert _same(out, _reference(ToolCallMetric, pairs))
    # repeated calls again: the classes come back once the episodes passed by are over
    same = [(g, g) for g in golds_[:5]] * (argmatch._CACHE_PROBE + 200)
    assert [s.value for s in _run(m, same)] == [1.0] * len(same)
    assert classes.probe[2] == 0 and 0 < len(classes.table) <= 50
