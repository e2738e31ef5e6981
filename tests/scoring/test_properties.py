"""Property tests (hypothesis) and the optimal assignment checked against scipy."""
import random

import pytest
from hypothesis import given, settings, strategies as st

from ek_agents.base import ToolSpec, tool_grammar
from ek_agents.core import FieldSpec
from ek_agents.scoring.toolcalls import (
    AnyOf, CallComparer, ToolCallMetric, _Matcher, match_calls, min_cost_assignment,
)
from ek_agents.scoring.trajectory import SCHEMES, TrajectoryMetric, trajectory_distance

scipy_optimize = pytest.importorskip("scipy.optimize")

GRAMMAR = tool_grammar(
    ToolSpec("a", {"x": FieldSpec("x", "integer"), "y": FieldSpec("y", "string", importance=3.0)}),
    ToolSpec("b", {"x": FieldSpec("x", "number", required=True)}, destructive=True),
    ToolSpec("c", {"y": FieldSpec("y", "string")}, importance=2.5),
)
SETTINGS = settings(max_examples=60, deadline=None, derandomize=True)

values = st.one_of(st.integers(0, 2), st.sampled_from(["p", "q", "P"]), st.booleans(), st.just(1.0))
calls = st.tuples(
    st.sampled_from(["a", "b", "c", "d"]),
    st.dictionaries(st.sampled_from(["x", "y", "z"]), values, max_size=2),
)
seqs = st.lists(calls, max_size=6)
grammars = st.sampled_from([None, GRAMMAR])


@SETTINGS
@given(seqs, seqs, grammars)
def test_metric_values_stay_in_unit_interval(pred, gold, g):
    for m in (ToolCallMetric("call"), ToolCallMetric("arg")) + tuple(TrajectoryMetric(s) for s in SCHEMES):
        v = m.score(pred, gold, grammar=g).value
        assert 0.0 <= v <= 1.0


def _same(a, b):
    """Deep equality that also requires equal types (True is not 1, 1 is not 1.0)."""
    return type(a) is type(b) and (a == b if not isinstance(a, dict) else
                                   a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a))


@SETTINGS
@given(seqs, seqs, grammars, st.booleans())
def test_exact_distance_zero_only_for_identical_sequences(pred, gold, g, copy):
    if copy:
        gold = [(t, dict(a)) for t, a in pred]
    raw, mx = trajectory_distance(pred, gold, scheme="exact", grammar=g, canonicalizer=lambda s: s)
    identical = len(pred) == len(gold) and all(tp == tg and _same(ap, ag) for (tp, ap), (tg, ag) in zip(pred, gold))
    if raw == 0.0:  # zero => the same calls (the typed rules are stricter than ==)
        assert len(pred) == len(gold)
        assert all(tp == tg and ap == ag for (tp, ap), (tg, ag) in zip(pred, gold))
    else:
        assert raw == mx > 0
    cmp = CallComparer(g)
    if identical and not any(cmp.pred(c).own_errors for c in pred):  # identical, schema-valid calls
        assert raw == 0.0


@SETTINGS
@given(seqs, seqs, grammars)
def test_any_order_never_exceeds_in_order(pred, gold, g):
    any_order, _ = trajectory_distance(pred, gold, scheme="any_order", grammar=g)
    in_order, _ = trajectory_distance(pred, gold, scheme="in_order", grammar=g)
    assert any_order <= in_order + 1e-9


@SETTINGS
@given(seqs, seqs, grammars)
def test_match_calls_never_pairs_different_tools(pred, gold, g):
    pairs, up, ug = match_calls(pred, gold, grammar=g)
    assert all(p[0] == q[0] for p, q in pairs)
    assert len(pairs) + len(up) == len(pred) and len(pairs) + len(ug) == len(gold)
    # maximal: no tool has leftovers on both sides
    assert not ({c[0] for c in up} & {c[0] for c in ug})


@SETTINGS
@given(seqs, seqs, grammars, st.randoms(use_true_random=False))
def test_permuting_prediction_keeps_unordered_schemes(pred, gold, g, rnd):
    shuffled = list(pred)
    rnd.shuffle(shuffled)
    for scheme in ("any_order", "superset", "subset"):
        a = trajectory_distance(pred, gold, scheme=scheme, grammar=g)
        b = trajectory_distance(shuffled, gold, scheme=scheme, grammar=g)
        assert a == pytest.approx(b, abs=1e-9)
    a = ToolCallMetric("call").score(pred, gold, grammar=g).detail
    b = ToolCallMetric("call").score(shuffled, gold, grammar=g).detail
    assert (a["tp"], a["fp"], a["fn"]) == pytest.approx((b["tp"], b["fp"], b["fn"]))


# ------------------------------------------------------------- optimality vs scipy
@pytest.mark.parametrize("seed", range(40))
def test_min_cost_assignment_matches_scipy(seed):
    rnd = random.Random(seed)
    n, m = rnd.randint(1, 8), rnd.randint(1, 8)
    cost = [[float(rnd.choice([rnd.randint(0, 9), rnd.random() * 10])) for _ in range(m)] for _ in range(n)]
    ours = min_cost_assignment(cost)
    rows, cols = scipy_optimize.linear_sum_assignment(cost)
    assert len(ours) == min(n, m)
    assert len({i for i, _ in ours}) == len(ours) == len({j for _, j in ours})
    assert sum(cost[i][j] for i, j in ours) == pytest.approx(sum(cost[i][j] for i, j in zip(rows, cols)))


@pytest.mark.parametrize("seed", range(30))
def test_match_calls_total_cost_is_optimal_vs_scipy(seed):
    """One tool, random partial overlaps (many-to-many): our pairing's composite cost equals
    scipy's optimum on the same cost matrix, and no exact pair count is lost."""
    rnd = random.Random(1000 + seed)
    def call():
        args = {k: rnd.choice([0, 1, 2]) for k in ("x", "y", "z", "w") if rnd.random() < 0.8}
        return ("t", args)
    def gold_call():
        tool, args = call()
        if args and rnd.random() < 0.3:
            k = rnd.choice(sorted(args))
            args[k] = AnyOf(args[k], rnd.choice([0, 1, 2]))
        return (tool, args)
    pred = [call() for _ in range(rnd.randint(1, 7))]
    gold = [gold_call() for _ in range(rnd.randint(1, 7))]
    cmp = CallComparer(None)
    pv, gv = [cmp.pred(c) for c in pred], [cmp.gold(c) for c in gold]
    matcher = _Matcher(cmp, pv, gv)
    matcher.set_group(list(range(len(pv))), list(range(len(gv))))
    cost = [[matcher(i, j) for j in range(len(gv))] for i in range(len(pv))]
    pairs, _, _ = matcher.run()
    rows, cols = scipy_optimize.linear_sum_assignment(cost)
    assert sum(cost[i][j] for i, j in pairs) == pytest.approx(sum(cost[i][j] for i, j in zip(rows, cols)))
    # and the public function agrees with the pairing
    assert len(match_calls(pred, gold)[0]) == min(len(pred), len(gold))


@pytest.mark.parametrize("seed", range(30))
def test_any_order_distance_is_optimal_vs_scipy(seed):
    """any_order pairs across tools too (a wrong call costs the larger weight); the reference is
    scipy on the square matrix padded with 'leave unpaired' rows and columns."""
    from ek_agents.scoring.alignment import sub_cost as _sub

    rnd = random.Random(2000 + seed)
    def call():
        return (rnd.choice("abc"), {k: rnd.choice([0, 1, "p"]) for k in ("x", "y") if rnd.random() < 0.7})
    pred = [call() for _ in range(rnd.randint(0, 6))]
    gold = [call() for _ in range(rnd.randint(0, 6))]
    raw, mx = trajectory_distance(pred, gold, scheme="any_order", grammar=GRAMMAR)
    cmp = CallComparer(GRAMMAR)
    pv, gv = [cmp.pred(c) for c in pred], [cmp.gold(c) for c in gold]
    n, m = len(pv), len(gv)
    size = n + m
    big = [[0.0] * size for _ in range(size)]
    for i in range(size):
        for j in range(size):
            if i < n and j < m:
                big[i][j] = _sub(cmp, pv[i], gv[j])
            elif i < n:
                big[i][j] = pv[i].weight if j - m == i else 1e9
            elif j < m:
                big[i][j] = gv[j].weight if i - n == j else 1e9
    rows, cols = scipy_optimize.linear_sum_assignment(big) if size else ([], [])
    assert raw == pytest.approx(sum(big[i][j] for i, j in zip(rows, cols)))
    assert 0.0 <= raw <= mx + 1e-9
