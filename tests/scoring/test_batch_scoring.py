"""Batch scoring (``score_batch``, ``trajectory_distances``, ``evaluate``) gives the numbers of the
single-pair calls, on every pair: random pairs of call sequences, with and without a grammar
(per-tool and per-argument weights), gold markers (AnyOf / OMITTED / ANY) and values that are
equal in Python but not under BFCL's typed rules (``1`` / ``1.0`` / ``True``)."""
from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ek_agents import evaluate
from ek_agents.scoring.argmatch import ANY, OMITTED, AnyOf, CallComparer
from ek_agents.base import ToolSpec, tool_grammar
from ek_agents.core import FieldSpec
from ek_agents.errors import InvalidInput
from ek_agents.scoring.facades import score_all
from ek_agents.scoring.toolcalls import ToolCallMetric
from ek_agents.scoring.callviews import pair_views
from ek_agents.scoring.trajectory import SCHEMES, TrajectoryMetric, trajectory_distance, trajectory_distances

TOOLS = ["search", "refund", "answer", "open"]
GRAMMAR = tool_grammar(
    ToolSpec("search", {"q": FieldSpec("q", "string", required=True), "n": FieldSpec("n", "integer")}),
    ToolSpec("refund", {"order": FieldSpec("order", "string", required=True),
                        "amount": FieldSpec("amount", "number", importance=5.0)}, destructive=True),
    ToolSpec("answer", {"text": FieldSpec("text", "string", importance=0.5)}),
)  # "open" is not declared: default weights, types read from the values

values = st.sampled_from(["a", "A", "b", "a b", 1, 1.0, 2, True, False, None, 2.5, [1, 2], {"k": "a"}])
args = st.dictionaries(st.sampled_from(["q", "n", "order", "amount", "text", "x"]), values, max_size=3)
calls = st.lists(st.tuples(st.sampled_from(TOOLS), args), max_size=7)
marker = st.one_of(values, st.sampled_from([OMITTED, ANY]), st.builds(AnyOf, values, st.sampled_from([OMITTED, "b", 2])))
gold_calls = st.lists(st.tuples(st.sampled_from(TOOLS),
                                st.dictionaries(st.sampled_from(["q", "n", "order", "amount", "text", "x"]), marker,
                                                max_size=3)), max_size=7)



@st.composite
def pairs(draw):
    out = []
    for _ in range(draw(st.integers(1, 12))):
        gold = draw(gold_calls if draw(st.booleans()) else calls)
        if draw(st.booleans()):
            pred = [(t, {k: v for k, v in a.items() if not isinstance(v, AnyOf) and v is not OMITTED and v is not ANY})
                    for t, a in gold]
            if pred and draw(st.booleans()):
                pred.insert(draw(st.integers(0, len(pred))), draw(calls.filter(bool))[0])
            if len(pred) > 1 and draw(st.booleans()):
                i = draw(st.integers(0, len(pred) - 2))
                pred[i], pred[i + 1] = pred[i + 1], pred[i]
        else:
            pred = draw(calls)
        out.append((pred, gold))
    return out


def close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-12)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pairs(), st.sampled_from(SCHEMES), st.booleans())
def test_trajectory_batch_equals_single_pair(ps, scheme, use_grammar):
    grammar = GRAMMAR if use_grammar else None
    preds, golds = [p for p, _ in ps], [g for _, g in ps]
    batch = trajectory_distances(preds, golds, scheme=scheme, grammar=grammar)
    single = [trajectory_distance(p, g, scheme=scheme, grammar=grammar) for p, g in ps]
    assert len(batch) == len(single)
    for (r1, m1), (r2, m2) in zip(batch, single):
        assert close(r1, r2) and close(m1, m2), (r1, r2, m1, m2)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pairs(), st.sampled_from(["call", "arg"]), st.booleans())
def test_toolcall_batch_equals_single_pair(ps, level, use_grammar):
    m = ToolCallMetric(level, grammar=GRAMMAR if use_grammar else None)
    preds, golds = [p for p, _ in ps], [g for _, g in ps]
    for a, b in zip(m.score_batch(preds, golds), [m.score(p, g) for p, g in ps]):
        assert close(a.value, b.value)
        assert a.detail == b.detail  # the same arithmetic on the same views: identical


def test_in_order_batch_over_several_blocks_and_uneven_lengths():
    """More pairs than one DP block, lengths 0..12, repeated and distinct calls."""
    import random

    rnd = random.Random(7)
    pool = [(t, {"q": rnd.choice(["x", "y", "z"]), "n": rnd.choice([1, 2])}) for t in TOOLS for _ in range(3)]
    golds = [[rnd.choice(pool) for _ in range(rnd.randint(0, 12))] for _ in range(9000)]
    preds = [list(g) if rnd.random() < 0.5 else [rnd.choice(pool) for _ in range(rnd.randint(0, 12))] for g in golds]
    for grammar in (None, GRAMMAR):  # GRAMMAR: weights 1 / 10 / per argument, own errors
        m = TrajectoryMetric("in_order", grammar=grammar)
        batch = m.score_batch(preds, golds)
        single = [m.score(p, g) for p, g in zip(preds, golds)]
        if grammar is None:
            assert sum(s.detail["distance"] == 0 for s in single) > 4000  # exact copies trim to nothing
        for a, b in zip(batch, single):
            assert close(a.detail["distance"], b.detail["distance"])
            assert close(a.detail["max_distance"], b.detail["max_distance"])
            assert a.value == pytest.approx(b.value, rel=1e-12, abs=1e-12)


def test_evaluate_uses_batch_and_equals_the_loop():
    preds = [[("search", {"q": "a"}), ("answer", {"text": "x"})], [("refund", {"order": "1"})], []]
    golds = [[("search", {"q": "A"}), ("answer", {"text": "y"})], [("refund", {"order": "1", "amount": 5})], [("open", {})]]
    metrics = {"f1": ToolCallMetric("arg"), "d": TrajectoryMetric("in_order"), "any": TrajectoryMetric("any_order")}
    got = evaluate(preds, golds, metrics, grammar=GRAMMAR)
    for name, m in metrics.items():
        assert got[name] == pytest.approx(m.aggregate([m.score(p, g, grammar=GRAMMAR) for p, g in zip(preds, golds)]),
                                          rel=1e-12, abs=1e-12)


def test_prepared_calls_are_shared_across_metrics():
    preds, golds = [[("a", {"x": 1})]], [[("a", {"x": 1.0})]]
    cmp = CallComparer()
    shared: dict = {}
    first = pair_views(cmp, preds, golds, shared)
    assert pair_views(CallComparer(cmp.grammar, cmp.canon), preds, golds, shared) is first
    assert pair_views(CallComparer(GRAMMAR), preds, golds, shared) is not first  # another grammar
    assert pair_views(cmp, list(preds), golds, shared) is not first  # another batch


def test_prepare_tells_python_equal_values_apart():
    """``1 == 1.0 == True`` in Python, but an integer parameter refuses ``1.0`` and a bool."""
    grammar = tool_grammar(ToolSpec("f", {"n": FieldSpec("n", "integer")}))
    preds = [[("f", {"n": 1})], [("f", {"n": 1.0})], [("f", {"n": True})]]
    golds = [[("f", {"n": 1})]] * 3
    got = [s.detail["distance"] for s in TrajectoryMetric(grammar=grammar).score_batch(preds, golds)]
    assert got[0] == 0.0 and got[1] > 0.0 and got[2] > 0.0


def test_batch_refuses_mismatched_lengths():
    with pytest.raises(InvalidInput, match="2 predictions but 1 golds"):
        trajectory_distances([["a"], ["b"]], [["a"]])
    with pytest.raises(InvalidInput, match="2 predictions but 1 golds"):
        ToolCallMetric().score_batch([["a"], ["b"]], [["a"]])


def test_score_all_falls_back_to_score_for_other_metrics():
    class Len:
        def score(self, p, g, grammar=None):
            from ek_agents.core import Score
            return Score(float(len(p) == len(g)), {})

        def aggregate(self, scores):
            return sum(s.value for s in scores)

    assert [s.value for s in score_all(Len(), [[1], [1, 2]], [[1], [1]])] == [1.0, 0.0]


def test_a_gold_given_for_several_trials_is_prepared_once_and_scored_alike():
    gold = [("search", {"q": "a"}), ("answer", {"text": "x"})]
    preds = [[("search", {"q": "A"}), ("answer", {"text": "x"})], [("answer", {"text": "x"})], []]
    golds = [gold, gold, gold]  # one object, three trials
    m = TrajectoryMetric("in_order")
    assert [s.detail for s in m.score_batch(preds, golds)] == [m.score(p, gold).detail for p in preds]
    uniq, index = CallComparer().prepare(golds, gold=True)
    assert len(uniq) == 2 and index == [0, 1, 0, 1, 0, 1]


def test_a_tuple_of_1_is_not_a_tuple_of_1_0_for_an_integer_array():
    """``(1,) == (1.0,)`` and they hash alike, but an ``integer`` array refuses 1.0: neither the
    per-call cache nor the batch may let one stand for the other, in either order."""
    grammar = tool_grammar(ToolSpec("f", {"xs": FieldSpec("xs", "array", items="integer")}))
    gold = [("f", {"xs": (1,)})]
    for first, second in (((1,), (1.0,)), ((1.0,), (1,))):
        m = TrajectoryMetric(grammar=grammar)
        single = [m.score([("f", {"xs": v})], gold).detail["distance"] for v in (first, second)]
        batch = [s.detail["distance"] for s in TrajectoryMetric(grammar=grammar).score_batch(
            [[("f", {"xs": first})], [("f", {"xs": second})]], [gold, gold])]
        assert single == batch
        assert sorted(single)[0] == 0.0 and sorted(single)[1] > 0.0


odd = st.sampled_from([float("nan"), float("inf"), None, (1,), (1.0,), [1], frozenset({1}), b"x", 10**30, -0.0, 0.0])


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pairs(), st.sampled_from([None, "uniform", "weighted"]), st.data())
def test_in_order_fast_path_equals_the_general_dp(ps, which, data):
    """The uniform-weight path (rapidfuzz bounds, the single-pair DP where they differ) and the
    vectorised DP give the single-pair numbers, with argument-level substitution costs, weights,
    odd or unhashable values (NaN, tuples, lists, bytes, huge ints) and empty trajectories."""
    from ek_agents.scoring.trajectory_batch import in_order_batch as _in_order_batch, in_order_uniform as _in_order_uniform

    uniform = tool_grammar(ToolSpec("search", {"q": FieldSpec("q", "string", required=True)}))
    grammar = {None: None, "uniform": uniform, "weighted": GRAMMAR}[which]
    extra = data.draw(st.lists(st.tuples(st.lists(st.tuples(st.sampled_from(TOOLS), st.dictionaries(
        st.sampled_from(["q", "n", "x"]), odd, max_size=2)), max_size=4), st.booleans()), max_size=4))
    ps = ps + [(p, p if same else []) for p, same in extra] + [([], [])]
    preds, golds = [p for p, _ in ps], [g for _, g in ps]
    cmp = CallComparer(grammar)
    views = pair_views(cmp, preds, golds)
    single = [trajectory_distance(p, g, grammar=grammar) for p, g in ps]
    fast = _in_order_uniform(cmp, views)
    if which != "weighted":
        assert fast is not None  # every call weighs 1: the rapidfuzz path runs
    for got in (fast, _in_order_batch(CallComparer(grammar), pair_views(CallComparer(grammar), preds, golds))):
        if got is None:
            continue
        for (r1, m1), (r2, m2) in zip(got, single):
            assert (close(r1, r2) or (math.isnan(r1) and math.isnan(r2))) and close(m1, m2), (r1, r2, m1, m2)


plain_values = st.sampled_from(["a", "A", "b", "a b", "Blue Hat", "bluehat", 1, 1.0, 2, 0, True, False, None, 2.5, -0.0, 0.0])
plain_calls = st.lists(st.tuples(st.sampled_from(TOOLS), st.dictionaries(
    st.sampled_from(["q", "n", "order", "x"]), plain_values, max_size=3)), max_size=7)


@st.composite
def plain_pairs(draw):
    out = []
    for _ in range(draw(st.integers(1, 12))):
        gold = draw(plain_calls)
        pred = [(t, dict(a)) for t, a in gold]
        for _ in range(draw(st.integers(0, 3))):  # edits: a wrong argument, an extra call, a swap, a drop
            kind = draw(st.integers(0, 3))
            if kind == 0 and pred:
                t, a = pred[draw(st.integers(0, len(pred) - 1))]
                a[draw(st.sampled_from(["q", "n", "x"]))] = draw(plain_values)
            elif kind == 1:
                pred.insert(draw(st.integers(0, len(pred))), draw(plain_calls.filter(bool))[0])
            elif kind == 2 and len(pred) > 1:
                i = draw(st.integers(0, len(pred) - 2))
                pred[i], pred[i + 1] = pred[i + 1], pred[i]
            elif pred:
                pred.pop(draw(st.integers(0, len(pred) - 1)))
        out.append((pred, gold))
    return out


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(plain_pairs(), st.sampled_from([None, "uniform"]), st.sampled_from([None, True, False]), st.booleans())
def test_in_order_from_call_codes_equals_the_single_pair(ps, which, merge, canon):
    """Plain calls take the encoded path (one code point per call, in C): the single-pair
    numbers on every pair, with classes merged by the views' keys or not, a declared tool
    (errors of its own: a missing required argument), the canonicalizer (``"Blue Hat"`` is
    ``"bluehat"``), ``1`` / ``1.0`` (equal untyped) and ``True`` (not)."""
    from ek_agents.scoring.trajectory_batch import in_order_coded as _in_order_coded

    grammar = {None: None, "uniform": tool_grammar(ToolSpec("search", {"q": FieldSpec("q", "string", required=True)}))}[which]
    canonicalizer = str.lower if canon else None
    preds, golds = [p for p, _ in ps], [g for _, g in ps]
    got = _in_order_coded(CallComparer(grammar, canonicalizer), preds, golds, merge)
    assert got is not None  # plain calls, every tool weighing 1: the encoded path runs
    single = [trajectory_distance(p, g, grammar=grammar, canonicalizer=canonicalizer) for p, g in ps]
    for (r1, m1), (r2, m2) in zip(got, single):
        assert close(r1, r2) and close(m1, m2), (r1, r2, m1, m2)
    assert trajectory_distances(preds, golds, grammar=grammar, canonicalizer=canonicalizer) == got


def test_in_order_takes_the_encoded_path_only_for_plain_uniform_batches():
    from ek_agents.scoring.trajectory_batch import in_order_coded as _in_order_coded

    plain = [[("search", {"q": "a"}), ("answer", {"text": "b"})]]
    assert _in_order_coded(CallComparer(), plain, plain) == [(0.0, 2.0)]
    assert _in_order_coded(CallComparer(), [[("search", {"q": ["a"]})]], plain) is None  # a list value
    assert _in_order_coded(CallComparer(GRAMMAR), plain, plain) == [(0.0, 2.0)]  # both tools weigh 1
    refund = [[("search", {"q": "a"}), ("refund", {"order": "o1"})]]
    assert _in_order_coded(CallComparer(GRAMMAR), refund, plain) is None  # refund weighs 10: not uniform
    assert trajectory_distances(refund, plain, grammar=GRAMMAR) == [trajectory_distance(refund[0], plain[0], grammar=GRAMMAR)]
    # Episodes and Trajectories are read into call lists first
    from ek_agents.base import Step, Trajectory
    t = Trajectory([Step("search", {"q": "a"}), Step("answer", {"text": "b"})])
    assert _in_order_coded(CallComparer(), [t], plain) == [(0.0, 2.0)]
