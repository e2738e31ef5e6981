import json

import pytest

from ek_agents.base import (Cost, Episode, RunProvenance, Step, TaskSpec, ToolSpec, Trajectory,
                            as_call, suite_grammar, tool_grammar)
from ek_agents.core import FieldSpec, Provenance, canonicalize, construct, construct_from
from ek_agents.errors import EkAgentsError, InvalidInput, SchemaVersionError


def test_positional_construction_and_round_trip():
    ep = Episode("t1", Trajectory([Step("s", {"q": 1}), Step("a", "not json", error="bad args")]),
                 output={"x": [1, 2]}, final_state={"db": {"a": 1}},
                 cost=Cost(100, 20, cached_input_tokens=50, reasoning_tokens=5, cache_write_tokens=10),
                 success=False, run=RunProvenance(seed=3, model="m"), meta={"error": "boom"})
    text = ep.to_json()
    assert json.loads(text)["schema_version"] == 1
    back = Episode.from_json(text)
    assert back == ep
    assert back.trajectory.steps[1].args == "not json"


def test_schema_version_from_the_future_is_refused():
    d = Step("s").to_dict()
    d["schema_version"] = 99
    with pytest.raises(SchemaVersionError, match="upgrade ek-agents"):
        Step.from_dict(d)


def test_graded_never_shares_meta():
    e = Episode("t", meta={"a": {"b": 1}})
    g = e.graded(True)
    g.meta["a"]["b"] = 2
    assert e.meta["a"]["b"] == 1 and e.success is None and g.success is True


def _graded_as_before(e, success):
    import copy
    import dataclasses
    return dataclasses.replace(e, success=success, meta=copy.deepcopy(e.meta))


@pytest.mark.parametrize("success", [True, False, None])
def test_graded_equals_and_serialises_as_the_validating_replace(success):
    # graded builds the copy with core.construct (no re-validation) and copy_plain's meta:
    # the same episode, the same bytes, as the validating dataclasses.replace + deepcopy
    e = Episode("t1", Trajectory([Step("buy", {"sku": "A1"}, {"ok": True})]), output={"x": [1, 2.5]},
                final_state={"n": 1}, cost=Cost(10, 2, latency_s=0.1), run=RunProvenance(seed=3, model="m"),
                provenance=Provenance(source="log.json", locator="[0]"),
                meta={"trial": 0, "nested": {"a": [1, {"b": (2, None)}]}, "latency_s": 0.05})
    g, ref = e.graded(success), _graded_as_before(e, success)
    assert type(g) is Episode and g == ref and g.to_json() == ref.to_json() and repr(g) == repr(ref)
    assert g.meta is not e.meta and g.meta["nested"]["a"] is not e.meta["nested"]["a"]
    assert e.success is None and Episode.from_json(g.to_json()).to_json() == g.to_json()


def test_graded_with_a_success_that_is_not_a_bool_still_validates():
    e = Episode("t", output="a")
    assert e.graded(1).success is True and e.graded(0).success is False  # lax bool, as before
    with pytest.raises(InvalidInput, match="success"):
        e.graded("maybe")


def test_copy_plain_is_a_deep_copy():
    from ek_agents.core import copy_plain

    class Box:
        def __init__(self, v):
            self.v = v

    plain = {"a": [1, 2.5, None, True, "s", {"b": (1, [2])}], "c": {}}
    got = copy_plain(plain)
    assert got == plain and got["a"] is not plain["a"] and got["a"][5]["b"][1] is not plain["a"][5]["b"][1]
    odd = {"box": Box([1]), "n": 1}  # not JSON-plain: deepcopy
    got = copy_plain(odd)
    assert got["box"] is not odd["box"] and got["box"].v == [1] and got["box"].v is not odd["box"].v
    cyc: dict = {"k": []}
    cyc["k"].append(cyc)  # a cycle: deepcopy's memo keeps it one
    got = copy_plain(cyc)
    assert got["k"][0] is got and got is not cyc
    assert copy_plain({1.5: "x", None: [()]}) == {1.5: "x", None: [()]}


def test_episodes_without_steps_share_one_frozen_empty_trajectory():
    a, b = Episode("a"), Episode("b", meta={"x": 1})
    assert a.trajectory == Trajectory() and len(a.trajectory) == 0
    with pytest.raises(Exception):
        a.trajectory.steps = (Step("x"),)  # frozen: sharing it cannot leak a change
    assert b.trajectory.to_dict() == Trajectory().to_dict()


def test_cost_add_and_invariants():
    c = sum([Cost(10, 5, latency_s=1.0), Cost(1, 1, retries=2)])
    assert (c.input_tokens, c.output_tokens, c.retries, c.latency_s, c.total_tokens) == (11, 6, 2, 1.0, 17)
    with pytest.raises(InvalidInput, match="input_tokens counts ALL prompt tokens"):
        Cost(input_tokens=10, cached_input_tokens=20)
    with pytest.raises(EkAgentsError):
        Cost(output_tokens=1, reasoning_tokens=2)
    with pytest.raises(ValueError):
        Cost(input_tokens=-1)


def test_tool_weights_and_grammars():
    refund = ToolSpec("refund", {"amount": FieldSpec("amount", "number", importance=20.0, required=True)},
                      destructive=True)
    look = ToolSpec("look", {"id": FieldSpec("id")})
    g = tool_grammar(refund, look)
    assert g.node_cost("refund") == 10.0 and g.node_cost("look") == 1.0 and g.node_cost("nope") == 1.0
    assert g.field_cost("refund", "amount") == 20.0 and refund.required == ("amount",)
    t1 = TaskSpec("a", tools=(look,))
    t2 = TaskSpec("b", tools=(ToolSpec("look", importance=3.0),))
    assert suite_grammar([t1, t2]).node_cost("look") == 3.0  # later wins
    assert suite_grammar({"a": t1}).node_cost("look") == 1.0


def test_as_call_forms_and_errors():
    assert as_call({"name": "f", "arguments": {"a": 1}}) == ("f", {"a": 1})
    with pytest.raises(InvalidInput, match="cannot read a tool call"):
        as_call(42)


def test_fieldspec_rejects_unknown_type():
    with pytest.raises(InvalidInput, match="did you mean 'string'"):
        FieldSpec("x", "strng")


def test_canonicalize():
    assert canonicalize("  Stra\u00dfe \t X ") == "strasse x"
    assert canonicalize(3) == 3


def test_construct_builds_the_shape_the_constructor_builds_without_validating():
    steps = (Step("look", {"sku": "A1"}, "ok"), Step("buy", '{"bad', None, "not JSON"))
    fields = dict(task_id="t1", trajectory=Trajectory(steps), output="done", success=True,
                  run=RunProvenance(model="m"), provenance=Provenance(source="log.json", locator="[0]"),
                  meta={"trial": 0})
    built, checked = construct(Episode, **fields), Episode(**fields)
    assert built == checked and built.to_dict() == checked.to_dict()
    assert construct(Episode, task_id="t").meta is not construct(Episode, task_id="t").meta  # factories run
    assert construct(Step, tool="x") == Step("x")
    with pytest.raises(InvalidInput, match=r"unknown fields \['colour'\], missing required fields \['tool'\]"):
        construct(Step, colour="red")


def test_construct_from_builds_what_construct_builds_and_checks_the_fields_and_order():
    fields = dict(task_id="t1", trajectory=Trajectory((Step("look", {"sku": "A1"}, "ok"),)),
                  output="done", final_state=None, cost=None, success=True,
                  run=RunProvenance(model="m"), provenance=Provenance(source="log.json"),
                  meta={"trial": 0})
    built, made = construct_from(Episode, dict(fields)), construct(Episode, **fields)
    assert built == made and built.to_json() == made.to_json()
    assert list(vars(built).items()) == list(vars(made).items())  # the same fields, same order
    with pytest.raises(InvalidInput, match=r"construct_from\(Step\): the fields must be "
                                           r"\['tool', 'args', 'observation', 'error'\]"):
        construct_from(Step, {"args": {}, "tool": "x", "observation": None, "error": None})
    with pytest.raises(InvalidInput, match=r"got \['tool'\]"):
        construct_from(Step, {"tool": "x"})
