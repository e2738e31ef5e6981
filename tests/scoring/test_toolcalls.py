"""ToolCallMetric and match_calls: one test per rule, including the cases peers get wrong."""
import pytest

from ek_agents.scoring import callcodes
from ek_agents.base import Episode, Step, TaskSpec, ToolSpec, Trajectory, tool_grammar
from ek_agents.core import FieldSpec
from ek_agents.errors import InvalidInput, UnknownName
from ek_agents.scoring.toolcalls import ANY, OMITTED, AnyOf, ToolCallMetric, match_calls, min_cost_assignment, standardize_string
from ek_agents.scoring.callviews import as_calls

G = tool_grammar(
    ToolSpec("refund", {"order_id": FieldSpec("order_id", "string", required=True),
                        "amount": FieldSpec("amount", "number")}, destructive=True),
    ToolSpec("delete_user", {"user_id": FieldSpec("user_id", "string", required=True)}, destructive=True),
    ToolSpec("lookup", {"user_id": FieldSpec("user_id", "string", required=True)}),
    ToolSpec("add", {"n": FieldSpec("n", "integer"), "x": FieldSpec("x", "float"),
                     "flag": FieldSpec("flag", "boolean"),
                     "tags": FieldSpec("tags", "array", items="string"),
                     "opts": FieldSpec("opts", "dict")}),
)
CALL = ToolCallMetric(grammar=G)
ARG = ToolCallMetric("arg", grammar=G)


@pytest.fixture(autouse=True, params=["c-classes", "views"])
def path(request, monkeypatch):
    """Every rule holds on both paths: plain calls classified in C, and the views (the path
    without the C extension)."""
    if request.param == "views":
        monkeypatch.setattr(callcodes, "CallTable", None)
    elif callcodes.CallTable is None:
        pytest.skip("the C extension was not built here")
    return request.param


def f1(pred, gold, m=CALL):
    return m.score(pred, gold).value


# ------------------------------------------------------------------ the cases peers get wrong
def test_extra_calls_are_penalised():
    s = CALL.score([("lookup", {"user_id": "u1"}), ("lookup", {"user_id": "u2"})],
                   [("lookup", {"user_id": "u1"})])
    assert s.detail["fp"] == 1.0 and s.value < 1.0


def test_expected_a_b_but_only_a_is_not_a_pass():
    s = CALL.score([("lookup", {"user_id": "u1"})],
                   [("lookup", {"user_id": "u1"}), ("add", {"n": 1})])
    assert s.value == pytest.approx(2 / 3)
    assert s.detail["fn"] == 1.0


def test_int_vs_string_differ():
    assert f1([("add", {"n": "2"})], [("add", {"n": 2})]) == 0.0
    assert f1([("add", {"n": 2})], [("add", {"n": "2"})]) == 0.0
    # without any schema too: a string is never a number
    assert f1([("t", {"v": "2"})], [("t", {"v": 2})], ToolCallMetric()) == 0.0


def test_int_matches_float_for_number_parameter():
    assert f1([("refund", {"order_id": "o", "amount": 2})], [("refund", {"order_id": "o", "amount": 2.0})]) == 1.0
    assert f1([("add", {"x": 2})], [("add", {"x": 2.0})]) == 1.0  # "float" too


def test_float_not_accepted_for_integer_parameter():
    assert f1([("add", {"n": 2.0})], [("add", {"n": 2})]) == 0.0


def test_bool_is_never_an_int():
    assert f1([("add", {"n": True})], [("add", {"n": 1})]) == 0.0
    assert f1([("add", {"flag": 1})], [("add", {"flag": True})]) == 0.0
    assert f1([("add", {"flag": True})], [("add", {"flag": True})]) == 1.0


def test_call_expected_twice_and_made_twice_scores_perfectly():
    call = ("lookup", {"user_id": "u1"})
    s = CALL.score([call, call], [call, call])
    assert s.value == 1.0 and s.detail["tp"] == 2.0
    # made once: one FN, not a pass
    assert CALL.score([call], [call, call]).detail["fn"] == 1.0


def test_swapped_parallel_calls_match():
    a, b = ("lookup", {"user_id": "u1"}), ("lookup", {"user_id": "u2"})
    assert f1([b, a], [a, b]) == 1.0
    pairs, up, ug = match_calls([b, a], [a, b])
    assert pairs == [(b, b), (a, a)] and up == [] and ug == []


def test_destructive_wrong_argument_costs_its_weight_not_one():
    s = CALL.score([("delete_user", {"user_id": "u2"})], [("delete_user", {"user_id": "u1"})])
    assert (s.detail["fp"], s.detail["fn"]) == (10.0, 10.0)
    s = ARG.score([("delete_user", {"user_id": "u2"})], [("delete_user", {"user_id": "u1"})])
    assert (s.detail["fp"], s.detail["fn"]) == (10.0, 10.0)
    # a non-destructive tool's wrong argument costs 1
    s = ARG.score([("lookup", {"user_id": "u2"})], [("lookup", {"user_id": "u1"})])
    assert (s.detail["fp"], s.detail["fn"]) == (1.0, 1.0)


def test_argument_importance_weights_arg_level():
    g = tool_grammar(ToolSpec("pay", {"to": FieldSpec("to", importance=1.0),
                                      "amount": FieldSpec("amount", "number", importance=20.0)}))
    m = ToolCallMetric("arg", grammar=g)
    wrong_amount = m.score([("pay", {"to": "a", "amount": 5})], [("pay", {"to": "a", "amount": 50})])
    wrong_to = m.score([("pay", {"to": "b", "amount": 50})], [("pay", {"to": "a", "amount": 50})])
    assert wrong_amount.detail["fp"] == 20.0 and wrong_to.detail["fp"] == 1.0
    assert wrong_amount.value < wrong_to.value


# ------------------------------------------------------------------------ BFCL equality rules
def test_strings_bfcl_standardized():
    assert standardize_string("New-York, N.Y.") == "newyorkny"
    assert standardize_string("it's") == 'it"s'
    assert f1([("lookup", {"user_id": "User_1"})], [("lookup", {"user_id": "user 1"})]) == 1.0
    assert f1([("lookup", {"user_id": "user2"})], [("lookup", {"user_id": "user 1"})]) == 0.0


def test_canonicalizer_replaces_standardization():
    exact = ToolCallMetric(grammar=G, canonicalizer=lambda s: s)
    assert exact.score([("lookup", {"user_id": "User_1"})], [("lookup", {"user_id": "user 1"})]).value == 0.0
    assert exact.score([("lookup", {"user_id": "u1"})], [("lookup", {"user_id": "u1"})]).value == 1.0


def test_list_order_matters():
    assert f1([("add", {"tags": ["a", "b"]})], [("add", {"tags": ["b", "a"]})]) == 0.0
    assert f1([("add", {"tags": ["A", "b"]})], [("add", {"tags": ("a", "B")})]) == 1.0


def test_dicts_compare_key_by_key():
    assert f1([("add", {"opts": {"b": 2, "a": "X"}})], [("add", {"opts": {"a": "x", "b": 2}})]) == 1.0
    assert f1([("add", {"opts": {"a": "x"}})], [("add", {"opts": {"a": "x", "b": 2}})]) == 0.0
    assert f1([("add", {"opts": {"a": "x", "b": "2"}})], [("add", {"opts": {"a": "x", "b": 2}})]) == 0.0


def test_anyof_lists_acceptable_values():
    gold = [("refund", {"order_id": AnyOf("o-1", "order 1"), "amount": 5})]
    assert f1([("refund", {"order_id": "Order_1", "amount": 5})], gold) == 1.0
    assert f1([("refund", {"order_id": "o1", "amount": 5})], gold) == 1.0
    assert f1([("refund", {"order_id": "o2", "amount": 5})], gold) == 0.0


def test_omitted_means_may_be_omitted():
    gold = [("refund", {"order_id": "o1", "amount": AnyOf(5, OMITTED)})]
    assert f1([("refund", {"order_id": "o1"})], gold) == 1.0
    assert f1([("refund", {"order_id": "o1", "amount": 5})], gold) == 1.0
    assert f1([("refund", {"order_id": "o1", "amount": 6})], gold) == 0.0
    # alone, OMITTED means the argument must be left out
    assert f1([("refund", {"order_id": "o1", "amount": 5})], [("refund", {"order_id": "o1", "amount": OMITTED})]) == 0.0
    assert f1([("refund", {"order_id": "o1"})], [("refund", {"order_id": "o1", "amount": OMITTED})]) == 1.0


def test_any_accepts_any_supplied_value():
    gold = [("refund", {"order_id": ANY, "amount": AnyOf(ANY, OMITTED)})]
    assert f1([("refund", {"order_id": "whatever", "amount": 3})], gold) == 1.0
    assert f1([("refund", {"order_id": "whatever"})], gold) == 1.0
    assert f1([("refund", {"amount": 3})], gold) == 0.0  # required, and ANY needs a value


def test_nested_anyof_inside_dict_and_list():
    gold = [("add", {"opts": {"a": AnyOf("x", "y"), "b": AnyOf(2, OMITTED)}, "tags": [AnyOf("p", "q"), "r"]})]
    assert f1([("add", {"opts": {"a": "y"}, "tags": ["q", "r"]})], gold) == 1.0
    assert f1([("add", {"opts": {"a": "y", "b": 2}, "tags": ["p", "r"]})], gold) == 1.0
    assert f1([("add", {"opts": {"a": "z"}, "tags": ["p", "r"]})], gold) == 0.0


def test_required_param_missing_is_an_error_even_when_gold_is_silent():
    # the gold itself forgot order_id; the ToolSpec says it is required
    assert f1([("refund", {"amount": 5})], [("refund", {"amount": 5})]) == 0.0
    s = ARG.score([("refund", {"amount": 5})], [("refund", {"amount": 5})])
    assert s.detail["fn"] == 10.0 and s.detail["fp"] == 0.0


def test_undeclared_argument_is_an_error_only_when_the_tool_is_declared():
    assert f1([("lookup", {"user_id": "u", "memo": "x"})], [("lookup", {"user_id": "u", "memo": "x"})]) == 0.0
    # an undeclared tool: no schema to violate
    assert f1([("free", {"memo": "x"})], [("free", {"memo": "x"})]) == 1.0


def test_argument_gold_does_not_mention_is_unexpected():
    assert f1([("lookup", {"user_id": "u"})], [("lookup", {"user_id": "u"})]) == 1.0
    assert f1([("t", {"q": "a", "limit": 5})], [("t", {"q": "a"})], ToolCallMetric()) == 0.0


def test_wrong_tool_is_never_a_match():
    pairs, up, ug = match_calls([("a", {"x": 1})], [("b", {"x": 1})])
    assert pairs == [] and len(up) == 1 and len(ug) == 1


# ------------------------------------------------------------------------ optimal assignment
def test_strong_pair_is_not_stolen_by_a_weaker_one():
    # p0 partially matches both golds; p1 matches g0 exactly. Greedy-by-prediction-order
    # would give g0 to p0; the optimal assignment pairs p1-g0 and p0-g1.
    g0 = ("s", {"a": 1, "b": 1, "c": 1})
    g1 = ("s", {"a": 1, "b": 2, "c": 2})
    p0 = ("s", {"a": 1, "b": 1, "c": 9})
    p1 = ("s", {"a": 1, "b": 1, "c": 1})
    pairs, up, ug = match_calls([p0, p1], [g0, g1])
    assert (p1, g0) in pairs and (p0, g1) in pairs
    assert CALL.score([p0, p1], [g0, g1]).detail["tp"] == 1.0


def test_exact_matches_first_then_least_mismatch():
    # with AnyOf golds exactness is not transitive: a pure min-mismatch assignment would pair
    # crosswise (1 + 1 < 0 + 4) and find no exact call; exact matches come first.
    g0 = ("s", {"a": AnyOf(1, 2), "b": AnyOf(1, 2), "c": AnyOf(1, 2), "d": 1})
    g1 = ("s", {"a": 1, "b": 1, "c": 1, "d": 2})
    p0 = ("s", {"a": 1, "b": 1, "c": 1, "d": 1})
    p1 = ("s", {"a": 2, "b": 2, "c": 2, "d": 9})
    pairs, _, _ = match_calls([p0, p1], [g0, g1])
    assert (p0, g0) in pairs and (p1, g1) in pairs
    assert ToolCallMetric().score([p0, p1], [g0, g1]).detail["tp"] == 1.0


def test_match_calls_is_deterministic():
    a = ("s", {"q": 1})
    out = [match_calls([a, a, a], [a, a]) for _ in range(3)]
    assert out[0] == out[1] == out[2]
    assert len(out[0][0]) == 2 and len(out[0][1]) == 1


def test_min_cost_assignment_small_cases():
    assert min_cost_assignment([]) == []
    assert min_cost_assignment([[]]) == []
    assert min_cost_assignment([[3.0, 1.0, 2.0]]) == [(0, 1)]
    assert min_cost_assignment([[1.0], [0.5], [2.0]]) == [(1, 0)]
    assert min_cost_assignment([[0, 0], [0, 0]]) == [(0, 0), (1, 1)]
    for bad in ([[1.0, float("inf")], [0.0, 1.0]], [[float("nan")]], [[1.0, 2.0], [1.0]]):
        with pytest.raises(InvalidInput):
            min_cost_assignment(bad)


# ------------------------------------------------------------------------- inputs and shapes
def test_pred_and_gold_shapes():
    ep = Episode("t", Trajectory([Step("lookup", {"user_id": "u"})]))
    gold_calls = [("lookup", {"user_id": "u"})]
    for gold in (gold_calls, {"calls": gold_calls}, Episode("g", Trajectory([Step("lookup", {"user_id": "u"})])),
                 Trajectory([Step("lookup", {"user_id": "u"})]), [{"tool": "lookup", "args": {"user_id": "u"}}]):
        assert CALL.score(ep, gold).value == 1.0
    assert as_calls([]) == []
    with pytest.raises(InvalidInput):
        as_calls(None)
    with pytest.raises(InvalidInput):
        as_calls({"nope": 1})


def test_grammar_from_taskspec_gold_and_per_call():
    task = TaskSpec("t", gold={"calls": [("delete_user", {"user_id": "u1"})]},
                    tools=(ToolSpec("delete_user", {"user_id": FieldSpec("user_id", required=True)}, destructive=True),))
    s = ToolCallMetric().score([("delete_user", {"user_id": "u2"})], task)
    assert s.detail["fp"] == 10.0
    s = ToolCallMetric().score([("delete_user", {"user_id": "u2"})], task.gold, grammar=G)
    assert s.detail["fp"] == 10.0


def test_empty_both_sides_is_perfect_and_empty_pred_is_not():
    assert CALL.score([], []).value == 1.0
    assert CALL.score([], [("lookup", {"user_id": "u"})]).value == 0.0


def test_micro_f1_aggregate_is_not_a_mean():
    s1 = CALL.score([("lookup", {"user_id": "u"})], [("lookup", {"user_id": "u"})])  # tp 1
    s2 = CALL.score([("a", {})] * 3, [("b", {})])  # fp 3, fn 1
    assert CALL.aggregate([s1, s2]) == pytest.approx(2 / (2 + 3 + 1))
    assert CALL.aggregate([s1, s2]) != pytest.approx((s1.value + s2.value) / 2)
    with pytest.raises(InvalidInput):
        CALL.aggregate([])


def test_unknown_level():
    with pytest.raises(UnknownName, match="did you mean 'arg'"):
        ToolCallMetric("args")


def test_unparsed_string_args_never_match_silently():
    s = CALL.score([Step("lookup", '{"user_id": "u"', error="bad json")], [("lookup", {"user_id": "u"})])
    assert s.value == 0.0


def test_bad_gold_marker_placement():
    with pytest.raises(InvalidInput):
        CALL.score([("add", {"tags": ["a"]})], [("add", {"tags": [OMITTED]})])


def test_anyof_needs_values():
    with pytest.raises(InvalidInput):
        AnyOf()
    assert AnyOf(1, AnyOf(2, 3)).values == (1, 2, 3)


def test_view_cache_never_changes_results(monkeypatch):
    import random

    from ek_agents.scoring import argmatch

    rnd = random.Random(7)
    vals = [1, 1.0, True, "1", "a", "A", [1, 2], {"k": 1}]
    corpus = [([("add", {"n": rnd.choice(vals)}), ("lookup", {"user_id": rnd.choice(vals)})],
               [("add", {"n": rnd.choice(vals)}), ("lookup", {"user_id": rnd.choice(vals)})]) for _ in range(300)]
    warm = ToolCallMetric(grammar=G)
    cached = [warm.score(p, g).detail for p, g in corpus]
    monkeypatch.setattr(argmatch, "_CACHE_PROBE", 0)  # bypass the cache from the first call
    cold = [ToolCallMetric(grammar=G).score(p, g).detail for p, g in corpus]
    assert cached == cold
    assert [warm.score(p, g).detail for p, g in corpus] == cached  # and a warm cache is stable
