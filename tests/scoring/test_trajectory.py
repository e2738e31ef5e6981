"""TrajectoryMetric: the five schemes, weights, normalization, aggregation."""
import pytest

from ek_agents.base import Episode, Step, TaskSpec, ToolSpec, Trajectory, tool_grammar
from ek_agents.core import FieldSpec
from ek_agents.errors import InvalidInput, UnknownName
from ek_agents.toolcalls import OMITTED, AnyOf
from ek_agents.trajectory import SCHEMES, TrajectoryMetric, trajectory_distance

G = tool_grammar(
    ToolSpec("search", {"q": FieldSpec("q", "string")}),
    ToolSpec("refund", {"order_id": FieldSpec("order_id", "string", required=True),
                        "amount": FieldSpec("amount", "number")}, destructive=True),
    ToolSpec("answer", {"text": FieldSpec("text")}),
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
    assert dist([S, A], [S, R, A], "in_order") == (10.0, 2 + 12.0)  # missing destructive call: 10
    assert dist([S, S, R, A], [S, R, A], "in_order") == (1.0, 13.0 + 12.0)  # extra search: 1


def test_in_order_wrong_tool_costs_both_weights():
    # a search where an answer was due: the answer is missing (1) and the search extra (1)
    assert dist([S], [A], "in_order") == (2.0, 2.0)


def test_in_order_wrong_argument_costs_weighted_mismatch():
    # destructive refund (weight 10), wrong amount (importance 1): 10 * 1
    raw, mx = dist([("refund", {"order_id": "o1", "amount": 6})], [R], "in_order")
    assert (raw, mx) == (10.0, 20.0)
    raw, _ = dist([("search", {"q": "dog"})], [S], "in_order")
    assert raw == 1.0


def test_in_order_order_matters_any_order_does_not():
    assert dist([A, S], [S, A], "in_order")[0] == 2.0
    assert dist([A, S], [S, A], "any_order")[0] == 0.0


def test_exact_is_all_or_nothing():
    assert dist([S, A], [S, A], "exact") == (0.0, 4.0)
    assert dist([A, S], [S, A], "exact") == (4.0, 4.0)
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
    assert dist([("refund", {"amount": 5})], [("refund", {"amount": 5})], "in_order")[0] == 10.0


def test_value_is_normalized_and_aggregate_is_total_over_total():
    m = TrajectoryMetric("in_order", grammar=G)
    s1 = m.score([S, A], [S, R, A])   # 10 / 14
    s2 = m.score([S], [S])            # 0 / 2
    s3 = m.score([], [])              # 0 / 0
    assert s1.value == pytest.approx(10 / 14)
    assert s3.value == 0.0 and s3.detail["max_distance"] == 0.0
    assert m.aggregate([s1, s2, s3]) == pytest.approx(10 / 16)
    assert not m.higher_is_better
    with pytest.raises(InvalidInput):
        m.aggregate([])


def test_accepts_episodes_trajectories_and_taskspec_grammar():
    ep = Episode("t", Trajectory([Step("refund", {"order_id": "o1", "amount": 6})]))
    task = TaskSpec("t", gold={"calls": [R]}, tools=(
        ToolSpec("refund", {"order_id": FieldSpec("order_id", required=True), "amount": FieldSpec("amount", "number")},
                 destructive=True),))
    s = TrajectoryMetric().score(ep, task)
    assert s.detail["distance"] == 10.0
    s = TrajectoryMetric().score(ep, Trajectory([Step(*R)]), grammar=G)
    assert s.detail["distance"] == 10.0
    s = TrajectoryMetric().score(ep, Trajectory([Step(*R)]))  # no grammar: weights 1
    assert s.detail["distance"] == 1.0


def test_canonicalizer_option():
    m = TrajectoryMetric("exact", canonicalizer=str)
    assert m.score([("answer", {"text": "OK"})], [("answer", {"text": "ok"})]).value == 1.0
