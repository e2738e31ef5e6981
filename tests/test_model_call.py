"""ModelCall and Cost.calls: the per-call record of a multi-model episode (issue 25, point 3)."""
import hashlib
import json

import pytest

import ek_agents
from ek_agents.base import TOKEN_KINDS, Cost, Episode, ModelCall, RunProvenance, Step, Trajectory
from ek_agents.core import canonical_json
from ek_agents.errors import InvalidInput

PLANNER = ModelCall("gpt-4o-2024-08-06", requested_model="gpt-4o", provider="openai",
                    input_tokens=1500, output_tokens=220, cached_input_tokens=1024,
                    source="opentelemetry.instrumentation.openai_v2")
SUMMARISER = ModelCall("gpt-4o-mini", provider="openai", input_tokens=800, output_tokens=90,
                       reasoning_tokens=0, cached_known=False, source="openinference")
THINKER = ModelCall("o3-mini", provider="openai", input_tokens=300, output_tokens=500,
                    reasoning_tokens=448, cache_write_tokens=0)


def _stored_episode(cost):
    return Episode("t1", Trajectory([Step("search", {"q": "cat"}, observation=["a"])]), output="meow",
                   cost=cost, success=True, run=RunProvenance(seed=3, model="gpt-4o"),
                   meta={"model": "gpt-4o"})


def test_an_episode_without_calls_keeps_its_canonical_bytes():
    # these bytes and digest were printed by the code on main before ModelCall existed
    ep = _stored_episode(Cost(input_tokens=1200, output_tokens=340, cached_input_tokens=200,
                              reasoning_tokens=40, retries=1, latency_s=0.25, cache_write_tokens=100))
    data = canonical_json(ep.to_dict())
    assert data == (
        b'{"cost":{"cache_write_tokens":100,"cached_input_tokens":200,"input_tokens":1200,'
        b'"latency_s":0.25,"output_tokens":340,"reasoning_tokens":40,"retries":1},"final_state":null,'
        b'"meta":{"model":"gpt-4o"},"output":"meow","provenance":null,"run":{"model":"gpt-4o",'
        b'"scaffold":"","seed":3,"simulator":"","suite_version":"","temperature":null},'
        b'"schema_version":1,"success":true,"task_id":"t1","trajectory":{"steps":[{"args":{"q":"cat"},'
        b'"error":null,"observation":["a"],"tool":"search"}]}}')
    assert hashlib.sha256(data).hexdigest() == \
        "6b3ffbbd9e9d56cb7654b09773ffa7dcf08aaf1ed078cbbdcc48e9995f8e88d4"
    assert Cost().to_json() == ('{"cache_write_tokens":0,"cached_input_tokens":0,"input_tokens":0,'
                                '"latency_s":null,"output_tokens":0,"reasoning_tokens":0,"retries":0,'
                                '"schema_version":1}')
    # an old document (no "calls" key) reads back to a Cost without calls
    assert Episode.from_json(data).cost.calls == ()


def test_cost_of_calls_sums_every_token_kind_and_round_trips():
    cost = Cost.of_calls([PLANNER, SUMMARISER.to_dict(), THINKER], retries=2, latency_s=1.5)
    for k in TOKEN_KINDS:
        assert getattr(cost, k) == getattr(PLANNER, k) + getattr(SUMMARISER, k) + getattr(THINKER, k)
    assert (cost.input_tokens, cost.output_tokens, cost.cached_input_tokens, cost.reasoning_tokens) == \
        (2600, 810, 1024, 448)
    assert cost.calls == (PLANNER, SUMMARISER, THINKER) and cost.retries == 2 and cost.latency_s == 1.5
    assert cost.cached_known is False and Cost.of_calls([PLANNER]).cached_known is True
    ep = _stored_episode(cost)
    doc = json.loads(ep.to_json())
    assert [c["model"] for c in doc["cost"]["calls"]] == ["gpt-4o-2024-08-06", "gpt-4o-mini", "o3-mini"]
    assert doc["cost"]["calls"][1]["cached_known"] is False
    assert doc["cost"]["calls"][0]["requested_model"] == "gpt-4o"
    back = Episode.from_json(ep.to_json())
    assert back == ep and back.cost.calls[0] == PLANNER and isinstance(back.cost.calls[0], ModelCall)
    assert Cost.from_json(cost.to_json()) == cost
    assert ModelCall.from_dict(json.loads(SUMMARISER.to_json())) == SUMMARISER


def test_adding_costs_concatenates_their_calls_once_each():
    a, b = Cost.of_calls([PLANNER], latency_s=1.0), Cost.of_calls([SUMMARISER, THINKER])
    s = a + b
    assert s.calls == (PLANNER, SUMMARISER, THINKER)
    assert s == Cost.of_calls([PLANNER, SUMMARISER, THINKER], latency_s=1.0)
    assert sum([a, b]) == s
    # a side with no tokens (a retry count) adds without breaking the sums
    assert (s + Cost(retries=1)).calls == s.calls and (s + Cost(retries=1)).retries == 1
    # tokens from no recorded call cannot join a per-call record: they would be billed at no model
    with pytest.raises(InvalidInput, match="record those tokens as a ModelCall"):
        a + Cost(input_tokens=5)
    with pytest.raises(InvalidInput, match="record those tokens as a ModelCall"):
        Cost(output_tokens=5) + a
    # call-less Costs add exactly as before
    assert (Cost(10, 5) + Cost(1, 1)).calls == ()


def test_validation_names_the_bad_value_and_the_fix():
    with pytest.raises(InvalidInput, match=r"input_tokens=1100 but the calls sum to 1500.*Cost.of_calls"):
        Cost(input_tokens=1100, output_tokens=220, cached_input_tokens=1024, calls=(PLANNER,))
    with pytest.raises(InvalidInput, match="model is empty"):
        ModelCall("")
    with pytest.raises(InvalidInput, match=r"ModelCall\('m'\).*cached_input_tokens \(20\)"):
        ModelCall("m", input_tokens=10, cached_input_tokens=20)
    with pytest.raises(InvalidInput, match="reasoning_tokens"):
        ModelCall("m", output_tokens=1, reasoning_tokens=2)
    with pytest.raises(ValueError):
        ModelCall("m", input_tokens=-1)
    with pytest.raises(InvalidInput, match="a call must be a ModelCall"):
        Cost.of_calls(["gpt-4o"])
    with pytest.raises(InvalidInput, match="malformed Cost"):
        Cost.from_dict({"calls": [{"model": "m", "input_tokens": "many"}]})


def test_model_call_is_exported_from_the_facade():
    assert ek_agents.ModelCall is ModelCall and "ModelCall" in ek_agents.__all__


def test_the_examples_in_the_docstrings_run():
    import doctest

    from ek_agents import base, cost, modelcosts

    for mod in (base, cost, modelcosts):
        assert doctest.testmod(mod).failed == 0, mod.__name__
