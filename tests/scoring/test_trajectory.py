"""TrajectoryMetric: the five schemes, weights, normalization, aggregation."""
import pytest

from ek_agents.base import Episode, Step, TaskSpec, ToolSpec, Trajectory, tool_grammar
from ek_agents.core import FieldSpec
from ek_agents.errors import InvalidInput, UnknownName
from ek_agents.scoring.toolcalls import OMITTED, AnyOf
from ek_agents.scoring.trajectory import SCHEMES, TrajectoryMetric, trajectory_distance

G = tool_grammar(
    ToolSpec("search", {"q": FieldSpec("q", "string")}),
    ToolSpec("refund", {"order_id": FieldSpec("order_id", "string", required=True),
                        "amount": FieldSpec("amount", "number")}, destructive=True),
    ToolSpec("answer", {"text": FieldSpec("text")}),
    ToolSpec("delete_user", {"user_id": FieldSpec("user_id", required=True)}, destructive=True),
)


def dist(pred, gold, scheme, grammar=G):
    return trajectory_distance(pred, gold, scheme=scheme, grammar=grammar)


S, R, A = ("search", {"q": "cat"}), ("refund", {"order_id": "o1", "amount": 5}), ("answer", {"text": "ok"})


def test_schemes_constant():
    assert SCHEMES == ("in_order", "exact", "any_order", "superset", "subset")
    with pytest.raises(UnknownName, match="did you mean 'any_order'"):
        TrajectoryMetric("anyorder")


@pytest.mark.parametrize("scheme", SCHEMES)
def test_identical_is_zero(scheme):
    s = TrajectoryMetric(scheme, grammar=G).score([S, R, A], [S, R, A])
    assert s.value == 0.0 and s.detail["distance"] == 0.0


def test_in_order_missing_and_extra_cost_call_weight():
    assert dist([S, A], [S, R, A], "in_order") == (10.0, 12.0)  # missing destructive call: 10
    assert dist([S, S, R, A], [S, R, A], "in_order") == (1.0, 13.0)  # extra search: 1


def test_in_order_wrong_tool_costs_the_call_weight():
    assert dist([S], [A], "in_order") == (1.0, 1.0)   # a search where an answer was due
    assert dist([S], [R], "in_order") == (10.0, 10.0)  # ... where a refund was due: the larger weight
    assert dist([S, A], [A, S], "in_order") == (2.0, 2.0)


def test_in_order_wrong_argument_costs_weighted_mismatch():
    # a destructive one-argument tool: its wrong argument costs the call weight 10, not 1
    assert dist([("delete_user", {"user_id": "u2"})], [("delete_user", {"user_id": "u1"})], "in_order") == (10.0, 10.0)
    # destructive refund (weight 10), one of its two equally important arguments wrong: 10 * 1/2
    assert dist([("refund", {"order_id": "o1", "amount": 6})], [R], "in_order") == (5.0, 10.0)
    assert dist([("search", {"q": "dog"})], [S], "in_order") == (1.0, 1.0)
    # importance shifts the cost between arguments of one call
    g = tool_grammar(ToolSpec("pay", {"to": FieldSpec("to"), "amount": FieldSpec("amount", "number", importance=3.0)}))
    assert dist([("pay", {"to": "a", "amount": 9})], [("pay", {"to": "a", "amount": 5})], "in_order", g)[0] == 0.75
    assert dist([("pay", {"to": "b", "amount": 5})], [("pay", {"to": "a", "amount": 5})], "in_order", g)[0] == 0.25


def test_in_order_order_matters_any_order_does_not():
    assert dist([A, S], [S, A], "in_order")[0] == 2.0
    assert dist([A, S], [S, A], "any_order")[0] == 0.0


def test_exact_is_all_or_nothing():
    assert dist([S, A], [S, A], "exact") == (0.0, 2.0)
    assert dist([A, S], [S, A], "exact") == (2.0, 2.0)
    assert dist([S, ("answer", {"text": "OK"})], [S, A], "exact")[0] == 0.0  # BFCL string rules


def test_superset_extra_free_missing_costs():
    assert dist([S, S, R, A], [R, A], "superset") == (0.0, 11.0)
    assert dist([S, A], [R, A], "superset") == (10.0, 11.0)


def test_subset_every_predicted_call_in_reference():
    assert dist([A], [S, R, A], "subset") == (0.0, 1.0)
    assert dist([A, ("search", {"q": "x"})], [S, A], "subset") == (1.0, 2.0)
    assert dist([], [S], "subset") == (0.0, 0.0)


def test_gold_markers_apply_to_trajectories():
    gold = [("refund", {"order_id": AnyOf("o1", "o-2"), "amount": AnyOf(5, OMITTED)})]
    assert dist([("refund", {"order_id": "o1"})], gold, "in_order")[0] == 0.0


def test_required_missing_costs_even_if_gold_silent():
    # order_id is required: one of the two arguments wrong -> 10 * 1/2
    assert dist([("refund", {"amount": 5})], [("refund", {"amount": 5})], "in_order")[0] == 5.0


def test_value_is_normalized_and_aggregate_is_total_over_total():
    m = TrajectoryMetric("in_order", grammar=G)
    s1 = m.score([S, A], [S, R, A])   # 10 / 12
    s2 = m.score([S], [S])            # 0 / 1
    s3 = m.score([], [])              # 0 / 0
    assert s1.value == pytest.approx(10 / 12)
    assert s3.value == 0.0 and s3.detail["max_distance"] == 0.0
    assert m.aggregate([s1, s2, s3]) == pytest.approx(10 / 13)
    assert not m.higher_is_better
    with pytest.raises(InvalidInput):
        m.aggregate([])


def test_accepts_episodes_trajectories_and_taskspec_grammar():
    ep = Episode("t", Trajectory([Step("refund", {"order_id": "o1", "amount": 6})]))
    task = TaskSpec("t", gold={"calls": [R]}, tools=(
        ToolSpec("refund", {"order_id": FieldSpec("order_id", required=True), "amount": FieldSpec("amount", "number")},
                 destructive=True),))
    s = TrajectoryMetric().score(ep, task)
    assert s.detail["distance"] == 5.0
    s = TrajectoryMetric().score(ep, Trajectory([Step(*R)]), grammar=G)
    assert s.detail["distance"] == 5.0
    s = TrajectoryMetric().score(ep, Trajectory([Step(*R)]))  # no grammar: weights 1
    assert s.detail["distance"] == 0.5


def test_canonicalizer_option():
    m = TrajectoryMetric("exact", canonicalizer=str)
    assert m.score([("answer", {"text": "OK"})], [("answer", {"text": "ok"})]).value == 1.0
